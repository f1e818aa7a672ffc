// The canvas follows the document by change (TopologyScene::apply): an edit through the
// document's undo stack keeps the items of the groups it did not remove, with their
// selection, and the scene's overlay; it creates the items of new groups, deletes those of
// removed ones and moves the rest, so that after every edit, undo and redo the items match
// the model (one item per group with its uid, index and layout box). Only a new document
// rebuilds everything. On 16384 devices the time of one edit's scene update is printed next
// to a full rebuild's (what every edit cost before) and the document's own, never asserted.
// Cluster: sample_configs/workspaces/quickstart.nestws.json (rack0: node0..2, rack1:
// node3..6; 56 devices).
#include "WorkspaceDocument.h"
#include "ClusterTemplates.h"
#include "PlacementOverlay.h"
#include "PlanBuilder.h"
#include "TopologyItems.h"
#include "TopologyScene.h"
#include "Workspace.h"

#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <QSet>
#include <QUndoStack>
#include <QtTest>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

// Every item is where the model says: one node item per node and one group item and label
// per container, each with its group's uid, index and layout box; the links those of the
// layout. Fails the current test otherwise.
void checkMirrors(const WorkspaceDocument &doc, const TopologyScene &scene)
{
    const Topology &t = doc.topology();
    const TopologyLayout expected = computeLayout(t, scene.layoutAspect());
    int nodes = 0, groups = 0, labels = 0;
    std::multiset<std::tuple<int, int, double, bool>> links;
    for (QGraphicsItem *item : scene.items()) {
        switch (item->type()) {
        case NodeItemType: {
            auto *n = static_cast<NodeItem *>(item);
            QCOMPARE(n->uid(), doc.uidOf(n->group()));
            QCOMPARE(t.groups[n->group()].level, 0);
            QCOMPARE(n->rect(), expected.boxes[n->group()].rect);
            QCOMPARE(scene.nodeItem(n->group()), n);
            QVERIFY(n->toolTip().startsWith(QString::fromStdString(t.groups[n->group()].name) + ":"));
            ++nodes;
            break;
        }
        case GroupItemType: {
            auto *g = static_cast<GroupItem *>(item);
            QCOMPARE(g->uid(), doc.uidOf(g->group()));
            QCOMPARE(g->level(), t.groups[g->group()].level);
            QCOMPARE(g->box().rect, expected.boxes[g->group()].rect);
            QCOMPARE(g->box().switchRect, expected.boxes[g->group()].switchRect);
            QCOMPARE(scene.groupItem(g->group()), g);
            QVERIFY(g->toolTip().startsWith(QString::fromStdString(t.groups[g->group()].name)));
            ++groups;
            break;
        }
        case LabelItemType: {
            auto *l = static_cast<LabelItem *>(item);
            QCOMPARE(l->text(), QString::fromStdString(t.groups[l->group()].name));
            ++labels;
            break;
        }
        case LinkItemType: {
            auto *l = static_cast<LinkItem *>(item);
            links.insert({l->group(), l->level(), l->bandwidth(), l->isOverridden()});
            break;
        }
        default:
            break;
        }
    }
    const int n = static_cast<int>(t.groups.size());
    const int nodeCount = static_cast<int>(std::count_if(t.groups.begin(), t.groups.end(),
                                                         [](const TopoGroup &g) { return g.level == 0; }));
    QCOMPARE(nodes, nodeCount);
    QCOMPARE(groups, n - nodeCount);
    QCOMPARE(labels, n - nodeCount);
    std::multiset<std::tuple<int, int, double, bool>> layoutLinks;
    for (const TopologyLayout::Link &l : expected.links)
        layoutLinks.insert({l.group, l.level, l.bandwidth, l.overridden});
    QVERIFY(links == layoutLinks);
}

// uid -> item of every node and container.
std::map<GroupUid, QGraphicsItem *> itemsByUid(const TopologyScene &scene)
{
    std::map<GroupUid, QGraphicsItem *> out;
    for (QGraphicsItem *item : scene.items()) {
        if (item->type() == NodeItemType)
            out[static_cast<NodeItem *>(item)->uid()] = item;
        else if (item->type() == GroupItemType)
            out[static_cast<GroupItem *>(item)->uid()] = item;
    }
    return out;
}

PlanSnapshotPtr makeSnapshot(const Topology &topo, const ModelProfile &model)
{
    UniformLayout u;
    u.tp = 2;
    u.pp = 4;
    u.dp = 4;
    u.globalBatch = 512;
    u.seqLength = model.seqLength;
    auto plan = buildUniformPlan(u, topo, model);
    if (!plan)
        qFatal("buildUniformPlan: %s", plan.error().c_str());
    auto snapshot = std::make_shared<PlanSnapshot>();
    snapshot->label = "tp2 pp4 dp4";
    snapshot->planner = "manual";
    snapshot->topology = topo;
    snapshot->model = model;
    snapshot->analysis = analyzePlan(*plan, topo, model);
    return snapshot;
}

constexpr int kRepeats = 11;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double least(const std::vector<double> &v)
{
    return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

} // namespace

class TestTopologyUpdates : public QObject {
    Q_OBJECT
private:
    Workspace m_workspace;
    std::unique_ptr<WorkspaceDocument> m_doc;
    std::unique_ptr<TopologyScene> m_scene;

    int group(const std::string &name) const { return groupNamed(m_doc->topology(), name); }
    NodeItem *node(const std::string &name) const { return m_scene->nodeItem(group(name)); }

private slots:
    void initTestCase()
    {
        auto w = loadWorkspace(kQuickstart.toStdString());
        QVERIFY2(w.ok(), w.ok() ? "" : w.error().c_str());
        m_workspace = *w;
    }

    void init()
    {
        m_doc = std::make_unique<WorkspaceDocument>();
        m_doc->load(m_workspace, QString(), WorkspaceDocument::FileKind::Workspace);
        m_scene = std::make_unique<TopologyScene>(m_doc.get());
        QVERIFY(m_scene->lastSync().rebuilt);
        checkMirrors(*m_doc, *m_scene);
    }

    void cleanup()
    {
        m_scene.reset();
        m_doc.reset();
    }

    void renameKeepsEveryItemAndTheSelection()
    {
        NodeItem *node0 = node("node0");
        QVERIFY(node0);
        node0->setSelected(true);   // the user's click: the document follows
        QCOMPARE(m_doc->selection(), QList<GroupUid>{node0->uid()});
        const auto before = itemsByUid(*m_scene);

        QVERIFY(m_doc->setGroupName(group("rack1"), QStringLiteral("rackB")));
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(m_scene->lastSync().created, 0);
        QCOMPARE(m_scene->lastSync().deleted, 0);
        QVERIFY(m_scene->lastSync().updated >= 1);   // rackB's frame and label at least
        QVERIFY(itemsByUid(*m_scene) == before);      // the same objects
        QVERIFY(node0->isSelected());
        QCOMPARE(m_doc->selection(), QList<GroupUid>{node0->uid()});
        checkMirrors(*m_doc, *m_scene);

        m_doc->undoStack()->undo();
        QVERIFY(!m_scene->lastSync().rebuilt);
        QVERIFY(itemsByUid(*m_scene) == before);
        QVERIFY(group("rack1") >= 0);
        QVERIFY(node0->isSelected());
        checkMirrors(*m_doc, *m_scene);
    }

    void moveMovesTheItemAndKeepsTheOverlay()
    {
        auto model = workspaceModel(m_workspace, "quickstart");
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().c_str());
        const auto overlay = std::make_shared<const PlacementOverlay>(makeSnapshot(m_doc->topology(), *model),
                                                                      m_doc->topology(),
                                                                      PlacementOverlay::ColourBy::Stage, false);
        m_scene->setOverlay(overlay);
        NodeItem *node0 = node("node0");
        QVERIFY(!node0->bands().empty());
        node0->setSelected(true);
        const auto before = itemsByUid(*m_scene);

        QVERIFY(m_doc->moveNode(group("node0"), group("rack1")));
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(m_scene->lastSync().created, 0);
        QCOMPARE(m_scene->lastSync().deleted, 0);
        QVERIFY(itemsByUid(*m_scene) == before);
        QCOMPARE(node("node0"), node0);
        QVERIFY(m_scene->groupRect(group("rack1")).contains(node0->rect()));
        QVERIFY(node0->isSelected());
        QCOMPARE(m_doc->selection(), QList<GroupUid>{node0->uid()});
        QCOMPARE(m_scene->overlay(), overlay.get());   // the scene's, untouched by the edit
        checkMirrors(*m_doc, *m_scene);

        m_doc->undoStack()->undo();
        QVERIFY(m_scene->groupRect(group("rack0")).contains(node0->rect()));
        QVERIFY(itemsByUid(*m_scene) == before);
        QVERIFY(node0->isSelected());
        QCOMPARE(m_scene->overlay(), overlay.get());
        QVERIFY(!node0->bands().empty());
        checkMirrors(*m_doc, *m_scene);
        m_doc->undoStack()->redo();
        QVERIFY(m_scene->groupRect(group("rack1")).contains(node0->rect()));
        checkMirrors(*m_doc, *m_scene);
    }

    void addAndRemoveCreateAndDeleteOnlyTheirItems()
    {
        NodeItem *node4 = node("node4");
        node4->setSelected(true);
        const auto before = itemsByUid(*m_scene);
        const int devicesBefore = static_cast<int>(m_doc->topology().deviceCount());

        QVERIFY(m_doc->addNode(group("rack0")));
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(m_scene->lastSync().created, 1);   // the node's item
        QCOMPARE(m_scene->lastSync().deleted, 0);
        QVERIFY(m_doc->topology().deviceCount() > devicesBefore);
        auto after = itemsByUid(*m_scene);
        QCOMPARE(after.size(), before.size() + 1);
        for (const auto &[uid, item] : before)
            QCOMPARE(after.at(uid), item);
        QVERIFY(node4->isSelected());
        checkMirrors(*m_doc, *m_scene);

        // Remove rack1 with its four nodes: their items go, node4's selection with them.
        const GroupUid rack1 = m_doc->uidOf(group("rack1"));
        const int itemsBefore = static_cast<int>(m_scene->items().size());
        QVERIFY(m_doc->removeGroups({group("rack1")}));
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(m_scene->lastSync().created, 0);
        const int removed = itemsBefore - static_cast<int>(m_scene->items().size());
        QVERIFY(removed >= 1 + 4 + 1);   // its frame, its nodes, its label (and links)
        QCOMPARE(m_scene->lastSync().deleted, removed);
        QVERIFY(m_doc->groupOf(rack1) < 0);
        QVERIFY(m_doc->selection().isEmpty());
        QVERIFY(m_scene->selectedItems().isEmpty());
        checkMirrors(*m_doc, *m_scene);

        m_doc->undoStack()->undo();   // back: new items for the restored groups
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(m_scene->lastSync().created, removed);
        checkMirrors(*m_doc, *m_scene);
        m_doc->undoStack()->undo();   // the added node goes
        QCOMPARE(m_scene->lastSync().deleted, 1);
        checkMirrors(*m_doc, *m_scene);
        QCOMPARE(static_cast<int>(m_doc->topology().deviceCount()), devicesBefore);
    }

    void deviceCountAndLinkEditsResizeAndRedraw()
    {
        const int n = group("node2");
        const QRectF before = m_scene->groupRect(n);
        NodeItem *item = node("node2");
        const Topology &t = m_doc->topology();
        const DeviceSpec type = t.deviceTypes[t.groups[n].deviceType];
        QVERIFY(m_doc->setNodeDevices(n, static_cast<int>(t.groups[n].devices.size()) + 8, type));
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(node("node2"), item);
        QVERIFY(item->rect() != before);
        checkMirrors(*m_doc, *m_scene);

        LinkParams link = m_doc->topology().levels[1].link;
        link.bandwidth *= 4;
        QVERIFY(m_doc->setLevelLink(1, link));
        QVERIFY(!m_scene->lastSync().rebuilt);
        QCOMPARE(m_scene->lastSync().created, 0);
        checkMirrors(*m_doc, *m_scene);   // the links carry the new bandwidth

        QVERIFY(m_doc->setGroupOverride(group("rack0"), link));
        QVERIFY(!m_scene->lastSync().rebuilt);
        checkMirrors(*m_doc, *m_scene);
        QVERIFY(m_scene->groupItem(group("rack0"))->toolTip().contains("own link"));

        QVERIFY(m_doc->setClusterName(QStringLiteral("renamed")));
        QVERIFY(!m_scene->lastSync().rebuilt);
        checkMirrors(*m_doc, *m_scene);

        while (m_doc->undoStack()->canUndo()) {
            m_doc->undoStack()->undo();
            checkMirrors(*m_doc, *m_scene);
        }
        QCOMPARE(node("node2"), item);
        QCOMPARE(m_scene->groupRect(n), before);
    }

    void updatedSceneDrawsAsAFreshOne()
    {
        // After a run of edits the updated scene paints exactly what a scene built from the
        // document paints (the same items, boxes, texts and links).
        QVERIFY(m_doc->moveNode(group("node0"), group("rack1")));
        QVERIFY(m_doc->addNode(group("rack0")));
        QVERIFY(m_doc->setGroupName(group("rack1"), QStringLiteral("rack-one")));
        const int n = group("node4");
        const DeviceSpec type = m_doc->topology().deviceTypes[m_doc->topology().groups[n].deviceType];
        QVERIFY(m_doc->setNodeDevices(n, 4, type));
        QVERIFY(m_doc->removeGroups({group("node5")}));
        m_doc->undoStack()->undo();
        QVERIFY(!m_scene->lastSync().rebuilt);
        checkMirrors(*m_doc, *m_scene);

        TopologyScene fresh(m_doc.get());
        QCOMPARE(fresh.diagramRect(), m_scene->diagramRect());
        const auto render = [](TopologyScene &scene) {
            QImage image(900, 700, QImage::Format_ARGB32_Premultiplied);
            image.fill(Qt::white);
            QPainter painter(&image);
            scene.renderDiagram(&painter, QRectF(0, 0, 900, 700));
            return image;
        };
        const QImage updated = render(*m_scene);
        QImage blank(updated.size(), updated.format());
        blank.fill(Qt::white);
        QVERIFY(updated != blank);
        QVERIFY(updated == render(fresh));
    }

    void aNewDocumentRebuilds()
    {
        m_doc->load(m_workspace, QString(), WorkspaceDocument::FileKind::Workspace);
        QVERIFY(m_scene->lastSync().rebuilt);
        checkMirrors(*m_doc, *m_scene);
    }

    void sceneUpdateOn16384Devices()
    {
        const Result<Topology> t = makeCluster("superpod", {{"sus", 64}});
        QVERIFY2(t.ok(), t.ok() ? "" : t.error().c_str());
        QCOMPARE(t->deviceCount(), 16384);
        Workspace w = m_workspace;
        w.cluster = *t;
        m_doc->load(w, QString(), WorkspaceDocument::FileKind::Workspace);
        checkMirrors(*m_doc, *m_scene);
        const int items = static_cast<int>(m_scene->items().size());

        std::vector<double> rebuild, layout, rename, move;
        QElapsedTimer timer;
        const Topology &topo = m_doc->topology();
        int someNode = -1, otherRack = -1;
        for (int g = 0; g < static_cast<int>(topo.groups.size()); ++g) {
            if (topo.groups[g].level == 0 && someNode < 0)
                someNode = g;
            if (topo.groups[g].level == 1 && someNode >= 0 && g != topo.groups[someNode].parent)
                otherRack = g;
        }
        QVERIFY(someNode >= 0 && otherRack >= 0);
        const GroupUid moved = m_doc->uidOf(someNode);
        const int homeRack = topo.groups[someNode].parent;
        const GroupUid home = m_doc->uidOf(homeRack);
        const GroupUid away = m_doc->uidOf(otherRack);
        for (int i = 0; i < kRepeats; ++i) {
            timer.start();
            m_scene->rebuild();
            rebuild.push_back(timer.nsecsElapsed() / 1e6);
            timer.start();
            const TopologyLayout l = computeLayout(m_doc->topology(), m_scene->layoutAspect());
            layout.push_back(timer.nsecsElapsed() / 1e6);
            QVERIFY(!l.boxes.empty());
            timer.start();
            QVERIFY(m_doc->setGroupName(m_doc->groupOf(away), QStringLiteral("renamed-%1").arg(i)));
            rename.push_back(timer.nsecsElapsed() / 1e6);
            QVERIFY(!m_scene->lastSync().rebuilt);
            timer.start();
            QVERIFY(m_doc->moveNode(m_doc->groupOf(moved), m_doc->groupOf(i % 2 == 0 ? away : home)));
            move.push_back(timer.nsecsElapsed() / 1e6);
            QVERIFY(!m_scene->lastSync().rebuilt);
        }
        checkMirrors(*m_doc, *m_scene);
        // The same edits on a document no scene follows: what the edit costs without the canvas.
        WorkspaceDocument bare;
        bare.load(w, QString(), WorkspaceDocument::FileKind::Workspace);
        const GroupUid bareMoved = bare.uidOf(someNode), bareHome = bare.uidOf(homeRack), bareAway = bare.uidOf(otherRack);
        std::vector<double> bareRename, bareMove;
        for (int i = 0; i < kRepeats; ++i) {
            timer.start();
            QVERIFY(bare.setGroupName(bare.groupOf(bareAway), QStringLiteral("renamed-%1").arg(i)));
            bareRename.push_back(timer.nsecsElapsed() / 1e6);
            timer.start();
            QVERIFY(bare.moveNode(bare.groupOf(bareMoved), bare.groupOf(i % 2 == 0 ? bareAway : bareHome)));
            bareMove.push_back(timer.nsecsElapsed() / 1e6);
        }
        qInfo("16384 devices, the document alone: rename a rack %.1f ms (min %.1f), move a node %.1f ms (min %.1f); "
              "medians of %d",
              median(bareRename), least(bareRename), median(bareMove), least(bareMove), kRepeats);
        qInfo("16384 devices, %d items: full rebuild %.1f ms (min %.1f; layout alone %.1f ms); one edit with its "
              "scene update: rename a rack %.1f ms (min %.1f), move a node %.1f ms (min %.1f); medians of %d; "
              "the last move updated %d items",
              items, median(rebuild), least(rebuild), median(layout), median(rename), least(rename), median(move),
              least(move), kRepeats, m_scene->lastSync().updated);

        // Undo and redo update the canvas before they return, with no event processed in
        // between (issue 25 saw the canvas lag behind the tree after a Redo once): the moved
        // node's item is inside its rack's box at once, and the scene mirrors the tree.
        for (int step = 0; step < 2; ++step) {
            if (step == 0)
                m_doc->undoStack()->undo();
            else
                m_doc->undoStack()->redo();
            const int node = m_doc->groupOf(moved);
            const int rack = m_doc->topology().groups[node].parent;
            QVERIFY(m_scene->groupRect(rack).contains(m_scene->groupRect(node)));
            QVERIFY(!m_scene->lastSync().rebuilt);
        }
        checkMirrors(*m_doc, *m_scene);
    }
};

QTEST_MAIN(TestTopologyUpdates)
#include "test_topology_updates.moc"
