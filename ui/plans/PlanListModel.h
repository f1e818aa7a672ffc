#pragma once
// The plan list as a table (PlanLibrary's rows): pinned plans first, then this session's
// runs. Columns: pinned mark, name (editable: a rename, one undo step), planner,
// samples/s, iteration time, peak memory, shape, the cluster it was planned on (marked when
// it is not the document's current cluster), search time. Numbers are the evaluator's,
// read from each row's snapshot; "…" while a pinned plan is being evaluated. The best K
// plans of one search (the settings' top_k) are a group: the best says "best of K", the
// others are indented under it with their time above the best.
#include <QAbstractTableModel>

namespace nest::ui {

class PlanLibrary;

class PlanListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { PinnedColumn, NameColumn, PlannerColumn, ThroughputColumn, IterationColumn, MemoryColumn,
                  ShapeColumn, ClusterColumn, SearchColumn, ColumnCount };
    // Qt::UserRole on ThroughputColumn/IterationColumn/MemoryColumn/SearchColumn: the raw
    // number (samples/s, s, bytes, s); NaN while unknown.
    explicit PlanListModel(PlanLibrary *library, QObject *parent = nullptr);

    PlanLibrary *library() const { return m_library; }
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role) override;

private:
    QString toolTip(int row, bool otherCluster) const;
    QVariant cellText(int row, int column, int role, bool otherCluster) const;

    PlanLibrary *m_library;
};

} // namespace nest::ui
