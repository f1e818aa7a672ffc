#include "ClusterTreeModel.h"

#include "WorkspaceDocument.h"

#include <QFont>

namespace nest::ui {

QString formatBandwidth(double bytesPerSecond)
{
    const double gb = bytesPerSecond / 1e9;
    if (gb >= 1000)
        return QStringLiteral("%1 TB/s").arg(gb / 1000, 0, 'g', 3);
    if (gb >= 1)
        return QStringLiteral("%1 GB/s").arg(gb, 0, 'g', 4);
    return QStringLiteral("%1 MB/s").arg(gb * 1000, 0, 'g', 4);
}

ClusterTreeModel::ClusterTreeModel(WorkspaceDocument *document, QObject *parent)
    : QAbstractItemModel(parent)
    , m_document(document)
{
    connect(document, &WorkspaceDocument::clusterReset, this, [this] {
        beginResetModel();
        endResetModel();
    });
    connect(document, &WorkspaceDocument::structureAboutToChange, this,
            &ClusterTreeModel::onStructureAboutToChange);
    connect(document, &WorkspaceDocument::structureChanged, this,
            &ClusterTreeModel::onStructureChanged);
    connect(document, &WorkspaceDocument::groupChanged, this,
            [this](int group) { groupDataChanged(group, true); });
    connect(document, &WorkspaceDocument::levelChanged, this,
            [this](int) { allDataChanged({}); });
}

QModelIndex ClusterTreeModel::index(int row, int column, const QModelIndex &parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return {};
    const Topology &t = m_document->topology();
    if (!parent.isValid()) {
        if (row != 0 || t.root < 0)
            return {};
        return createIndex(row, column, quintptr(m_document->uidOf(t.root)));
    }
    const int g = groupAt(parent);
    if (g < 0 || parent.column() != 0 || row >= static_cast<int>(t.groups[g].children.size()))
        return {};
    const int child = t.groups[g].children[row];
    return createIndex(row, column, quintptr(m_document->uidOf(child)));
}

QModelIndex ClusterTreeModel::parent(const QModelIndex &child) const
{
    const int g = groupAt(child);
    if (g < 0)
        return {};
    const Topology &t = m_document->topology();
    const int p = t.groups[g].parent;
    if (p < 0)
        return {};
    return createIndex(rowInParent(t, p), 0, quintptr(m_document->uidOf(p)));
}

int ClusterTreeModel::rowCount(const QModelIndex &parent) const
{
    const Topology &t = m_document->topology();
    if (!parent.isValid())
        return t.root >= 0 ? 1 : 0;
    if (parent.column() != 0)
        return 0;
    const int g = groupAt(parent);
    return g < 0 ? 0 : static_cast<int>(t.groups[g].children.size());
}

int ClusterTreeModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant ClusterTreeModel::data(const QModelIndex &index, int role) const
{
    const int g = groupAt(index);
    if (g < 0)
        return {};
    const Topology &t = m_document->topology();
    const TopoGroup &group = t.groups[g];
    if (role == GroupRole)
        return g;
    if (role == Qt::FontRole && index.column() == NameColumn && g == t.root) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::TextAlignmentRole && index.column() >= DevicesColumn)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && group.level == 0 && group.deviceType >= 0 &&
        group.deviceType < static_cast<int>(t.deviceTypes.size())) {
        const DeviceSpec &d = t.deviceTypes[group.deviceType];
        return tr("%1 × %2: %3 TFLOP/s, %4 GB each")
            .arg(group.devices.size()).arg(QString::fromStdString(d.name))
            .arg(d.peakFlops / 1e12, 0, 'g', 4).arg(d.memoryBytes / 1e9, 0, 'g', 4);
    }
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    switch (index.column()) {
    case NameColumn:
        return QString::fromStdString(group.name);
    case KindColumn: {
        const QString level = group.level < t.levelCount()
                                  ? QString::fromStdString(t.levels[group.level].name) : QString();
        return tr("%1 (L%2)").arg(level).arg(group.level);
    }
    case DevicesColumn:
        if (group.level == 0 && group.deviceType >= 0 &&
            group.deviceType < static_cast<int>(t.deviceTypes.size()))
            return tr("%1 × %2").arg(group.devices.size())
                .arg(QString::fromStdString(t.deviceTypes[group.deviceType].name));
        return t.deviceCountUnder(g);
    case BandwidthColumn: {
        const LinkParams link = t.link(g);
        QString text = formatBandwidth(link.bandwidth);
        if (link.oversubscription > 1)
            text += QStringLiteral(" (%1:1)").arg(link.oversubscription, 0, 'g', 3);
        if (group.linkOverride)
            text += QStringLiteral(" *");
        return text;
    }
    default:
        return {};
    }
}

QVariant ClusterTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn: return tr("Name");
    case KindColumn: return tr("Level");
    case DevicesColumn: return tr("Devices");
    case BandwidthColumn: return tr("Bandwidth");
    default: return {};
    }
}

Qt::ItemFlags ClusterTreeModel::flags(const QModelIndex &index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (index.column() == NameColumn)
        f |= Qt::ItemIsEditable;
    return f;
}

bool ClusterTreeModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    const int g = groupAt(index);
    if (g < 0 || role != Qt::EditRole || index.column() != NameColumn)
        return false;
    return m_document->setGroupName(g, value.toString());
}

QModelIndex ClusterTreeModel::indexOfGroup(int group, int column) const
{
    const Topology &t = m_document->topology();
    if (group < 0 || group >= static_cast<int>(t.groups.size()))
        return {};
    return createIndex(rowInParent(t, group), column, quintptr(m_document->uidOf(group)));
}

int ClusterTreeModel::groupAt(const QModelIndex &index) const
{
    if (!index.isValid() || index.model() != this)
        return -1;
    return m_document->groupOf(GroupUid(index.internalId()));
}

void ClusterTreeModel::onStructureAboutToChange()
{
    // A structural edit replaces the whole state (ClusterEdits returns a new, reindexed
    // tree), and undo/redo jump between arbitrary states: a reset is always exact, and the
    // view restores expansion, selection and scroll position by uid.
    beginResetModel();
}

void ClusterTreeModel::onStructureChanged()
{
    endResetModel();
}

void ClusterTreeModel::groupDataChanged(int group, bool withAncestors)
{
    const Topology &t = m_document->topology();
    for (int g = group; g >= 0 && g < static_cast<int>(t.groups.size()); g = t.groups[g].parent) {
        emit dataChanged(indexOfGroup(g, 0), indexOfGroup(g, ColumnCount - 1));
        if (!withAncestors)
            break;
    }
}

void ClusterTreeModel::allDataChanged(const QModelIndex &parent)
{
    const int rows = rowCount(parent);
    if (rows == 0)
        return;
    emit dataChanged(index(0, 0, parent), index(rows - 1, ColumnCount - 1, parent));
    for (int r = 0; r < rows; ++r) {
        const QModelIndex child = index(r, 0, parent);
        if (rowCount(child) > 0)
            allDataChanged(child);
    }
}

} // namespace nest::ui
