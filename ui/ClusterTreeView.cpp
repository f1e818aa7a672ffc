#include "ClusterTreeView.h"

#include "ClusterDocument.h"
#include "ClusterTreeModel.h"

#include <QHeaderView>
#include <QItemSelectionModel>

namespace nest::ui {

ClusterTreeView::ClusterTreeView(ClusterDocument *document, QWidget *parent)
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
    header()->setStretchLastSection(false);
    header()->setSectionResizeMode(ClusterTreeModel::NameColumn, QHeaderView::Stretch);
    for (int c = ClusterTreeModel::KindColumn; c < ClusterTreeModel::ColumnCount; ++c)
        header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    connect(selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &ClusterTreeView::syncToDocument);
    connect(document, &ClusterDocument::selectionChanged, this, &ClusterTreeView::syncFromDocument);
    connect(document, &ClusterDocument::clusterReset, this, &ClusterTreeView::expandToRacks);
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

void ClusterTreeView::syncFromDocument()
{
    if (m_syncing)
        return;
    m_syncing = true;
    QItemSelection selection;
    for (int g : m_document->selectedGroups()) {
        const QModelIndex i = m_model->indexOfGroup(g);
        selection.select(i, i.siblingAtColumn(ClusterTreeModel::ColumnCount - 1));
        for (QModelIndex p = i.parent(); p.isValid(); p = p.parent())
            expand(p);
    }
    selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    const QList<int> sel = m_document->selectedGroups();
    if (!sel.isEmpty())
        scrollTo(m_model->indexOfGroup(sel.first()));
    m_syncing = false;
}

void ClusterTreeView::syncToDocument()
{
    if (m_syncing)
        return;
    m_syncing = true;
    QList<GroupUid> uids;
    for (const QModelIndex &i : selectionModel()->selectedRows(0))
        uids.append(m_document->uidOf(m_model->groupAt(i)));
    m_document->setSelection(uids);
    m_syncing = false;
}

} // namespace nest::ui
