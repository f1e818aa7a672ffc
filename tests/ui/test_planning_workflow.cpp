// The window's planning workflow, end to end (offscreen): Run -> progress -> a result in
// every view; Cancel; results whose inputs were edited meanwhile; the latest request wins;
// closing during a search; live mode; pinned plans; opening and exporting plans; and the
// event loop staying responsive during a GPT3-175B / 1024-device search.
#include "BreakdownChartView.h"
#include "WorkspaceDocument.h"
#include "MainWindow.h"
#include "MemoryChartView.h"
#include "PlacementView.h"
#include "PlanLibrary.h"
#include "PlanListModel.h"
#include "PlanListView.h"
#include "PlanRunner.h"
#include "PlanSession.h"
#include "PlanSummaryView.h"
#include "SearchPanel.h"
#include "Settings.h"
#include "TimelineView.h"

#include "ClusterIO.h"
#include "FrameworkExport.h"
#include "NestPlanner.h"
#include "PlanIO.h"

#include <QComboBox>
#include <algorithm>
#include <cmath>
#include <vector>
#include <QCheckBox>
#include <QLineEdit>
#include <QMimeData>
#include <QUrl>
#include <QElapsedTimer>
#include <QImage>
#include <QLabel>
#include <QSpinBox>
#include <QStatusBar>
#include <QProcess>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QXmlStreamReader>
#include <QtTest>

#include "TestWindow.h"
#include "../TestTiming.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

// Records when a 5 ms timer ticks, and when the GUI thread last began a queued call (an
// application event filter sees each QEvent::MetaCall before its receiver does). A result
// reaches the window by a queued call, so the last one before the run ends is the delivery:
// the search is what came before it, the delivery what the window did from it on.
class StallMeter : public QObject {
public:
    StallMeter()
    {
        m_timer.setInterval(5);
        connect(&m_timer, &QTimer::timeout, this, [this] { m_ticks.push_back(m_clock.nsecsElapsed()); });
    }
    ~StallMeter() override { stop(); }
    void start()
    {
        m_clock.start();
        m_ticks = {0};
        qApp->installEventFilter(this);
        m_timer.start();
    }
    // The run has ended: the delivery began at the last queued call.
    void markEnd()
    {
        m_deliveryStart = m_lastCall;
        m_end = m_clock.nsecsElapsed();
    }
    void stop()
    {
        m_timer.stop();
        qApp->removeEventFilter(this);
    }
    int ticks() const { return int(m_ticks.size()) - 1; }
    int ticksDuringSearch() const
    {
        return int(std::count_if(m_ticks.begin() + 1, m_ticks.end(), [this](qint64 t) { return t <= m_deliveryStart; }));
    }
    double searchMs() const { return m_deliveryStart / 1e6; }
    // The delivery's own handlers (the views taking the plan), up to the run's end.
    double deliveryMs() const { return (m_end - m_deliveryStart) / 1e6; }
    // The longest the event loop went without a tick before the delivery began.
    double searchStallMs() const
    {
        qint64 longest = 0, last = 0;
        for (qint64 t : m_ticks) {
            if (t > m_deliveryStart)
                break;
            longest = std::max(longest, t - last);
            last = t;
        }
        return std::max(longest, m_deliveryStart - last) / 1e6;
    }
    // The gap that holds the delivery: from the last tick before it to the first after it.
    double deliveryStallMs() const
    {
        qint64 before = 0;
        for (qint64 t : m_ticks) {
            if (t > m_deliveryStart)
                return (t - before) / 1e6;
            before = t;
        }
        return 0;
    }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (event->type() == QEvent::MetaCall)
            m_lastCall = m_clock.nsecsElapsed();
        return QObject::eventFilter(watched, event);
    }

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    std::vector<qint64> m_ticks;
    qint64 m_lastCall = 0, m_deliveryStart = 0, m_end = 0;
};

} // namespace

class TestPlanningWorkflow : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> window()
    {
        auto w = testWindow(m_dir.filePath("s.ini"));
        w->resize(1200, 800);
        return w;
    }
    std::unique_ptr<MainWindow> quickstart()
    {
        auto w = window();
        openQuickstart(*w);
        return w;
    }
    static void waitIdle(MainWindow *w, int timeoutMs = 60000)
    {
        QTRY_VERIFY_WITH_TIMEOUT(!w->planning()->isRunning(), timeoutMs);
    }
    static void useExhaustive(MainWindow *w)
    {
        SearchSettings s = w->document()->search();
        s.planner = "exhaustive";
        s.microBatches = {1, 2, 4, 8, 16};
        // Long (minutes) but under the search estimate's limits: deeper pipelines are refused
        // before they start (issue 13; at 4 stages the time limit of issue 25 refuses it:
        // ~57,000 s estimated), which would end the run at once.
        s.maxStages = 3;
        QVERIFY(w->document()->setSearch(s));
    }

private slots:
    void runDeliversToEveryView()
    {
        auto w = quickstart();
        QSignalSpy progress(w->planning(), &PlanSession::progress);
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        QVERIFY(w->runAction()->isEnabled());
        w->runAction()->trigger();
        QVERIFY(w->planning()->isRunning());
        QVERIFY(!w->runAction()->isEnabled());
        QVERIFY(w->cancelAction()->isEnabled());
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, 60000);
        QVERIFY(progress.count() >= 1);
        double last = -1;
        for (const QList<QVariant> &args : progress) {
            const double f = args.at(0).toDouble();
            QVERIFY(f >= last && f <= 1.0);   // monotone
            last = f;
        }
        const PlanSnapshotPtr s = w->planning()->current();
        QVERIFY(s);
        QVERIFY(s->searched && s->verified);
        QVERIFY(s->report().feasible);
        // The same plan in every view.
        QCOMPARE(w->placementView()->snapshot(), s);
        QCOMPARE(w->memoryView()->snapshot(), s);
        QCOMPARE(w->breakdownView()->snapshot(), s);
        QCOMPARE(w->timelineView()->snapshot(), s);
        QCOMPARE(w->summaryView()->snapshot(), s);
        QVERIFY(!w->planning()->isStale());
        QVERIFY(!w->placementView()->isStale());
        // The plan is what the evaluator says of it on the document's inputs.
        const Report again = evaluate(s->plan(), w->document()->topology(), s->model);
        QCOMPARE(again.iterationTime, s->report().iterationTime);
        QVERIFY(w->runAction()->isEnabled());
        QVERIFY(!w->cancelAction()->isEnabled());
        QVERIFY(w->lastStatus().contains(QStringLiteral("samples/s")));
    }

    void cancelReturnsQuickly()
    {
        auto w = quickstart();
        useExhaustive(w.get());   // 56 devices: far too many plans to finish
        QSignalSpy cancelled(w->planning()->runner(), &PlanRunner::cancelled);
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        w->planning()->run();
        QTest::qWait(300);
        QVERIFY(w->planning()->isRunning());
        QElapsedTimer t;
        t.start();
        w->cancelAction()->trigger();
        QCOMPARE(cancelled.count(), 1);
        QVERIFY(!w->planning()->isRunning());
        QVERIFY(w->runAction()->isEnabled());
        w->planning()->runner()->waitForIdle();   // the worker itself has returned
        const double ms = t.nsecsElapsed() / 1e6;
        qInfo("cancel -> worker returned in %.1f ms", ms);
        QVERIFY2(ms < 100 * testtiming::kTimingSlack, qPrintable(QStringLiteral("cancel took %1 ms").arg(ms)));
        QTest::qWait(50);
        QCOMPARE(changed.count(), 0);   // no late result
    }

    void editedInputsMarkTheResultStale()
    {
        auto w = quickstart();
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        w->planning()->run();
        // An edit before the result is delivered: the result is for the old inputs.
        LinkParams link = w->document()->topology().levels[1].link;
        link.bandwidth *= 0.5;
        QVERIFY(w->document()->setLevelLink(1, link));
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, 60000);
        QVERIFY(w->planning()->isStale());
        QVERIFY(w->placementView()->isStale());
        QVERIFY(w->memoryView()->isStale());
        QVERIFY(w->summaryView()->isStale());
        QVERIFY(w->lastStatus().contains(QStringLiteral("stale")));
        // Re-running clears it.
        w->planning()->run();
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 2, 60000);
        QVERIFY(!w->planning()->isStale());
        QVERIFY(!w->timelineView()->isStale());
        // An edit after a result marks the shown plan stale at once.
        QVERIFY(w->document()->undoStack()->canUndo());
        w->document()->undoStack()->undo();
        QVERIFY(w->planning()->isStale());
        QVERIFY(w->breakdownView()->isStale());
    }

    void latestRequestWins()
    {
        auto w = quickstart();
        QSignalSpy finished(w->planning()->runner(), &PlanRunner::finished);
        const quint64 first = w->planning()->runner()->plan(w->document()->workspace(), 0, "first");
        const quint64 second = w->planning()->runner()->plan(w->document()->workspace(), 0, "second");
        QVERIFY(second > first);
        waitIdle(w.get());
        QTest::qWait(100);
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.at(0).at(0).toULongLong(), second);
    }

    void closeDuringSearch()
    {
        // A saved workspace with an unsaved edit, in a folder of its own: closing during
        // a search cancels the worker at once and writes nothing (the file keeps its bytes,
        // no temporary or recovery file is left), since the user chose Discard.
        QTemporaryDir folder;
        const QString file = folder.filePath("work.nestws.json");
        auto w = quickstart();
        QString error;
        QVERIFY2(w->saveWorkspace(file, &error), qPrintable(error));
        QFile saved(file);
        QVERIFY(saved.open(QIODevice::ReadOnly));
        const QByteArray before = saved.readAll();
        saved.close();
        useExhaustive(w.get());   // the unsaved edit
        w->show();
        w->planning()->run();
        QTest::qWait(200);
        QVERIFY(w->planning()->isRunning());
        QElapsedTimer t;
        t.start();
        QVERIFY(w->close());   // unsaved changes are discarded by the test's answer
        w->planning()->runner()->waitForIdle();
        const double cancelMs = t.nsecsElapsed() / 1e6;
        w.reset();             // the window goes, and the worker with it
        qInfo("close during a search: worker returned after %.1f ms, window destroyed after %.1f ms", cancelMs,
              t.nsecsElapsed() / 1e6);
        QVERIFY2(cancelMs < 100 * testtiming::kTimingSlack, qPrintable(QStringLiteral("cancel on close took %1 ms").arg(cancelMs)));
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QCOMPARE(saved.readAll(), before);
        QCOMPARE(QDir(folder.path()).entryList(QDir::Files | QDir::Hidden | QDir::System),
                 QStringList{"work.nestws.json"});
    }

    void eventLoopStaysResponsive()
    {
        auto w = window();
        auto topo = resolveCluster("paper-spineleaf-1024");
        QVERIFY2(topo.ok(), topo.error().c_str());
        w->newDocument(*topo);
        QVERIFY(w->document()->setModel(ModelSource(Json{{"preset", "gpt3-175b"}})));
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QSignalSpy ended(w->planning(), &PlanSession::runEnded);
        QSignalSpy progress(w->planning(), &PlanSession::progress);
        StallMeter meter;
        // Connected after the window's own slots: runs once the views have taken the plan.
        connect(w->planning(), &PlanSession::runEnded, &meter, [&meter] { meter.markEnd(); });
        meter.start();
        w->planning()->run();
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
        QTest::qWait(30);
        meter.stop();
        QVERIFY(w->planning()->current());
        qInfo("GPT3-175B on 1024 devices: search %.0f ms (%d progress signals, %d timer ticks, longest "
              "event-loop stall %.1f ms), delivery to the views %.0f ms (stall %.1f ms)",
              meter.searchMs(), int(progress.count()), meter.ticksDuringSearch(), meter.searchStallMs(), meter.deliveryMs(),
              meter.deliveryStallMs());
        QVERIFY(meter.ticks() > 3);
        // The event loop ran while the worker searched. A search on the GUI thread would block
        // it from Run to the delivery, and a blocked loop fires a timer's missed timeouts as
        // at most one when it resumes, so two ticks before the delivery are what a blocked
        // loop cannot give. (This search takes 40-100 ms now, with a first stall of up to
        // 15 ms while the worker starts: under a loaded CI run it gave 2 ticks in 37 ms, so
        // more are not guaranteed.)
        QVERIFY2(meter.ticksDuringSearch() >= 2, qPrintable(QStringLiteral("%1 ticks during the search").arg(meter.ticksDuringSearch())));
        // The figures themselves (docs/gui.md) are measurements, not pass marks. What must
        // hold on any machine: the search never blocks the event loop for a large part of
        // its run. A search on the GUI thread would stall for all of it (from Run to the
        // result); the bound is a third of it (at least 100 ms). The delivery is the views'
        // work on the GUI thread, the same however long the search took: it is bounded on
        // its own (a second; scaled under a sanitizer).
        const double bound = std::max(100.0, meter.searchMs() / 3);
        QVERIFY2(meter.searchStallMs() < bound, qPrintable(QStringLiteral("stall %1 ms during a search of %2 ms, bound %3 ms")
                                                               .arg(meter.searchStallMs())
                                                               .arg(meter.searchMs())
                                                               .arg(bound)));
        QVERIFY2(meter.deliveryStallMs() < 1000 * testtiming::kTimingSlack,
                 qPrintable(QStringLiteral("delivery stalled the event loop for %1 ms").arg(meter.deliveryStallMs())));
    }

    void liveModeReplansAfterAnEdit()
    {
        auto w = quickstart();
        w->planning()->setLiveDelayMs(50);
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        // A search's result, not any plan shown: the sample's pinned plan is evaluated and
        // shown first (PlanSession::documentReset), which also ends a run, and it is not the
        // optimum of the priced stack. When that evaluation ended before the live timer
        // fired, a wait on any ended run took the pinned plan for the search's.
        QSignalSpy ended(w->planning(), &PlanSession::runEnded);
        w->liveAction()->trigger();   // on: plans now (no plan yet)
        QVERIFY(w->planning()->isLive());
        QTRY_VERIFY_WITH_TIMEOUT(ended.count() >= 1 && !w->planning()->isRunning() && w->planning()->current() &&
                                     w->planning()->current()->searched,
                                 60000);
        const int shown = static_cast<int>(changed.count());
        const int searches = static_cast<int>(ended.count());
        const double before = w->planning()->current()->report().samplesPerSecond;
        // Slow the spine link by 8x: the plan changes, and the views show the difference.
        LinkParams link = w->document()->topology().levels[2].link;
        link.bandwidth /= 8;
        QElapsedTimer t;
        t.start();
        QVERIFY(w->document()->setLevelLink(2, link));
        QTRY_VERIFY_WITH_TIMEOUT(static_cast<int>(ended.count()) > searches && !w->planning()->isRunning() &&
                                     !w->planning()->isStale() && static_cast<int>(changed.count()) > shown,
                                 60000);
        const int shownAfterEdit = static_cast<int>(changed.count());
        qInfo("live re-plan after a link edit: %.0f ms (debounce 50 ms)", t.nsecsElapsed() / 1e6);
        QVERIFY(!w->planning()->isStale());
        QCOMPARE(w->planning()->previous()->report().samplesPerSecond, before);
        const double after = w->planning()->current()->report().samplesPerSecond;
        // A slower network never makes the best plan faster.
        QVERIFY2(after <= before, qPrintable(QStringLiteral("%1 samples/s after the edit, %2 before")
                                                 .arg(after, 0, 'g', 17)
                                                 .arg(before, 0, 'g', 17)));
        QVERIFY(!w->summaryView()->deltaText().isEmpty());
        // Several quick edits: one re-plan (debounced).
        w->planning()->setLiveDelayMs(300);
        for (int i = 0; i < 4; ++i) {
            link.bandwidth *= 1.5;
            QVERIFY(w->document()->setLevelLink(2, link));
        }
        QTRY_COMPARE_WITH_TIMEOUT(static_cast<int>(changed.count()), shownAfterEdit + 1, 60000);
        QTest::qWait(500);
        QCOMPARE(static_cast<int>(changed.count()), shownAfterEdit + 1);
        // Issue 24, point 3: this re-plan reused the one before (PlanningSession; the first
        // live result may be the quick-start's pinned plan, evaluated, not searched), gives
        // what a search from scratch gives on the same inputs, and the status bar says how
        // long it took.
        {
            const PlanSnapshotPtr live = w->planning()->current();
            QVERIFY(live->replanned);
            const PlanResult scratch =
                NestPlanner().plan(live->topology, live->model, searchOptionsFrom(live->settings, live->model));
            QVERIFY(scratch.found);
            QVERIFY(scratch.plan == live->plan());
            QCOMPARE(scratch.objective, live->objective);
            const auto *label = w->statusBar()->findChild<QLabel *>(QStringLiteral("planLabel"));
            QVERIFY(label);
            QVERIFY2(label->text().contains(QStringLiteral("re-planned in")), qPrintable(label->text()));
            QVERIFY(label->text().contains(searchTimeText(*live)));
        }
        // Dragging a node into another rack (the canvas pushes this command) and raising the
        // spine's oversubscription re-plan too; each result is fresh and shows a difference.
        w->planning()->setLiveDelayMs(50);
        const Topology &topo = w->document()->topology();
        QVERIFY(w->document()->moveNode(groupNamed(topo, "node2"), groupNamed(topo, "rack1")));
        QTRY_COMPARE_WITH_TIMEOUT(static_cast<int>(changed.count()), shownAfterEdit + 2, 60000);
        QVERIFY(!w->planning()->isStale());
        QVERIFY(w->planning()->current()->topology == w->document()->topology());
        link = w->document()->topology().levels[2].link;
        link.oversubscription *= 4;
        QVERIFY(w->document()->setLevelLink(2, link));
        QTRY_COMPARE_WITH_TIMEOUT(static_cast<int>(changed.count()), shownAfterEdit + 3, 60000);
        QVERIFY(!w->summaryView()->deltaText().isEmpty());
        QVERIFY(w->lastStatus().contains(QStringLiteral("vs the previous plan")));
        w->liveAction()->trigger();
        QVERIFY(!w->planning()->isLive());
    }

    void pinnedPlanSurvivesSaveAndOpen()
    {
        auto w = quickstart();
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        const PlanSnapshotPtr s = w->planning()->current();
        const size_t shipped = w->document()->plans().size();   // the sample carries one
        QVERIFY(w->planning()->pinCurrent());
        QCOMPARE(w->document()->plans().size(), shipped + 1);
        QVERIFY(w->document()->plans().back().plan == s->plan());
        QVERIFY(w->document()->plans().back().cluster == w->document()->topology());
        const QString file = m_dir.filePath("pinned.nestws.json");
        QString error;
        QVERIFY2(w->saveWorkspace(file, &error), qPrintable(error));

        auto b = window();
        QVERIFY2(b->openFile(file, &error), qPrintable(error));
        QCOMPARE(b->document()->plans().size(), shipped + 1);
        // Opening shows the last pinned plan, evaluated again: the same iteration time.
        QTRY_VERIFY_WITH_TIMEOUT(b->planning()->current() != nullptr, 60000);
        waitIdle(b.get());
        QVERIFY(b->planning()->current()->plan() == s->plan());
        QCOMPARE(b->planning()->current()->report().iterationTime, s->report().iterationTime);
        QVERIFY(!b->planning()->isStale());
        // Undo of the pin in the first window.
        w->document()->undoStack()->undo();
        QCOMPARE(w->document()->plans().size(), shipped);
    }

    void exportedPlanReopensToTheSameTime()
    {
        auto w = quickstart();
        QString error;
        const QString planFile = m_dir.filePath("plan.json");
        QVERIFY(!w->exportPlan(planFile, &error));   // nothing planned yet
        QVERIFY(error.contains(planFile));
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        const double t0 = w->planning()->current()->report().iterationTime;
        QVERIFY2(w->exportPlan(planFile, &error), qPrintable(error));
        auto loaded = loadPlan(planFile.toStdString());
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        QVERIFY(*loaded == w->planning()->current()->plan());
        // File > Open on a plan: evaluated on the current cluster and model, shown everywhere.
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        QVERIFY2(w->openFile(planFile, &error), qPrintable(error));
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, 60000);
        const PlanSnapshotPtr s = w->planning()->current();
        QCOMPARE(s->planner, std::string("file"));
        QCOMPARE(s->report().iterationTime, t0);
        QCOMPARE(w->memoryView()->snapshot(), s);
        QCOMPARE(w->tabs()->currentIndex(), int(MainWindow::PlacementTab));
        // A plan that does not fit the cluster opens with its reasons, not a crash.
        Plan bad = *loaded;
        bad.stages[0].devices[0][0] = 100000;
        const QString badFile = m_dir.filePath("bad-plan.json");
        QVERIFY(savePlan(badFile.toStdString(), bad).ok());
        QVERIFY2(w->openFile(badFile, &error), qPrintable(error));
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 2, 60000);
        QVERIFY(!w->planning()->current()->report().feasible);
        QVERIFY(!w->planning()->current()->analysis.wellFormed());
    }

    void droppingAPlanFileShowsIt()
    {
        auto w = quickstart();
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        const double t0 = w->planning()->current()->report().iterationTime;
        const QString planFile = m_dir.filePath("dropped-plan.json");
        QString error;
        QVERIFY2(w->exportPlan(planFile, &error), qPrintable(error));
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(planFile)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w.get(), &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w.get(), &drop);
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, 60000);
        QCOMPARE(w->planning()->current()->label, std::string("dropped-plan.json"));
        QCOMPARE(w->planning()->current()->report().iterationTime, t0);
        QCOMPARE(w->document()->fileName(), QString());   // the document itself is unchanged
    }

    void exportsEveryTab()
    {
        auto w = quickstart();
        w->show();
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        // The sample's pinned plan and this one: two plans for the Compare tab.
        QVERIFY(w->planning()->pinCurrent());
        QTRY_VERIFY_WITH_TIMEOUT(!w->isComparing(), 60000);
        const bool havePdfToText = !QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty();
        const QStringList tabs = MainWindow::tabNames();
        for (const QString &tab : tabs) {
            QVERIFY(w->setCurrentTab(tab));
            for (const QString &ext : {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")}) {
                const QString file = m_dir.filePath(tab + QLatin1Char('.') + ext);
                QString error;
                if (tab == QLatin1String("sweep")) {   // no sweep yet: refused with the reason
                    QVERIFY(!w->exportView(file, &error));
                    QVERIFY2(error.contains(file), qPrintable(error));
                    continue;
                }
                QVERIFY2(w->exportView(file, &error), qPrintable(tab + QStringLiteral(": ") + error));
                if (ext == QLatin1String("png")) {
                    QImage image(file);
                    QVERIFY2(!image.isNull() && image.width() > 100, qPrintable(file));
                } else if (ext == QLatin1String("svg")) {
                    QFile f(file);
                    QVERIFY(f.open(QIODevice::ReadOnly));
                    QXmlStreamReader xml(&f);
                    bool sawSvg = false;
                    while (!xml.atEnd())
                        if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("svg"))
                            sawSvg = true;
                    QVERIFY2(!xml.hasError(), qPrintable(file + QStringLiteral(": ") + xml.errorString()));
                    QVERIFY(sawSvg);
                } else if (havePdfToText) {
                    QProcess p;
                    p.start(QStringLiteral("pdftotext"), {file, QStringLiteral("-")});
                    QVERIFY(p.waitForFinished(30000));
                    const QString text = QString::fromUtf8(p.readAllStandardOutput());
                    QVERIFY2(text.trimmed().size() > 10, qPrintable(file + QStringLiteral(": no text")));
                }
            }
        }
        QString error;
        QVERIFY(!w->setCurrentTab(QStringLiteral("nowhere")));
        QVERIFY(!w->exportView(m_dir.filePath("x.bmp"), &error));
        QVERIFY(error.contains(QStringLiteral("x.bmp")));
    }

    void tabScreenshotsDiffer()
    {
        auto w = quickstart();
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        QList<QImage> shots;
        for (int i = 0; i < w->tabs()->count(); ++i) {
            w->tabs()->setCurrentIndex(i);
            QTest::qWait(50);
            shots << w->tabs()->currentWidget()->grab().toImage();
        }
        for (int i = 0; i < shots.size(); ++i)
            for (int j = i + 1; j < shots.size(); ++j)
                QVERIFY2(shots[i] != shots[j], qPrintable(QStringLiteral("tabs %1 and %2 look the same").arg(i).arg(j)));
    }

    void searchPanelEditsAreUndoable()
    {
        auto w = quickstart();
        SearchPanel *panel = w->searchPanel();
        QVERIFY(w->document()->search().allowTp);
        panel->strategyBox(QStringLiteral("tp"))->setChecked(false);
        QVERIFY(!w->document()->search().allowTp);
        QVERIFY(!panel->tpEdit()->isEnabled());
        panel->microBatchEdit()->setText(QStringLiteral("2, 4"));
        emit panel->microBatchEdit()->editingFinished();
        QCOMPARE(w->document()->search().microBatches, (std::vector<int>{2, 4}));
        panel->microBatchEdit()->setText(QStringLiteral("2, x"));
        emit panel->microBatchEdit()->editingFinished();
        QVERIFY(panel->problem().contains(QStringLiteral("'x'")));
        QCOMPARE(w->document()->search().microBatches, (std::vector<int>{2, 4}));   // unchanged
        // A plan with TP off uses tp 1 everywhere, as the settings say.
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        for (const StagePlan &st : w->planning()->current()->plan().stages)
            QCOMPARE(st.tp, 1);
        QVERIFY(w->planning()->current()->plan().microBatch == 2 || w->planning()->current()->plan().microBatch == 4);
        w->document()->undoStack()->undo();
        QVERIFY(w->document()->search().allowTp);
        QVERIFY(panel->strategyBox(QStringLiteral("tp"))->isChecked());
    }

    void planForTargetRestrictsTheSearch()
    {
        // Issue 47: "Plan for: Megatron-LM" saves search.target and plans only what Megatron-LM
        // runs as it is: one tensor width, one ZeRO stage; its export needs no fallback.
        auto w = quickstart();
        SearchPanel *panel = w->searchPanel();
        QCOMPARE(w->document()->search().target, std::string());
        panel->targetBox()->setCurrentIndex(panel->targetBox()->findData(QStringLiteral("megatron")));
        QCOMPARE(w->document()->search().target, std::string("megatron"));
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        const Plan plan = w->planning()->current()->plan();
        for (const StagePlan &st : plan.stages) {
            QCOMPARE(st.tp, plan.stages.front().tp);
            QCOMPARE(st.zero, plan.stages.front().zero);
        }
        ExportRequest request;
        request.plan = plan;
        request.topology = w->planning()->current()->topology;
        request.model = w->planning()->current()->model;
        request.cost = w->planning()->current()->cost;
        auto e = exportPlan(request, ExportFormat::Megatron);
        QVERIFY2(e.ok(), e.ok() ? "" : e.error().c_str());
        QVERIFY2(!e->fellBack(), e->summary().c_str());
        w->document()->undoStack()->undo();
        QCOMPARE(w->document()->search().target, std::string());
        QCOMPARE(panel->targetBox()->currentIndex(), 0);
    }

    void searchPanelEtpWidths()
    {
        // Issue 46: the experts' tensor widths searched (etp_candidates; "tp" = the stage's own).
        auto w = quickstart();
        SearchPanel *panel = w->searchPanel();
        QCOMPARE(panel->etpEdit()->text(), QStringLiteral("tp, 1"));
        panel->etpEdit()->setText(QStringLiteral("1, 2, tp"));
        emit panel->etpEdit()->editingFinished();
        QCOMPARE(w->document()->search().etpCandidates, (std::vector<int>{1, 2, 0}));
        panel->etpEdit()->setText(QStringLiteral("1, x"));
        emit panel->etpEdit()->editingFinished();
        QVERIFY2(panel->problem().contains(QStringLiteral("ETP")), qPrintable(panel->problem()));
        QCOMPARE(w->document()->search().etpCandidates, (std::vector<int>{1, 2, 0}));
        w->document()->undoStack()->undo();
        QCOMPARE(w->document()->search().etpCandidates, (std::vector<int>{0, 1}));
        QCOMPARE(panel->etpEdit()->text(), QStringLiteral("tp, 1"));
    }

    void searchPanelListsAndRecomputeModes()
    {
        // Issue 10, item 4: the interleaving depths, the recompute modes and an explicit CP
        // list reach the document's settings (each edit one undo step) and the plan.
        auto w = quickstart();
        SearchPanel *panel = w->searchPanel();
        const SearchSettings before = w->document()->search();
        QCOMPARE(panel->virtualStagesEdit()->text(), QStringLiteral("2, 3, 4"));
        for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
            QVERIFY(panel->recomputeModeBox(r)->isChecked());

        panel->virtualStagesEdit()->setText(QStringLiteral("3, 5"));
        emit panel->virtualStagesEdit()->editingFinished();
        QCOMPARE(static_cast<const std::vector<int> &>(w->document()->search().virtualStages), (std::vector<int>{3, 5}));
        panel->virtualStagesEdit()->setText(QStringLiteral("1, 3"));   // 1 is not an interleaving depth
        emit panel->virtualStagesEdit()->editingFinished();
        QVERIFY2(panel->problem().contains(QStringLiteral("at least 2")), qPrintable(panel->problem()));
        QCOMPARE(static_cast<const std::vector<int> &>(w->document()->search().virtualStages), (std::vector<int>{3, 5}));
        panel->virtualStagesEdit()->setText(QStringLiteral("3, 5"));
        emit panel->virtualStagesEdit()->editingFinished();
        QVERIFY(panel->problem().isEmpty());

        panel->recomputeModeBox(Recompute::None)->setChecked(false);
        QCOMPARE(w->document()->search().recomputeModes, (std::vector<Recompute>{Recompute::Selective, Recompute::Full}));
        panel->recomputeModeBox(Recompute::Full)->setChecked(false);
        QCOMPARE(w->document()->search().recomputeModes, (std::vector<Recompute>{Recompute::Selective}));
        panel->recomputeModeBox(Recompute::Selective)->setChecked(false);   // none left: refused
        QVERIFY(panel->problem().contains(QStringLiteral("at least one")));
        QCOMPARE(w->document()->search().recomputeModes, (std::vector<Recompute>{Recompute::Selective}));
        panel->recomputeModeBox(Recompute::Selective)->setChecked(true);
        QVERIFY(panel->problem().isEmpty());

        // An edited CP list is searched as given (no minimum of tokens per rank).
        QCOMPARE(w->document()->search().cpMinTokensPerRank, 4096);
        panel->cpEdit()->setText(QStringLiteral("1, 2"));
        emit panel->cpEdit()->editingFinished();
        QCOMPARE(w->document()->search().cpCandidates, (std::vector<int>{1, 2}));
        QCOMPARE(w->document()->search().cpMinTokensPerRank, 0);

        // Recompute off: the mode boxes are disabled and keep their state.
        panel->strategyBox(QStringLiteral("recompute"))->setChecked(false);
        QVERIFY(!panel->recomputeModeBox(Recompute::Selective)->isEnabled());
        QVERIFY(panel->recomputeModeBox(Recompute::Selective)->isChecked());
        panel->strategyBox(QStringLiteral("recompute"))->setChecked(true);

        // The plan honours the settings: selective recompute on every stage.
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        const Plan &plan = w->planning()->current()->plan();
        for (const StagePlan &st : plan.stages) {
            QVERIFY(st.recompute == Recompute::Selective);
            QVERIFY(st.cp == 1 || st.cp == 2);
        }
        if (plan.schedule == Schedule::Interleaved)
            QVERIFY(plan.virtualStages == 3 || plan.virtualStages == 5);

        // Every edit was one undo step: undoing them all restores the settings.
        while (w->document()->undoStack()->canUndo() && !(w->document()->search() == before))
            w->document()->undoStack()->undo();
        QVERIFY(w->document()->search() == before);
        QCOMPARE(panel->virtualStagesEdit()->text(), QStringLiteral("2, 3, 4"));
        QVERIFY(panel->recomputeModeBox(Recompute::None)->isChecked());
    }
    void frameworkChoiceReachesThePlan()
    {
        // Issue 10, item 2: the framework profile is a search setting; the plan is costed
        // under it (the report equals the evaluator's with that profile), and it is undoable.
        auto w = quickstart();
        SearchPanel *panel = w->searchPanel();
        QComboBox *combo = panel->frameworkCombo();
        QCOMPARE(combo->currentData().toString(), QStringLiteral("megatron-core"));
        combo->setCurrentIndex(combo->findData(QStringLiteral("serial")));
        QVERIFY(w->document()->search().framework == Framework::Serial);
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        const PlanSnapshotPtr s = w->planning()->current();
        CostOptions serial;
        serial.framework = Framework::Serial;
        const Report again = evaluate(s->plan(), w->document()->topology(), s->model, serial);
        QCOMPARE(again.iterationTime, s->report().iterationTime);
        const Report mcore = evaluate(s->plan(), w->document()->topology(), s->model);
        QVERIFY(mcore.iterationTime != s->report().iterationTime);  // the choice mattered
        w->document()->undoStack()->undo();
        QVERIFY(w->document()->search().framework == Framework::MegatronCore);
        QCOMPARE(combo->currentData().toString(), QStringLiteral("megatron-core"));
    }
    void pipelineUnitsChoiceReachesThePlan()
    {
        // Issue 23, point 4: what the pipeline split counts is a search setting in the window
        // too; the planner searches with it (the plan carries it) and the edit is undoable.
        auto w = quickstart();
        QComboBox *combo = w->searchPanel()->pipelineUnitsCombo();
        QCOMPARE(combo->count(), 3);
        QCOMPARE(combo->currentData().toString(), QStringLiteral("layers"));
        combo->setCurrentIndex(combo->findData(QStringLiteral("layers+embedding+loss")));
        QVERIFY(w->document()->search().pipelineUnits == PipelineUnits::LayersEmbeddingLoss);
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        QVERIFY(w->planning()->current()->plan().pipelineUnits == PipelineUnits::LayersEmbeddingLoss);
        w->document()->undoStack()->undo();
        QVERIFY(w->document()->search().pipelineUnits == PipelineUnits::Layers);
        QCOMPARE(combo->currentData().toString(), QStringLiteral("layers"));
    }

    void keepBestListsTheGroup()
    {
        // Issue 24, point 4 in the window: "Keep best" K makes Run return the K best distinct
        // plans, listed together under the best with their time above it.
        auto w = quickstart();
        QSpinBox *keep = w->searchPanel()->keepBestBox();
        QVERIFY(keep->isEnabled());
        keep->setValue(3);
        QCOMPARE(w->document()->search().topK, 3);
        w->planning()->run();
        QTRY_VERIFY_WITH_TIMEOUT(w->planning()->current() != nullptr, 60000);
        waitIdle(w.get());
        const PlanSnapshotPtr best = w->planning()->current();
        QCOMPARE(best->rank, 1);
        QCOMPARE(best->groupSize, 3);
        QCOMPARE(static_cast<int>(best->alternatives.size()), 2);
        // The best is the plan the planner returns alone (top 1), independently searched.
        SearchOptions one = searchOptionsFrom(best->settings, best->model);
        one.topK = 1;
        const PlanResult alone = NestPlanner().plan(best->topology, best->model, one);
        QVERIFY(alone.plan == best->plan());
        QCOMPARE(alone.objective, best->objective);
        // The list: the best first, then ranks 2 and 3, each slower by what its own report says.
        PlanLibrary *library = w->planLibrary();
        const int first = library->pinnedCount();
        QVERIFY(library->rowCount() >= first + 3);
        double last = best->report().iterationTime;
        for (int k = 0; k < 3; ++k) {
            const PlanSnapshotPtr s = library->snapshot(first + k);
            QVERIFY(s);
            QCOMPARE(s->rank, k + 1);
            QVERIFY(s->report().feasible);
            QVERIFY(s->report().iterationTime >= last);
            last = s->report().iterationTime;
            const double delta = 100 * (s->report().iterationTime / best->report().iterationTime - 1);
            QVERIFY(std::abs(s->deltaPercent - delta) < 1e-9);
            for (int j = 0; j < k; ++j)
                QVERIFY(!(library->snapshot(first + j)->plan() == s->plan()));
        }
        const QAbstractItemModel *model = w->planList()->model();
        const QString bestName = model->data(model->index(first, PlanListModel::NameColumn)).toString();
        const QString secondName = model->data(model->index(first + 1, PlanListModel::NameColumn)).toString();
        QVERIFY2(bestName.contains(QStringLiteral("best of 3")), qPrintable(bestName));
        const bool sameTime = library->snapshot(first + 1)->deltaPercent == 0;
        QVERIFY2(secondName.contains(QStringLiteral("└")) &&
                     secondName.contains(sameTime ? QStringLiteral("same time") : QStringLiteral("%")),
                 qPrintable(secondName));
        QVERIFY(w->lastStatus().contains(QStringLiteral("3 best distinct plans")));
        // Back to one: a run adds one row.
        const int rows = library->rowCount();
        keep->setValue(1);
        w->planning()->run();
        QTRY_COMPARE_WITH_TIMEOUT(library->rowCount(), rows + 1, 60000);
        QCOMPARE(library->snapshot(first)->groupSize, 0);
    }
};

QTEST_MAIN(TestPlanningWorkflow)
#include "test_planning_workflow.moc"
