// The plan list, Run baselines and the comparison through the window (issue 12): pin /
// unpin / rename / duplicate / delete are undo steps; runs join the list; the baselines
// are pinned and compared with the evaluator's numbers; pinned plans keep their clusters
// through a workspace round trip.
#include "BaselineRunner.h"
#include "WorkspaceDocument.h"
#include "CompareView.h"
#include "MainWindow.h"
#include "PlanLibrary.h"
#include "PlanListView.h"
#include "PlanSession.h"
#include "Settings.h"

#include "ClusterTemplates.h"
#include "Evaluator.h"
#include "PlanBuilder.h"
#include "PlanComparison.h"
#include "PlanIO.h"
#include "Workspace.h"

#include <fstream>

#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "TestWindow.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

class TestPlanList : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> quickstart()
    {
        auto w = testWindow(m_dir.filePath("s.ini"));
        openQuickstart(*w);
        return w;
    }
    static PlanSnapshotPtr runOnce(MainWindow *w)
    {
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        w->planning()->run();
        if (!changed.wait(60000))
            return nullptr;
        return w->planning()->current();
    }

private slots:
    void runsJoinTheListAndPinIsUndoable()
    {
        auto w = quickstart();
        PlanLibrary *lib = w->planLibrary();
        const int pinned = lib->pinnedCount();   // the sample carries one
        QVERIFY(runOnce(w.get()));
        QCOMPARE(lib->rowCount(), pinned + 1);
        QVERIFY(!lib->isPinned(pinned));
        QVERIFY(lib->pin(pinned));
        QCOMPARE(lib->pinnedCount(), pinned + 1);
        QCOMPARE(lib->rowCount(), pinned + 1);      // moved, not copied
        QVERIFY(w->document()->isModified());
        w->document()->undoStack()->undo();         // one step: back to an unpinned run
        QCOMPARE(lib->pinnedCount(), pinned);
        QCOMPARE(lib->rowCount(), pinned + 1);
        w->document()->undoStack()->redo();
        QCOMPARE(lib->pinnedCount(), pinned + 1);
        // Unpin (delete a pinned row) and undo.
        QVERIFY(lib->remove(pinned));
        QCOMPARE(lib->pinnedCount(), pinned);
        w->document()->undoStack()->undo();
        QCOMPARE(lib->pinnedCount(), pinned + 1);
    }

    void runsDoNotLeakIntoTheNextDocument()
    {
        // Issue 49: after New the old run stayed in the Plans dock, and Show painted its plan
        // onto the new cluster.
        auto w = quickstart();
        PlanLibrary *lib = w->planLibrary();
        QVERIFY(runOnce(w.get()));
        QCOMPARE(static_cast<int>(lib->runs().size()), 1);
        const Topology other = clusterPreset("paper-fattree-128").value();
        w->newDocument(other);
        QCOMPARE(static_cast<int>(lib->runs().size()), 0);
        QCOMPARE(lib->rowCount(), lib->pinnedCount());
    }

    void liveModeKeepsOneEntry()
    {
        // Issue 49: live mode added a timestamp-named run per edit; now one entry, "live",
        // always the latest re-plan.
        auto w = quickstart();
        PlanLibrary *lib = w->planLibrary();
        w->planning()->setLiveDelayMs(50);
        QSignalSpy changed(w->planning(), &PlanSession::planChanged);
        w->liveAction()->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1, 60000);
        LinkParams link = w->document()->topology().levels[2].link;
        for (int i = 1; i <= 2; ++i) {
            link.bandwidth /= 2;
            QVERIFY(w->document()->setLevelLink(2, link));
            QTRY_COMPARE_WITH_TIMEOUT(changed.count(), 1 + i, 60000);
        }
        w->liveAction()->trigger();   // off
        QCOMPARE(static_cast<int>(lib->runs().size()), 1);
        QCOMPARE(lib->label(lib->pinnedCount()), QStringLiteral("live"));
        QCOMPARE(lib->runs().front().snapshot->report().iterationTime,
                 w->planning()->current()->report().iterationTime);
    }

    void renameDuplicateDeleteAreUndoable()
    {
        auto w = quickstart();
        PlanLibrary *lib = w->planLibrary();
        QVERIFY(lib->pinnedCount() >= 1);
        const QString before = lib->label(0);
        QVERIFY(lib->rename(0, QStringLiteral("manual layout")));
        QCOMPARE(lib->label(0), QStringLiteral("manual layout"));
        QVERIFY(!lib->rename(0, QStringLiteral("   ")));   // refused: no name
        w->document()->undoStack()->undo();
        QCOMPARE(lib->label(0), before);
        const int n = lib->pinnedCount();
        QVERIFY(lib->duplicate(0));
        QCOMPARE(lib->pinnedCount(), n + 1);
        QCOMPARE(lib->label(1), before + QStringLiteral(" (copy)"));
        QVERIFY(lib->entry(1).plan == lib->entry(0).plan);
        w->document()->undoStack()->undo();
        QCOMPARE(lib->pinnedCount(), n);
        // A run deleted and brought back, even with another run added in between.
        QVERIFY(runOnce(w.get()));
        const int runRow = lib->pinnedCount();
        const quint64 id = lib->runIdAt(runRow);
        QVERIFY(id != 0);
        QVERIFY(lib->remove(runRow));
        QCOMPARE(lib->rowOfRun(id), -1);
        QVERIFY(runOnce(w.get()));
        w->document()->undoStack()->undo();
        QVERIFY(lib->rowOfRun(id) >= 0);
        QCOMPARE(lib->runs().size(), size_t(2));
        // Renaming a run relabels it, undoably.
        const int row = lib->rowOfRun(id);
        QVERIFY(lib->rename(row, QStringLiteral("first try")));
        QCOMPARE(lib->label(lib->rowOfRun(id)), QStringLiteral("first try"));
        w->document()->undoStack()->undo();
        QVERIFY(lib->label(lib->rowOfRun(id)) != QStringLiteral("first try"));
    }

    void baselinesArePinnedAndComparedWithTheEvaluatorsNumbers()
    {
        auto w = quickstart();
        const int pinned = w->planLibrary()->pinnedCount();
        QSignalSpy done(w->baselineRunner(), &BaselineRunner::finished);
        QSignalSpy progress(w->baselineRunner(), &BaselineRunner::progress);
        w->runBaselines();
        QVERIFY(w->baselineRunner()->isRunning());
        QVERIFY(w->planList()->baselinePanel()->isVisibleTo(w->planList()));
        QCOMPARE(w->planList()->baselineBars().size(), 4);
        QVERIFY(done.wait(120000));
        QVERIFY(progress.count() >= 4);   // at least the end of each planner
        const auto plans = done.first().at(0).value<QList<PlanSnapshotPtr>>();
        QCOMPARE(plans.size(), 4);
        QCOMPARE(w->planLibrary()->pinnedCount(), pinned + 4);
        QCOMPARE(w->tabs()->currentIndex(), int(MainWindow::CompareTab));
        // One undo step removes all four.
        w->document()->undoStack()->undo();
        QCOMPARE(w->planLibrary()->pinnedCount(), pinned);
        w->document()->undoStack()->redo();
        QTRY_VERIFY_WITH_TIMEOUT(!w->isComparing(), 60000);
        CompareView *cv = w->compareView();
        QCOMPARE(cv->snapshots().size(), 4);
        // Each column's throughput and iteration time equal evaluate() of the plan on its cluster.
        QTableWidget *table = cv->metricTable();
        for (int c = 0; c < 4; ++c) {
            const PlanSnapshotPtr s = cv->snapshots()[c];
            const SearchOptions options = searchOptionsFrom(s->settings, s->model);
            const Report r = evaluate(s->plan(), s->topology, s->model, options.cost);
            QVERIFY(r.feasible);
            bool found = false;
            for (int row = 0; row < table->rowCount(); ++row) {
                for (int col = 0; col < table->columnCount(); ++col) {
                    QTableWidgetItem *item = table->item(row, col);
                    if (!item || item->data(Qt::UserRole).toDouble() != r.samplesPerSecond)
                        continue;
                    found = true;
                }
            }
            QVERIFY2(found, qPrintable(QStringLiteral("no cell with %1 samples/s").arg(r.samplesPerSecond)));
            QCOMPARE(s->report().iterationTime, r.iterationTime);
        }
    }

    void cancelBaselines()
    {
        auto w = quickstart();
        const int pinned = w->planLibrary()->pinnedCount();
        QSignalSpy cancelled(w->baselineRunner(), &BaselineRunner::cancelled);
        w->runBaselines();
        w->planList()->cancelBaselinesButton()->click();
        QCOMPARE(cancelled.count(), 1);
        QVERIFY(!w->baselineRunner()->isRunning());
        w->baselineRunner()->waitForIdle();
        QCoreApplication::processEvents();
        QCOMPARE(w->planLibrary()->pinnedCount(), pinned);   // nothing pinned
    }

    void pinnedPlansKeepTheirClustersThroughAWorkspace()
    {
        auto w = quickstart();
        QVERIFY(runOnce(w.get()));
        const int row = w->planLibrary()->pinnedCount();
        QVERIFY(w->planLibrary()->pin(row));
        const Topology plannedOn = w->document()->topology();
        // What-if: a faster spine, then re-plan and pin again.
        LinkParams link = plannedOn.levels.back().link;
        link.oversubscription = 1;
        QVERIFY(w->document()->setLevelLink(static_cast<int>(plannedOn.levels.size()) - 1, link));
        QVERIFY(runOnce(w.get()));
        QVERIFY(w->planLibrary()->pin(w->planLibrary()->pinnedCount()));
        const auto plans = w->document()->plans();
        QVERIFY(plans[plans.size() - 2].cluster == plannedOn);
        QVERIFY(!(plans.back().cluster == plannedOn));
        QString error;
        const QString file = m_dir.filePath("whatif.nestws.json");
        QVERIFY2(w->saveWorkspace(file, &error), qPrintable(error));
        auto b = quickstart();
        QVERIFY2(b->openFile(file, &error), qPrintable(error));
        QCOMPARE(b->document()->plans().size(), plans.size());
        for (size_t i = 0; i < plans.size(); ++i) {
            QVERIFY(b->document()->plans()[i].cluster == plans[i].cluster);
            QVERIFY(b->document()->plans()[i].plan == plans[i].plan);
            QCOMPARE(b->document()->plans()[i].searchSeconds, plans[i].searchSeconds);
        }
    }

    void pinnedPlansAreShownWithTheirOwnModel()
    {
        // Issue 25: showPinned took the pin's cluster and settings but the workspace's model.
        // A workspace on llama2-7b with a pin planned for bert-large: the pin is evaluated
        // with bert-large (its layers, its time), and marked as not today's inputs.
        auto w = quickstart();
        const Topology topo = w->document()->topology();
        const ModelSource bertSource = ModelSource::preset("bert-large", 512, 64);
        const Result<ModelProfile> bert = bertSource.profile("bert");
        QVERIFY2(bert.ok(), bert.error().c_str());
        UniformLayout u = uitest::layout(1, 2, 4);
        u.globalBatch = 64;
        u.seqLength = 512;
        const Result<Plan> plan = buildUniformPlan(u, topo, *bert);
        QVERIFY2(plan.ok(), plan.error().c_str());
        const Result<ModelProfile> llama = w->document()->workspace().model.profile("ws");
        QVERIFY(llama.ok());
        QVERIFY(llama->layerCount() != bert->layerCount());

        Json ws = workspaceToJson(w->document()->workspace());
        ws["plans"] = Json::array({Json{{"label", "bert pin"}, {"plan", planToJson(*plan)}, {"model", bertSource.toJson()}}});
        const QString file = m_dir.filePath("bertpin.nestws.json");
        std::ofstream(file.toStdString()) << ws.dump(1);
        QString error;
        QVERIFY2(w->openFile(file, &error), qPrintable(error));
        QTRY_VERIFY(w->planning()->current() != nullptr && !w->planning()->isRunning());
        w->planning()->showPinned(0);
        QTRY_VERIFY(w->planning()->current() != nullptr && w->planning()->current()->label == "bert pin");
        const PlanSnapshotPtr shown = w->planning()->current();
        QCOMPARE(shown->model.name, bert->name);
        QCOMPARE(shown->model.layerCount(), bert->layerCount());
        QVERIFY(shown->report().feasible || !shown->report().reasons.empty());
        const Report direct = evaluate(*plan, topo, *bert, CostOptions{});
        QVERIFY(!shown->report().stages.empty());
        QCOMPARE(shown->report().stages.size(), direct.stages.size());
        QCOMPARE(shown->report().stages.back().endLayer, bert->layerCount());
    }
};

QTEST_MAIN(TestPlanList)
#include "test_plan_list.moc"
