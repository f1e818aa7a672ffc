#pragma once
// The search dock: planner choice, strategies on/off (tp, pp, dp, ep, sp, cp, ZeRO,
// recompute) with the recompute modes (none / selective / full) and what selective reruns
// (search.recompute_modules), candidate widths,
// micro-batch candidates, schedules with the interleaving depths, replica layouts, max
// stages and memory headroom, the precisions searched with the FP8 recipe, and the Run /
// Cancel / Live buttons (the window's actions).
// Editing the CP widths makes the list explicit: searched as given, without the default's
// minimum of tokens per rank (SearchSettings::cpMinTokensPerRank). The document's SearchSettings are the truth: every edit
// is an undo command (ChangeSearchSettings); the panel resyncs on searchChanged.
#include "SearchSettings.h"

#include <QWidget>

class QAction;
class QCheckBox;
class QComboBox;
class QVBoxLayout;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QSpinBox;

namespace nest::ui {

class WorkspaceDocument;

class SearchPanel : public QWidget {
    Q_OBJECT
public:
    explicit SearchPanel(WorkspaceDocument *document, QWidget *parent = nullptr);

    // The window's actions, shown as buttons here.
    void setActions(QAction *run, QAction *cancel, QAction *live);
    QProgressBar *progressBar() const { return m_progress; }
    void setRunStatus(const QString &text);
    QString runStatus() const;

    // Widgets, for tests and the window.
    QComboBox *plannerBox() const { return m_planner; }
    QComboBox *targetBox() const { return m_target; }
    QCheckBox *strategyBox(const QString &name) const;   // "tp","pp","dp","ep","sp","cp","zero","recompute"
    QLineEdit *microBatchEdit() const { return m_microBatches; }
    QLineEdit *tpEdit() const { return m_tp; }
    QLineEdit *epEdit() const { return m_ep; }
    QLineEdit *etpEdit() const { return m_etp; }
    QLineEdit *cpEdit() const { return m_cp; }
    QCheckBox *scheduleBox(Schedule s) const;
    QCheckBox *recomputeModeBox(Recompute r) const;
    // What a selective stage reruns (search.recompute_modules, Megatron-Core's modules).
    QCheckBox *recomputeModuleBox(RecomputeModule m) const;
    QLineEdit *virtualStagesEdit() const { return m_virtual; }  // interleaving depths, "2, 3, 4"
    QSpinBox *maxStagesSpin() const { return m_maxStages; }
    QDoubleSpinBox *headroomSpin() const { return m_headroom; }
    QComboBox *frameworkCombo() const { return m_framework; }  // item data: the profile name
    QComboBox *pipelineUnitsCombo() const { return m_units; }  // item data: "layers", ...
    QSpinBox *mcmcBudgetBox() const { return m_budget; }
    QSpinBox *seedBox() const { return m_seed; }
    QSpinBox *keepBestBox() const { return m_keepBest; }
    // "bf16, fp8" (empty: every precision the devices and the framework support) and the FP8
    // recipe (item data "" = the default, "delayed", "current", "blockwise").
    QLineEdit *precisionsEdit() const { return m_precisions; }
    QComboBox *fp8RecipeCombo() const { return m_fp8Recipe; }
    // The last reason an entry was refused ("" when the settings are valid).
    QString problem() const { return m_problem; }

    // "1, 2, 4" -> {1, 2, 4}; empty optional with *why for bad text (not a whole number,
    // below minValue or above maxValue, repeated, empty list).
    static std::optional<std::vector<int>> parseList(const QString &text, QString *why, int minValue = 1,
                                                     int maxValue = 1 << 30);

private:
    void addRunArea(QVBoxLayout *top);
    QWidget *createStrategies();
    QWidget *createCandidates();
    void addCandidateLists(QFormLayout *form);
    void addCostChoices(QFormLayout *form);
    void addMoeChoices(QFormLayout *form);
    void addPlannerKnobs(QFormLayout *form);
    QWidget *createSchedules();
    void connectEdits();
    void refresh();
    void refreshStrategies(const SearchSettings &s);
    void refreshCandidates(const SearchSettings &s);
    void refreshSchedules(const SearchSettings &s);
    void refreshNumbers(const SearchSettings &s);
    void refreshPrecisions(const SearchSettings &s);
    void commit();
    // Each reads one part of the form into `s`: false, with the field (*what) and the reason
    // (*why), on an entry that is not valid.
    bool readStrategies(SearchSettings &s, QString *what, QString *why) const;
    bool readCandidates(SearchSettings &s, QString *what, QString *why) const;
    bool readExpertWidths(SearchSettings &s, QString *what, QString *why) const;
    bool readSchedules(SearchSettings &s, QString *what, QString *why) const;
    void readNumbers(SearchSettings &s) const;
    bool readPrecisions(SearchSettings &s, QString *what, QString *why) const;

    WorkspaceDocument *m_document;
    bool m_updating = false;
    QString m_problem;

    QComboBox *m_planner;
    QComboBox *m_target;  // "Plan for": SearchSettings::target
    QCheckBox *m_tpOn, *m_ppOn, *m_dpOn, *m_epOn, *m_spOn, *m_cpOn, *m_zeroOn, *m_recomputeOn;
    QLineEdit *m_microBatches, *m_tp, *m_ep, *m_etp, *m_cp;
    QCheckBox *m_rcNone, *m_rcSelective, *m_rcFull;
    QCheckBox *m_rmCoreAttn, *m_rmLayerNorm, *m_rmMoeAct, *m_rmMlaUp;  // search.recompute_modules
    QCheckBox *m_1f1b, *m_gpipe, *m_interleaved, *m_outside, *m_inside;
    QLineEdit *m_virtual;
    QComboBox *m_units;
    QSpinBox *m_maxStages;
    QDoubleSpinBox *m_headroom;
    double m_shownHeadroom = 0;  // the value refresh() put in m_headroom
    QComboBox *m_framework;
    QComboBox *m_stack;  // item data: "defaults" / "tuned"
    QLineEdit *m_precisions;
    QComboBox *m_fp8Recipe;
    QCheckBox *m_fp8Attention;  // search.fp8_attention
    // MoE pricing: search.moe_imbalance, capacity_factor, moe_dispatcher, moe_a2a_overlap.
    QDoubleSpinBox *m_moeImbalance;
    double m_shownImbalance = 0;  // the value refresh() put in m_moeImbalance
    QDoubleSpinBox *m_capacityFactor;
    double m_shownCapacity = 0;   // the value refresh() put in m_capacityFactor
    QComboBox *m_dispatcher;      // item data: moeDispatcherName(): "alltoall" / "deepep"
    QCheckBox *m_a2aOverlap;
    QSpinBox *m_budget;   // mcmc plan evaluations (0 = its default)
    QSpinBox *m_seed;
    QSpinBox *m_keepBest; // nest: the best K distinct plans (top_k)
    QLabel *m_error;
    QWidget *m_buttons;
    QProgressBar *m_progress;
    QLabel *m_status;
};

} // namespace nest::ui
