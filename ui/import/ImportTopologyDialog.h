#pragma once
// File > Import Topology: what a cluster description (Slurm topology.conf, NCCL topology
// XML, nvidia-smi topo -m, ASTRA-sim YAML; core/interop/ClusterImport.h) lacks, asked in one
// small form: the device, GPUs per node, and per level the bandwidth, latency and
// oversubscription, each pre-filled with what the file says (and fixed where the file fixes
// it: the GPU count of a node file). cluster() assembles the result in core.
#include "ClusterImport.h"

#include <QDialog>

#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGridLayout;
class QLabel;
class QPushButton;
class QSpinBox;

namespace nest::ui {

class ImportTopologyDialog : public QDialog {
    Q_OBJECT
public:
    explicit ImportTopologyDialog(ClusterSketch sketch, QWidget *parent = nullptr);

    const ClusterSketch &sketch() const { return m_sketch; }
    // The form as import options: the chosen device and count, every level's values.
    ClusterImportOptions options() const;
    // The cluster for the current choices, or the reason (file and line) it cannot be built;
    // the preview shows it and Import stays disabled until it can.
    Result<Topology> cluster() const;

    // For tests and callers that fill the form: false when there is no such preset / level.
    bool setDevice(const QString &preset);
    void setGpusPerNode(int gpus);
    bool setLevel(int level, double bandwidthGBps, double latencyUs, double oversubscription);

private:
    QFormLayout *createForm();
    QGridLayout *createLevelGrid();
    void deviceChanged();
    void updatePreview();
    void accept() override;

    struct LevelRow {
        QDoubleSpinBox *bandwidth;
        QDoubleSpinBox *latency;
        QDoubleSpinBox *oversubscription;
        bool bandwidthEdited = false;
    };
    ClusterSketch m_sketch;
    QComboBox *m_device;
    QSpinBox *m_gpus;
    std::vector<LevelRow> m_levels;
    QLabel *m_preview;
    QPushButton *m_import = nullptr;
};

} // namespace nest::ui
