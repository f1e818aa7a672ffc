// The Placement view: device colours, tooltips and legend read from the plan's Report,
// the overlay surviving cluster edits (and turning stale when the plan no longer fits),
// node colour bands on 1024 devices, read-only canvas, and the exports (PDF text through
// pdftotext). Plans come from buildUniformPlan + analyzePlan, the same path the planner's
// snapshots take; every expected value is read from the Report or the Plan, never from the
// view's own code.
#include "WorkspaceDocument.h"
#include "ClusterIO.h"
#include "ClusterTemplates.h"
#include "PlacementOverlay.h"
#include "PlacementView.h"
#include "PlanBuilder.h"
#include "TopologyItems.h"
#include "TopologyScene.h"
#include "TopologyView.h"
#include "Workspace.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include <map>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

QString gbText(double bytes)
{
    return QString::number(bytes / 1e9, 'f', 1) + QStringLiteral(" GB");
}

PlanSnapshotPtr makeSnapshot(const Topology &topo, const ModelProfile &model, UniformLayout layout,
                             const std::string &label)
{
    layout.seqLength = model.seqLength;
    auto plan = buildUniformPlan(layout, topo, model);
    if (!plan)
        qFatal("buildUniformPlan: %s", plan.error().c_str());
    auto snapshot = std::make_shared<PlanSnapshot>();
    snapshot->label = label;
    snapshot->planner = "manual";
    snapshot->topology = topo;
    snapshot->model = model;
    snapshot->analysis = analyzePlan(*plan, topo, model);
    if (!snapshot->analysis.errors.empty())
        qFatal("plan errors: %s", snapshot->analysis.errors.front().c_str());
    return snapshot;
}

// Where the plan puts device d: stage, replica, shard (searched in the Plan itself).
struct Slot {
    int stage = -1, replica = -1, shard = -1;
};
Slot slotOf(const Plan &plan, int device)
{
    for (int s = 0; s < plan.pipelineDepth(); ++s)
        for (size_t r = 0; r < plan.stages[s].devices.size(); ++r)
            for (size_t j = 0; j < plan.stages[s].devices[r].size(); ++j)
                if (plan.stages[s].devices[r][j] == device)
                    return {s, static_cast<int>(r), static_cast<int>(j)};
    return {};
}

// The canvas at `scale` as an image, and the pixel at a scene point.
struct Shot {
    QImage image;
    QRectF source;
    double scale;
    QColor at(const QPointF &scenePos) const
    {
        const QPointF p = (scenePos - source.topLeft()) * scale;
        return image.pixelColor(static_cast<int>(p.x()), static_cast<int>(p.y()));
    }
};
Shot shoot(TopologyScene *scene, double scale)
{
    const QRectF source = scene->sceneRect();
    QImage image((source.size() * scale).toSize(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    QPainter painter(&image);
    scene->render(&painter, QRectF(QPointF(0, 0), QSizeF(image.size())), source, Qt::IgnoreAspectRatio);
    painter.end();
    return {image, source, scale};
}

QPointF deviceCentre(TopologyScene *scene, int device)
{
    const Topology &t = scene->document()->topology();
    const Device &d = t.devices[device];
    const int n = static_cast<int>(t.groups[d.node].devices.size());
    return deviceRect(scene->groupRect(d.node), n, d.indexInNode).center();
}

QString pdfText(const QString &pdf, const QStringList &extra = {})
{
    QProcess p;
    p.start(QStringLiteral("pdftotext"), extra + QStringList{pdf, QStringLiteral("-")});
    if (!p.waitForFinished(30000) || p.exitCode() != 0)
        return {};
    return QString::fromUtf8(p.readAllStandardOutput());
}

bool havePdftotext()
{
    QProcess p;
    p.start(QStringLiteral("pdftotext"), {QStringLiteral("-v")});
    return p.waitForFinished(10000) && p.exitStatus() == QProcess::NormalExit;
}

} // namespace

class TestPlacementView : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    Workspace m_workspace;
    ModelProfile m_model;
    std::unique_ptr<WorkspaceDocument> m_doc;
    std::unique_ptr<PlacementView> m_view;
    PlanSnapshotPtr m_snapshot;   // tp 2, pp 4, dp 4 on the quickstart cluster (32 of 56 devices)

    const Topology &topo() const { return m_doc->topology(); }
    const Report &report() const { return m_snapshot->report(); }

    // Opens a document on `topo` and a shown placement view over it.
    void openView(const Topology &t)
    {
        m_view.reset();
        m_doc = std::make_unique<WorkspaceDocument>();
        Workspace w = m_workspace;
        w.cluster = t;
        m_doc->load(w, QString(), WorkspaceDocument::FileKind::Workspace);
        m_view = std::make_unique<PlacementView>(m_doc.get());
        m_view->resize(1100, 800);
        m_view->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_view.get()));
    }

private slots:
    void initTestCase()
    {
        auto w = loadWorkspace(kQuickstart.toStdString());
        QVERIFY2(w.ok(), w.ok() ? "" : w.error().c_str());
        m_workspace = *w;
        auto model = workspaceModel(m_workspace, "quickstart");
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().c_str());
        m_model = *model;
    }

    void init()
    {
        openView(m_workspace.cluster);
        UniformLayout u;
        u.tp = 2;
        u.pp = 4;
        u.dp = 4;
        u.globalBatch = 512;
        m_snapshot = makeSnapshot(topo(), m_model, u, "manual tp2 pp4 dp4");
        m_view->setSnapshot(m_snapshot);
        QCoreApplication::processEvents();
    }

    void cleanup()
    {
        m_view.reset();
        m_doc.reset();
    }

    void placeholderWithoutPlan()
    {
        m_view->setSnapshot(nullptr);
        QVERIFY(m_view->placeholder()->isVisible());
        QVERIFY(m_view->placeholder()->text().contains("No plan yet"));
        QVERIFY(!m_view->view()->isVisible());
        QVERIFY(m_view->legendEntries().isEmpty());
        QVERIFY(!m_view->deviceColour(0).isValid());
        QVERIFY(!m_view->isStale());
        QString error;
        QVERIFY(!m_view->exportTo(m_dir.filePath("none.png"), &error));
        QVERIFY(error.startsWith(m_dir.filePath("none.png") + ":"));
        m_view->setSnapshot(m_snapshot);
        QVERIFY(!m_view->placeholder()->isVisible());
        QVERIFY(m_view->view()->isVisible());
    }

    void coloursFollowTheReportStages()
    {
        QCOMPARE(report().devicesUsed, 32);
        QCOMPARE(static_cast<int>(report().devices.size()), topo().deviceCount());
        std::map<int, QColor> byStage;
        int coloured = 0;
        const Shot shot = shoot(m_view->scene(), 1.0);
        for (const DeviceReport &r : report().devices) {
            const QColor c = m_view->deviceColour(r.device);
            if (r.stage < 0) {
                QVERIFY2(!c.isValid(), qPrintable(QString::number(r.device)));
                continue;
            }
            ++coloured;
            QVERIFY(c.isValid());
            QCOMPARE(r.stage, slotOf(m_snapshot->plan(), r.device).stage);
            QCOMPARE(c, PlacementOverlay::paletteColour(r.stage, 4));
            // One colour per stage, a different one for each stage.
            if (byStage.count(r.stage))
                QCOMPARE(c, byStage[r.stage]);
            for (const auto &[stage, colour] : byStage)
                QVERIFY(stage == r.stage || colour != c);
            byStage[r.stage] = c;
            // And that is what the canvas paints in the device's square.
            QCOMPARE(shot.at(deviceCentre(m_view->scene(), r.device)), c);
        }
        QCOMPARE(coloured, 32);
        QCOMPARE(static_cast<int>(byStage.size()), 4);
        // An unused device is painted in the unused grey, not a stage colour.
        QCOMPARE(shot.at(deviceCentre(m_view->scene(), 55)), PlacementOverlay::unusedColour());
    }

    void replicaModeColoursByReplica()
    {
        m_view->colourByCombo()->setCurrentIndex(1);
        QCOMPARE(m_view->colourBy(), PlacementView::ByReplica);
        const Shot shot = shoot(m_view->scene(), 1.0);
        for (const DeviceReport &r : report().devices) {
            if (r.stage < 0) {
                QVERIFY(!m_view->deviceColour(r.device).isValid());
                continue;
            }
            QCOMPARE(r.replica, slotOf(m_snapshot->plan(), r.device).replica);
            QCOMPARE(m_view->deviceColour(r.device), PlacementOverlay::paletteColour(r.replica, 4));
            QCOMPARE(shot.at(deviceCentre(m_view->scene(), r.device)), m_view->deviceColour(r.device));
        }
        QCOMPARE(m_view->legendEntries(),
                 (QStringList{"replica 0", "replica 1", "replica 2", "replica 3"}));
        m_view->setColourBy(PlacementView::ByStage);
        QCOMPARE(m_view->colourByCombo()->currentIndex(), 0);
        QCOMPARE(m_view->deviceColour(0), PlacementOverlay::paletteColour(report().devices[0].stage, 4));
    }

    void legendHasOneEntryPerStage()
    {
        const QStringList entries = m_view->legendEntries();
        QCOMPARE(entries.size(), m_snapshot->plan().pipelineDepth());
        for (int s = 0; s < entries.size(); ++s) {
            const StagePlan &st = m_snapshot->plan().stages[s];
            QCOMPARE(entries[s], QStringLiteral("stage %1 (layers %2-%3)").arg(s).arg(st.firstLayer).arg(st.endLayer - 1));
        }
        // The panel shows them (plus the "unused" key).
        QCOMPARE(m_view->legendList()->count(), entries.size() + 1);
        QCOMPARE(m_view->legendList()->item(0)->text(), entries[0]);
        QVERIFY(m_view->legendList()->isVisible());
    }

    void tooltipsComeFromTheReport()
    {
        const Plan &plan = m_snapshot->plan();
        for (const DeviceReport &r : report().devices) {
            const QString tip = m_view->deviceToolTip(r.device);
            const Device &d = topo().devices[r.device];
            const QString node = QString::fromStdString(topo().groups[d.node].name);
            const QString rack = QString::fromStdString(topo().groups[topo().groups[d.node].parent].name);
            QVERIFY2(tip.startsWith(QStringLiteral("device %1 (%2, %3): ").arg(r.device).arg(node, rack)), qPrintable(tip));
            const Slot slot = slotOf(plan, r.device);
            if (slot.stage < 0) {
                QVERIFY2(tip.contains("unused"), qPrintable(tip));
                continue;
            }
            const StagePlan &st = plan.stages[slot.stage];
            const QString expected =
                QStringLiteral("stage %1 (layers %2-%3), replica %4, tp rank %5 / cp rank %6 / ep rank %7, "
                               "memory %8 of %9 (%10 %)")
                    .arg(slot.stage).arg(st.firstLayer).arg(st.endLayer - 1).arg(slot.replica)
                    .arg(slot.shard % st.tp).arg(slot.shard / st.tp).arg(slot.replica % st.ep)
                    .arg(gbText(r.total), gbText(r.capacity))
                    .arg(qRound(100 * r.total / r.capacity));
            QVERIFY2(tip.contains(expected), qPrintable(tip + "\nexpected: " + expected));
            QVERIFY(tip.contains("weights " + gbText(r.weights)));
            QVERIFY(tip.contains("optimizer " + gbText(r.optimizerState)));
            QCOMPARE(tip.contains("OVER CAPACITY"), r.total > r.capacity);
        }
        // tp 2: device 1 is tp rank 1 of its shard pair.
        QVERIFY(m_view->deviceToolTip(1).contains("tp rank 1 / cp rank 0"));
        // The canvas shows the same text over the device.
        const QPointF c = deviceCentre(m_view->scene(), 9);
        QCOMPARE(m_view->scene()->deviceAt(c), 9);
        QCOMPARE(m_view->scene()->toolTipAt(c), m_view->deviceToolTip(9));
    }

    void overCapacityIsMarked()
    {
        // The whole 7B model with its Adam state on one device cannot fit 80 GB.
        UniformLayout u;
        u.globalBatch = 512;
        const PlanSnapshotPtr single = makeSnapshot(topo(), m_model, u, "one device");
        const DeviceReport &r = single->report().devices[0];
        QVERIFY(r.total > r.capacity);
        m_view->setSnapshot(single);
        QVERIFY(m_view->overlay()->isOverCapacity(0));
        QVERIFY(!m_view->overlay()->isOverCapacity(1));   // unused
        QVERIFY(m_view->overlay()->nodeOverCapacity(topo().devices[0].node));
        QVERIFY(!m_view->overlay()->nodeOverCapacity(topo().devices[8].node));
        QVERIFY(m_view->deviceToolTip(0).contains("OVER CAPACITY"));
        // The red outline is painted round the device square (its edge, not its centre).
        const Shot shot = shoot(m_view->scene(), 1.0);
        const QRectF rect = deviceRect(m_view->scene()->groupRect(topo().devices[0].node), 8, 0);
        QCOMPARE(shot.at(QPointF(rect.center().x(), rect.top() + 0.2)), PlacementOverlay::overCapacityColour());
        QVERIFY(shot.at(QPointF(rect.center().x(), rect.top() + 0.2)) !=
                shot.at(deviceCentre(m_view->scene(), 1)));
    }

    void interleavedColoursByPhysicalStage()
    {
        UniformLayout u;
        u.tp = 2;
        u.pp = 4;
        u.dp = 2;
        u.globalBatch = 512;
        u.schedule = Schedule::Interleaved;
        u.virtualStages = 2;
        const PlanSnapshotPtr inter = makeSnapshot(topo(), m_model, u, "interleaved");
        const Plan &plan = inter->plan();
        QCOMPARE(static_cast<int>(plan.stages.size()), 8);
        m_view->setSnapshot(inter);
        QCOMPARE(m_view->legendEntries().size(), 4);
        for (const DeviceReport &r : inter->report().devices) {
            if (r.stage < 0)
                continue;
            const Slot slot = slotOf(plan, r.device);   // physical stage (searched in 0..pp-1)
            QCOMPARE(m_view->deviceColour(r.device), PlacementOverlay::paletteColour(slot.stage, 4));
            const QString tip = m_view->deviceToolTip(r.device);
            for (int k = slot.stage; k < 8; k += 4) {
                const StagePlan &st = plan.stages[k];
                QVERIFY2(tip.contains(QStringLiteral("virtual stage %1, layers %2-%3")
                                          .arg(k).arg(st.firstLayer).arg(st.endLayer - 1)),
                         qPrintable(tip));
            }
        }
        const StagePlan &s1 = plan.stages[1], &s5 = plan.stages[5];
        QCOMPARE(m_view->legendEntries()[1], QStringLiteral("stage 1 (layers %1-%2, %3-%4)")
                                                  .arg(s1.firstLayer).arg(s1.endLayer - 1)
                                                  .arg(s5.firstLayer).arg(s5.endLayer - 1));
    }

    void overlaySurvivesEditsAndUndo()
    {
        const QColor before = m_view->deviceColour(0);
        LinkParams link = topo().levels[1].link;
        link.bandwidth *= 2;
        QVERIFY(m_doc->setLevelLink(1, link));
        // The scene rebuilt its items; the overlay is still applied to the new ones.
        QVERIFY(m_view->scene()->overlay() != nullptr);
        QCOMPARE(m_view->deviceColour(0), before);
        // The plan was made for other link speeds: stale, colours kept, banner up.
        QVERIFY(m_view->isStale());
        QVERIFY(m_view->banner()->isVisible());
        QVERIFY(m_view->banner()->text().startsWith("Stale: the cluster changed since this plan"));
        const Shot stale = shoot(m_view->scene(), 1.0);
        const QColor painted = stale.at(deviceCentre(m_view->scene(), 0));
        QVERIFY(painted != before);   // dimmed / hatched
        QVERIFY(painted != PlacementOverlay::unusedColour());
        // Undo: the cluster is the plan's again, the colours are exact again.
        m_doc->undoStack()->undo();
        QVERIFY(!m_view->isStale());
        QVERIFY(!m_view->banner()->isVisible());
        QCOMPARE(shoot(m_view->scene(), 1.0).at(deviceCentre(m_view->scene(), 0)), before);

        // Moving a node renumbers devices (same count): stale, every device keeps a colour.
        const int node2 = groupNamed(topo(), "node2");
        QVERIFY(m_doc->moveNode(node2, groupNamed(topo(), "rack1")));
        QCOMPARE(topo().deviceCount(), 56);
        QVERIFY(m_view->isStale());
        for (const DeviceReport &r : report().devices)
            QCOMPARE(m_view->deviceColour(r.device).isValid(), r.stage >= 0);
        for (NodeItem *item : {m_view->scene()->nodeItem(groupNamed(topo(), "node0"))})
            QVERIFY(!item->bands().empty());
        m_doc->undoStack()->undo();
        QVERIFY(!m_view->isStale());
    }

    void structuralEditMarksStale()
    {
        QVERIFY(m_doc->removeGroups({groupNamed(topo(), "node6")}));
        QCOMPARE(topo().deviceCount(), 48);
        QVERIFY(m_view->isStale());
        QCOMPARE(m_view->banner()->text(),
                 QStringLiteral("Stale: the cluster changed since this plan (56 → 48 devices); re-run to update"));
        // Colours kept for the devices that still exist; the rest are gone.
        for (int d = 0; d < 48; ++d)
            QCOMPARE(m_view->deviceColour(d).isValid(), report().devices[d].stage >= 0);
        QVERIFY(!m_view->deviceColour(48).isValid());
        QVERIFY(m_view->deviceToolTip(48).isEmpty());
        QVERIFY(m_view->deviceToolTip(0).contains("Stale:"));
        m_doc->undoStack()->undo();
        QVERIFY(!m_view->isStale());
    }

    void setStaleFromOutside()
    {
        QVERIFY(!m_view->isStale());
        QVERIFY(!m_view->banner()->isVisible());
        m_view->setStale(true);
        QVERIFY(m_view->isStale());
        QVERIFY(m_view->banner()->isVisible());
        QCOMPARE(m_view->banner()->text(),
                 QStringLiteral("Stale: the cluster or model changed since this plan; re-run to update"));
        QVERIFY(m_view->deviceColour(0).isValid());
        m_view->setStale(false);
        QVERIFY(!m_view->isStale());
        QVERIFY(!m_view->banner()->isVisible());
    }

    void canvasIsReadOnly()
    {
        QVERIFY(m_view->scene()->isReadOnly());
        QCOMPARE(m_view->view()->dragMode(), QGraphicsView::ScrollHandDrag);
        NodeItem *node = m_view->scene()->nodeItem(groupNamed(topo(), "node0"));
        QVERIFY(!(node->flags() & QGraphicsItem::ItemIsSelectable));
        // A drag of node0 onto rack1 moves nothing.
        const int undoCount = m_doc->undoStack()->count();
        QGraphicsView *v = m_view->view();
        const QPointF from = m_view->scene()->groupRect(groupNamed(topo(), "node0")).topLeft() + QPointF(10, 6);
        const QPointF to = m_view->scene()->dropPoint(groupNamed(topo(), "rack1"));
        QTest::mousePress(v->viewport(), Qt::LeftButton, Qt::NoModifier, v->mapFromScene(from));
        for (int i = 1; i <= 8; ++i)
            QTest::mouseMove(v->viewport(), v->mapFromScene(from + (to - from) * i / 8));
        QTest::mouseRelease(v->viewport(), Qt::LeftButton, Qt::NoModifier, v->mapFromScene(to));
        QCOMPARE(m_doc->undoStack()->count(), undoCount);
        QCOMPARE(topo().groups[groupNamed(topo(), "node0")].parent, groupNamed(topo(), "rack0"));
        // Selecting in the main canvas does not select here.
        m_doc->setSelection({m_doc->uidOf(groupNamed(topo(), "node0"))});
        QVERIFY(m_view->scene()->selectedItems().isEmpty());
    }

    // Issue 25 point 5: after a plan on a small cluster, a plan on a 1,024-device cluster
    // used to open at the small one's zoom, showing a corner; a new diagram is fitted whole.
    void aNewClusterIsFittedWhole()
    {
        const Topology quickstart = topo();
        openView(quickstart);   // the quickstart cluster, fitted to its first plan
        m_view->setSnapshot(m_snapshot);
        QTest::qWait(20);
        auto cluster = resolveCluster("paper-spineleaf-1024");
        QVERIFY(cluster.ok());
        Workspace w = m_workspace;
        w.cluster = *cluster;
        m_doc->load(w, QString(), WorkspaceDocument::FileKind::Workspace);
        UniformLayout u;
        u.tp = 4;
        u.pp = 8;
        u.dp = 16;
        m_view->setSnapshot(makeSnapshot(topo(), m_model, u, "1024"));
        QTest::qWait(20);
        const QRectF shown = m_view->view()->mapToScene(m_view->view()->viewport()->rect()).boundingRect();
        const QRectF diagram = m_view->scene()->diagramRect();
        QVERIFY2(shown.adjusted(-2, -2, 2, 2).contains(diagram),
                 qPrintable(QStringLiteral("shown %1 x %2 at (%3, %4), diagram %5 x %6")
                                .arg(shown.width()).arg(shown.height()).arg(shown.x()).arg(shown.y())
                                .arg(diagram.width()).arg(diagram.height())));
    }

    void bandsOn1024Devices()
    {
        auto cluster = resolveCluster("paper-spineleaf-1024");
        QVERIFY2(cluster.ok(), cluster.ok() ? "" : cluster.error().c_str());
        QCOMPARE(cluster->deviceCount(), 1024);
        openView(*cluster);
        // tp 4 fastest, then pp: every node of 8 holds two stages; 512 of 1024 devices used.
        UniformLayout u;
        u.tp = 4;
        u.pp = 8;
        u.dp = 16;
        u.order = "tp-cp-pp-dp";
        const PlanSnapshotPtr big = makeSnapshot(topo(), m_model, u, "1024");
        QElapsedTimer timer;
        timer.start();
        m_view->setSnapshot(big);
        const qint64 setMs = timer.restart();
        m_view->view()->fitToView();
        const QImage shot = m_view->view()->viewport()->grab().toImage();
        const qint64 paintMs = timer.elapsed();
        QVERIFY(!shot.isNull());
        qInfo("1024 devices: setSnapshot %lld ms, fit + first paint %lld ms", setMs, paintMs);

        int nodes = 0, mixed = 0, unused = 0;
        const auto &devices = big->report().devices;
        for (int g : topo().groupsAtLevel(0)) {
            NodeItem *item = m_view->scene()->nodeItem(g);
            QVERIFY(item);
            // Expected: devices per stage from the Report, stages ascending, unused last.
            std::map<int, int> count;
            for (int d : topo().groups[g].devices)
                ++count[devices[d].stage];
            std::vector<PlacementOverlay::Band> expected;
            for (const auto &[stage, n] : count)
                if (stage >= 0)
                    expected.push_back({stage, n, PlacementOverlay::paletteColour(stage, 8)});
            if (count.count(-1))
                expected.push_back({-1, count[-1], PlacementOverlay::unusedColour()});
            QVERIFY2(item->bands() == expected, qPrintable(QString::fromStdString(topo().groups[g].name)));
            ++nodes;
            mixed += expected.size() == 2 && expected[0].key >= 0 && expected[1].key >= 0 ? 1 : 0;
            unused += expected.size() == 1 && expected[0].key == -1 ? 1 : 0;
        }
        QCOMPARE(nodes, 128);
        QCOMPARE(mixed, 64);    // nodes 0..63: two stages of 4 devices each
        QCOMPARE(unused, 64);   // nodes 64..127: unused

        // Zoomed far out, node boxes are painted as their bands: left half one stage, right
        // half the next. (The last node of the first leaf: the leaf's name covers the top.)
        const int node = topo().groups[topo().groups[topo().groupsAtLevel(0).front()].parent].children.back();
        const auto bands = m_view->scene()->nodeItem(node)->bands();
        QCOMPARE(static_cast<int>(bands.size()), 2);
        QVERIFY(bands[0].colour != bands[1].colour);
        const Shot far = shoot(m_view->scene(), 0.15);
        const QRectF r = m_view->scene()->groupRect(node);
        QCOMPARE(far.at(QPointF(r.left() + r.width() * 0.25, r.center().y())), bands[0].colour);
        QCOMPARE(far.at(QPointF(r.left() + r.width() * 0.75, r.center().y())), bands[1].colour);
    }

    void responsiveOn16384Devices()
    {
        auto cluster = makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 16}, {"racks", 128}});
        QVERIFY2(cluster.ok(), cluster.ok() ? "" : cluster.error().c_str());
        QCOMPARE(cluster->deviceCount(), 16384);
        openView(*cluster);
        UniformLayout u;
        u.tp = 8;
        u.pp = 16;
        u.dp = 128;
        const PlanSnapshotPtr big = makeSnapshot(topo(), m_model, u, "16384");
        QElapsedTimer timer;
        timer.start();
        m_view->setSnapshot(big);
        const qint64 setMs = timer.restart();
        m_view->view()->fitToView();
        const QImage shot = m_view->view()->viewport()->grab().toImage();
        const qint64 paintMs = timer.elapsed();
        QVERIFY(!shot.isNull());
        qInfo("16384 devices: setSnapshot %lld ms, fit + first paint %lld ms", setMs, paintMs);
        QCOMPARE(m_view->legendEntries().size(), 16);
        // All used: every node is one band of one stage (tp 8 = one node per shard group).
        const int last = topo().groupsAtLevel(0).back();
        const auto bands = m_view->scene()->nodeItem(last)->bands();
        QCOMPARE(static_cast<int>(bands.size()), 1);
        QCOMPARE(bands[0].key, big->report().devices[16383].stage);
        QCOMPARE(bands[0].devices, 8);
    }

    void exportsDecode()
    {
        QString error;
        const QString png = m_dir.filePath("placement.png");
        QVERIFY2(m_view->exportTo(png, &error), qPrintable(error));
        const QImage image(png);
        QVERIFY(!image.isNull());
        const QRectF diagram = m_view->scene()->diagramRect();
        QVERIFY(image.width() >= 2 * diagram.width() && image.height() > 2 * diagram.height());
        // The stage colours are in the picture.
        QSet<QRgb> colours;
        for (int y = 0; y < image.height(); y += 2)
            for (int x = 0; x < image.width(); x += 2)
                colours.insert(image.pixel(x, y) & 0xffffff);
        for (int s = 0; s < 4; ++s)
            QVERIFY(colours.contains(PlacementOverlay::paletteColour(s, 4).rgb() & 0xffffff));

        const QString svg = m_dir.filePath("placement.svg");
        QVERIFY2(m_view->exportTo(svg, &error), qPrintable(error));
        const QByteArray text = bytesOf(svg);
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.contains("viewBox"));
        QVERIFY(text.contains("Placement"));
        QVERIFY(text.contains("stage 0 (layers"));
        QVERIFY(text.contains("rack0"));

        QVERIFY(!m_view->exportTo(m_dir.filePath("placement.bmp"), &error));
        QVERIFY(error.startsWith(m_dir.filePath("placement.bmp") + ":"));
        QVERIFY(!m_view->exportTo(QStringLiteral("/nonexistent-dir/p.png"), &error));
        QVERIFY(error.contains("/nonexistent-dir/p.png"));
    }

    void pdfHasRealText()
    {
        QString error;
        const QString pdf = m_dir.filePath("placement.pdf");
        QVERIFY2(m_view->exportTo(pdf, &error), qPrintable(error));
        QVERIFY(bytesOf(pdf).startsWith("%PDF"));
        if (!havePdftotext())
            QSKIP("pdftotext is not installed");
        const QString text = pdfText(pdf);
        QVERIFY2(text.contains(QStringLiteral("Placement — manual tp2 pp4 dp4")), qPrintable(text));
        QVERIFY2(text.contains("stage 0 (layers"), qPrintable(text));
        QVERIFY2(text.contains("stage 3 (layers"), qPrintable(text));
        for (const char *name : {"spine0", "rack0", "rack1", "node0", "node6"})
            QVERIFY2(text.contains(QLatin1String(name)), name);
    }
};

QTEST_MAIN(TestPlacementView)
#include "test_placement_view.moc"
