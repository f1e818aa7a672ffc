#pragma once
// The editor window: wires actions, docks and views, nothing more. Docks: the cluster
// (tree + property editor), the model, and the search (settings, Run / Cancel / Live,
// progress). Central tabs: Topology (the editable canvas), Placement, Memory, Breakdown,
// Timeline and Summary (the current plan). The document's file work lives in
// DocumentFiles, planning in PlanSession; every plan view reads a PlanSnapshot.
#include "FrameworkExport.h"
#include "WorkspaceDocument.h"
#include "PlanSnapshot.h"
#include "SavePolicy.h"
#include "Settings.h"

#include <QMainWindow>

#include <memory>

class QAction;
class QDockWidget;
class QLabel;
class QStackedWidget;
class QMenu;
class QProgressBar;
class QTabWidget;

namespace nest::ui {

class Autosaver;
class BaselineRunner;
class BreakdownChartView;
class CompareView;
class PlanLibrary;
class PlanListView;
class SweepRunner;
class SweepView;
class ClusterTreeView;
class DocumentFiles;
class MemoryChartView;
class ModelPanel;
class PlacementView;
class PlanSession;
class PlanSummaryView;
class PropertyEditor;
class SearchPanel;
class TimelineView;
class TopologyScene;
class TopologyView;
class WelcomePage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // The central tabs, in order; their names are what --tab takes.
    enum Tab { TopologyTab, PlacementTab, MemoryTab, BreakdownTab, TimelineTab, SummaryTab, CompareTab, SweepTab };
    // "topology", "placement", "memory", "breakdown", "timeline", "summary", "compare", "sweep"
    static QStringList tabNames();

    // settings: null = the user's settings (QSettings defaults).
    explicit MainWindow(QWidget *parent = nullptr, std::unique_ptr<Settings> settings = {});
    ~MainWindow() override;

    WorkspaceDocument *document() const { return m_document; }
    DocumentFiles *files() const { return m_files; }
    PlanSession *planning() const { return m_planning; }
    TopologyScene *scene() const { return m_scene; }
    TopologyView *view() const { return m_view; }
    ClusterTreeView *treeView() const { return m_tree; }
    PropertyEditor *propertyEditor() const { return m_properties; }
    ModelPanel *modelPanel() const { return m_modelPanel; }
    SearchPanel *searchPanel() const { return m_searchPanel; }
    PlacementView *placementView() const { return m_placement; }
    MemoryChartView *memoryView() const { return m_memory; }
    BreakdownChartView *breakdownView() const { return m_breakdown; }
    TimelineView *timelineView() const { return m_timeline; }
    PlanSummaryView *summaryView() const { return m_summary; }
    CompareView *compareView() const { return m_compare; }
    SweepView *sweepView() const { return m_sweepView; }
    PlanLibrary *planLibrary() const { return m_library; }
    PlanListView *planList() const { return m_planList; }
    BaselineRunner *baselineRunner() const { return m_baselines; }
    SweepRunner *sweepRunner() const { return m_sweepRunner; }
    QAction *runBaselinesAction() const { return m_baselinesAction; }
    QAction *sweepAction() const { return m_sweepAction; }
    // Runs NEST and the baselines on the current inputs; they are pinned and compared.
    void runBaselines();
    // Shows plan-list rows side by side in the Compare tab (the last pinned ones if < 2).
    void compareRows(const QList<int> &rows);
    // True while the baselines, a sweep or a pinned plan's evaluation is running.
    bool isComparing() const;
    QTabWidget *tabs() const { return m_tabs; }
    WelcomePage *welcomePage() const { return m_welcome; }
    // True while the document has no devices: the Topology tab shows the welcome page and
    // what needs a cluster (Add Rack / Add Node, Run, Live) is disabled.
    bool isEmptyState() const;
    QAction *addRackAction() const { return m_addRackAction; }
    QAction *addNodeAction() const { return m_addNodeAction; }
    QAction *runAction() const { return m_runAction; }
    QAction *cancelAction() const { return m_cancelAction; }
    QAction *liveAction() const { return m_liveAction; }
    QProgressBar *progressBar() const { return m_progress; }
    Settings &settings() const { return *m_settings; }
    Autosaver *autosaver() const { return m_autosaver; }

    // Replaces the questions the window asks (the members that are set); tests answer them.
    void setPrompts(const Prompts &prompts);

    // File work (see DocumentFiles): open a workspace, cluster or plan file (no prompt);
    // on failure the current document stays and *error names the file and the reason.
    bool openFile(const QString &fileName, QString *error);
    bool openSample(const QString &fileName, QString *error);
    void newDocument(const Topology &cluster);
    bool saveWorkspace(const QString &fileName, QString *error);
    bool saveCluster(const QString &fileName, QString *error);
    bool save();
    bool saveAs();
    bool maybeSave();
    bool offerRecovery();
    // Off in a batch run: no recovery is offered (DocumentFiles::setOffersRecovery).
    void setOffersRecovery(bool on);

    // The first window's size on a screen whose available area is `available`: 1400 x 900,
    // or less so that the window, its docks and status bar fit on the screen.
    static QSize initialSize(const QRect &available);
    // Below this width the default layout tabs the four docks in one column.
    static constexpr int kCompactWidth = 1200;
    // View ▸ Reset Layout: every dock shown again, in its default place and size.
    void resetLayout();

    // Selects a tab by name (tabNames()); false for an unknown name.
    bool setCurrentTab(const QString &name);
    // Exports the current tab by extension (.png, .svg, .pdf), with its title and legend.
    bool exportView(const QString &fileName, QString *error);
    // Writes the current plan as plan JSON; false when there is no plan.
    bool exportPlan(const QString &fileName, QString *error);
    // Writes the shown plan (current or pinned) as `format`'s launch files, the main file as
    // `fileName`, side files beside it, without asking (a fallback is written as it is);
    // `summary` gets what changed and both times.
    bool exportPlanFiles(ExportFormat format, const QString &fileName, QString *summary, QString *error);

    // Shows a message in the status bar (and keeps the last one for tests).
    void showStatus(const QString &message, int timeoutMs = 8000);
    QString lastStatus() const { return m_lastStatus; }
    // The message as the status bar shows it: elided to fit left of the permanent fields.
    QString shownStatus() const;

protected:
    void closeEvent(QCloseEvent *event) override;
    void showEvent(QShowEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createCentralArea();
    void createStatusBar();
    void createFileHandling();
    void connectDocument();
    void connectPlanning();
    void createActions();
    void createFileMenu();
    void createEditMenu();
    void createModelMenu();
    void createPlanMenu();
    void createPlanToolBar();
    void createViewMenu();
    void createHelpMenu();
    void createDocks();
    void createPlanViews();
    void createPlanList();
    void connectBaselines();
    void connectSweepAndReset();
    void updateTitle();
    void updateCounts();
    void updateRecentMenu();
    void updateEditActions();
    void updateRunActions();
    void fitLater();
    void showPlan(const PlanSnapshotPtr &current, const PlanSnapshotPtr &previous);
    void setPlanStale(bool stale);

    void newFromTemplate();
    // File > Import Topology: a Slurm / NCCL / nvidia-smi / ASTRA-sim file replaces the cluster.
    void importTopology();
    // Model ▸ Calibrate from Measured Runs…: the dialog; Apply puts its calibration in the
    // workspace (one undo step).
    void calibrate();
    void updateCalibrationLabel();
    void open();
    // Opens `file` with the questions a user action asks (unsaved changes, failures).
    void openInteractively(const QString &file);
    // A file name from the save dialog, with the chosen filter's extension when none typed.
    QString askSaveFileName(const QString &title, const QString &filters, const QString &suffix);
    void saveClusterAs();
    void warn(const QString &title, const QString &message);
    void exportViewAs();
    void exportPlanAs();
    // File ▸ Export Plan As ▸ FRAMEWORK: the fallback and both times first, then the file.
    void exportPlanForFramework(ExportFormat format);
    // Writes `result` (priced from `request`) as its files named after `fileName`; status.
    bool writeExport(ExportRequest request, ExportResult result, const QString &fileName, QString *error);
    void updatePinnedMenu();
    void updateEmptyState();
    void showAbout();
    void sizeDocksToWindow();
    void showStatusText(const QString &message, int timeoutMs);
    void refitStatus();
    QString m_statusFull, m_statusShown;   // the temporary message and its elided form
    // The default dock layout for the window's width: beside the canvas on a wide window,
    // all four docks tabbed in one column below kCompactWidth.
    void applyDefaultLayout();
    // The widths the default layout keeps free: the Search form's (dock included) and the
    // central tab bar's.
    int searchFormWidth() const;
    int tabBarWidth() const;

    WorkspaceDocument *m_document;
    std::unique_ptr<Settings> m_settings;
    Autosaver *m_autosaver = nullptr;
    DocumentFiles *m_files = nullptr;
    PlanSession *m_planning = nullptr;
    QString m_lastAutosaveError;
    TopologyScene *m_scene;
    TopologyView *m_view;
    QTabWidget *m_tabs;
    QStackedWidget *m_topologyStack = nullptr;
    WelcomePage *m_welcome = nullptr;
    QDockWidget *m_clusterDock = nullptr;
    QDockWidget *m_rightDock = nullptr;   // Search
    QDockWidget *m_modelDock = nullptr;
    QDockWidget *m_plansDock = nullptr;
    QByteArray m_defaultState;            // the docks as created, for View ▸ Reset Layout
    QLabel *m_autosaveLabel = nullptr;
    int m_undoIndex = 0;
    ClusterTreeView *m_tree = nullptr;
    PropertyEditor *m_properties = nullptr;
    ModelPanel *m_modelPanel = nullptr;
    SearchPanel *m_searchPanel = nullptr;
    PlacementView *m_placement = nullptr;
    MemoryChartView *m_memory = nullptr;
    BreakdownChartView *m_breakdown = nullptr;
    TimelineView *m_timeline = nullptr;
    PlanSummaryView *m_summary = nullptr;
    CompareView *m_compare = nullptr;
    SweepView *m_sweepView = nullptr;
    PlanLibrary *m_library = nullptr;
    PlanListView *m_planList = nullptr;
    BaselineRunner *m_baselines = nullptr;
    SweepRunner *m_sweepRunner = nullptr;
    QAction *m_baselinesAction = nullptr;
    QAction *m_sweepAction = nullptr;
    QList<int> m_compareRows;
    bool m_compareDirty = true;
    quint64 m_lastRunJob = 0;
    void refreshCompare();
    void startSweep();
    QLabel *m_counts;
    QLabel *m_zoom;
    QLabel *m_planLabel;
    QLabel *m_calibrationLabel = nullptr;   // "calibrated (N runs)"; empty when uncalibrated
    QAction *m_removeCalibrationAction = nullptr;
    QProgressBar *m_progress;
    QMenu *m_recentMenu = nullptr;
    QMenu *m_pinnedMenu = nullptr;
    QAction *m_deleteAction = nullptr;
    QAction *m_duplicateAction = nullptr;
    QAction *m_addRackAction = nullptr;
    QAction *m_addNodeAction = nullptr;
    QAction *m_runAction = nullptr;
    QAction *m_cancelAction = nullptr;
    QAction *m_liveAction = nullptr;
    QAction *m_pinAction = nullptr;
    QAction *m_exportPlanAction = nullptr;
    QMenu *m_exportFrameworkMenu = nullptr;
    QString m_lastStatus;
    bool m_fitted = false;
};

} // namespace nest::ui
