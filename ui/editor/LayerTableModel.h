#pragma once
// The per-layer table of the model panel: what core's ModelProfile says about each layer
// (the GUI computes nothing itself). Values per sample (one sequence), unsharded.
#include "ModelProfile.h"

#include <QAbstractTableModel>

namespace nest::ui {

class LayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { NameColumn, KindColumn, FwdFlopsColumn, ParamsColumn, ActivationColumn,
                  OutputColumn, ColumnCount };

    explicit LayerTableModel(QObject *parent = nullptr);
    void setProfile(const ModelProfile &profile);
    void clear();
    const ModelProfile &profile() const { return m_profile; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    ModelProfile m_profile;
};

} // namespace nest::ui
