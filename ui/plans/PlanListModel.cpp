#include "PlanListModel.h"

#include "WorkspaceDocument.h"
#include "PlanLibrary.h"
#include "PlanShape.h"

#include <QBrush>
#include <QFont>
#include <QPalette>
#include <QGuiApplication>

#include <cmath>
#include <limits>

namespace nest::ui {

namespace {

// A group member's time above the best: "+0.81 %", "+0.0042 %", or "same time" (plans that
// differ only where it costs nothing, e.g. a ZeRO stage off the critical path).
QString deltaText(double percent)
{
    if (percent == 0)
        return PlanListModel::tr("same time");
    return QStringLiteral("+%1 %").arg(percent < 0.01 ? QString::number(percent, 'g', 2) : QString::number(percent, 'f', 2));
}

} // namespace

PlanListModel::PlanListModel(PlanLibrary *library, QObject *parent)
    : QAbstractTableModel(parent)
    , m_library(library)
{
    // The rows are few (pinned plans + at most 30 runs): a reset is simplest and cheap.
    connect(library, &PlanLibrary::rowsChanged, this, [this] {
        beginResetModel();
        endResetModel();
    });
    connect(library, &PlanLibrary::snapshotsChanged, this, [this] {
        if (rowCount() > 0)
            emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    });
    connect(library->document(), &WorkspaceDocument::clusterChanged, this, [this] {
        if (rowCount() > 0)
            emit dataChanged(index(0, ClusterColumn), index(rowCount() - 1, ClusterColumn));
    });
}

int PlanListModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : m_library->rowCount();
}

int PlanListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PlanListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case PinnedColumn: return tr("Pin");
    case NameColumn: return tr("Name");
    case PlannerColumn: return tr("Planner");
    case ThroughputColumn: return tr("Samples/s");
    case IterationColumn: return tr("Iteration (s)");
    case MemoryColumn: return tr("Peak (GB)");
    case ShapeColumn: return tr("Shape");
    case ClusterColumn: return tr("Cluster");
    case SearchColumn: return tr("Search (s)");
    default: return {};
    }
}

Qt::ItemFlags PlanListModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.column() == NameColumn)
        f |= Qt::ItemIsEditable;
    return f;
}

bool PlanListModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (role != Qt::EditRole || index.column() != NameColumn)
        return false;
    return m_library->rename(index.row(), value.toString());
}

QVariant PlanListModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const int row = index.row();
    const bool pinned = m_library->isPinned(row);
    const PlanSnapshotPtr s = m_library->snapshot(row);
    const Report *r = s ? &s->report() : nullptr;
    const bool feasible = r && r->feasible;
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();

    if (role == Qt::UserRole) {
        switch (index.column()) {
        case ThroughputColumn: return feasible ? r->samplesPerSecond : nan;
        case IterationColumn: return feasible ? r->iterationTime : nan;
        case MemoryColumn: return r ? r->peakMemoryBytes : nan;
        case SearchColumn: return s ? s->stats.wallSeconds : nan;
        default: return {};
        }
    }
    if (role == Qt::FontRole && index.column() == NameColumn && pinned) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::TextAlignmentRole && index.column() >= ThroughputColumn && index.column() <= MemoryColumn)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    const Topology &cluster = m_library->clusterOf(row);
    const bool otherCluster = index.column() == ClusterColumn && !(cluster == m_library->document()->topology());
    if (role == Qt::ForegroundRole && otherCluster)
        return QBrush(QColor(0xb0, 0x5a, 0x00));
    if (role == Qt::ToolTipRole)
        return toolTip(row, otherCluster);
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    return cellText(row, index.column(), role, otherCluster);
}

// What a row is: pinned or this session's, its planner and cluster, its rank in a group of
// best plans, why it is infeasible or could not be evaluated.
QString PlanListModel::toolTip(int row, bool otherCluster) const
{
    const bool pinned = m_library->isPinned(row);
    const PlanSnapshotPtr s = m_library->snapshot(row);
    const QString error = m_library->evaluationError(row);
    const Report *r = s ? &s->report() : nullptr;
    const Topology &cluster = m_library->clusterOf(row);
    const bool grouped = !pinned && s && s->groupSize > 1;
    QString tip = tr("%1 — %2, planned by %3 on %4 (%5 devices)")
                      .arg(pinned ? tr("pinned, saved in the workspace") : tr("run of this session, not saved"),
                           m_library->label(row), m_library->planner(row), QString::fromStdString(cluster.name))
                      .arg(cluster.deviceCount());
    if (grouped)
        tip += QLatin1Char('\n') +
               (s->rank == 1 ? tr("The best of the %1 best distinct plans of this search (Search ▸ Keep best).")
                                   .arg(s->groupSize)
                             : tr("Plan %1 of the %2 best distinct plans of this search (%3 against the best). "
                                  "Within the model's error, a simpler or more robust layout may be worth it; "
                                  "select it with the best and Compare to see what differs.")
                                   .arg(s->rank)
                                   .arg(s->groupSize)
                                   .arg(deltaText(s->deltaPercent)));
    if (!error.isEmpty())
        tip += QLatin1Char('\n') + error;
    else if (r && !r->feasible && !r->reasons.empty())
        tip += QLatin1Char('\n') + tr("Infeasible: %1").arg(QString::fromStdString(r->reasons.front()));
    if (otherCluster)  // the cluster column's: planned on another cluster
        tip += QLatin1Char('\n') + tr("Not the current cluster: it was planned on the cluster as it was then.");
    return tip;
}

QVariant PlanListModel::cellText(int row, int column, int role, bool otherCluster) const
{
    const bool pinned = m_library->isPinned(row);
    const PlanSnapshotPtr s = m_library->snapshot(row);
    const QString error = m_library->evaluationError(row);
    const Report *r = s ? &s->report() : nullptr;
    const bool feasible = r && r->feasible;
    const Topology &cluster = m_library->clusterOf(row);
    const bool grouped = !pinned && s && s->groupSize > 1;
    const QString pending = error.isEmpty() ? QStringLiteral("…") : tr("error");
    switch (column) {
    case PinnedColumn: return pinned ? QStringLiteral("★") : QString();
    case NameColumn:
        if (role == Qt::DisplayRole && grouped)
            return s->rank == 1 ? tr("%1  (best of %2)").arg(m_library->label(row)).arg(s->groupSize)
                                : tr("    └ %1  (%2)").arg(m_library->label(row), deltaText(s->deltaPercent));
        return m_library->label(row);
    case PlannerColumn: return m_library->planner(row);
    case ThroughputColumn:
        if (!r)
            return pending;
        return feasible ? QString::number(r->samplesPerSecond, 'f', 2) : tr("infeasible");
    case IterationColumn: return feasible ? QString::number(r->iterationTime, 'f', 4) : (r ? QStringLiteral("—") : pending);
    case MemoryColumn: return r ? QString::number(r->peakMemoryBytes / 1e9, 'f', 1) : pending;
    case ShapeColumn: return s ? QString::fromStdString(widthsText(shapeOf(s->plan()))) : pending;
    case ClusterColumn:
        return tr("%1 · %2 devices%3")
            .arg(QString::fromStdString(cluster.name))
            .arg(cluster.deviceCount())
            .arg(otherCluster ? tr(" · other") : QString());
    case SearchColumn: return s && s->stats.wallSeconds > 0 ? QString::number(s->stats.wallSeconds, 'f', 2) : QStringLiteral("—");
    default: return {};
    }
}

} // namespace nest::ui
