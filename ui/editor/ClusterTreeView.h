#pragma once
// The cluster tree: a QTreeView over ClusterTreeModel whose selection follows the
// document's selection and sets it (both ways, without feedback loops). A structural edit
// resets the model; the view keeps the expanded rows, the current row, the selection and
// the scroll position across it (by group uid), and opens groups the edit created.
// Right-click opens a context menu acting through the document (createContextMenu).
#include "ClusterEdits.h"

#include <QSet>
#include <QTreeView>

#include <memory>
#include <optional>

class QMenu;

namespace nest::ui {

class WorkspaceDocument;
class ClusterTreeModel;

class ClusterTreeView : public QTreeView {
    Q_OBJECT
public:
    explicit ClusterTreeView(WorkspaceDocument *document, QWidget *parent = nullptr);
    ClusterTreeModel *clusterModel() const { return m_model; }
    // Expands the tree down to the racks (level 1 groups) after a load.
    void expandToRacks();
    // The context menu for a row (an invalid index: the empty area below the rows). Actions,
    // by object name: addRack, addNode, duplicate, delete, rename; each is enabled only when
    // it can act there (a disabled one says why in its tool tip). Delete and Duplicate act on
    // the whole selection when the row is part of it. Exposed so tests need no popup.
    std::unique_ptr<QMenu> createContextMenu(const QModelIndex &index);

protected:
    void contextMenuEvent(QContextMenuEvent *event) override;

private:
    // What survives a model reset, by uid.
    struct ViewState {
        QSet<GroupUid> known;      // every group before the edit
        QSet<GroupUid> expanded;
        GroupUid current = 0;
        QList<GroupUid> topRow;    // the top visible row, then its ancestors (fallbacks)
    };
    void rememberViewState();
    void restoreViewState();
    void syncFromDocument();
    // Selects the document's selection; `reveal` also expands its ancestors and scrolls to it.
    void showSelection(bool reveal);
    void syncToDocument();
    QList<int> targetsFor(int group) const;

    WorkspaceDocument *m_document;
    ClusterTreeModel *m_model;
    bool m_syncing = false;
    std::optional<ViewState> m_saved;   // set between a structural edit's two signals
};

} // namespace nest::ui
