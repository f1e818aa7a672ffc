#include "ClusterTreeView.h"

#include "WorkspaceDocument.h"
#include "ClusterTreeModel.h"

#include <QContextMenuEvent>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QMenu>

namespace nest::ui {

namespace {

QString levelName(const Topology &t, int level, const QString &fallback)
{
    return level < t.levelCount() ? QString::fromStdString(t.levels[level].name) : fallback;
}

} // namespace

ClusterTreeView::ClusterTreeView(WorkspaceDocument *document, QWidget *parent)
    : QTreeView(parent)
    , m_document(document)
    , m_model(new ClusterTreeModel(document, this))
{
    setModel(m_model);
    setSelectionMode(ExtendedSelection);
    setSelectionBehavior(SelectRows);
    setUniformRowHeights(true);
    setAlternatingRowColors(true);
    setEditTriggers(EditKeyPressed | SelectedClicked);
    // Names are never squeezed: in a narrow dock the tree scrolls sideways instead, and
    // spare width goes to the last column.
    header()->setStretchLastSection(true);
    for (int c = ClusterTreeModel::NameColumn; c < ClusterTreeModel::ColumnCount; ++c)
        header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    // Names first: the device column ("8 × h100-sxm-80gb") elides at a fixed width
    // (its tooltip has it all) so a 370 px dock still shows "node12" whole.
    setIndentation(14);
    header()->setSectionResizeMode(ClusterTreeModel::DevicesColumn, QHeaderView::Interactive);
    header()->resizeSection(ClusterTreeModel::DevicesColumn, fontMetrics().horizontalAdvance(QStringLiteral("8 × h100-sxm-8")));
    connect(selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &ClusterTreeView::syncToDocument);
    connect(document, &WorkspaceDocument::selectionChanged, this, &ClusterTreeView::syncFromDocument);
    connect(document, &WorkspaceDocument::clusterReset, this, &ClusterTreeView::expandToRacks);
    // The model (created above, so connected first) has begun its reset when this runs, and
    // the view has not yet dropped its expanded set: it still describes the old tree.
    connect(document, &WorkspaceDocument::structureAboutToChange, this,
            &ClusterTreeView::rememberViewState);
    // QTreeView::reset (connected by setModel) has run when this does.
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        if (m_saved)
            restoreViewState();
    });
    expandToRacks();
}

void ClusterTreeView::expandToRacks()
{
    const Topology &t = m_document->topology();
    collapseAll();
    // Small clusters open fully; large ones down to their racks.
    const bool all = t.groups.size() <= 40;
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (all || t.groups[g].level >= 2 || g == t.root)
            expand(m_model->indexOfGroup(g));
}

void ClusterTreeView::rememberViewState()
{
    ViewState s;
    const Topology &t = m_document->topology();
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g) {
        const GroupUid uid = m_document->uidOf(g);
        s.known.insert(uid);
        if (isExpanded(m_model->indexOfGroup(g)))
            s.expanded.insert(uid);
    }
    s.current = m_document->uidOf(m_model->groupAt(currentIndex()));
    for (int g = m_model->groupAt(indexAt(QPoint(1, 1))); g >= 0; g = t.groups[g].parent)
        s.topRow.append(m_document->uidOf(g));
    m_saved = std::move(s);
}

void ClusterTreeView::restoreViewState()
{
    const ViewState s = std::move(*m_saved);
    m_saved.reset();
    const Topology &t = m_document->topology();
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g) {
        const GroupUid uid = m_document->uidOf(g);
        // Groups the edit created (an added or duplicated rack) open, so their rows show.
        const bool created = !s.known.contains(uid) && t.groups[g].level > 0;
        if (s.expanded.contains(uid) || created)
            expand(m_model->indexOfGroup(g));
    }
    m_syncing = true;
    const int current = m_document->groupOf(s.current);
    if (current >= 0)
        selectionModel()->setCurrentIndex(m_model->indexOfGroup(current), QItemSelectionModel::NoUpdate);
    m_syncing = false;
    // The selection as it was (less what the edit removed), without opening rows the user
    // closed or scrolling to it: the view stays where it was.
    showSelection(false);
    for (GroupUid uid : s.topRow) {
        const int g = m_document->groupOf(uid);
        if (g >= 0) {
            scrollTo(m_model->indexOfGroup(g), PositionAtTop);
            break;
        }
    }
}

void ClusterTreeView::syncFromDocument()
{
    if (m_syncing || m_saved)
        return;   // during a structural edit: restoreViewState syncs once the model is reset
    showSelection(true);
}

void ClusterTreeView::showSelection(bool reveal)
{
    m_syncing = true;
    QItemSelection selection;
    for (int g : m_document->selectedGroups()) {
        const QModelIndex i = m_model->indexOfGroup(g);
        selection.select(i, i.siblingAtColumn(ClusterTreeModel::ColumnCount - 1));
        for (QModelIndex p = i.parent(); reveal && p.isValid(); p = p.parent())
            expand(p);
    }
    selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    const QList<int> sel = m_document->selectedGroups();
    if (reveal && !sel.isEmpty())
        scrollTo(m_model->indexOfGroup(sel.first()));
    m_syncing = false;
}

void ClusterTreeView::syncToDocument()
{
    if (m_syncing || m_saved)
        return;
    m_syncing = true;
    QList<GroupUid> uids;
    for (const QModelIndex &i : selectionModel()->selectedRows(0))
        uids.append(m_document->uidOf(m_model->groupAt(i)));
    m_document->setSelection(uids);
    m_syncing = false;
}

QList<int> ClusterTreeView::targetsFor(int group) const
{
    const QList<int> selected = m_document->selectedGroups();
    return selected.contains(group) ? selected : QList<int>{group};
}

std::unique_ptr<QMenu> ClusterTreeView::createContextMenu(const QModelIndex &index)
{
    auto menu = std::make_unique<QMenu>();
    menu->setToolTipsVisible(true);
    const Topology &t = m_document->topology();
    const int g = m_model->groupAt(index);
    const auto add = [&menu](const QString &text, const char *name, bool enabled,
                             const QString &why) {
        QAction *a = menu->addAction(text);
        a->setObjectName(QLatin1String(name));
        a->setEnabled(enabled);
        if (!enabled)
            a->setToolTip(why);
        return a;
    };
    // Add: where the document would put the new group for this row (WorkspaceDocument::addRack
    // and addNode take the row as "near").
    const QString rack = levelName(t, 1, tr("rack"));
    QAction *addRack = add(tr("Add %1").arg(rack), "addRack", t.root >= 0 && t.levelCount() >= 3,
                           tr("This cluster has no level above its %1s").arg(rack));
    connect(addRack, &QAction::triggered, this, [this, g] { m_document->addRack(g); });
    QAction *addNode = add(tr("Add Node"), "addNode", t.root >= 0 && t.levelCount() >= 2,
                           tr("This cluster has no %1s to add a node to").arg(rack));
    connect(addNode, &QAction::triggered, this, [this, g] { m_document->addNode(g); });
    menu->addSeparator();

    // Duplicate and Delete: enabled exactly when the pure edit would succeed (a dry run on
    // a copy of the state), the refusal as the tool tip.
    const QList<int> targets = g >= 0 ? targetsFor(g) : QList<int>{};
    const QString name = g >= 0 ? QString::fromStdString(t.groups[g].name) : QString();
    GroupUid scratchUid = 0;
    const auto duplicated = g >= 0 ? nest::duplicateGroup(m_document->state(), g, scratchUid)
                                   : Result<ClusterState>::failure("nothing here to duplicate");
    QAction *duplicate = add(g >= 0 ? tr("Duplicate %1").arg(name) : tr("Duplicate"), "duplicate",
                             duplicated.ok(), duplicated.ok() ? QString() : QString::fromStdString(duplicated.error()));
    connect(duplicate, &QAction::triggered, this, [this, g] { m_document->duplicateGroup(g); });
    const auto removed = g >= 0 ? nest::removeGroups(m_document->state(),
                                                         std::vector<int>(targets.begin(), targets.end()))
                                : Result<ClusterState>::failure("nothing here to delete");
    const QString deleteText = targets.size() > 1 ? tr("Delete %n groups", nullptr, int(targets.size()))
                                                  : (g >= 0 ? tr("Delete %1").arg(name) : tr("Delete"));
    QAction *remove = add(deleteText, "delete", removed.ok(),
                          removed.ok() ? QString() : QString::fromStdString(removed.error()));
    connect(remove, &QAction::triggered, this, [this, targets] { m_document->removeGroups(targets); });
    menu->addSeparator();

    QAction *rename = add(tr("Rename"), "rename", g >= 0, tr("Nothing here to rename"));
    const QPersistentModelIndex nameIndex = index.siblingAtColumn(ClusterTreeModel::NameColumn);
    connect(rename, &QAction::triggered, this, [this, nameIndex] {
        if (nameIndex.isValid())
            edit(nameIndex);
    });
    return menu;
}

void ClusterTreeView::contextMenuEvent(QContextMenuEvent *event)
{
    const std::unique_ptr<QMenu> menu = createContextMenu(indexAt(event->pos()));
    menu->exec(event->globalPos());
}

} // namespace nest::ui
