#pragma once
// The model dock: preset picker, hyperparameter form (ModelConfig fields, the layer pattern),
// sequence length, global batch, Import… (Hugging Face config.json, our model file, a
// measured profile), the strip of layer kinds (LayerStripView) and the per-layer table. The document's typed model (core/formats/ModelSource) is the truth; each
// edit goes through a typed setter of the document (setModelPreset, setModelConfig,
// setModelRunSettings, setModel) and is an undo command (ChangeModel). The profile shown
// comes from core (ModelSource::profile); the panel computes no cost and writes no JSON.
#include "ModelConfig.h"
#include "ModelSource.h"
#include "ModelProfile.h"

#include <QWidget>

#include <optional>

class QVBoxLayout;
class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace nest::ui {

class WorkspaceDocument;
class LayerTableModel;
class LayerStripView;

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(WorkspaceDocument *document, QWidget *parent = nullptr);

    LayerTableModel *layerModel() const { return m_layers; }
    LayerStripView *layerStrip() const { return m_strip; }
    // The reason the last pattern edit was refused (empty when it was taken or none was made).
    QString patternProblem() const;
    // Last problem with the model (empty when it loads).
    QString problem() const { return m_problem; }
    // Imports a model file into the document (also used by the Import… button).
    bool importFile(const QString &fileName);

signals:
    void statusMessage(const QString &message);

private:
    void addPresetRow(QVBoxLayout *layout);
    void createForm();
    void addPatternRows(QFormLayout *form);
    void refreshPattern(const ModelConfig &config);
    void createLayerTable();
    void connectEdits();
    void refresh();
    void clearViews();
    void showConfig(const ModelConfig &c, const ModelSource &model);
    void showProfileOnly(ModelFileKind kind);
    void showProfile(const ModelProfile &p);
    void choosePreset(int index);
    void commitForm();
    void commitRunOptions();
    void commitPattern();
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
    QLineEdit *m_pattern = nullptr;
    QLabel *m_patternProblem = nullptr;
    QLabel *m_stackInfo = nullptr;
    LayerStripView *m_strip = nullptr;
    QWidget *m_form;
    QLabel *m_summary;
    QLabel *m_error;
    LayerTableModel *m_layers;
    QTableView *m_table;
};

} // namespace nest::ui
