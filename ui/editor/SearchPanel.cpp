#include "SearchPanel.h"

#include "Evaluator.h"
#include "Glossary.h"
#include "Limits.h"

#include "WorkspaceDocument.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QRegularExpression>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace nest::ui {

namespace {

// A spin box spans exactly the range the workspace loader and nest-cli accept (Limits.h),
// so that no file value is clamped on display and written back on the next edit.
void setRangeOf(QSpinBox *box, const Range &r)
{
    box->setRange(static_cast<int>(r.min), static_cast<int>(r.max));
}

QString listText(const std::vector<int> &v)
{
    QStringList parts;
    for (int x : v)
        parts << QString::number(x);
    return parts.join(QStringLiteral(", "));
}

} // namespace

std::optional<std::vector<int>> SearchPanel::parseList(const QString &text, QString *why, int minValue,
                                                       int maxValue)
{
    std::vector<int> out;
    const QStringList parts = text.split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts);
    for (const QString &p : parts) {
        bool ok = false;
        const int v = p.toInt(&ok);
        if (!ok || v < minValue) {
            *why = tr("'%1' is not a whole number of at least %2").arg(p).arg(minValue);
            return std::nullopt;
        }
        if (v > maxValue) {
            *why = tr("%1 is above %2").arg(v).arg(maxValue);
            return std::nullopt;
        }
        if (std::find(out.begin(), out.end(), v) != out.end()) {
            *why = tr("%1 is listed twice").arg(v);
            return std::nullopt;
        }
        out.push_back(v);
    }
    if (out.empty()) {
        *why = tr("needs at least one value");
        return std::nullopt;
    }
    return out;
}

SearchPanel::SearchPanel(WorkspaceDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_document(document)
{
    setObjectName(QStringLiteral("searchPanel"));
    auto *top = new QVBoxLayout(this);
    addRunArea(top);
    auto *form = new QFormLayout;
    m_planner = new QComboBox;
    for (const std::string &n : plannerNames())
        m_planner->addItem(QString::fromStdString(n));
    m_planner->setToolTip(tr("nest: the network-aware dynamic program; exhaustive: every plan (small clusters only)"));
    form->addRow(tr("Planner"), m_planner);
    // "Plan for" (issue 47): restrict the search to what one framework runs as it is.
    m_target = new QComboBox;
    m_target->setObjectName(QStringLiteral("planForTarget"));
    m_target->addItem(tr("any framework (unconstrained)"), QString());
    m_target->addItem(tr("Megatron-LM"), QStringLiteral("megatron"));
    m_target->addItem(tr("NeMo"), QStringLiteral("nemo"));
    m_target->addItem(tr("DeepSpeed"), QStringLiteral("deepspeed"));
    m_target->addItem(tr("torchtitan"), QStringLiteral("torchtitan"));
    m_target->setToolTip(tr("Search only the plans this framework runs as they are (one width for the model, its "
                            "schedules, ZeRO stages and stage splits); its export then needs no fallback"));
    form->addRow(tr("Plan for"), m_target);
    top->addLayout(form);

    top->addWidget(createStrategies());
    top->addWidget(createCandidates());
    top->addWidget(createSchedules());
    m_error = new QLabel;
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();
    top->addWidget(m_error);
    top->addStretch(1);

    connectEdits();
    refresh();
}

// The run buttons (setActions), the progress bar and the run status.
void SearchPanel::addRunArea(QVBoxLayout *top)
{
    m_buttons = new QWidget;
    auto *buttons = new QHBoxLayout(m_buttons);
    buttons->setContentsMargins(0, 0, 0, 0);
    top->addWidget(m_buttons);
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p%"));
    top->addWidget(m_progress);
    m_status = new QLabel(tr("Not planned yet"));
    m_status->setWordWrap(true);
    // Room for the longest status (three lines), so the dock does not jump as it changes.
    m_status->setMinimumHeight(3 * m_status->fontMetrics().lineSpacing());
    m_status->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    top->addWidget(m_status);
}

// The strategies on/off and the recompute modes a stage may use.
QWidget *SearchPanel::createStrategies()
{
    auto *strategies = new QGroupBox(tr("Strategies"));
    auto *grid = new QGridLayout(strategies);
    m_tpOn = new QCheckBox(tr("Tensor (TP)"));
    m_ppOn = new QCheckBox(tr("Pipeline (PP)"));
    m_dpOn = new QCheckBox(tr("Data (DP)"));
    m_epOn = new QCheckBox(tr("Expert (EP)"));
    m_spOn = new QCheckBox(tr("Sequence (SP)"));
    m_cpOn = new QCheckBox(tr("Context (CP)"));
    m_zeroOn = new QCheckBox(tr("ZeRO 1-3"));
    m_recomputeOn = new QCheckBox(tr("Recompute"));
    m_zeroOn->setToolTip(termTip(QStringLiteral("zero")));
    m_spOn->setToolTip(termTip(QStringLiteral("sp")));
    m_recomputeOn->setToolTip(termTip(QStringLiteral("recompute")));
    const QList<QCheckBox *> boxes{m_tpOn, m_ppOn, m_dpOn, m_epOn, m_spOn, m_cpOn, m_zeroOn, m_recomputeOn};
    for (int i = 0; i < boxes.size(); ++i)
        grid->addWidget(boxes[i], i / 2, i % 2);
    // The recompute modes a stage may use (Recompute on); "none" keeps every activation.
    auto *modes = new QHBoxLayout;
    m_rcNone = new QCheckBox(tr("none"));
    m_rcSelective = new QCheckBox(tr("selective"));
    m_rcFull = new QCheckBox(tr("full"));
    m_rcNone->setToolTip(tr("Stages may keep every activation"));
    m_rcSelective->setToolTip(tr("Stages may recompute the attention core in backward (Megatron-LM selective)"));
    m_rcFull->setToolTip(tr("Stages may keep only each block's input and rerun its forward"));
    // The label on its own line: the dock stays narrow enough for a 1366 px screen.
    for (QCheckBox *b : {m_rcNone, m_rcSelective, m_rcFull})
        modes->addWidget(b);
    modes->addStretch(1);
    const int row = static_cast<int>(boxes.size() + 1) / 2;
    grid->addWidget(new QLabel(tr("Recompute modes:")), row, 0, 1, 2);
    grid->addLayout(modes, row + 1, 0, 1, 2);
    // What selective recomputation reruns (Megatron-Core's --recompute-modules; docs/cost-model.md,
    // "Recomputation by module"), two a line like the strategies above.
    m_rmCoreAttn = new QCheckBox(tr("core attention"));
    m_rmLayerNorm = new QCheckBox(tr("norms"));
    m_rmMoeAct = new QCheckBox(tr("expert activation"));
    m_rmMlaUp = new QCheckBox(tr("MLA up-projections"));
    m_rmCoreAttn->setObjectName(QStringLiteral("recomputeCoreAttn"));
    m_rmLayerNorm->setObjectName(QStringLiteral("recomputeLayerNorm"));
    m_rmMoeAct->setObjectName(QStringLiteral("recomputeMoeAct"));
    m_rmMlaUp->setObjectName(QStringLiteral("recomputeMlaUp"));
    m_rmCoreAttn->setToolTip(tr("core_attn: rerun the core attention, drop what it saves inside (the default)"));
    m_rmLayerNorm->setToolTip(tr("layernorm: drop the input and pre-MLP norms' outputs, rerun the norms"));
    m_rmMoeAct->setToolTip(tr("moe_act: drop the routed experts' activation outputs, rerun the activation "
                              "(MoE models)"));
    m_rmMlaUp->setToolTip(tr("mla_up_proj: drop multi-latent attention's Q, K and V, rerun the up projections "
                             "(MLA models)"));
    grid->addWidget(new QLabel(tr("Selective reruns:")), row + 2, 0, 1, 2);
    const QList<QCheckBox *> modules{m_rmCoreAttn, m_rmLayerNorm, m_rmMoeAct, m_rmMlaUp};
    for (int i = 0; i < modules.size(); ++i)
        grid->addWidget(modules[i], row + 3 + i / 2, i % 2);
    return strategies;
}

// The candidate lists, max stages, memory headroom, the framework profile and the
// planners' own knobs.
QWidget *SearchPanel::createCandidates()
{
    auto *space = new QGroupBox(tr("Candidates"));
    auto *sform = new QFormLayout(space);
    addCandidateLists(sform);
    addCostChoices(sform);
    addMoeChoices(sform);
    addPlannerKnobs(sform);
    return space;
}

// The widths and sizes searched, the pipeline depth limit and the memory headroom.
void SearchPanel::addCandidateLists(QFormLayout *sform)
{
    m_microBatches = new QLineEdit;
    m_microBatches->setToolTip(tr("Micro-batch sizes to search, e.g. 1, 2, 4, 8"));
    m_tp = new QLineEdit;
    m_ep = new QLineEdit;
    m_etp = new QLineEdit;
    m_etp->setObjectName(QStringLiteral("etp"));
    m_etp->setToolTip(tr("The experts' tensor-parallel widths searched on MoE stages, e.g. \"tp, 1\" (\"tp\": the "
                         "stage's own tensor width); the experts' tp x ep grid folds over the stage's devices "
                         "(Megatron-Core's parallel folding)"));
    m_cp = new QLineEdit;
    m_cp->setToolTip(tr("Context-parallel degrees, each dividing the sequence length"));
    sform->addRow(tr("Micro-batch sizes"), m_microBatches);
    sform->addRow(tr("TP widths"), m_tp);
    sform->addRow(tr("EP widths"), m_ep);
    sform->addRow(tr("ETP widths"), m_etp);
    sform->addRow(tr("CP widths"), m_cp);
    m_maxStages = new QSpinBox;
    setRangeOf(m_maxStages, limits::maxStages);
    m_maxStages->setSpecialValueText(tr("no limit"));
    sform->addRow(tr("Max stages"), m_maxStages);
    m_headroom = new QDoubleSpinBox;
    m_headroom->setRange(100 * limits::memoryHeadroom.min, 100 * limits::memoryHeadroom.max);
    m_headroom->setSuffix(QStringLiteral(" %"));
    m_headroom->setDecimals(1);
    m_headroom->setToolTip(tr("Fraction of each device's memory kept free"));
    sform->addRow(tr("Memory headroom"), m_headroom);
}

// What the cost model assumes: the framework, its stack, the precisions and the FP8 recipe.
void SearchPanel::addCostChoices(QFormLayout *sform)
{
    m_framework = new QComboBox;
    m_framework->setObjectName(QStringLiteral("framework"));
    for (const FrameworkProfile &f : frameworkProfiles())
        m_framework->addItem(QString::fromLatin1(f.name), QString::fromLatin1(f.name));
    m_framework->setToolTip(tr("Training framework the cost model assumes: what it overlaps "
                               "(tensor-parallel, gradient, parameter and pipeline traffic), its "
                               "gradient precision and kernels (docs/cost-model.md)"));
    sform->addRow(tr("Framework"), m_framework);
    // How the framework is run (docs/cost-model.md, "Stacks"): its defaults or its tuned recipes.
    m_stack = new QComboBox;
    m_stack->setObjectName(QStringLiteral("stack"));
    for (const Stack st : {Stack::Defaults, Stack::Tuned})
        m_stack->addItem(QString::fromLatin1(toString(st)), QString::fromLatin1(toString(st)));
    m_stack->setToolTip(tr("defaults: the framework as its command-line defaults run it (no TP-communication, "
                           "gradient or parameter-gather overlap where those are flags; the default, not "
                           "optimistic on runs the model has not seen); tuned: as its published recipes run it"));
    sform->addRow(tr("Stack"), m_stack);
    // The linear layers' precisions searched (docs/cost-model.md, "Precision").
    m_precisions = new QLineEdit;
    m_precisions->setObjectName(QStringLiteral("precisions"));
    m_precisions->setPlaceholderText(tr("every one supported"));
    sform->addRow(tr("Precisions"), m_precisions);
    m_fp8Recipe = new QComboBox;
    m_fp8Recipe->setObjectName(QStringLiteral("fp8Recipe"));
    m_fp8Recipe->addItem(tr("default"), QString());
    for (Fp8Recipe r : {Fp8Recipe::Delayed, Fp8Recipe::Current, Fp8Recipe::Blockwise})
        m_fp8Recipe->addItem(QString::fromLatin1(toString(r)), QString::fromLatin1(toString(r)));
    m_fp8Recipe->setToolTip(tr("FP8 scaling: delayed (amax history), current (per tensor, this step) or "
                               "blockwise (1x128 / 128x128 blocks, DeepSeek-V3); default: delayed, or the "
                               "framework's own"));
    sform->addRow(tr("FP8 recipe"), m_fp8Recipe);
    m_fp8Attention = new QCheckBox(tr("FP8 attention"));
    m_fp8Attention->setObjectName(QStringLiteral("fp8Attention"));
    m_fp8Attention->setToolTip(tr("Transformer Engine's FP8 dot-product attention on the fp8 and mxfp8 plans: the "
                                  "attention keeps Q, K, V and its output in FP8, half their memory "
                                  "(Megatron --fp8-dot-product-attention; docs/cost-model.md, \"Precision\")"));
    sform->addRow(QString(), m_fp8Attention);
}

// How MoE layers are priced (docs/cost-model.md, "MoE parallelism"): the routing imbalance,
// the capacity factor, the dispatcher and Megatron-Core's expert-parallel overlap.
void SearchPanel::addMoeChoices(QFormLayout *sform)
{
    m_moeImbalance = new QDoubleSpinBox;
    m_moeImbalance->setObjectName(QStringLiteral("moeImbalance"));
    m_moeImbalance->setRange(limits::moeImbalance.min, limits::moeImbalance.max);
    m_moeImbalance->setDecimals(2);
    m_moeImbalance->setSingleStep(0.05);
    m_moeImbalance->setToolTip(tr("MoE, dropless: the most loaded expert rank's routed tokens over the mean; its "
                                  "experts' GEMMs and its share of the dispatch take that many times the mean "
                                  "(1 = balanced, as benchmarks that force the balance run)"));
    sform->addRow(tr("MoE imbalance"), m_moeImbalance);
    m_capacityFactor = new QDoubleSpinBox;
    m_capacityFactor->setObjectName(QStringLiteral("capacityFactor"));
    m_capacityFactor->setRange(limits::capacityFactor.min, limits::capacityFactor.max);
    m_capacityFactor->setDecimals(2);
    m_capacityFactor->setSingleStep(0.25);
    m_capacityFactor->setSpecialValueText(tr("dropless"));
    m_capacityFactor->setToolTip(tr("MoE token dropping: an expert takes at most this many times its mean share "
                                    "of the tokens (Megatron-Core --moe-expert-capacity-factor); 0: dropless"));
    sform->addRow(tr("Capacity factor"), m_capacityFactor);
    m_dispatcher = new QComboBox;
    m_dispatcher->setObjectName(QStringLiteral("moeDispatcher"));
    for (const bool hierarchical : {false, true}) {
        const QString name = QString::fromLatin1(moeDispatcherName(hierarchical));
        m_dispatcher->addItem(hierarchical ? tr("%1 (hierarchical)").arg(name) : tr("%1 (flat)").arg(name), name);
    }
    m_dispatcher->setToolTip(tr("The MoE token dispatcher: Megatron-Core's flat all-to-all, or DeepEP / HybridEP's "
                                "hierarchical one, which sends each token once per remote NVLink domain"));
    sform->addRow(tr("MoE dispatcher"), m_dispatcher);
    m_a2aOverlap = new QCheckBox(tr("Expert-parallel overlap"));
    m_a2aOverlap->setObjectName(QStringLiteral("moeA2aOverlap"));
    m_a2aOverlap->setToolTip(tr("Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): one "
                                "micro-batch's dispatch and combine hide behind another's compute, on one stage "
                                "or virtual stages, without full recomputation (docs/cost-model.md §1c)"));
    sform->addRow(QString(), m_a2aOverlap);
}

// The mcmc planner's budget and seed and the nest planner's best K.
void SearchPanel::addPlannerKnobs(QFormLayout *sform)
{
    // Enabled when their planner is the one chosen.
    m_budget = new QSpinBox;
    m_budget->setObjectName(QStringLiteral("mcmcBudget"));
    m_budget->setRange(0, static_cast<int>(limits::evaluationBudget.max));  // 0: the planner's default
    m_budget->setSingleStep(500);
    m_budget->setSpecialValueText(tr("default (2000)"));
    m_budget->setToolTip(tr("Plan evaluations the mcmc planner may spend: more finds better plans, slowly"));
    sform->addRow(tr("MCMC budget"), m_budget);
    m_seed = new QSpinBox;
    m_seed->setObjectName(QStringLiteral("mcmcSeed"));
    setRangeOf(m_seed, limits::searchSeed);
    m_seed->setToolTip(tr("The mcmc planner's random seed: the same seed gives the same plan"));
    sform->addRow(tr("MCMC seed"), m_seed);
    // The nest planner's best K distinct plans (the workspace's top_k).
    m_keepBest = new QSpinBox;
    m_keepBest->setObjectName(QStringLiteral("keepBest"));
    setRangeOf(m_keepBest, limits::topPlans);
    m_keepBest->setSpecialValueText(tr("1 (the best plan)"));
    m_keepBest->setToolTip(tr("Run keeps the best K distinct plans (another shape, or a stage boundary on another "
                              "network tier) and lists them as one group, each with its time above the best: "
                              "when they are within the model's error, pick the simpler or more robust layout"));
    sform->addRow(tr("Keep best"), m_keepBest);
}

// The schedules with the interleaving depths, and the replica layouts.
QWidget *SearchPanel::createSchedules()
{
    auto *sched = new QGroupBox(tr("Schedules and layouts"));
    auto *sgrid = new QGridLayout(sched);
    m_1f1b = new QCheckBox(QStringLiteral("1F1B"));
    m_gpipe = new QCheckBox(QStringLiteral("GPipe"));
    m_interleaved = new QCheckBox(tr("Interleaved, depths"));
    m_virtual = new QLineEdit;
    m_virtual->setToolTip(tr("Model chunks per device to try in the interleaved 1F1B schedule, 2 to 64, e.g. 2, 3, 4"));
    m_outside = new QCheckBox(tr("Replicas side by side"));
    m_outside->setToolTip(tr("Stage-major: each stage's data-parallel replicas next to each other"));
    m_inside = new QCheckBox(tr("Pipeline per block"));
    m_inside->setToolTip(tr("Pipeline-major: each replica a whole pipeline in its own block"));
    sgrid->addWidget(m_1f1b, 0, 0);
    sgrid->addWidget(m_gpipe, 0, 1);
    sgrid->addWidget(m_interleaved, 1, 0);
    sgrid->addWidget(m_virtual, 1, 1);
    sgrid->addWidget(m_outside, 2, 0);
    sgrid->addWidget(m_inside, 2, 1);
    // What the pipeline split counts (NeMo's account_for_embedding/loss_in_pipeline_split,
    // DeepSpeed's partition_method): the blocks only, or the embedding and the loss as units.
    m_units = new QComboBox;
    for (PipelineUnits u : {PipelineUnits::Layers, PipelineUnits::LayersEmbedding, PipelineUnits::LayersEmbeddingLoss}) {
        const QString text = u == PipelineUnits::Layers            ? tr("Layers")
                             : u == PipelineUnits::LayersEmbedding ? tr("Layers + embedding")
                                                                   : tr("Layers + embedding + loss");
        m_units->addItem(text, QString::fromLatin1(toString(u)));
    }
    m_units->setToolTip(tr("What a pipeline stage boundary counts: the transformer layers only, or also the "
                           "embedding and the output layer with the loss as units of their own (as NeMo and "
                           "DeepSpeed can split them)"));
    // Its longest entry must not widen the dock: the popup shows it whole.
    m_units->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_units->setMinimumContentsLength(10);
    auto *unitsLabel = new QLabel(tr("Pipeline units"));
    unitsLabel->setBuddy(m_units);
    sgrid->addWidget(unitsLabel, 3, 0);
    sgrid->addWidget(m_units, 3, 1);
    return sched;
}

// Every field commits its edit as an undo step; the document's changes refresh the form.
void SearchPanel::connectEdits()
{
    const QList<QCheckBox *> boxes{m_tpOn, m_ppOn, m_dpOn, m_epOn, m_spOn, m_cpOn, m_zeroOn, m_recomputeOn};
    for (QCheckBox *b : boxes + QList<QCheckBox *>{m_rcNone, m_rcSelective, m_rcFull, m_1f1b, m_gpipe, m_interleaved,
                                                    m_outside, m_inside, m_rmCoreAttn, m_rmLayerNorm, m_rmMoeAct,
                                                    m_rmMlaUp})
        connect(b, &QCheckBox::toggled, this, &SearchPanel::commit);
    for (QLineEdit *e : {m_microBatches, m_tp, m_ep, m_etp, m_cp, m_virtual, m_precisions})
        connect(e, &QLineEdit::editingFinished, this, &SearchPanel::commit);
    connect(m_planner, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    connect(m_target, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    connect(m_maxStages, &QSpinBox::valueChanged, this, &SearchPanel::commit);
    connect(m_headroom, &QDoubleSpinBox::valueChanged, this, &SearchPanel::commit);
    connect(m_framework, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    connect(m_stack, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    connect(m_fp8Recipe, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    connect(m_fp8Attention, &QCheckBox::toggled, this, &SearchPanel::commit);
    connect(m_dispatcher, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    connect(m_a2aOverlap, &QCheckBox::toggled, this, &SearchPanel::commit);
    for (QDoubleSpinBox *box : {m_moeImbalance, m_capacityFactor}) {
        box->setKeyboardTracking(false);
        connect(box, &QDoubleSpinBox::valueChanged, this, &SearchPanel::commit);
    }
    connect(m_units, &QComboBox::currentIndexChanged, this, &SearchPanel::commit);
    // Spin boxes commit when the edit is done (Enter, focus out, arrows), not per keystroke.
    for (QSpinBox *box : {m_budget, m_seed, m_keepBest}) {
        box->setKeyboardTracking(false);
        connect(box, &QSpinBox::valueChanged, this, &SearchPanel::commit);
    }
    connect(m_document, &WorkspaceDocument::searchChanged, this, &SearchPanel::refresh);
}

void SearchPanel::setActions(QAction *run, QAction *cancel, QAction *live)
{
    auto *layout = static_cast<QHBoxLayout *>(m_buttons->layout());
    for (QAction *a : {run, cancel, live}) {
        auto *b = new QToolButton;
        b->setDefaultAction(a);
        b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        layout->addWidget(b);
    }
    layout->addStretch(1);
}

void SearchPanel::setRunStatus(const QString &text)
{
    m_status->setText(text);
}

QString SearchPanel::runStatus() const
{
    return m_status->text();
}

QCheckBox *SearchPanel::strategyBox(const QString &name) const
{
    if (name == QLatin1String("tp")) return m_tpOn;
    if (name == QLatin1String("pp")) return m_ppOn;
    if (name == QLatin1String("dp")) return m_dpOn;
    if (name == QLatin1String("ep")) return m_epOn;
    if (name == QLatin1String("sp")) return m_spOn;
    if (name == QLatin1String("cp")) return m_cpOn;
    if (name == QLatin1String("zero")) return m_zeroOn;
    if (name == QLatin1String("recompute")) return m_recomputeOn;
    return nullptr;
}

QCheckBox *SearchPanel::recomputeModeBox(Recompute r) const
{
    switch (r) {
    case Recompute::None: return m_rcNone;
    case Recompute::Selective: return m_rcSelective;
    case Recompute::Full: return m_rcFull;
    }
    return nullptr;
}

QCheckBox *SearchPanel::recomputeModuleBox(RecomputeModule m) const
{
    switch (m) {
    case RecomputeModule::CoreAttn: return m_rmCoreAttn;
    case RecomputeModule::LayerNorm: return m_rmLayerNorm;
    case RecomputeModule::MoeAct: return m_rmMoeAct;
    case RecomputeModule::MlaUpProj: return m_rmMlaUp;
    }
    return m_rmCoreAttn;
}

QCheckBox *SearchPanel::scheduleBox(Schedule s) const
{
    switch (s) {
    case Schedule::OneFOneB: return m_1f1b;
    case Schedule::GPipe: return m_gpipe;
    case Schedule::Interleaved: return m_interleaved;
    }
    return nullptr;
}

void SearchPanel::refresh()
{
    m_updating = true;
    const SearchSettings &s = m_document->search();
    refreshStrategies(s);
    refreshCandidates(s);
    refreshSchedules(s);
    refreshNumbers(s);
    refreshPrecisions(s);
    m_problem.clear();
    m_error->hide();
    m_updating = false;
}

void SearchPanel::refreshStrategies(const SearchSettings &s)
{
    m_planner->setCurrentText(QString::fromStdString(s.planner));
    m_target->setCurrentIndex(std::max(0, m_target->findData(QString::fromStdString(s.target))));
    m_tpOn->setChecked(s.allowTp);
    m_ppOn->setChecked(s.allowPp);
    m_dpOn->setChecked(s.allowDp);
    m_epOn->setChecked(s.allowEp);
    m_spOn->setChecked(s.allowSequenceParallel);
    m_cpOn->setChecked(s.allowCp);
    m_zeroOn->setChecked(s.allowZero);
    m_recomputeOn->setChecked(s.allowRecompute);
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
        QCheckBox *b = recomputeModeBox(r);
        b->setChecked(std::find(s.recomputeModes.begin(), s.recomputeModes.end(), r) != s.recomputeModes.end());
        b->setEnabled(s.allowRecompute);
    }
    for (RecomputeModule m : kRecomputeModules) {
        QCheckBox *b = recomputeModuleBox(m);
        b->setChecked(s.recomputeModules.has(m));
        b->setEnabled(s.allowRecompute);
    }
}

void SearchPanel::refreshCandidates(const SearchSettings &s)
{
    m_microBatches->setText(listText(s.microBatches));
    m_tp->setText(listText(s.tpCandidates));
    m_ep->setText(listText(s.epCandidates));
    QStringList etps;
    for (int e : s.etpCandidates)
        etps << (e == 0 ? QStringLiteral("tp") : QString::number(e));
    m_etp->setText(etps.join(QStringLiteral(", ")));
    m_cp->setText(listText(s.cpCandidates));
    m_cp->setToolTip(s.cpMinTokensPerRank > 0
                         ? tr("Context-parallel degrees, each dividing the sequence length; a degree above 1 is "
                              "searched only when sequence / degree is at least %1 tokens (edit the list to search "
                              "it as given)").arg(s.cpMinTokensPerRank)
                         : tr("Context-parallel degrees, each dividing the sequence length (searched as given)"));
    m_tp->setEnabled(s.allowTp);
    m_ep->setEnabled(s.allowEp);
    m_etp->setEnabled(s.allowEp);
    m_cp->setEnabled(s.allowCp);
    m_maxStages->setEnabled(s.allowPp);
}

void SearchPanel::refreshSchedules(const SearchSettings &s)
{
    auto hasSchedule = [&](Schedule x) { return std::find(s.schedules.begin(), s.schedules.end(), x) != s.schedules.end(); };
    m_1f1b->setChecked(hasSchedule(Schedule::OneFOneB));
    m_gpipe->setChecked(hasSchedule(Schedule::GPipe));
    m_interleaved->setChecked(hasSchedule(Schedule::Interleaved));
    m_virtual->setText(listText(s.virtualStages));
    m_virtual->setEnabled(hasSchedule(Schedule::Interleaved));
    auto hasLayout = [&](Layout x) { return std::find(s.layouts.begin(), s.layouts.end(), x) != s.layouts.end(); };
    m_outside->setChecked(hasLayout(Layout::ReplicasOutside));
    m_inside->setChecked(hasLayout(Layout::ReplicasInside));
}

void SearchPanel::refreshNumbers(const SearchSettings &s)
{
    m_maxStages->setValue(s.maxStages);
    m_headroom->setValue(100.0 * s.memoryHeadroom);
    m_shownHeadroom = m_headroom->value();  // rounded to the box's decimals
    m_moeImbalance->setValue(s.moeImbalance);
    m_shownImbalance = m_moeImbalance->value();
    m_capacityFactor->setValue(s.capacityFactor);
    m_shownCapacity = m_capacityFactor->value();
    m_dispatcher->setCurrentIndex(m_dispatcher->findData(QString::fromLatin1(moeDispatcherName(s.moeHierarchicalDispatch))));
    m_a2aOverlap->setChecked(s.moeA2aOverlap);
    m_framework->setCurrentIndex(m_framework->findData(QString::fromLatin1(toString(s.framework))));
    m_stack->setCurrentIndex(m_stack->findData(QString::fromLatin1(toString(s.stack))));
    m_units->setCurrentIndex(m_units->findData(QString::fromLatin1(toString(s.pipelineUnits))));
    m_budget->setValue(s.mcmcBudget);
    m_seed->setValue(static_cast<int>(std::min<long long>(s.seed, std::numeric_limits<int>::max())));
    m_budget->setEnabled(s.planner == "mcmc");
    m_seed->setEnabled(s.planner == "mcmc");
    m_keepBest->setValue(s.topK);
    m_keepBest->setEnabled(s.planner == "nest");
}

void SearchPanel::refreshPrecisions(const SearchSettings &s)
{
    QStringList formats;
    for (NumberFormat f : s.precisions)
        formats << QString::fromLatin1(toString(f));
    m_precisions->setText(formats.join(QStringLiteral(", ")));
    // What this cluster's devices support, beside what the list searches.
    std::vector<NumberFormat> common{NumberFormat::Bf16, NumberFormat::Fp8, NumberFormat::Mxfp8, NumberFormat::Nvfp4};
    for (const DeviceSpec &d : m_document->topology().deviceTypes)
        std::erase_if(common, [&d](NumberFormat f) { return !d.supports(f); });
    m_precisions->setToolTip(tr("The linear layers' number formats searched, e.g. \"bf16, fp8\"; empty: every one "
                                "the devices and the framework support. This cluster's devices support: %1")
                                 .arg(QString::fromStdString(formatList(common))));
    m_fp8Recipe->setCurrentIndex(
        s.fp8Recipe ? m_fp8Recipe->findData(QString::fromLatin1(toString(*s.fp8Recipe))) : 0);
    m_fp8Attention->setChecked(s.fp8Attention);
}

void SearchPanel::commit()
{
    if (m_updating)
        return;
    SearchSettings s = m_document->search();
    QString what, why;
    const bool ok = readStrategies(s, &what, &why) && readCandidates(s, &what, &why) &&
                    readExpertWidths(s, &what, &why) && readSchedules(s, &what, &why);
    if (ok)
        readNumbers(s);
    if (!ok || !readPrecisions(s, &what, &why)) {
        m_problem = tr("%1: %2").arg(what, why);
        m_error->setText(m_problem);
        m_error->show();
        return;
    }
    m_problem.clear();
    m_error->hide();
    m_document->setSearch(s);
}

// The planner, "Plan for", the strategies and the recompute modes (at least one).
bool SearchPanel::readStrategies(SearchSettings &s, QString *what, QString *why) const
{
    s.planner = m_planner->currentText().toStdString();
    s.target = m_target->currentData().toString().toStdString();
    s.allowTp = m_tpOn->isChecked();
    s.allowPp = m_ppOn->isChecked();
    s.allowDp = m_dpOn->isChecked();
    s.allowEp = m_epOn->isChecked();
    s.allowSequenceParallel = m_spOn->isChecked();
    s.allowCp = m_cpOn->isChecked();
    s.allowZero = m_zeroOn->isChecked();
    s.allowRecompute = m_recomputeOn->isChecked();
    s.recomputeModes.clear();
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
        if (recomputeModeBox(r)->isChecked())
            s.recomputeModes.push_back(r);
    if (s.recomputeModes.empty()) {
        *why = tr("choose at least one");
        *what = tr("Recompute modes");
        return false;
    }
    s.recomputeModules.mask = 0;
    for (RecomputeModule m : kRecomputeModules)
        if (recomputeModuleBox(m)->isChecked())
            s.recomputeModules.mask |= static_cast<unsigned>(m);
    return true;
}

// The micro-batch sizes and the TP, EP and CP widths, each in its documented range.
bool SearchPanel::readCandidates(SearchSettings &s, QString *what, QString *why) const
{
    const std::vector<int> oldCp = s.cpCandidates;
    const std::pair<QLineEdit *, std::vector<int> *> lists[] = {
        {m_microBatches, &s.microBatches}, {m_tp, &s.tpCandidates}, {m_ep, &s.epCandidates}, {m_cp, &s.cpCandidates}};
    const QString names[] = {tr("Micro-batch sizes"), tr("TP widths"), tr("EP widths"), tr("CP widths")};
    const Range *ranges[] = {&limits::microBatch, &limits::candidateWidth, &limits::candidateWidth,
                             &limits::candidateWidth};
    for (int i = 0; i < 4; ++i) {
        const auto v = parseList(lists[i].first->text(), why, static_cast<int>(ranges[i]->min),
                                 static_cast<int>(ranges[i]->max));
        if (!v) {
            *what = names[i];
            return false;
        }
        *lists[i].second = *v;
    }
    if (s.cpCandidates != oldCp)
        s.cpMinTokensPerRank = 0;  // an edited list is searched as given
    return true;
}

// The experts' tensor widths: "tp" (the stage's own) or widths, at least one.
bool SearchPanel::readExpertWidths(SearchSettings &s, QString *what, QString *why) const
{
    s.etpCandidates.clear();
    for (const QString &item : m_etp->text().split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
        const bool isTp = item.compare(QStringLiteral("tp"), Qt::CaseInsensitive) == 0;
        bool ok = isTp;
        const int v = isTp ? 0 : item.toInt(&ok);
        if (!ok || (!isTp && !limits::candidateWidth.contains(v))) {
            *why = tr("'%1' is neither \"tp\" nor a width from %2 to %3")
                       .arg(item)
                       .arg(limits::candidateWidth.min)
                       .arg(limits::candidateWidth.max);
            *what = tr("ETP widths");
            return false;
        }
        if (std::find(s.etpCandidates.begin(), s.etpCandidates.end(), v) == s.etpCandidates.end())
            s.etpCandidates.push_back(v);
    }
    if (s.etpCandidates.empty()) {
        *why = tr("give at least one width, or \"tp\"");
        *what = tr("ETP widths");
        return false;
    }
    return true;
}

// The interleaving depths, the schedules and the layouts (at least one of each).
bool SearchPanel::readSchedules(SearchSettings &s, QString *what, QString *why) const
{
    const auto depths = parseList(m_virtual->text(), why, static_cast<int>(limits::interleavingDepth.min),
                                  static_cast<int>(limits::interleavingDepth.max));
    if (!depths) {
        *what = tr("Interleaving depths");
        return false;
    }
    s.virtualStages.assign(depths->begin(), depths->end());
    s.schedules.clear();
    for (auto [box, sc] : {std::pair{m_1f1b, Schedule::OneFOneB}, std::pair{m_gpipe, Schedule::GPipe},
                           std::pair{m_interleaved, Schedule::Interleaved}})
        if (box->isChecked())
            s.schedules.push_back(sc);
    if (s.schedules.empty()) {
        *why = tr("choose at least one");
        *what = tr("Schedules");
        return false;
    }
    s.layouts.clear();
    if (m_outside->isChecked())
        s.layouts.push_back(Layout::ReplicasOutside);
    if (m_inside->isChecked())
        s.layouts.push_back(Layout::ReplicasInside);
    if (s.layouts.empty()) {
        *why = tr("choose at least one");
        *what = tr("Layouts");
        return false;
    }
    return true;
}

// The spin boxes and combo boxes, which hold only valid values.
void SearchPanel::readNumbers(SearchSettings &s) const
{
    s.maxStages = m_maxStages->value();
    // The file's headroom is kept unless this box was edited: the box shows it rounded to
    // one decimal of a percent, which must not replace it on another field's edit.
    if (m_headroom->value() != m_shownHeadroom)
        s.memoryHeadroom = m_headroom->value() / 100.0;
    // The MoE numbers likewise (two decimals shown).
    if (m_moeImbalance->value() != m_shownImbalance)
        s.moeImbalance = m_moeImbalance->value();
    if (m_capacityFactor->value() != m_shownCapacity)
        s.capacityFactor = m_capacityFactor->value();
    s.moeHierarchicalDispatch =
        moeDispatcherIsHierarchical(m_dispatcher->currentData().toString().toStdString()).value_or(false);
    s.moeA2aOverlap = m_a2aOverlap->isChecked();
    if (const auto f = frameworkFromString(m_framework->currentData().toString().toStdString()))
        s.framework = *f;
    if (const auto st = stackFromString(m_stack->currentData().toString().toStdString()))
        s.stack = *st;
    pipelineUnitsFromString(m_units->currentData().toString().toStdString(), s.pipelineUnits);
    s.mcmcBudget = m_budget->value();
    s.seed = m_seed->value();
    s.topK = m_keepBest->value();
}

// The precisions searched (each known, once, and supported by the cluster's devices) and
// the FP8 recipe.
bool SearchPanel::readPrecisions(SearchSettings &s, QString *what, QString *why) const
{
    s.precisions.clear();
    for (const QString &item : m_precisions->text().split(QRegularExpression(QStringLiteral("[,\\s]+")),
                                                           Qt::SkipEmptyParts)) {
        NumberFormat f;
        *what = tr("Precisions");
        if (!numberFormatFromString(item.toStdString(), f)) {
            *why = tr("'%1' is none of %2").arg(item, QString::fromStdString(numberFormatNames()));
            return false;
        }
        if (std::find(s.precisions.begin(), s.precisions.end(), f) != s.precisions.end()) {
            *why = tr("'%1' is listed twice").arg(item);
            return false;
        }
        if (const std::string problem = precisionProblem(m_document->topology(), {f, Fp8Recipe::Delayed});
            !problem.empty()) {
            *why = QString::fromStdString(problem);
            return false;
        }
        s.precisions.push_back(f);
    }
    s.fp8Recipe.reset();
    if (const QString recipe = m_fp8Recipe->currentData().toString(); !recipe.isEmpty()) {
        Fp8Recipe r;
        if (fp8RecipeFromString(recipe.toStdString(), r))
            s.fp8Recipe = r;
    }
    s.fp8Attention = m_fp8Attention->isChecked();
    return true;
}

} // namespace nest::ui
