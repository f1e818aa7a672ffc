// The sweep in the window (SweepRunner, SweepDialog, SweepView): the runner delivers one
// point per value with one run per planner, each run's numbers the evaluator's on the
// swept cluster; a cancel mid-way gives a partial result marked cancelled; the view's
// series and table equal the result's throughputs (best per point bold); the dialog's
// defaults and validation; exports (.png loads, .csv has one line per point x planner).
#include "SeriesChart.h"
#include "SweepDialog.h"
#include "SweepRunner.h"
#include "Settings.h"
#include "SweepView.h"
#include "UiTestSupport.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QProcess>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include <cmath>

using namespace nest;
using namespace nest::ui;

namespace {

const SweepParameter kSpineOversub{2, LinkField::Oversubscription};
constexpr int kTimeoutMs = 60000;  // a guard against a hang, not a speed check

// 16 H100: 4 per node, 2 nodes per rack, 2 racks under a 1:1 spine.
Topology spineLeaf16()
{
    const DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    return Topology::uniform("spine-leaf-16", d,
                             {{"node", 4, {400e9, 1e-6, 1}},
                              {"rack", 2, {50e9, 3e-6, 1}},
                              {"spine", 2, {12.5e9, 6e-6, 1}}});
}

// The cluster, Llama-2 7B cut to 2 layers, and a narrow search space.
Workspace smallWorkspace()
{
    Workspace w;
    w.cluster = spineLeaf16();
    w.model = ModelSource(Json{{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024}, {"global_batch", 16}});
    w.search.microBatches = {1, 2};
    w.search.schedules = {Schedule::OneFOneB};
    w.search.cpCandidates = {1};
    return w;
}

// For the cancel cases: the whole Llama-2 7B and the default search space, so that a
// point takes long enough (tens of ms) for a cancel from the GUI thread to land mid-sweep.
Workspace slowerWorkspace()
{
    Workspace w;
    w.cluster = spineLeaf16();
    w.model = ModelSource(Json{{"preset", "llama2-7b"}, {"global_batch", 64}});
    return w;
}

ModelProfile smallModel()
{
    return workspaceModel(smallWorkspace(), "test").value();
}

// Runs the sweep through a runner and returns what `finished` carried.
SweepResult runThrough(SweepRunner &runner, const std::vector<double> &values,
                       const std::vector<std::string> &planners, const Workspace &inputs = smallWorkspace())
{
    QSignalSpy done(&runner, &SweepRunner::finished);
    if (!runner.start(inputs, kSpineOversub, values, planners))
        return {};
    if (!done.wait(kTimeoutMs) || done.count() != 1)
        return {};
    return done.at(0).at(0).value<SweepResult>();
}

} // namespace

class TestSweepView : public QObject {
    Q_OBJECT
private slots:
    void runnerDeliversOneResultPerPoint();
    void runnerRefusesABadRequest();
    void cancelMidwayGivesAPartialResult();
    void viewSeriesEqualTheResult();
    void viewFollowsTheRunnerAndCancels();
    void dialogDefaults();
    void dialogValidation();
    void exports();
    void dialogRemembersItsSettings();
    void geometricSweepOnALogAxisWithRoundedTicks();
    void opensPythonSweepResults();
};

void TestSweepView::runnerDeliversOneResultPerPoint()
{
    SweepRunner runner;
    QSignalSpy progress(&runner, &SweepRunner::progress);
    QSignalSpy failed(&runner, &SweepRunner::failed);
    const std::vector<double> values{1, 2, 4};
    const SweepResult r = runThrough(runner, values, {"nest", "megatron"});
    QCOMPARE(failed.count(), 0);
    QVERIFY(!runner.isRunning());
    QVERIFY(!r.cancelled);
    QCOMPARE(r.points.size(), values.size());
    const ModelProfile model = smallModel();
    const SearchOptions options = searchOptionsFrom(smallWorkspace().search, model);
    for (size_t i = 0; i < values.size(); ++i) {
        QCOMPARE(r.points[i].value, values[i]);
        QCOMPARE(r.points[i].runs.size(), size_t(2));
        const Topology cluster = withParameter(spineLeaf16(), kSpineOversub, values[i]).value();
        for (const PlannerRun &run : r.points[i].runs) {
            QVERIFY2(run.result.found, run.result.message.c_str());
            QCOMPARE(run.result.report.samplesPerSecond,
                     evaluate(run.result.plan, cluster, model, options.cost).samplesPerSecond);
        }
    }
    // Progress came to the GUI thread, indices in range, never backwards, ending at 1.
    QVERIFY(progress.count() >= 1);
    double last = 0;
    for (const QList<QVariant> &args : progress) {
        QVERIFY(args.at(0).toInt() >= 0 && args.at(0).toInt() < 3);
        QVERIFY(args.at(1).toInt() >= 0 && args.at(1).toInt() < 2);
        QVERIFY(args.at(2).toDouble() >= last);
        last = args.at(2).toDouble();
    }
    QCOMPARE(last, 1.0);
}

void TestSweepView::runnerRefusesABadRequest()
{
    SweepRunner runner;
    QSignalSpy failed(&runner, &SweepRunner::failed);
    QVERIFY(!runner.start(smallWorkspace(), kSpineOversub, {1, 0.5}, {"nest"}));
    QVERIFY(!runner.start(smallWorkspace(), kSpineOversub, {1, 2}, {"alpa"}));
    QVERIFY(!runner.start(smallWorkspace(), kSpineOversub, {1, 2}, {}));
    QVERIFY(!runner.isRunning());
    QCOMPARE(failed.count(), 3);
    QVERIFY(failed.at(0).at(0).toString().contains("spine oversubscription: must be at least 1"));
    QVERIFY(failed.at(1).at(0).toString().contains("unknown planner 'alpa'"));
    QVERIFY(failed.at(2).at(0).toString().contains("no planner"));
    // A model the loaders refuse fails from the worker, with the reason.
    Workspace bad = smallWorkspace();
    bad.model = ModelSource(Json{{"preset", "no-such-model"}});
    QVERIFY(runner.start(bad, kSpineOversub, {1, 2}, {"nest"}));
    QVERIFY(failed.wait(kTimeoutMs));
    QVERIFY2(failed.at(3).at(0).toString().contains("no-such-model"), qPrintable(failed.at(3).at(0).toString()));
}

void TestSweepView::cancelMidwayGivesAPartialResult()
{
    SweepRunner runner;
    // Cancel as soon as the second point is reported (queued from the worker: a few ms after
    // it began; the whole sweep takes about 250 ms here). The points finished before the
    // worker sees the token are whole; the one in progress is dropped; the rest never run.
    connect(&runner, &SweepRunner::progress, &runner, [&runner](int point) {
        if (point >= 1)
            runner.cancel();
    });
    const std::vector<double> values = sweepValues(1, 16, 40);
    const SweepResult r = runThrough(runner, values, {"nest", "megatron"}, slowerWorkspace());
    QVERIFY(r.cancelled);
    QCOMPARE(r.values.size(), values.size());
    QVERIFY(!r.points.empty());
    QVERIFY2(r.points.size() < values.size(), qPrintable(QString::number(r.points.size())));
    for (size_t i = 0; i < r.points.size(); ++i) {
        QCOMPARE(r.points[i].value, values[i]);
        for (const PlannerRun &run : r.points[i].runs)
            QVERIFY(run.result.found && !run.result.cancelled);  // no half point
    }
}

void TestSweepView::viewSeriesEqualTheResult()
{
    SweepRunner runner;
    const SweepResult r = runThrough(runner, {1, 2, 4}, {"nest", "megatron"});
    QCOMPARE(r.points.size(), size_t(3));
    SweepView view;
    QCOMPARE(view.objectName(), QString("sweepView"));
    QVERIFY(view.result() == nullptr);
    view.setResult(r, spineLeaf16());
    QVERIFY(view.result() != nullptr);
    QCustomPlot *plot = view.plot();
    QCOMPARE(plot->graphCount(), 2);
    QCOMPARE(view.table()->rowCount(), 3);
    QCOMPARE(view.table()->columnCount(), 3);
    QVERIFY(view.table()->horizontalHeaderItem(0)->text().contains("spine oversubscription"));
    for (int k = 0; k < 2; ++k) {
        QCOMPARE(plot->graph(k)->name(), QString::fromStdString(r.planners[k]));
        QCOMPARE(plot->graph(k)->dataCount(), 3);
        for (int i = 0; i < 3; ++i) {
            const double expected = r.points[i].runs[k].result.report.samplesPerSecond;
            QVERIFY(expected > 0);
            QCOMPARE(plot->graph(k)->data()->at(i)->key, r.points[i].value);  // a ratio: display = value
            QCOMPARE(plot->graph(k)->data()->at(i)->value, expected);
            QCOMPARE(view.table()->item(i, k + 1)->data(Qt::UserRole).toDouble(), expected);
        }
    }
    // The best planner of each point is bold, the other not (unless they tie).
    for (int i = 0; i < 3; ++i) {
        const double a = r.points[i].runs[0].result.report.samplesPerSecond;
        const double b = r.points[i].runs[1].result.report.samplesPerSecond;
        QCOMPARE(view.table()->item(i, 1)->font().bold(), a >= b);
        QCOMPARE(view.table()->item(i, 2)->font().bold(), b >= a);
    }
    QVERIFY(view.statusLabel()->text().contains("3 points"));
    QVERIFY(view.placeholder()->isHidden() || !view.placeholder()->isVisibleTo(&view));
    // Stale marking.
    QVERIFY(!view.isStale());
    view.setStale(true);
    QVERIFY(view.isStale() && view.staleBanner()->isVisibleTo(&view));
}

void TestSweepView::viewFollowsTheRunnerAndCancels()
{
    SweepView view;
    view.resize(800, 600);
    view.show();
    QCOMPARE(view.placeholder()->text(), QString("No sweep yet: Plan > Sweep Cluster Parameter…"));
    SweepRunner runner;
    view.setRunner(&runner);
    QSignalSpy done(&runner, &SweepRunner::finished);
    // Cancel from the view's button as soon as the second point is reported.
    QString runningText;
    connect(&runner, &SweepRunner::progress, &view, [&view, &runningText](int point) {
        if (point >= 1 && view.cancelButton()->isEnabled()) {
            runningText = view.statusLabel()->text();
            view.cancelButton()->click();
        }
    });
    QVERIFY(runner.start(slowerWorkspace(), kSpineOversub, sweepValues(1, 16, 40), {"nest", "megatron"}));
    QVERIFY(view.isRunning());
    QVERIFY(view.progressBar()->isVisibleTo(&view));
    QVERIFY(view.cancelButton()->isVisibleTo(&view));
    QVERIFY(done.wait(kTimeoutMs));
    QVERIFY2(runningText.startsWith("Sweeping spine oversubscription: point ") && runningText.contains(" of 40"),
             qPrintable(runningText));
    QVERIFY(!view.isRunning());
    QVERIFY(!view.progressBar()->isVisibleTo(&view));
    QVERIFY(view.result() && view.result()->cancelled);
    const int kept = static_cast<int>(view.result()->points.size());
    QCOMPARE(view.statusLabel()->text(), QString("Cancelled after %1 of 40 points").arg(kept));
    QCOMPARE(view.table()->rowCount(), kept);
}

void TestSweepView::dialogDefaults()
{
    SweepDialog dialog(spineLeaf16());
    // node: bandwidth, latency; rack and spine: bandwidth, latency, oversubscription.
    QCOMPARE(dialog.parameterCombo()->count(), 8);
    QVERIFY(dialog.parameterCombo()->currentText().contains("spine oversubscription"));
    QVERIFY(dialog.isValid());
    SweepRequest r = dialog.request();
    QCOMPARE(r.parameter, kSpineOversub);
    QCOMPARE(r.values, (std::vector<double>{1, 2, 3, 4}));
    QCOMPARE(r.planners, (std::vector<std::string>{"nest", "megatron"}));
    QVERIFY(!dialog.plannerBox("flat")->isChecked() && !dialog.plannerBox("mcmc")->isChecked());

    // Bandwidth: 25 % .. 200 % of the spine's 12.5 GB/s in 5 points, shown in GB/s.
    QVERIFY(dialog.selectParameter({2, LinkField::Bandwidth}));
    QVERIFY(dialog.parameterCombo()->currentText().contains("12.5 GB/s"));
    QCOMPARE(dialog.fromBox()->value(), 3.125);
    QCOMPARE(dialog.toBox()->value(), 25.0);
    QCOMPARE(dialog.stepsBox()->value(), 5);
    r = dialog.request();
    QCOMPARE(r.values.size(), size_t(5));
    QCOMPARE(r.values.front(), 3.125e9);
    QCOMPARE(r.values.back(), 25e9);
    QCOMPARE(r.values[2], (3.125e9 + 25e9) / 2);
    dialog.geometricBox()->setChecked(true);  // 3.125, 5.26, 8.84, 14.87, 25: ratio 8^(1/4)
    r = dialog.request();
    QVERIFY(std::fabs(r.values[2] / r.values[1] - std::pow(8.0, 0.25)) < 1e-9);
}

void TestSweepView::dialogValidation()
{
    SweepDialog dialog(spineLeaf16());
    QPushButton *ok = dialog.buttons()->button(QDialogButtonBox::Ok);
    QVERIFY(ok->isEnabled());
    QVERIFY(dialog.messageLabel()->isHidden());
    const auto refuses = [&](const QString &words) {
        return !dialog.isValid() && !ok->isEnabled() && !dialog.messageLabel()->isHidden() &&
               dialog.messageLabel()->text().contains(words);
    };
    dialog.toBox()->setValue(1);  // to == from
    QVERIFY2(refuses("greater than"), qPrintable(dialog.validationMessage()));
    dialog.toBox()->setValue(4);
    QVERIFY(dialog.isValid());
    dialog.stepsBox()->setValue(1);
    QVERIFY2(refuses("between 2 and 50"), qPrintable(dialog.validationMessage()));
    dialog.stepsBox()->setValue(51);
    QVERIFY(refuses("between 2 and 50"));
    dialog.stepsBox()->setValue(50);
    QVERIFY(dialog.isValid());
    dialog.fromBox()->setValue(0.5);  // below the documented range of oversubscription
    QVERIFY2(refuses("must be at least 1"), qPrintable(dialog.validationMessage()));
    dialog.fromBox()->setValue(1);
    dialog.plannerBox("nest")->setChecked(false);
    dialog.plannerBox("megatron")->setChecked(false);
    QVERIFY(refuses("at least one planner"));
    dialog.plannerBox("mcmc")->setChecked(true);
    QVERIFY(dialog.isValid() && ok->isEnabled());
    QCOMPARE(dialog.request().planners, std::vector<std::string>{"mcmc"});
    // accept() refuses while invalid.
    dialog.toBox()->setValue(0.5);
    dialog.accept();
    QCOMPARE(dialog.result(), int(QDialog::Rejected));
}

void TestSweepView::exports()
{
    QTemporaryDir dir;
    SweepView view;
    QString error;
    QVERIFY(!view.exportTo(dir.filePath("none.png"), &error));
    QVERIFY(error.startsWith(dir.filePath("none.png") + ": "));
    SweepRunner runner;
    const SweepResult r = runThrough(runner, {1, 2, 4}, {"nest", "megatron"});
    QCOMPARE(r.points.size(), size_t(3));
    view.setResult(r, spineLeaf16());

    const QString png = dir.filePath("sweep.png");
    QVERIFY2(view.exportTo(png, &error), qPrintable(error));
    QImage image;
    QVERIFY(image.load(png));
    QVERIFY(image.width() > 100 && image.height() > 100);

    const QString csv = dir.filePath("sweep.csv");
    QVERIFY2(view.exportTo(csv, &error), qPrintable(error));
    const QList<QByteArray> lines = uitest::bytesOf(csv).trimmed().split('\n');
    QCOMPARE(lines.size(), 1 + 3 * 2);
    QVERIFY(lines[0].startsWith("value,planner,feasible,samples_per_s"));
    QVERIFY(lines[1].startsWith("1,nest,true,"));
    QVERIFY(lines[6].startsWith("4,megatron,true,"));

    // PDF text stays text: the title and the legend's planner names.
    const QString pdf = dir.filePath("sweep.pdf");
    QVERIFY2(view.exportTo(pdf, &error), qPrintable(error));
    const QString pdftotext = QStandardPaths::findExecutable(QStringLiteral("pdftotext"));
    if (!pdftotext.isEmpty()) {
        QProcess proc;
        proc.start(pdftotext, {pdf, QStringLiteral("-")});
        QVERIFY(proc.waitForFinished(kTimeoutMs));
        const QString text = QString::fromUtf8(proc.readAllStandardOutput());
        QVERIFY2(text.contains("Throughput vs spine oversubscription") && text.contains("megatron") &&
                     text.contains("samples/s"),
                 qPrintable(text));
    }

    QVERIFY(!view.exportTo(dir.filePath("sweep.bmp"), &error));
    QVERIFY(error.startsWith(dir.filePath("sweep.bmp") + ": "));
    QVERIFY(!view.exportTo(dir.filePath("missing/dir/sweep.csv"), &error));
    QVERIFY(error.startsWith(dir.filePath("missing/dir/sweep.csv") + ": "));
}

// Issue 25 point 5: the dialog's choices survive to the next time (through Settings), and
// fall back to the defaults on a cluster without that tier.
void TestSweepView::dialogRemembersItsSettings()
{
    QTemporaryDir dir;
    QVariantMap saved;
    {
        SweepDialog dialog(spineLeaf16());
        QVERIFY(dialog.selectParameter({1, LinkField::Bandwidth}));
        dialog.geometricBox()->setChecked(true);
        dialog.fromBox()->setValue(10);
        dialog.toBox()->setValue(80);
        dialog.stepsBox()->setValue(7);
        dialog.plannerBox("mcmc")->setChecked(true);
        dialog.plannerBox("megatron")->setChecked(false);
        Settings settings(dir.filePath(QStringLiteral("s.ini")));
        settings.setSweepDialog(dialog.state());
    }
    const Settings settings(dir.filePath(QStringLiteral("s.ini")));
    saved = settings.sweepDialog();
    SweepDialog again(spineLeaf16());
    again.restoreState(saved);
    const SweepRequest r = again.request();
    QCOMPARE(r.parameter, (SweepParameter{1, LinkField::Bandwidth}));
    QCOMPARE(r.values.size(), size_t(7));
    QCOMPARE(r.values.front(), 10e9);
    QVERIFY(std::fabs(r.values.back() - 80e9) < 1);
    QVERIFY(std::fabs(r.values[1] / r.values[0] - std::pow(8.0, 1.0 / 6)) < 1e-9);   // geometric
    QCOMPARE(r.planners, (std::vector<std::string>{"nest", "mcmc"}));
    // A two-tier cluster has no level 2: the defaults stay.
    const DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    SweepDialog small(Topology::uniform("two", d, {{"node", 4, {400e9, 1e-6, 1}}, {"rack", 2, {50e9, 3e-6, 1}}}));
    const SweepRequest before = small.request();
    QVariantMap spine = saved;
    spine[QStringLiteral("level")] = 2;
    small.restoreState(spine);
    QCOMPARE(small.request().values, before.values);
}

// A geometric sweep is drawn on a log axis (its points evenly spaced), with at most eight
// tick labels rounded to 3 significant digits.
void TestSweepView::geometricSweepOnALogAxisWithRoundedTicks()
{
    SweepResult r;
    r.parameter = {2, LinkField::Bandwidth};
    r.planners = {"nest"};
    r.values = sweepValues(3.125e9, 25e9, 13, true);
    for (double v : r.values)
        r.points.push_back({v, {}});
    SweepView view;
    view.setResult(r, spineLeaf16());
    QCOMPARE(view.plot()->xAxis->scaleType(), QCPAxis::stLogarithmic);
    auto ticker = view.plot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QVERIFY2(ticker->ticks().size() <= 8, qPrintable(QString::number(ticker->ticks().size())));
    for (const QString &label : ticker->ticks()) {
        int digits = 0;
        for (QChar c : label)
            digits += c.isDigit();
        QVERIFY2(digits <= 3, qPrintable(label));
    }
    // A linear sweep stays linear.
    r.values = sweepValues(1, 4, 4, false);
    r.points.clear();
    for (double v : r.values)
        r.points.push_back({v, {}});
    r.parameter = kSpineOversub;
    view.setResult(r, spineLeaf16());
    QCOMPARE(view.plot()->xAxis->scaleType(), QCPAxis::stLinear);
}


// The results file of nest_planner.sweep() (issue 51): x = the numeric keyword, one line per
// model, the best framework at each point (hand-computed below), a table row per point; a bad
// file is refused with its line.
void TestSweepView::opensPythonSweepResults()
{
    QTemporaryDir dir;
    const auto line = [](const char *model, int batch, const char *fw, double samples) {
        return QStringLiteral(R"({"id": "i", "point": {"model": "%1", "batch": %2, "framework": "%3"}, "ok": true, )"
                              R"("result": {"report": {"throughput_samples_per_s": %4, "iteration_time_s": 1.5, "mfu": 0.25}}})")
                   .arg(model).arg(batch).arg(fw).arg(samples) + "\n";
    };
    const QString file = dir.filePath("sweep.jsonl");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write((line("a", 64, "mc", 30) + line("a", 32, "mc", 10) + line("a", 32, "ds", 12) + line("a", 64, "ds", 25) +
             line("b", 32, "mc", 4) + line("b", 64, "mc", 6))
                .toUtf8());
    f.close();
    SweepView view;
    QVERIFY(view.openResultsButton() != nullptr);
    QString error;
    QVERIFY2(view.openResults(file, &error), qPrintable(error));
    QVERIFY(view.openedResults() != nullptr);
    QCustomPlot *plot = view.plot();
    QCOMPARE(plot->graphCount(), 2);  // default: x batch, one line per framework (first varying non-x key)
    QVERIFY(view.setResultsAxes("batch", "model", &error));
    plot = view.plot();
    QCOMPARE(plot->graphCount(), 2);
    QCOMPARE(plot->graph(0)->name(), QString("model=a"));
    QCOMPARE(plot->graph(0)->dataCount(), 2);
    QCOMPARE(plot->graph(0)->data()->at(0)->key, 32.0);
    QCOMPARE(plot->graph(0)->data()->at(0)->value, 12.0);  // max(10, 12)
    QCOMPARE(plot->graph(0)->data()->at(1)->value, 30.0);  // max(30, 25)
    QCOMPARE(plot->graph(1)->data()->at(1)->value, 6.0);
    QCOMPARE(view.table()->rowCount(), 6);
    QVERIFY(view.statusLabel()->text().contains("6 points"));
    QVERIFY(view.statusLabel()->text().contains("best over framework"));
    QCOMPARE(view.xKeyBox()->count(), 1);
    QVERIFY(!view.setResultsAxes("model", "", &error));
    // For a look at it: NEST_SWEEP_SCREENSHOT=FILE.png saves the view as drawn.
    if (const QString shot = qEnvironmentVariable("NEST_SWEEP_SCREENSHOT"); !shot.isEmpty()) {
        view.resize(1000, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::qWait(100);
        QVERIFY(view.grab().save(shot));
    }
    // A chart of opened results exports like a sweep's.
    QVERIFY2(view.exportTo(dir.filePath("r.png"), &error), qPrintable(error));
    QVERIFY(QImage(dir.filePath("r.png")).width() > 100);

    QFile bad(dir.filePath("bad.jsonl"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(line("a", 64, "mc", 30).toUtf8() + "{\"point\": 3, \"ok\": true}\n");
    bad.close();
    QVERIFY(!view.openResults(bad.fileName(), &error));
    QVERIFY2(error.contains("bad.jsonl: line 2: at point"), qPrintable(error));
    QVERIFY(view.openedResults() != nullptr);  // the shown results stay
}

QTEST_MAIN(TestSweepView)
#include "test_sweep_view.moc"
