#include "ModelPanel.h"

#include "MeasuredDevice.h"

#include "Limits.h"

#include "WindowWording.h"
#include "WorkspaceDocument.h"
#include "LayerStripView.h"
#include "LayerTableModel.h"
#include "ModelSource.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

namespace {

// A count spanning the range the model loaders accept (Limits.h): a model file's value is
// shown as it is, never clamped and written back on the next edit.
QSpinBox *sizeSpin(const Range &range, const QString &name)
{
    auto *s = new QSpinBox;
    s->setRange(static_cast<int>(range.min), static_cast<int>(range.max));
    s->setKeyboardTracking(false);
    s->setObjectName(name);
    s->setAccelerated(true);
    return s;
}

// 6.74 B (counts), or with a unit: 46.1 GFLOP, 13.5 GB.
QString human(double x, const QString &unit = QString())
{
    static const std::pair<double, const char *> big[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
    for (const auto &[scale, prefix] : big) {
        if (x >= scale) {
            const QString p = unit.isEmpty() && scale == 1e9 ? QStringLiteral("B") : QString::fromLatin1(prefix);
            return QStringLiteral("%1 %2%3").arg(x / scale, 0, 'f', 2).arg(p, unit);
        }
    }
    return QStringLiteral("%1 %2").arg(x, 0, 'g', 4).arg(unit);
}

} // namespace

ModelPanel::ModelPanel(WorkspaceDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_document(document)
    , m_layers(new LayerTableModel(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    addPresetRow(layout);
    createForm();
    layout->addWidget(m_form);

    auto *run = new QFormLayout;
    m_seq = sizeSpin(limits::seqLength, QStringLiteral("seqLength"));
    m_seq->setSuffix(tr(" tokens"));
    m_batch = sizeSpin(limits::batch, QStringLiteral("globalBatch"));
    m_batch->setSuffix(tr(" samples"));
    run->addRow(tr("Sequence length"), m_seq);
    run->addRow(tr("Global batch"), m_batch);
    layout->addLayout(run);

    m_summary = new QLabel;
    m_summary->setObjectName(QStringLiteral("modelSummary"));
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_error = new QLabel;
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("QLabel { background: #fdecea; color: #8a1c12; padding: 4px; border-radius: 3px; }"));
    m_error->hide();
    layout->addWidget(m_error);
    m_strip = new LayerStripView;
    m_strip->setToolTip(tr("The blocks by layer kind, in order; hover a run for its blocks"));
    layout->addWidget(m_strip);

    createLayerTable();
    layout->addWidget(m_table, 1);

    connectEdits();
    refresh();
}

// The preset picker with Import…, and where the model comes from.
void ModelPanel::addPresetRow(QVBoxLayout *layout)
{
    auto *top = new QHBoxLayout;
    m_preset = new QComboBox;
    m_preset->setObjectName(QStringLiteral("modelPreset"));
    m_preset->addItem(tr("Custom"));
    for (const ModelConfig &m : modelPresets())
        m_preset->addItem(QString::fromStdString(m.name));
    // Narrow docks (one tabbed column at 1024 px) keep Import… in view: the combo does
    // not ask for its longest preset's width.
    m_preset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_preset->setMinimumContentsLength(8);
    m_import = new QPushButton(tr("Import…"));
    m_import->setObjectName(QStringLiteral("modelImport"));
    m_import->setToolTip(tr("Import a Hugging Face config.json, a NEST model file or a measured profile"));
    top->addWidget(new QLabel(tr("Model")));
    top->addWidget(m_preset, 1);
    top->addWidget(m_import);
    layout->addLayout(top);
    m_source = new QLabel;
    m_source->setObjectName(QStringLiteral("modelSource"));
    m_source->setWordWrap(true);
    m_source->setStyleSheet(QStringLiteral("color: #6b7785;"));
    layout->addWidget(m_source);
}

// The hyperparameter form (m_form): family, sizes, experts, flash attention.
void ModelPanel::createForm()
{
    m_form = new QWidget;
    auto *form = new QFormLayout(m_form);
    form->setContentsMargins(0, 0, 0, 0);
    m_family = new QComboBox;
    m_family->setObjectName(QStringLiteral("family"));
    for (const std::string &f : modelFamilies())
        m_family->addItem(QString::fromStdString(f));
    m_family->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_family->setMinimumContentsLength(8);
    m_layersSpin = sizeSpin(limits::layers, QStringLiteral("layers"));
    m_hidden = sizeSpin(limits::hidden, QStringLiteral("hidden"));
    m_heads = sizeSpin(limits::heads, QStringLiteral("heads"));
    m_kvHeads = sizeSpin(limits::heads, QStringLiteral("kvHeads"));
    m_ffn = sizeSpin(limits::ffnHidden, QStringLiteral("ffnHidden"));
    m_vocab = sizeSpin(limits::vocab, QStringLiteral("vocab"));
    m_experts = sizeSpin(limits::experts, QStringLiteral("experts"));
    m_topK = sizeSpin(limits::experts, QStringLiteral("topK"));
    auto *pair = [&](QSpinBox *a, QSpinBox *b, const QString &mid) {
        auto *w = new QWidget;
        auto *h = new QHBoxLayout(w);
        h->setContentsMargins(0, 0, 0, 0);
        h->addWidget(a, 1);
        h->addWidget(new QLabel(mid));
        h->addWidget(b, 1);
        return w;
    }(m_heads, m_kvHeads, tr("KV"));
    form->addRow(tr("Family"), m_family);
    form->addRow(tr("Layers"), m_layersSpin);
    form->addRow(tr("Hidden"), m_hidden);
    form->addRow(tr("Heads"), pair);
    form->addRow(tr("FFN hidden"), m_ffn);
    form->addRow(tr("Vocabulary"), m_vocab);
    auto *moe = new QWidget;
    auto *moeLayout = new QHBoxLayout(moe);
    moeLayout->setContentsMargins(0, 0, 0, 0);
    moeLayout->addWidget(m_experts, 1);
    moeLayout->addWidget(new QLabel(tr("top-k")));
    moeLayout->addWidget(m_topK, 1);
    form->addRow(tr("Experts"), moe);
    m_flash = new QCheckBox(tr("Flash attention"));
    m_flash->setObjectName(QStringLiteral("flashAttention"));
    m_flash->setToolTip(tr("No s\u00d7s activations kept: fused attention keeps no score matrix for backward, "
                           "so activation memory and element-wise time drop (docs/cost-model.md)."));
    form->addRow(QString(), m_flash);
    addPatternRows(form);
}

// The layer pattern (runs of layer kinds that repeat to the layer count), the reason a
// pattern was refused, and what else the stack holds (MTP modules, the sliding window).
void ModelPanel::addPatternRows(QFormLayout *form)
{
    m_pattern = new QLineEdit;
    m_pattern->setObjectName(QStringLiteral("layerPattern"));
    m_pattern->setPlaceholderText(tr("uniform: every block the default kind"));
    form->addRow(tr("Pattern"), m_pattern);
    m_patternProblem = new QLabel;
    m_patternProblem->setObjectName(QStringLiteral("patternProblem"));
    m_patternProblem->setWordWrap(true);
    m_patternProblem->setStyleSheet(
        QStringLiteral("QLabel { background: #fdecea; color: #8a1c12; padding: 3px; border-radius: 3px; }"));
    m_patternProblem->hide();
    form->addRow(QString(), m_patternProblem);
    m_stackInfo = new QLabel;
    m_stackInfo->setObjectName(QStringLiteral("stackInfo"));
    m_stackInfo->setWordWrap(true);  // MTP, window and routing together outgrow a narrow dock
    m_stackInfo->setStyleSheet(QStringLiteral("color: #6b7785;"));
    form->addRow(QString(), m_stackInfo);
}

// The per-layer table (m_table) over the layer model.
void ModelPanel::createLayerTable()
{
    m_table = new QTableView;
    m_table->setModel(m_layers);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(20);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    // Every number column fits the default dock; a layer's kind is in its name's tooltip
    // (and the names say it: embedding, block7, head).
    m_table->setColumnHidden(LayerTableModel::KindColumn, true);
}

// Every field commits its edit through the document's typed setters; the document's model
// changes refresh the panel.
void ModelPanel::connectEdits()
{
    connect(m_preset, &QComboBox::currentIndexChanged, this, &ModelPanel::choosePreset);
    connect(m_import, &QPushButton::clicked, this, &ModelPanel::import);
    connect(m_family, &QComboBox::currentIndexChanged, this, &ModelPanel::commitForm);
    for (QSpinBox *s : {m_layersSpin, m_hidden, m_heads, m_kvHeads, m_ffn, m_vocab, m_experts, m_topK})
        connect(s, &QSpinBox::valueChanged, this, &ModelPanel::commitForm);
    connect(m_flash, &QCheckBox::toggled, this, &ModelPanel::commitForm);
    connect(m_pattern, &QLineEdit::editingFinished, this, &ModelPanel::commitPattern);
    for (QSpinBox *s : {m_seq, m_batch})
        connect(s, &QSpinBox::valueChanged, this, &ModelPanel::commitRunOptions);
    connect(m_document, &WorkspaceDocument::modelChanged, this, &ModelPanel::refresh);
}

void ModelPanel::refresh()
{
    m_updating = true;
    const ModelSource &model = m_document->model();
    m_problem.clear();
    m_config.reset();
    const QSignalBlocker b(m_preset);
    if (model.empty()) {
        m_preset->setCurrentIndex(0);
        m_source->setText(tr("No model: pick a preset or import a file."));
        m_form->setEnabled(false);
        clearViews();
        m_error->hide();
        m_updating = false;
        return;
    }
    auto config = model.config("model");
    if (config) {
        showConfig(*config, model);
    } else {
        showProfileOnly(model.kind());
    }
    auto profile = model.profile("model");
    if (!profile) {
        m_problem = windowWording(QString::fromStdString(profile.error()));
        m_error->setText(m_problem);
        m_error->show();
        clearViews();
        m_updating = false;
        return;
    }
    m_error->hide();
    const ModelProfile &p = *profile;
    if (!config) {
        const QSignalBlocker b1(m_seq), b2(m_batch);
        m_seq->setValue(p.seqLength);
        m_batch->setValue(p.globalBatch);
        m_seq->setToolTip(tr("Sequence length the profile was measured at"));
    }
    showProfile(p);
    m_updating = false;
}

void ModelPanel::clearViews()
{
    m_layers->clear();
    m_strip->clear();
    m_summary->clear();
}

// A model with hyperparameters: the form shows them (the caller blocks m_preset's signals).
void ModelPanel::showConfig(const ModelConfig &c, const ModelSource &model)
{
    m_config = c;
    const ModelFileKind kind = model.kind();
    const bool preset = model.isPreset();
    const int idx = preset ? m_preset->findText(QString::fromStdString(c.name), Qt::MatchFixedString) : -1;
    m_preset->setCurrentIndex(std::max(0, idx));
    m_source->setText(kind == ModelFileKind::HfConfig
                          ? tr("Imported Hugging Face config: %1").arg(QString::fromStdString(c.name))
                          : (c.source.empty() ? QString::fromStdString(c.name)
                                              : tr("Source: %1").arg(QString::fromStdString(c.source))));
    const QSignalBlocker bf(m_family);
    m_family->setCurrentText(QString::fromStdString(c.family));
    const std::pair<QSpinBox *, int> values[] = {
        {m_layersSpin, c.layers}, {m_hidden, c.hidden}, {m_heads, c.heads}, {m_kvHeads, c.kvHeads},
        {m_ffn, c.ffnHidden}, {m_vocab, c.vocab}, {m_experts, c.experts}, {m_topK, c.topK},
        {m_seq, c.seqLength}, {m_batch, c.globalBatch}};
    for (const auto &[spin, value] : values) {
        const QSignalBlocker bs(spin);
        spin->setValue(value);
    }
    const QSignalBlocker bfa(m_flash);
    m_flash->setChecked(c.flashAttention);
    refreshPattern(c);
    m_form->setEnabled(true);
    m_form->setVisible(true);
    m_seq->setEnabled(true);
    m_batch->setEnabled(true);
}

// A measured profile has no hyperparameters: the previous model's must not stay on show, so
// the form is hidden; its run settings stay editable (the batch; the sequence length where
// the file gives none, ModelSource::withRunSettings).
void ModelPanel::showProfileOnly(ModelFileKind kind)
{
    m_preset->setCurrentIndex(0);
    m_form->setEnabled(false);
    m_form->setVisible(false);
    m_seq->setEnabled(true);
    m_batch->setEnabled(true);
    m_source->setText(kind == ModelFileKind::Profile || kind == ModelFileKind::Artifact
                          ? tr("Measured per-layer profile: its layers are listed below")
                          : QString());
}

// The per-layer table, the strip of layer kinds and the one-line summary.
void ModelPanel::showProfile(const ModelProfile &p)
{
    m_layers->setProfile(p);
    m_strip->setProfile(p);
    // A measured profile without FLOPs (the NEST artifact's) says so rather than "0 FLOP".
    const QString flops = modelFlopsKnown(p) ? tr("%1 per token (fwd+bwd)").arg(human(p.flopsPerToken(), tr("FLOP")))
                                             : tr("FLOPs per token: not in the profile");
    QString measured;
    if (hasMeasuredTimes(p) && !p.measuredOn.empty())
        measured = tr(", times measured on %1").arg(QString::fromStdString(p.measuredOn).toHtmlEscaped());
    m_summary->setText(tr("<b>%1</b>: %2 parameters (%3 active), %4 layers, %5, weights %6%7")
                           .arg(QString::fromStdString(p.name).toHtmlEscaped(), human(p.totalParams()),
                                human(p.activeParams()))
                           .arg(p.layerCount())
                           .arg(flops, human(p.weightBytes(), tr("B")), measured));
}

void ModelPanel::choosePreset(int index)
{
    if (m_updating || index <= 0)
        return;
    // A preset brings its own sequence length and batch (as nest-cli --model NAME plans it);
    // say what changed rather than silently keeping the previous model's.
    const std::optional<RunSettings> before =
        m_config ? std::optional<RunSettings>(RunSettings{m_seq->value(), m_batch->value()}) : std::nullopt;
    m_document->setModelPreset(m_preset->itemText(index), std::nullopt);
    if (before && m_config && (m_config->seqLength != before->seqLength || m_config->globalBatch != before->globalBatch))
        emit statusMessage(tr("%1: sequence length %2, global batch %3 (the preset's own)")
                               .arg(m_preset->itemText(index))
                               .arg(m_config->seqLength)
                               .arg(m_config->globalBatch));
}

void ModelPanel::commitForm()
{
    if (m_updating || !m_config)
        return;
    ModelConfig c = *m_config;
    c.family = m_family->currentText().toStdString();
    c.layers = m_layersSpin->value();
    c.hidden = m_hidden->value();
    c.heads = m_heads->value();
    c.kvHeads = m_kvHeads->value();
    c.ffnHidden = m_ffn->value();
    c.vocab = m_vocab->value();
    c.experts = m_experts->value();
    c.topK = m_topK->value();
    c.flashAttention = m_flash->isChecked();
    QString refusal;
    if (!m_document->setModelConfig(c, &refusal)) {
        emit statusMessage(tr("Model not changed: %1").arg(refusal));
        refresh();
    }
}

void ModelPanel::refreshPattern(const ModelConfig &c)
{
    const QSignalBlocker bp(m_pattern);
    m_pattern->setText(QString::fromStdString(formatLayerPattern(c.pattern)));
    m_pattern->setCursorPosition(0);  // a long hybrid pattern shows its start
    m_pattern->setToolTip(tr("Runs of layer kinds that repeat to the layer count, e.g. \"3*dense, 58*moe\" or "
                             "\"5*sliding, global\"; empty: every block the default kind.\nKinds: %1")
                              .arg(QString::fromStdString(builtinLayerKindNames())));
    m_patternProblem->hide();
    m_patternProblem->clear();
    QStringList info;
    if (c.mtpLayers > 0)
        info << tr("MTP modules: %1").arg(c.mtpLayers);
    if (c.slidingWindow > 0)
        info << tr("sliding window: %1 tokens").arg(c.slidingWindow);
    if (c.routing().groupLimited())
        info << tr("routing: top-%1 inside %2 of %3 expert groups").arg(c.topK).arg(c.routerGroupTopK).arg(c.routerGroups);
    m_stackInfo->setText(info.join(QStringLiteral(" · ")));
    m_stackInfo->setVisible(!info.isEmpty());
}

QString ModelPanel::patternProblem() const
{
    return m_patternProblem->text();
}

// The pattern as typed: parsed by core, checked with the rest of the model (kinds it knows,
// not longer than the layer count, what a kind needs), and taken as one undo step of its own;
// a pattern that does not parse or check is refused with the reason and changes nothing.
void ModelPanel::commitPattern()
{
    if (m_updating || !m_config)
        return;
    const std::string text = m_pattern->text().trimmed().toStdString();
    std::vector<LayerRun> runs;
    if (!text.empty()) {
        std::string error;
        auto parsed = parseLayerPattern(text, error);
        if (!parsed) {
            m_patternProblem->setText(tr("Pattern not changed: %1").arg(QString::fromStdString(error)));
            m_patternProblem->show();
            return;
        }
        runs = std::move(*parsed);
    }
    if (runs == m_config->pattern) {  // the same runs, perhaps written otherwise
        refreshPattern(*m_config);
        return;
    }
    ModelConfig c = *m_config;
    c.pattern = std::move(runs);
    if (const ConfigProblem problem = findProblem(c); !problem.reason.empty()) {
        m_patternProblem->setText(tr("Pattern not changed: %1").arg(windowWording(QString::fromStdString(problem.reason))));
        m_patternProblem->show();
        return;
    }
    // Not merged with the spin boxes' edits: a typed pattern is one step of its own.
    m_document->setModel(ModelSource::fromConfig(c));
}

void ModelPanel::commitRunOptions()
{
    if (m_updating || m_document->model().empty())
        return;
    QString refusal;
    if (!m_document->setModelRunSettings(m_seq->value(), m_batch->value(), &refusal)) {
        emit statusMessage(tr("Model not changed: %1").arg(windowWording(refusal)));
        refresh();
    }
}

bool ModelPanel::importFile(const QString &fileName)
{
    auto j = readJsonFile(fileName.toStdString());
    const ModelSource file = j ? ModelSource(*j) : ModelSource();
    auto profile = j ? file.profile(fileName.toStdString()) : Result<ModelProfile>::failure(j.error());
    // A NEST artifact input whose sequence length neither its name nor its keys give: take it
    // in with the Sequence length shown (editable; ModelSource::withRunSettings).
    const Result<ModelSource> withSeq =
        !profile && j && file.kind() == ModelFileKind::Artifact
            ? importedModel(*j, fileName.toStdString(), {}, std::nullopt)
                  .withRunSettings(m_seq->value(), m_batch->value(), "model")
            : Result<ModelSource>::failure("");
    if (withSeq) {
        m_document->setModel(*withSeq);
        emit statusMessage(tr("Imported %1: it does not give its sequence length, so %2 tokens are assumed; "
                              "change Sequence length if it was measured at another")
                               .arg(QFileInfo(fileName).fileName())
                               .arg(m_seq->value()));
        return true;
    }
    if (!profile) {
        // The current model stays; the reason goes to the message bar.
        m_error->setText(tr("Import failed: %1").arg(windowWording(QString::fromStdString(profile.error()))));
        m_error->show();
        emit statusMessage(windowWording(QString::fromStdString(profile.error())));
        return false;
    }
    // The run settings the user had, when the current model has any.
    std::optional<RunSettings> before;
    if (auto current = m_document->model().profile("model"))
        before = RunSettings{current->seqLength, current->globalBatch};
    const ModelSource imported =
        importedModel(*j, fileName.toStdString(),
                      tr("Hugging Face config %1").arg(QFileInfo(fileName).fileName()).toStdString(), before);
    auto result = imported.profile("model");
    if (!result) {   // cannot happen for a file that loaded on its own; keep the file as is
        m_document->setModel(file);
        result = std::move(profile);
    } else {
        m_document->setModel(imported);
    }
    // Name the model as the panel does (the profile of the document's model).
    QString message = tr("Imported model %1 from %2")
                          .arg(QString::fromStdString(result->name), QFileInfo(fileName).fileName());
    if (before) {
        QStringList changes;
        if (result->seqLength != before->seqLength)
            changes << tr("sequence length %1 → %2 (set by the imported model)")
                           .arg(before->seqLength).arg(result->seqLength);
        if (result->globalBatch != before->globalBatch)
            changes << tr("global batch %1 → %2 (set by the imported model)")
                           .arg(before->globalBatch).arg(result->globalBatch);
        if (!changes.isEmpty())
            message += QStringLiteral("; ") + changes.join(QStringLiteral("; "));
    }
    emit statusMessage(message);
    return true;
}

void ModelPanel::import()
{
    const QString file = QFileDialog::getOpenFileName(this, tr("Import model"), QString(),
                                                      tr("Model files (*.json);;All files (*)"));
    if (!file.isEmpty())
        importFile(file);
}

} // namespace nest::ui
