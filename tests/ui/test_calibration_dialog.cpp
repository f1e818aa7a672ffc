// Model ▸ Calibrate from Measured Runs… (issue 23, point 1): a row added on the current cluster
// and model, fitted on a worker, recovers the step overhead its measurement was generated with
// (the evaluator's own time under a known overhead: an independent truth for the fit); a bad
// cell is refused with its row and column; a nest-runs file loads; the window applies the
// calibration as one undo step and the status bar says "calibrated (N runs)"; the plans are
// then priced with it and carry its error band. The fit runs on the job tracker: the latest
// request wins, and its progress comes by signal (issue 52).
#include "SourceDir.h"
#include "CalibrationDialog.h"
#include "MainWindow.h"
#include "PlanSession.h"
#include "Settings.h"
#include "WorkspaceDocument.h"

#include "ClusterIO.h"
#include "Evaluator.h"

#include <QCheckBox>
#include <QLabel>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;

namespace {

Topology cluster64()
{
    auto t = resolveCluster("paper-spineleaf-64");
    if (!t)
        qFatal("%s", t.error().c_str());
    return *t;
}

// Sets row `row` to tp x pp x dp and its measured value to the evaluator's iteration time of
// that layout under `truth` (the generating value the fit must recover, not the fit's own
// output). False (and a failed QVERIFY) when a cell or the runs' JSON is refused.
bool setGeneratedRun(CalibrationDialog &dialog, int row, int tp, int pp, int dp, const CostOptions &truth)
{
    const auto set = [&](const char *column, const QString &value) {
        return dialog.setCell(row, QString::fromLatin1(column), value);
    };
    if (!set("TP", QString::number(tp)) || !set("PP", QString::number(pp)) || !set("DP", QString::number(dp)) ||
        !set("Value", QStringLiteral("1")))
        return false;
    const Result<Json> probe = dialog.runsJson();
    if (!probe.ok())
        return false;
    const auto runs = measuredRunsFromJson(*probe, "test", "");
    if (!runs.ok())
        return false;
    const MeasuredRun &m = runs->front();
    const double measured = evaluate(m.plan, m.topology, m.model, truth).iterationTime;
    return set("Value", QString::number(measured, 'g', 17));
}

} // namespace

class TestCalibrationDialog : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

private slots:
    void addedRowRecoversTheOverheadItWasGeneratedWith()
    {
        CalibrationDialog dialog(cluster64(), ModelSource::preset("llama2-7b", 4096, 512), Framework::MegatronCore,
                                 std::nullopt);
        const int row = dialog.addRun();
        QCOMPARE(row, 0);
        QVERIFY(!dialog.setCell(row, QStringLiteral("Runs on"), QStringLiteral("x")));   // not editable
        // The measurement: the evaluator's time of tp 8 x pp 2 x dp 4 with a 20 % step overhead.
        CostOptions truth;
        truth.stepOverhead = 0.2;
        QVERIFY(setGeneratedRun(dialog, row, 8, 2, 4, truth));

        dialog.setFitParameters(false, true);
        QSignalSpy done(&dialog, &CalibrationDialog::fitFinished);
        QVERIFY(dialog.fit());
        QVERIFY(done.wait(30000));
        QCOMPARE(done.front().front().toBool(), true);
        QVERIFY(dialog.result().has_value());
        const Calibration &c = *dialog.result();
        QCOMPARE(c.parameters.size(), size_t(1));
        QVERIFY(c.parameters[0].stepOverhead.has_value());
        QVERIFY2(std::abs(*c.parameters[0].stepOverhead - 0.2) < 0.002,
                 qPrintable(QString::number(*c.parameters[0].stepOverhead)));
        auto *errors = dialog.findChild<QTableWidget *>(QStringLiteral("calibrationErrors"));
        QVERIFY(errors);
        QCOMPARE(errors->rowCount(), 1);
        QVERIFY2(dialog.message().contains(QStringLiteral("calibrated (1 run)")), qPrintable(dialog.message()));

        // An edit after the fit withdraws it: Apply needs a fit of what is shown.
        QVERIFY(dialog.setCell(row, QStringLiteral("Value"), QStringLiteral("2")));
        QVERIFY(!dialog.result().has_value());
    }

    void oneRunFitsWhatItIdentifies()
    {
        // Issue 50, point 5: by default ("What the runs identify") one run fits the one
        // parameter it determines, as nest-cli calibrate without --fit, and the dialog says so.
        // The run: tp 8 x dp 8 of llama2-7b, a compute-bound layout, measured as the evaluator's
        // time at GEMM efficiency 0.55 (the generating value, not the fit's output).
        CalibrationDialog dialog(cluster64(), ModelSource::preset("llama2-7b", 4096, 512), Framework::MegatronCore,
                                 std::nullopt);
        const int row = dialog.addRun();
        CostOptions truth;
        truth.matmulEfficiency = 0.55;
        QVERIFY(setGeneratedRun(dialog, row, 8, 1, 8, truth));

        auto *identified = dialog.findChild<QCheckBox *>(QStringLiteral("fitIdentified"));
        QVERIFY(identified && identified->isChecked());
        QSignalSpy done(&dialog, &CalibrationDialog::fitFinished);
        QVERIFY(dialog.fit());
        QVERIFY(done.wait(30000));
        QCOMPARE(done.front().front().toBool(), true);
        const Calibration &c = *dialog.result();
        QCOMPARE(c.parameters.size(), size_t(1));
        QVERIFY(c.parameters[0].gemmEfficiency.has_value());
        QVERIFY(!c.parameters[0].stepOverhead.has_value());
        QVERIFY2(std::abs(*c.parameters[0].gemmEfficiency - 0.55) < 0.002,
                 qPrintable(QString::number(*c.parameters[0].gemmEfficiency)));
        bool said = false;
        for (const QLabel *label : dialog.findChildren<QLabel *>())
            said = said || label->text().contains(QStringLiteral("1 run identifies 1 parameter"));
        QVERIFY(said);

        // Both named by hand on one run: refused with the reason, as --fit both is.
        dialog.setFitParameters(true, true);
        QVERIFY(!identified->isChecked());
        QSignalSpy refused(&dialog, &CalibrationDialog::fitFinished);
        QVERIFY(dialog.fit());
        QVERIFY(refused.wait(30000));
        QCOMPARE(refused.front().front().toBool(), false);
        QVERIFY2(dialog.message().contains(QStringLiteral("needs at least 2 runs")), qPrintable(dialog.message()));
    }

    void theFitRunsOnTheJobTrackerAndTheLatestRequestWins()
    {
        // Issue 52: the fit goes through the window's one worker lifecycle (JobTracker). Two
        // requests in a row: the first (GEMM efficiency only) is superseded and delivers
        // nothing; the second (step overhead only) delivers once, and recovers the overhead
        // its measurement was generated with (the evaluator's time at a 20 % overhead, as
        // above). Its progress comes by signal, on the GUI thread, before its result.
        CalibrationDialog dialog(cluster64(), ModelSource::preset("llama2-7b", 4096, 512), Framework::MegatronCore,
                                 std::nullopt);
        const int row = dialog.addRun();
        CostOptions truth;
        truth.stepOverhead = 0.2;
        QVERIFY(setGeneratedRun(dialog, row, 8, 2, 4, truth));

        QSignalSpy done(&dialog, &CalibrationDialog::fitFinished);
        std::vector<double> progress;
        bool progressOnGuiThread = true;
        int progressBeforeResult = 0;
        connect(&dialog, &CalibrationDialog::fitProgress, this, [&](double fraction) {
            progress.push_back(fraction);
            progressOnGuiThread = progressOnGuiThread && QThread::currentThread() == qApp->thread();
            if (done.isEmpty())
                ++progressBeforeResult;
        });
        dialog.setFitParameters(true, false);
        QVERIFY(dialog.fit());
        QVERIFY(dialog.isFitting());
        dialog.setFitParameters(false, true);
        QVERIFY(dialog.fit());   // supersedes the first: no event loop ran in between
        QVERIFY(done.wait(30000));
        // Every worker gone and every queued delivery handled: still the one result.
        dialog.waitForFit();
        QCoreApplication::processEvents();
        QCoreApplication::processEvents();
        QCOMPARE(done.count(), 1);
        QCOMPARE(done.front().front().toBool(), true);
        QVERIFY(!dialog.isFitting());
        const Calibration &c = *dialog.result();
        QCOMPARE(c.parameters.size(), size_t(1));
        QVERIFY(!c.parameters[0].gemmEfficiency.has_value());   // the first request's parameter
        QVERIFY(c.parameters[0].stepOverhead.has_value());
        QVERIFY2(std::abs(*c.parameters[0].stepOverhead - 0.2) < 0.002,
                 qPrintable(QString::number(*c.parameters[0].stepOverhead)));
        // Progress: from the worker (a fraction below 1, before the result), then 1 at the end.
        QVERIFY(progressOnGuiThread);
        QVERIFY(progress.size() >= 2);
        QVERIFY(progressBeforeResult >= 1);
        QVERIFY2(progress.front() > 0 && progress.front() < 1, qPrintable(QString::number(progress.front())));
        QCOMPARE(progress.back(), 1.0);
        for (size_t i = 1; i < progress.size(); ++i)
            QVERIFY(progress[i] >= progress[i - 1]);   // one job's progress: never backwards
    }

    void badCellsAndFilesAreRefusedWithWhere()
    {
        CalibrationDialog dialog(cluster64(), ModelSource::preset("llama2-7b", 4096, 512), Framework::MegatronCore,
                                 std::nullopt);
        dialog.addRun();
        // The value is left empty for the user: fitting before it is given says so.
        QVERIFY(!dialog.fit());
        QVERIFY2(dialog.message().contains(QStringLiteral("row 1, Value")), qPrintable(dialog.message()));
        QVERIFY(dialog.setCell(0, QStringLiteral("Value"), QStringLiteral("3.5")));
        QVERIFY(dialog.setCell(0, QStringLiteral("TP"), QStringLiteral("eight")));
        QVERIFY(!dialog.fit());
        QVERIFY2(dialog.message().contains(QStringLiteral("row 1, TP")), qPrintable(dialog.message()));
        QVERIFY(dialog.setCell(0, QStringLiteral("TP"), QStringLiteral("8")));
        QVERIFY(dialog.setCell(0, QStringLiteral("Measurement"), QStringLiteral("seconds")));
        QVERIFY(!dialog.fit());
        QVERIFY2(dialog.message().contains(QStringLiteral("row 1, Measurement")), qPrintable(dialog.message()));

        // A file that is not a nest-runs file is refused, and the rows stay.
        QString error;
        QVERIFY(!dialog.loadRuns(QStringLiteral(NEST_SOURCE_DIR "/sample_configs/workspaces/quickstart.nestws.json"),
                                 &error));
        QVERIFY2(error.contains(QStringLiteral("not a nest-runs file")), qPrintable(error));
        QCOMPARE(dialog.runCount(), 1);
        // The MT-NLG sample: its three rows, their plans built from files next to it.
        QVERIFY2(dialog.loadRuns(QStringLiteral(NEST_SOURCE_DIR "/sample_configs/runs/mtnlg-530b.json"), &error),
                 qPrintable(error));
        QCOMPARE(dialog.runCount(), 3);
        const Result<Json> runs = dialog.runsJson();
        QVERIFY(runs.ok());
        QCOMPARE((*runs)["runs"][1]["name"].get<std::string>(), std::string("mtnlg-530b-2800"));
        QCOMPARE((*runs)["runs"][1]["cluster"].get<std::string>(), std::string("mtnlg-530b-2800.cluster.json"));
    }

    void windowAppliesItAsOneUndoStepAndSaysSo()
    {
        MainWindow w(nullptr, std::make_unique<Settings>(m_dir.filePath("a.ini")));
        QString error;
        QVERIFY2(w.openFile(uitest::kQuickstart, &error), qPrintable(error));
        QStringList menus;
        for (QAction *a : w.menuBar()->actions())
            menus << a->text();
        QVERIFY2(menus.contains(QStringLiteral("&Model")), qPrintable(menus.join(QLatin1Char(','))));
        auto *label = w.findChild<QLabel *>(QStringLiteral("calibrationLabel"));
        QVERIFY(label);
        QVERIFY(label->text().isEmpty());

        // A calibration of the quick-start's devices (it has two types; the step overhead is
        // the one of the type holding most devices): 3 runs, one parameter fitted per type.
        Calibration c;
        for (const DeviceSpec &type : w.document()->topology().deviceTypes)
            c.parameters.push_back({type.name, "megatron-core", std::nullopt, 0.5});
        c.runs = {{"a", 10, 8, 9.9}, {"b", 10, 8, 10.2}, {"c", 10, 8, 10.4}};
        const int steps = w.document()->undoStack()->count();
        QVERIFY(w.document()->setCalibration(c, QStringLiteral("Calibrate")));
        QCOMPARE(w.document()->undoStack()->count(), steps + 1);
        QCOMPARE(label->text(), QStringLiteral("calibrated (3 runs)"));
        QVERIFY(w.document()->isModified());
        QCOMPARE(*w.document()->workspace().calibration, c);

        // The plan shown is priced with it: a 50 % step overhead and its band. Residuals
        // measured / after 10/9.9, 10/10.2, 10/10.4: three runs, two fitted parameters, too few
        // for an 80 % order statistic: the scatter of one source's runs, holding all three.
        w.planning()->showPinned(0);
        QTRY_VERIFY(w.planning()->current() != nullptr);
        QTRY_VERIFY(w.planning()->current()->calibration.has_value());
        const PlanSnapshotPtr calibrated = w.planning()->current();
        QCOMPARE(QString::fromStdString(calibrated->band.basis),
                 QStringLiteral("calibrated (3 runs), band of one source's scatter"));
        QVERIFY(calibrated->band.low <= 10 / 10.4 && calibrated->band.high >= 10 / 9.9);

        w.document()->undoStack()->undo();
        QVERIFY(label->text().isEmpty());
        QVERIFY(!w.document()->calibration().has_value());
        w.planning()->showPinned(0);
        QTRY_VERIFY(w.planning()->current() && !w.planning()->current()->calibration.has_value());
        // Uncalibrated, the same plan is faster by the overhead: t_stage x 1.5 calibrated.
        QVERIFY(calibrated->report().iterationTime > w.planning()->current()->report().iterationTime);
        const QString uncalibrated = QString::fromStdString(w.planning()->current()->band.basis);
        QVERIFY2(uncalibrated.startsWith(QStringLiteral("megatron-core ")) &&
                     uncalibrated.contains(QStringLiteral(" GPUs, uncalibrated")),
                 qPrintable(uncalibrated));
    }
};

QTEST_MAIN(TestCalibrationDialog)
#include "test_calibration_dialog.moc"
