#pragma once
// The model dock: preset picker, hyperparameter form (ModelConfig fields), sequence length,
// global batch, Import… (Hugging Face config.json, our model file, a measured profile) and
// the per-layer table. The document's typed model (core/formats/ModelSource) is the truth; each
// edit goes through a typed setter of the document (setModelPreset, setModelConfig,
// setModelRunSettings, setModel) and is an undo command (ChangeModel). The profile shown
// comes from core (ModelSource::profile); the panel computes no cost and writes no JSON.
#include "ModelConfig.h"
#include "ModelProfile.h"

#include <QWidget>

#include <optional>

class QVBoxLayout;
class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace nest::ui {

class WorkspaceDocument;
class LayerTableModel;

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(WorkspaceDocument *document, QWidget *parent = nullptr);

    LayerTableModel *layerModel() const { return m_layers; }
    // Last problem with the model (empty when it loads).
    QString problem() const { return m_problem; }
    // Imports a model file into the document (also used by the Import… button).
    bool importFile(const QString &fileName);

signals:
    void statusMessage(const QString &message);

private:
    void addPresetRow(QVBoxLayout *layout);
    void createForm();
    void createLayerTable();
    void connectEdits();
    void refresh();
    void choosePreset(int index);
    void commitForm();
    void commitRunOptions();
    void import();

    WorkspaceDocument *m_document;
    bool m_updating = false;
    std::optional<ModelConfig> m_config;   // when the model is hyperparameters
    QString m_problem;

    QComboBox *m_preset;
    QPushButton *m_import;
    QLabel *m_source;
    QComboBox *m_family;
    QSpinBox *m_layersSpin, *m_hidden, *m_heads, *m_kvHeads, *m_ffn, *m_vocab, *m_experts, *m_topK;
    QSpinBox *m_seq, *m_batch;
    QCheckBox *m_flash = nullptr;
    QWidget *m_form;
    QLabel *m_summary;
    QLabel *m_error;
    LayerTableModel *m_layers;
    QTableView *m_table;
};

} // namespace nest::ui
