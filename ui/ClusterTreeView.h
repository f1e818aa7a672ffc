#pragma once
// The cluster tree: a QTreeView over ClusterTreeModel whose selection follows the
// document's selection and sets it (both ways, without feedback loops).
#include <QTreeView>

namespace nest::ui {

class ClusterDocument;
class ClusterTreeModel;

class ClusterTreeView : public QTreeView {
    Q_OBJECT
public:
    explicit ClusterTreeView(ClusterDocument *document, QWidget *parent = nullptr);
    ClusterTreeModel *clusterModel() const { return m_model; }
    // Expands the tree down to the racks (level 1 groups) after a load.
    void expandToRacks();

private:
    void syncFromDocument();
    void syncToDocument();

    ClusterDocument *m_document;
    ClusterTreeModel *m_model;
    bool m_syncing = false;
};

} // namespace nest::ui
