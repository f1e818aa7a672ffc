#include "TopologyScene.h"

#include "WorkspaceDocument.h"
#include "PlacementOverlay.h"
#include "TopologyItems.h"

#include <QApplication>
#include <QGraphicsSceneHelpEvent>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <utility>

namespace nest::ui {

TopologyScene::TopologyScene(WorkspaceDocument *document, QObject *parent)
    : QGraphicsScene(parent)
    , m_document(document)
{
    setBackgroundBrush(QColor(0xfd, 0xfd, 0xfe));
    // The typed signals come first and say what changed; clusterChanged comes after each.
    connect(document, &WorkspaceDocument::clusterReset, this, [this] { m_pendingReset = true; });
    connect(document, &WorkspaceDocument::structureChanged, this,
            [this] { m_pending = ClusterChange{ClusterChange::Structure, -1}; });
    connect(document, &WorkspaceDocument::groupChanged, this,
            [this](int group) { m_pending = ClusterChange{ClusterChange::Group, group}; });
    connect(document, &WorkspaceDocument::levelChanged, this,
            [this](int level) { m_pending = ClusterChange{ClusterChange::Level, level}; });
    connect(document, &WorkspaceDocument::clusterChanged, this, &TopologyScene::clusterChanged);
    connect(document, &WorkspaceDocument::selectionChanged, this,
            &TopologyScene::syncSelectionFromDocument);
    connect(this, &QGraphicsScene::selectionChanged, this,
            &TopologyScene::syncSelectionToDocument);
    rebuild();
}

TopologyScene::~TopologyScene()
{
    // Deleting the items changes the selection: do not report that to the document.
    m_syncing = true;
    disconnect(this, &QGraphicsScene::selectionChanged, this, &TopologyScene::syncSelectionToDocument);
    clear();
}

void TopologyScene::rebuild()
{
    const bool wasSyncing = m_syncing;
    m_syncing = true;
    m_drag = {};
    m_highlighted = nullptr;
    clear();
    m_nodes.clear();
    m_groups.clear();
    m_labels.clear();
    m_links.clear();
    m_lastSync = {true, 0, 0, 0};
    const Topology &t = m_document->topology();
    m_layout = computeLayout(t, m_aspect);
    for (const auto &link : m_layout.links) {
        m_links.push_back(new LinkItem(this, link));
        addItem(m_links.back());
    }
    for (int g = 0; g < static_cast<int>(m_layout.boxes.size()); ++g) {
        const auto &box = m_layout.boxes[g];
        if (box.group < 0)
            continue;
        const GroupUid uid = m_document->uidOf(g);
        if (t.groups[g].level == 0) {
            auto *item = new NodeItem(this, g, uid, box.rect);
            addItem(item);
            m_nodes.insert(g, item);
        } else {
            auto *item = new GroupItem(this, g, uid, box);
            addItem(item);
            m_groups.insert(g, item);
            auto *label = new LabelItem(this, g, box);
            addItem(label);
            m_labels.insert(uid, label);
        }
    }
    m_lastSync.created = static_cast<int>(m_links.size() + m_nodes.size() + 2 * m_groups.size());
    const QRectF r = m_layout.bounds.adjusted(-40, -40, 40, 40);
    setSceneRect(r.isEmpty() ? QRectF(0, 0, 400, 300) : r);
    m_syncing = wasSyncing;
    syncSelectionFromDocument();
}

namespace {

// Whose texts (name, device counts, link values, tooltips) may read differently. A
// group's change shows in it and in its ancestors' device counts and block lines; a
// structural edit changes the counts of the containers it touched (all are refreshed:
// a few hundred at most); a level's name or link and the cluster's name reach everyone.
std::vector<char> groupsToRefresh(const ClusterChange &change, const Topology &t)
{
    const int n = static_cast<int>(t.groups.size());
    std::vector<char> refresh(static_cast<size_t>(n), 0);
    switch (change.kind) {
    case ClusterChange::Group:
        for (int g = change.index; g >= 0 && g < n; g = t.groups[g].parent)
            refresh[static_cast<size_t>(g)] = 1;
        break;
    case ClusterChange::Structure:
        for (int g = 0; g < n; ++g)
            refresh[static_cast<size_t>(g)] = t.groups[g].level > 0;
        break;
    case ClusterChange::Level:
    case ClusterChange::Cluster:
        std::fill(refresh.begin(), refresh.end(), 1);
        break;
    }
    return refresh;
}

} // namespace

void TopologyScene::clusterChanged()
{
    const std::optional<ClusterChange> change = std::exchange(m_pending, std::nullopt);
    if (std::exchange(m_pendingReset, false))
        return rebuild();   // a new document: no item has anything to keep
    // Without a typed signal (the cluster's name): everything may read differently.
    apply(change.value_or(ClusterChange{ClusterChange::Cluster, -1}));
}

void TopologyScene::apply(const ClusterChange &change)
{
    const bool wasSyncing = m_syncing;
    m_syncing = true;   // deleting a selected item is no selection change of the user's
    m_drag = {};
    clearDropHighlight();
    m_lastSync = {};
    const Topology &t = m_document->topology();
    m_layout = computeLayout(t, m_aspect);
    syncGroupItems(groupsToRefresh(change, t));
    syncLinkItems();
    const QRectF r = m_layout.bounds.adjusted(-40, -40, 40, 40);
    setSceneRect(r.isEmpty() ? QRectF(0, 0, 400, 300) : r);
    m_syncing = wasSyncing;
    syncSelectionFromDocument();
}

// Every group's item (node, or group box and label) kept by uid and synced to its new box,
// `refresh` saying whose texts to redraw; items of new groups created, of gone ones deleted.
void TopologyScene::syncGroupItems(const std::vector<char> &refresh)
{
    const Topology &t = m_document->topology();
    const int n = static_cast<int>(t.groups.size());
    // The items as they were, by uid: taken out as their groups are found again.
    QHash<GroupUid, NodeItem *> oldNodes;
    for (NodeItem *item : std::as_const(m_nodes))
        oldNodes.insert(item->uid(), item);
    QHash<GroupUid, GroupItem *> oldGroups;
    for (GroupItem *item : std::as_const(m_groups))
        oldGroups.insert(item->uid(), item);
    QHash<GroupUid, LabelItem *> oldLabels = std::exchange(m_labels, {});
    m_nodes.clear();
    m_groups.clear();

    for (int g = 0; g < static_cast<int>(m_layout.boxes.size()) && g < n; ++g) {
        const auto &box = m_layout.boxes[g];
        if (box.group < 0)
            continue;
        const GroupUid uid = m_document->uidOf(g);
        const bool fresh = refresh[static_cast<size_t>(g)] != 0;
        if (t.groups[g].level == 0) {
            NodeItem *item = oldNodes.take(uid);
            if (item) {
                m_lastSync.updated += item->sync(g, box.rect, fresh) ? 1 : 0;
            } else {
                item = new NodeItem(this, g, uid, box.rect);
                addItem(item);
                ++m_lastSync.created;
            }
            m_nodes.insert(g, item);
            continue;
        }
        GroupItem *item = oldGroups.take(uid);
        if (item) {
            m_lastSync.updated += item->sync(g, box, fresh) ? 1 : 0;
        } else {
            item = new GroupItem(this, g, uid, box);
            addItem(item);
            ++m_lastSync.created;
        }
        m_groups.insert(g, item);
        LabelItem *label = oldLabels.take(uid);
        if (label) {
            m_lastSync.updated += label->sync(g, box, fresh) ? 1 : 0;
        } else {
            label = new LabelItem(this, g, box);
            addItem(label);
            ++m_lastSync.created;
        }
        m_labels.insert(uid, label);
    }
    // The groups that are gone.
    for (NodeItem *item : std::as_const(oldNodes))
        dropItem(item);
    for (GroupItem *item : std::as_const(oldGroups))
        dropItem(item);
    for (LabelItem *item : std::as_const(oldLabels))
        dropItem(item);
}

// Links have no identity of their own (one per switch, in layout order): reused in order.
void TopologyScene::syncLinkItems()
{
    const size_t links = m_layout.links.size();
    for (size_t i = 0; i < std::min(links, m_links.size()); ++i)
        m_lastSync.updated += m_links[i]->sync(m_layout.links[i]) ? 1 : 0;
    while (m_links.size() > links) {
        dropItem(m_links.back());
        m_links.pop_back();
    }
    for (size_t i = m_links.size(); i < links; ++i) {
        m_links.push_back(new LinkItem(this, m_layout.links[i]));
        addItem(m_links.back());
        ++m_lastSync.created;
    }
}

void TopologyScene::dropItem(QGraphicsItem *item)
{
    removeItem(item);
    delete item;
    ++m_lastSync.deleted;
}

void TopologyScene::setLayoutAspect(double aspect)
{
    if (aspect == m_aspect)
        return;
    m_aspect = aspect;
    const TopologyLayout next = computeLayout(m_document->topology(), aspect);
    if (next.rackColumns != m_layout.rackColumns || next.rootPerRow != m_layout.rootPerRow)
        rebuild();
}

bool TopologyScene::isCollapsed(int group, double lod) const
{
    const Topology &t = m_document->topology();
    if (m_overlay || group < 0 || group >= static_cast<int>(t.groups.size()) || group == t.root ||
        group >= static_cast<int>(m_layout.boxes.size()))
        return false;
    const TopoGroup &g = t.groups[group];
    if (g.level == 0)
        return false;
    if (g.level == 1)
        return lod * layout::kDevice < 5;   // its nodes are folded glyphs
    // A pod: collapsed when its smallest child could not carry a readable label.
    for (int c : g.children) {
        const QRectF &r = m_layout.boxes[c].rect;
        if (r.height() * lod < 40 || r.width() * lod < 50)
            return true;
    }
    return false;
}

bool TopologyScene::isHidden(int group, double lod) const
{
    const Topology &t = m_document->topology();
    if (m_overlay || group < 0 || group >= static_cast<int>(t.groups.size()))
        return false;
    for (int p = t.groups[group].parent; p >= 0 && p != t.root; p = t.groups[p].parent)
        if (isCollapsed(p, lod))
            return true;
    return false;
}

void TopologyScene::setReadOnly(bool readOnly)
{
    if (m_readOnly == readOnly)
        return;
    m_readOnly = readOnly;
    rebuild();
}

void TopologyScene::setOverlay(std::shared_ptr<const PlacementOverlay> overlay)
{
    m_overlay = std::move(overlay);
    update();
}

int TopologyScene::deviceAt(const QPointF &scenePos) const
{
    const Topology &t = m_document->topology();
    for (QGraphicsItem *item : items(scenePos)) {
        if (item->type() != NodeItemType)
            continue;
        const auto *node = static_cast<const NodeItem *>(item);
        const int i = node->deviceAt(node->mapFromScene(scenePos));
        const std::vector<int> &ids = t.groups[node->group()].devices;
        return i >= 0 && i < static_cast<int>(ids.size()) ? ids[i] : -1;
    }
    return -1;
}

QString TopologyScene::toolTipAt(const QPointF &scenePos) const
{
    if (!m_overlay)
        return {};
    const int device = deviceAt(scenePos);
    return device >= 0 ? m_overlay->deviceToolTip(device) : QString();
}

void TopologyScene::helpEvent(QGraphicsSceneHelpEvent *event)
{
    const QString text = toolTipAt(event->scenePos());
    if (text.isEmpty()) {
        QGraphicsScene::helpEvent(event);
        return;
    }
    QToolTip::showText(event->screenPos(), text, event->widget());
    event->setAccepted(true);
}

QRectF TopologyScene::groupRect(int group) const
{
    if (group < 0 || group >= static_cast<int>(m_layout.boxes.size()))
        return {};
    return m_layout.boxes[group].rect;
}

NodeItem *TopologyScene::nodeItem(int group) const
{
    return m_nodes.value(group, nullptr);
}

GroupItem *TopologyScene::groupItem(int group) const
{
    return m_groups.value(group, nullptr);
}

QPointF TopologyScene::dropPoint(int rack) const
{
    if (rack < 0 || rack >= static_cast<int>(m_layout.boxes.size()))
        return {};
    return m_layout.boxes[rack].dropSlot.center();
}

QRectF TopologyScene::diagramRect() const
{
    return m_layout.bounds.adjusted(-20, -20, 20, 20);
}

void TopologyScene::renderDiagram(QPainter *painter, const QRectF &target)
{
    m_printing = true;
    render(painter, target, diagramRect(), Qt::KeepAspectRatio);
    m_printing = false;
}

void TopologyScene::syncSelectionFromDocument()
{
    if (m_syncing || m_readOnly)
        return;
    m_syncing = true;
    const QList<GroupUid> &sel = m_document->selection();
    for (NodeItem *item : std::as_const(m_nodes))
        item->setSelected(sel.contains(item->uid()));
    for (GroupItem *item : std::as_const(m_groups))
        item->setSelected(sel.contains(item->uid()));
    m_syncing = false;
}

void TopologyScene::syncSelectionToDocument()
{
    if (m_syncing || m_readOnly)
        return;
    m_syncing = true;
    QList<GroupUid> uids;
    for (QGraphicsItem *item : selectedItems()) {
        if (item->type() == NodeItemType)
            uids.append(static_cast<NodeItem *>(item)->uid());
        else if (item->type() == GroupItemType)
            uids.append(static_cast<GroupItem *>(item)->uid());
    }
    m_document->setSelection(uids);
    m_syncing = false;
}

void TopologyScene::mousePressEvent(QGraphicsSceneMouseEvent *event)
{
    QGraphicsScene::mousePressEvent(event);
    m_drag = {};
    if (event->button() != Qt::LeftButton || m_readOnly)
        return;
    for (QGraphicsItem *item : items(event->scenePos())) {
        if (item->type() == NodeItemType) {
            auto *node = static_cast<NodeItem *>(item);
            m_drag.item = node;
            m_drag.node = node->group();
            m_drag.items = {node};
            // Grabbing one of the selected nodes drags them all.
            if (node->isSelected())
                for (QGraphicsItem *other : selectedItems())
                    if (other != node && other->type() == NodeItemType)
                        m_drag.items.append(static_cast<NodeItem *>(other));
            m_drag.pressScenePos = event->scenePos();
            break;
        }
        if (item->type() == GroupItemType)
            break;
    }
}

int TopologyScene::dropTarget(const QPointF &scenePos, int node, QString *reason) const
{
    const Topology &t = m_document->topology();
    const QString rackName = t.levelCount() > 1 ? QString::fromStdString(t.levels[1].name)
                                                : tr("rack");
    const auto intoRack = [&](int g) {
        bool allThere = true;
        for (NodeItem *dragged : m_drag.items)
            allThere = allThere && t.groups[dragged->group()].parent == g;
        if (m_drag.items.isEmpty() ? t.groups[node].parent == g : allThere) {
            *reason = tr("%1 is already in %2")
                          .arg(QString::fromStdString(t.groups[node].name), QString::fromStdString(t.groups[g].name));
            return -1;
        }
        return g;
    };
    for (QGraphicsItem *item : items(scenePos)) {
        if (item->type() == LinkItemType ||
            (item->type() == NodeItemType && m_drag.items.contains(static_cast<NodeItem *>(item))))
            continue;
        if (item->type() == NodeItemType) {
            // Dropped on (or beside, overlapping) a node of a rack: into that rack, as when
            // it lands in the rack's free slot.
            const int parent = t.groups[static_cast<NodeItem *>(item)->group()].parent;
            if (parent >= 0 && t.groups[parent].level == 1)
                return intoRack(parent);
            *reason = tr("drop the node on a %1").arg(rackName);
            return -1;
        }
        if (item->type() == GroupItemType) {
            auto *group = static_cast<GroupItem *>(item);
            const int g = group->group();
            if (group->level() != 1) {
                *reason = tr("nodes can only be dropped on a %1, not on %2 (%3)")
                              .arg(rackName, QString::fromStdString(t.groups[g].name),
                                   QString::fromStdString(t.levels[group->level()].name));
                return -1;
            }
            return intoRack(g);
        }
    }
    *reason = tr("dropped on empty space: drop the node on a %1").arg(rackName);
    return -1;
}

void TopologyScene::clearDropHighlight()
{
    if (m_highlighted)
        m_highlighted->setDropHighlight(0);
    m_highlighted = nullptr;
}

void TopologyScene::mouseMoveEvent(QGraphicsSceneMouseEvent *event)
{
    if (!m_drag.item || !(event->buttons() & Qt::LeftButton)) {
        QGraphicsScene::mouseMoveEvent(event);
        return;
    }
    const QPointF delta = event->scenePos() - m_drag.pressScenePos;
    if (!m_drag.moving) {
        if (delta.manhattanLength() < QApplication::startDragDistance())
            return;
        m_drag.moving = true;
        for (NodeItem *item : std::as_const(m_drag.items)) {
            item->setZValue(100);
            item->setOpacity(0.8);
        }
    }
    for (NodeItem *item : std::as_const(m_drag.items))
        item->setPos(delta);
    QString reason;
    const int target = dropTarget(event->scenePos(), m_drag.node, &reason);
    GroupItem *over = nullptr;
    for (QGraphicsItem *item : items(event->scenePos()))
        if (item->type() == GroupItemType && static_cast<GroupItem *>(item)->level() >= 1) {
            over = static_cast<GroupItem *>(item);
            break;
        }
    if (over != m_highlighted)
        clearDropHighlight();
    if (over) {
        m_highlighted = over;
        over->setDropHighlight(target >= 0 ? 1 : 2);
    }
    const Topology &t = m_document->topology();
    const QString what = m_drag.items.size() > 1 ? tr("%n nodes", nullptr, static_cast<int>(m_drag.items.size()))
                                                 : QString::fromStdString(t.groups[m_drag.node].name);
    emit hoverMessage(target >= 0 ? tr("Drop to move %1 into %2")
                                        .arg(what, QString::fromStdString(t.groups[target].name))
                                  : reason);
}

void TopologyScene::mouseReleaseEvent(QGraphicsSceneMouseEvent *event)
{
    if (!m_drag.item || !m_drag.moving || event->button() != Qt::LeftButton) {
        m_drag = {};
        QGraphicsScene::mouseReleaseEvent(event);
        return;
    }
    clearDropHighlight();
    for (NodeItem *item : std::as_const(m_drag.items)) {
        item->setPos(0, 0);
        item->setZValue(5);
        item->setOpacity(1);
    }
    QString reason;
    const int target = dropTarget(event->scenePos(), m_drag.node, &reason);
    QList<int> nodes;
    for (NodeItem *item : std::as_const(m_drag.items))
        if (m_document->topology().groups[item->group()].parent != target)
            nodes.append(item->group());
    m_drag = {};
    QGraphicsScene::mouseReleaseEvent(event);
    if (target < 0) {
        emit dropRefused(reason);
        return;
    }
    // Updates the scene (items may be moved or deleted): nothing may touch them afterwards.
    if (nodes.size() == 1)
        m_document->moveNode(nodes.first(), target);
    else
        m_document->moveNodes(nodes, target);
}

} // namespace nest::ui
