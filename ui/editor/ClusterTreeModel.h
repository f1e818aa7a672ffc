#pragma once
// The cluster tree as a Qt item model over WorkspaceDocument: one row per group (the cluster
// itself is the single top-level row), columns name, kind (level), devices, bandwidth.
// Rows are keyed by the groups' stable uids. A structural edit (and its undo or redo) is
// reported as a model reset, which is exact whatever the edit did; ClusterTreeView keeps
// expansion, selection, the current row and the scroll position across it by uid.
// Property edits emit dataChanged for the group and its ancestors (their device counts).
#include <QAbstractItemModel>

namespace nest::ui {

class WorkspaceDocument;

class ClusterTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { NameColumn, KindColumn, DevicesColumn, BandwidthColumn, ColumnCount };
    enum Role { GroupRole = Qt::UserRole + 1 };   // group index (int)

    explicit ClusterTreeModel(WorkspaceDocument *document, QObject *parent = nullptr);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;

    QModelIndex indexOfGroup(int group, int column = 0) const;
    int groupAt(const QModelIndex &index) const;

private:
    void onStructureAboutToChange();
    void onStructureChanged();
    void groupDataChanged(int group, bool withAncestors);
    void allDataChanged(const QModelIndex &parent);

    WorkspaceDocument *m_document;
};

// "900 GB/s", "12.5 GB/s", "400 Gb/s" style formatting (bytes/s in, decimal GB/s out).
QString formatBandwidth(double bytesPerSecond);

} // namespace nest::ui
