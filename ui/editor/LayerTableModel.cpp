#include "LayerTableModel.h"

namespace nest::ui {

LayerTableModel::LayerTableModel(QObject *parent)
    : QAbstractTableModel(parent)
{
}

void LayerTableModel::setProfile(const ModelProfile &profile)
{
    beginResetModel();
    m_profile = profile;
    endResetModel();
}

void LayerTableModel::clear()
{
    setProfile({});
}

int LayerTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : m_profile.layerCount();
}

int LayerTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LayerTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_profile.layerCount())
        return {};
    const LayerProfile &l = m_profile.layers[index.row()];
    if (role == Qt::TextAlignmentRole && index.column() >= FwdFlopsColumn)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && index.column() == NameColumn)
        return tr("%1: %2 layer").arg(QString::fromStdString(l.name), QString::fromLatin1(toString(l.kind)));
    // A measured layer without a FLOP count (the NEST artifact's): "n/a", not 0.0.
    const bool flopsAbsent = l.fwdFlops <= 0 && l.measuredFwdTime >= 0;
    if (role == Qt::ToolTipRole && index.column() == FwdFlopsColumn && l.measuredFwdTime >= 0)
        return tr("Measured: forward %1 ms, backward %2 ms per sample%3")
            .arg(l.measuredFwdTime * 1e3, 0, 'g', 4).arg(l.measuredBwdTime * 1e3, 0, 'g', 4)
            .arg(flopsAbsent ? tr("; FLOPs: not in the profile") : QString());
    if (role != Qt::DisplayRole && role != Qt::UserRole)
        return {};
    const bool raw = role == Qt::UserRole;
    switch (index.column()) {
    case NameColumn: return QString::fromStdString(l.name);
    case KindColumn: return QString::fromLatin1(toString(l.kind));
    case FwdFlopsColumn:
        if (flopsAbsent)
            return raw ? QVariant() : QVariant(tr("n/a"));
        return raw ? QVariant(l.fwdFlops) : QVariant(QString::number(l.fwdFlops / 1e9, 'f', 1));
    case ParamsColumn: return raw ? QVariant(l.params) : QVariant(QString::number(l.params / 1e6, 'f', 1));
    case ActivationColumn: {
        const double bytes = l.stashTpBytes + l.stashSpBytes;
        return raw ? QVariant(bytes) : QVariant(QString::number(bytes / 1e6, 'f', 1));
    }
    case OutputColumn: return raw ? QVariant(l.outputBytes) : QVariant(QString::number(l.outputBytes / 1e6, 'f', 2));
    default: return {};
    }
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role == Qt::ToolTipRole && orientation == Qt::Horizontal) {
        switch (section) {
        case FwdFlopsColumn: return tr("Forward GFLOP per sample (one sequence), unsharded");
        case ParamsColumn: return tr("Parameters, millions");
        case ActivationColumn: return tr("Activations stashed for backward per sample, without parallelism");
        case OutputColumn: return tr("Output tensor per sample (what a pipeline boundary sends)");
        default: return {};
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return section;
    switch (section) {
    case NameColumn: return tr("Layer");
    case KindColumn: return tr("Kind");
    // Two-line headers: the columns are as narrow as their numbers.
    case FwdFlopsColumn: return tr("Fwd\nGFLOP");
    case ParamsColumn: return tr("Params\n(M)");
    case ActivationColumn: return tr("Activ.\nMB");
    case OutputColumn: return tr("Output\nMB");
    default: return {};
    }
}

} // namespace nest::ui
