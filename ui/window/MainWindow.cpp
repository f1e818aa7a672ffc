#include "MainWindow.h"
#include "ToolVersion.h"
#include "SourceDir.h"

#include "Autosaver.h"
#include "BaselineRunner.h"
#include "BreakdownChartView.h"
#include "CompareView.h"
#include "ClusterTreeView.h"
#include "DiagramExport.h"
#include "DialogPrompts.h"
#include "DocumentFiles.h"
#include "CalibrationDialog.h"
#include "ImportTopologyDialog.h"
#include "MeasuredDevice.h"
#include "MemoryChartView.h"
#include "ModelPanel.h"
#include "PlacementView.h"
#include "PlanExport.h"
#include "PlanIO.h"
#include "PlanLibrary.h"
#include "PlanListView.h"
#include "PlanRunner.h"
#include "PlanSession.h"
#include "PlanSummaryView.h"
#include "PropertyEditor.h"
#include "SaveFile.h"
#include "SearchPanel.h"
#include "SweepDialog.h"
#include "SweepRunner.h"
#include "SweepView.h"
#include "Settings.h"
#include "TemplateDialog.h"
#include "TimelineView.h"
#include "TopologyScene.h"
#include "TopologyView.h"
#include "WelcomePage.h"
#include "ScrollWheelFilter.h"
#include "UndoShortcutFilter.h"
#include "WindowWording.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QToolBar>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QTime>
#include <QScreen>
#include <QStyle>
#include <QTabBar>
#include <QTimer>
#include <QUrl>
#include <QUndoStack>

// The GUI library is static: its resources must be registered explicitly (outside any
// namespace, as Q_INIT_RESOURCE requires).
static void initNestResources()
{
    Q_INIT_RESOURCE(resources);
}

namespace nest::ui {

QStringList MainWindow::tabNames()
{
    return {QStringLiteral("topology"), QStringLiteral("placement"), QStringLiteral("memory"),
            QStringLiteral("breakdown"), QStringLiteral("timeline"), QStringLiteral("summary"),
            QStringLiteral("compare"), QStringLiteral("sweep")};
}


MainWindow::MainWindow(QWidget *parent, std::unique_ptr<Settings> settings)
    : QMainWindow(parent)
    , m_document(new WorkspaceDocument(this))
    , m_settings(settings ? std::move(settings) : std::make_unique<Settings>())
{
    initNestResources();
    // Ctrl+Z / Ctrl+Shift+Z reach Edit ▸ Undo / Redo after a spin box committed its value.
    qApp->installEventFilter(new UndoShortcutFilter(this));
    qApp->installEventFilter(new ScrollWheelFilter(this));  // the wheel scrolls the docks
    setWindowIcon(QIcon(QStringLiteral(":/icons/nest.svg")));
    setDockOptions(AnimatedDocks | AllowTabbedDocks);
    setAcceptDrops(true);
    createCentralArea();
    createStatusBar();
    m_planning = new PlanSession(m_document, this);
    createPlanViews();
    createDocks();
    createPlanList();

    Workspace empty;
    empty.model = ModelSource::preset("llama2-7b");
    m_document->load(empty, QString(), WorkspaceDocument::FileKind::Workspace);

    createFileHandling();
    createActions();
    connectDocument();
    connectPlanning();

    m_defaultState = saveState();
    if (const QScreen *screen = QGuiApplication::primaryScreen()) {
        const QRect available = screen->availableGeometry();
        resize(initialSize(available));
        move(available.center() - QPoint(width() / 2, height() / 2));
    } else {
        resize(1400, 900);
    }
    restoreGeometry(m_settings->windowGeometry());
    restoreState(m_settings->windowState());
    updateTitle();
    updateCounts();
    updateEditActions();
    updateRunActions();
    updatePinnedMenu();
    updateEmptyState();
    showStatus(tr("Ready"));
}

MainWindow::~MainWindow()
{
    // The document outlives this destructor's body: its undo stack must not call back into
    // a half-destroyed window (the indexChanged lambda reads members).
    disconnect(m_document->undoStack(), nullptr, this, nullptr);
    disconnect(m_document, nullptr, this, nullptr);
    // No worker may outlive the window; then the scenes mirror the document: remove them
    // before the document (an earlier child) goes.
    m_planning->cancel();
    m_planning->runner()->waitForIdle();
    delete m_tabs;
    delete m_scene;
}

void MainWindow::setPrompts(const Prompts &prompts)
{
    Prompts &p = m_files->prompts();
    if (prompts.clusterOrWorkspace)
        p.clusterOrWorkspace = prompts.clusterOrWorkspace;
    if (prompts.unsavedChanges)
        p.unsavedChanges = prompts.unsavedChanges;
    if (prompts.workspaceFileName)
        p.workspaceFileName = prompts.workspaceFileName;
    if (prompts.restoreRecovery)
        p.restoreRecovery = prompts.restoreRecovery;
    if (prompts.chooseRecovery)
        p.chooseRecovery = prompts.chooseRecovery;
    if (prompts.warning)
        p.warning = prompts.warning;
}

void MainWindow::warn(const QString &title, const QString &message)
{
    showStatus(message);
    m_files->prompts().warning(title, message);
}

void MainWindow::createPlanViews()
{
    m_placement = new PlacementView(m_document);
    m_memory = new MemoryChartView;
    m_breakdown = new BreakdownChartView;
    m_timeline = new TimelineView;
    m_summary = new PlanSummaryView;
    m_tabs->addTab(m_placement, tr("Placement"));
    m_tabs->addTab(m_memory, tr("Memory"));
    m_tabs->addTab(m_breakdown, tr("Breakdown"));
    m_tabs->addTab(m_timeline, tr("Timeline"));
    m_tabs->addTab(m_summary, tr("Summary"));
    m_compare = new CompareView;
    m_sweepView = new SweepView;
    m_tabs->addTab(m_compare, tr("Compare"));
    m_tabs->addTab(m_sweepView, tr("Sweep"));
}

void MainWindow::createPlanList()
{
    m_library = new PlanLibrary(m_document, this);
    m_baselines = new BaselineRunner(this);
    m_sweepRunner = new SweepRunner(this);
    m_sweepView->setRunner(m_sweepRunner);
    m_planList = new PlanListView(m_library);
    m_planList->setBaselineRunner(m_baselines);
    auto *dock = m_plansDock = new QDockWidget(tr("Plans"), this);
    dock->setObjectName(QStringLiteral("plansDock"));
    dock->setWidget(m_planList);
    addDockWidget(Qt::LeftDockWidgetArea, dock);
    tabifyDockWidget(m_clusterDock, dock);
    m_clusterDock->raise();

    // Every finished search joins the list (once).
    connect(m_planning, &PlanSession::planChanged, this, [this](const PlanSnapshotPtr &current) {
        if (current && current->searched && current->jobId != m_lastRunJob) {
            m_lastRunJob = current->jobId;
            m_library->addRun(current, m_planning->isLive());
        }
    });
    connect(m_planList, &PlanListView::showRequested, this, [this](int row) {
        if (m_library->isPinned(row)) {
            m_planning->showPinned(row);
        } else if (PlanSnapshotPtr s = m_library->snapshot(row)) {
            showPlan(s, m_planning->current());
            m_tabs->setCurrentIndex(PlacementTab);
        }
    });
    connect(m_planList, &PlanListView::compareRequested, this, &MainWindow::compareRows);
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int index) {
        if (index == CompareTab && m_compareDirty)
            refreshCompare();
    });
    connect(m_library, &PlanLibrary::snapshotsChanged, this, &MainWindow::refreshCompare);
    connect(m_library, &PlanLibrary::rowsChanged, this, [this] {
        m_compareRows.clear();   // rows moved: compare the last pinned plans again
        refreshCompare();
    });
    connectBaselines();
    connectSweepAndReset();
}

// Run Baselines: its runs are pinned and compared; the status bar says how it went.
void MainWindow::connectBaselines()
{
    connect(m_baselines, &BaselineRunner::started, this, [this] {
        updateRunActions();
        showStatus(tr("Running NEST and the baselines…"), 0);
    });
    connect(m_baselines, &BaselineRunner::finished, this,
            [this](const QList<PlanSnapshotPtr> &plans, const QStringList &failures) {
                m_library->pinSnapshots(plans, tr("Run baselines"));
                compareRows({});
                updateRunActions();
                showStatus(tr("Baselines: %1 pinned%2").arg(counted(plans.size(), tr("plan"), tr("plans")))
                               .arg(failures.isEmpty() ? QString() : QStringLiteral("; ") + failures.join(QStringLiteral("; "))));
            });
    connect(m_baselines, &BaselineRunner::failed, this, [this](const QString &reason) {
        updateRunActions();
        showStatus(tr("Baselines failed: %1").arg(reason));
    });
    connect(m_baselines, &BaselineRunner::cancelled, this, [this] {
        updateRunActions();
        showStatus(tr("Baselines cancelled"));
    });
}

// A failed sweep is said; another document clears what belonged to the last one; an edit
// makes the sweep shown stale.
void MainWindow::connectSweepAndReset()
{
    connect(m_sweepRunner, &SweepRunner::failed, this, [this](const QString &reason) {
        showStatus(tr("Sweep failed: %1").arg(reason));
    });
    connect(m_document, &WorkspaceDocument::clusterReset, this, [this] {
        // Another document (New, Open, New from Template, a sample): nothing of the last one
        // may stay on screen as if it belonged to this one.
        m_baselines->cancel();
        m_sweepRunner->cancel();
        m_sweepView->clear();
        m_searchPanel->setRunStatus(QString());
        m_searchPanel->progressBar()->setValue(0);
        m_progress->hide();
        m_autosaveLabel->clear();
        m_autosaveLabel->setToolTip(QString());
    });
    // A sweep varied the cluster as it was: an edit since makes it stale.
    auto sweepInputsChanged = [this] {
        if (m_sweepView->result())
            m_sweepView->setStale(true);
    };
    connect(m_document, &WorkspaceDocument::clusterChanged, this, sweepInputsChanged);
    connect(m_document, &WorkspaceDocument::modelChanged, this, sweepInputsChanged);
    connect(m_document, &WorkspaceDocument::calibrationChanged, this, sweepInputsChanged);
}

void MainWindow::runBaselines()
{
    if (isEmptyState())
        return;
    m_baselines->start(m_document->workspace(), BaselineRunner::defaultPlanners(),
                       QTime::currentTime().toString(QStringLiteral("HH:mm")));
}

void MainWindow::startSweep()
{
    if (isEmptyState())
        return;
    SweepDialog dialog(m_document->topology(), this);
    dialog.restoreState(m_settings->sweepDialog());
    if (dialog.exec() != QDialog::Accepted)
        return;
    m_settings->setSweepDialog(dialog.state());
    if (m_sweepRunner->start(m_document->workspace(), dialog.request()))
        m_tabs->setCurrentIndex(SweepTab);
}

bool MainWindow::isComparing() const
{
    return m_baselines->isRunning() || m_sweepRunner->isRunning() || m_library->isEvaluating();
}

void MainWindow::compareRows(const QList<int> &rows)
{
    m_compareRows = rows;
    m_compareDirty = true;
    if (m_tabs->currentIndex() == CompareTab)
        refreshCompare();
    else
        m_tabs->setCurrentIndex(CompareTab);   // refreshes on the switch
}

void MainWindow::refreshCompare()
{
    // Lazily: rebuilding four plans' charts is work the GUI thread does only when the
    // Compare tab is shown (a run finishing must not stall the window).
    m_compareDirty = m_tabs->currentIndex() != CompareTab;
    if (m_compareDirty)
        return;
    QList<int> rows = m_compareRows;
    if (rows.size() < 2) {   // the last pinned plans, at most four
        rows.clear();
        const int pinned = m_library->pinnedCount();
        for (int r = std::max(0, pinned - CompareView::maxPlans); r < pinned; ++r)
            rows << r;
    }
    QList<PlanSnapshotPtr> shown;
    for (int r : rows)
        if (PlanSnapshotPtr s = m_library->snapshot(r))   // pending ones follow (snapshotsChanged)
            shown << s;
    const int reference = m_compare->reference();
    m_compare->setSnapshots(shown, reference < shown.size() ? reference : 0);
}

void MainWindow::showPlan(const PlanSnapshotPtr &current, const PlanSnapshotPtr &previous)
{
    m_summary->setPrevious(previous);
    m_placement->setSnapshot(current);
    m_memory->setSnapshot(current);
    m_breakdown->setSnapshot(current);
    m_timeline->setSnapshot(current);
    m_summary->setSnapshot(current);
    setPlanStale(m_planning->isStale());
    if (!current) {
        m_planLabel->clear();
    } else {
        const Report &r = current->report();
        const QString mfu = mfuKnown(r) ? tr("MFU %1 %").arg(100 * r.mfu, 0, 'f', 1) : tr("MFU unknown");
        // The change against the plan before (live mode: each edit's effect), in the
        // permanent label: the transient headline is elided on a small screen.
        QString change = throughputChangeText(*current, previous.get());
        if (!change.isEmpty())
            change = QStringLiteral(" (%1)").arg(change);
        QString text = r.feasible ? tr("%1 samples/s%2 · %3").arg(r.samplesPerSecond, 0, 'f', 1).arg(change, mfu)
                                  : tr("infeasible plan");
        // The search's own time (live mode: each edit's re-plan), kept in view.
        if (const QString took = searchTimeText(*current); !took.isEmpty())
            text += QStringLiteral(" · ") + took;
        // A profile measured on another device: said in the permanent label (the whole
        // sentence in its tooltip and in the Summary).
        const std::string warning = measuredDeviceWarning(current->model, current->topology);
        if (!warning.empty())
            text += tr(" · times measured on %1!").arg(QString::fromStdString(current->model.measuredOn));
        m_planLabel->setToolTip(warning.empty() ? QString() : tr("Warning: %1").arg(QString::fromStdString(warning)));
        m_planLabel->setText(text);
        refitStatus();
        if (m_tabs->currentIndex() == TopologyTab && !m_planning->isLive())
            m_tabs->setCurrentIndex(PlacementTab);
    }
    updateRunActions();
}

void MainWindow::setPlanStale(bool stale)
{
    m_placement->setStale(stale);
    m_memory->setStale(stale);
    m_breakdown->setStale(stale);
    m_timeline->setStale(stale);
    m_summary->setStale(stale);
}

void MainWindow::createDocks()
{
    m_tree = new ClusterTreeView(m_document);
    m_properties = new PropertyEditor(m_document);
    auto *scroll = new QScrollArea;
    scroll->setWidget(m_properties);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto *split = new QSplitter(Qt::Vertical);
    split->addWidget(m_tree);
    split->addWidget(scroll);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto *clusterDock = m_clusterDock = new QDockWidget(tr("Cluster"), this);
    clusterDock->setObjectName(QStringLiteral("clusterDock"));
    clusterDock->setWidget(split);
    addDockWidget(Qt::LeftDockWidgetArea, clusterDock);

    m_modelPanel = new ModelPanel(m_document);
    auto *modelDock = m_modelDock = new QDockWidget(tr("Model"), this);
    modelDock->setObjectName(QStringLiteral("modelDock"));
    // In a scroll area like the search panel: the panel's form never sets the dock's (and so
    // the window's) minimum width; on a narrow screen the dock scrolls instead.
    auto *modelScroll = new QScrollArea;
    modelScroll->setWidget(m_modelPanel);
    modelScroll->setWidgetResizable(true);
    modelScroll->setFrameShape(QFrame::NoFrame);
    modelDock->setWidget(modelScroll);
    addDockWidget(Qt::RightDockWidgetArea, modelDock);

    m_searchPanel = new SearchPanel(m_document);
    auto *searchScroll = new QScrollArea;
    searchScroll->setWidget(m_searchPanel);
    searchScroll->setWidgetResizable(true);
    searchScroll->setFrameShape(QFrame::NoFrame);
    auto *searchDock = m_rightDock = new QDockWidget(tr("Search"), this);
    searchDock->setObjectName(QStringLiteral("searchDock"));
    searchDock->setWidget(searchScroll);
    addDockWidget(Qt::RightDockWidgetArea, searchDock);
    tabifyDockWidget(modelDock, searchDock);
    searchDock->raise();
}

QSize MainWindow::initialSize(const QRect &available)
{
    // Room for a window manager's frame and a panel: 96 % of the width, 90 % of the height.
    return QSize(1400, 900).boundedTo(QSize(available.width() * 96 / 100, available.height() * 90 / 100));
}

void MainWindow::applyDefaultLayout()
{
    restoreState(m_defaultState);
    for (QDockWidget *dock : {m_clusterDock, m_plansDock, m_modelDock, m_rightDock})
        dock->show();
    if (width() >= kCompactWidth) {
        m_clusterDock->raise();
        m_rightDock->raise();
        sizeDocksToWindow();
        return;
    }
    // A small screen: one column of tabbed docks leaves the canvas (and all eight tabs)
    // about 70 % of the width.
    addDockWidget(Qt::LeftDockWidgetArea, m_modelDock);
    addDockWidget(Qt::LeftDockWidgetArea, m_rightDock);
    tabifyDockWidget(m_plansDock, m_modelDock);
    tabifyDockWidget(m_modelDock, m_rightDock);
    m_clusterDock->raise();
    // Wide enough for the Search form when the tabs leave room for it.
    resizeDocks({m_clusterDock},
                {std::clamp(std::min(std::max(searchFormWidth(), width() * 29 / 100), width() - tabBarWidth()), 240, 340)},
                Qt::Horizontal);
}

int MainWindow::searchFormWidth() const
{
    // The Search form beside its dock's vertical scroll bar.
    return m_searchPanel->minimumSizeHint().width() + style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 12;
}

int MainWindow::tabBarWidth() const
{
    return m_tabs->tabBar()->sizeHint().width() + 24;   // all eight tabs, without scroll arrows
}

void MainWindow::resetLayout()
{
    applyDefaultLayout();
    fitLater();
    showStatus(tr("Layout reset"));
}

void MainWindow::sizeDocksToWindow()
{
    // Docks sized to their content but never more than about a quarter of the window
    // each, so the canvas keeps about half (1400 px: 364 + 360, the property table and the
    // model form fit without scrolling), and never so wide that the central tabs need their
    // scroll arrows (1311 px, a 1366 x 768 screen: 330 + 320).
    const int w = width();
    int left = std::clamp(w * 26 / 100, 240, 370), right = std::clamp(w * 26 / 100, 220, 360);
    // The Search form whole; the cluster tree scrolls sideways more gracefully than a form.
    right = std::max(right, std::min(searchFormWidth(), 380));
    if (const int over = left + right + tabBarWidth() - w; over > 0)
        left = std::max(240, left - over);
    resizeDocks({m_clusterDock, m_rightDock}, {left, right}, Qt::Horizontal);
}

// The central tabs, with the topology canvas (or the welcome page) first.
void MainWindow::createCentralArea()
{
    m_scene = new TopologyScene(m_document, this);
    m_view = new TopologyView(m_scene);
    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    // A narrow window keeps every tab reachable: scroll arrows rather than clipped tabs
    // (and View ▸ Topology … Sweep, Alt+1..8).
    m_tabs->setUsesScrollButtons(true);
    m_tabs->tabBar()->setExpanding(false);
    m_welcome = new WelcomePage;
    m_topologyStack = new QStackedWidget;
    m_topologyStack->addWidget(m_view);
    m_topologyStack->addWidget(m_welcome);
    m_tabs->addTab(m_topologyStack, tr("Topology"));
    setCentralWidget(m_tabs);
}

// The status bar's permanent labels and the progress bar.
void MainWindow::createStatusBar()
{
    m_counts = new QLabel;
    m_zoom = new QLabel;
    m_autosaveLabel = new QLabel;
    m_planLabel = new QLabel;
    m_planLabel->setObjectName(QStringLiteral("planLabel"));
    m_calibrationLabel = new QLabel;
    m_calibrationLabel->setObjectName(QStringLiteral("calibrationLabel"));
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(180);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p%"));
    m_progress->hide();
    statusBar()->addPermanentWidget(m_planLabel);
    statusBar()->addPermanentWidget(m_calibrationLabel);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_autosaveLabel);
    statusBar()->addPermanentWidget(m_counts);
    statusBar()->addPermanentWidget(m_zoom);
}

// Autosave and the document's file work, and what the window shows of them.
void MainWindow::createFileHandling()
{
    m_autosaver = new Autosaver(m_document, m_settings->recoveryDirectory(),
                                m_settings->autosaveIntervalSeconds(), this);
    m_files = new DocumentFiles(m_document, *m_settings, m_autosaver, dialogPrompts(this, *m_settings), this);
    connect(m_files, &DocumentFiles::status, this, [this](const QString &m) { showStatus(m); });
    connect(m_files, &DocumentFiles::recentFilesChanged, this, &MainWindow::updateRecentMenu);
    connect(m_files, &DocumentFiles::planOpened, this, [this](const Plan &plan, const QString &file) {
        m_planning->showPlan(plan, QFileInfo(file).fileName());
        m_tabs->setCurrentIndex(PlacementTab);
    });
    connect(m_autosaver, &Autosaver::autosaved, this, [this](const QString &file) {
        // A permanent label: a transient message would hide the last refusal or result.
        m_lastAutosaveError.clear();
        m_autosaveLabel->setText(tr("Autosaved %1").arg(QTime::currentTime().toString(QStringLiteral("HH:mm"))));
        refitStatus();
        m_autosaveLabel->setToolTip(file);
    });
    connect(m_autosaver, &Autosaver::autosaveFailed, this, [this](const QString &error) {
        if (error != m_lastAutosaveError)   // once, not every interval
            showStatus(error, 15000);
        m_lastAutosaveError = error;
    });
}

// What the window shows of the document's edits, undo steps, selection and refusals.
void MainWindow::connectDocument()
{
    connect(m_document, &WorkspaceDocument::clusterChanged, this, &MainWindow::updateCounts);
    connect(m_document, &WorkspaceDocument::clusterChanged, this, &MainWindow::updateEmptyState);
    // Every edit, undo and redo says what it did (and so replaces drag hints).
    connect(m_document->undoStack(), &QUndoStack::indexChanged, this, [this](int index) {
        const QUndoStack *stack = m_document->undoStack();
        if (index > m_undoIndex && index > 0)
            showStatus(tr("Done: %1").arg(stack->text(index - 1)));
        else if (index < m_undoIndex && index < stack->count())
            showStatus(tr("Undone: %1").arg(stack->text(index)));
        m_undoIndex = index;
    });
    connect(m_document, &WorkspaceDocument::clusterReset, this, [this] { m_undoIndex = 0; });
    connect(m_welcome, &WelcomePage::newRequested, this, &MainWindow::newFromTemplate);
    connect(m_welcome, &WelcomePage::openRequested, this, &MainWindow::open);
    connect(m_welcome, &WelcomePage::recentRequested, this, &MainWindow::openInteractively);
    connect(m_welcome, &WelcomePage::sampleRequested, this, [this] {
        if (!maybeSave())
            return;
        QString error;
        const QString sample = sampleWorkspacePath();
        if (sample.isEmpty())
            warn(tr("Open failed"), tr("The sample workspace was not found next to the program or in its source tree"));
        else if (!openSample(sample, &error))
            warn(tr("Open failed"), error);
    });
    connect(m_document, &WorkspaceDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(m_document, &WorkspaceDocument::calibrationChanged, this, &MainWindow::updateCalibrationLabel);
    connect(m_document, &WorkspaceDocument::fileNameChanged, this, &MainWindow::updateTitle);
    connect(m_document, &WorkspaceDocument::selectionChanged, this, &MainWindow::updateEditActions);
    connect(m_document, &WorkspaceDocument::plansChanged, this, &MainWindow::updatePinnedMenu);
    connect(m_document, &WorkspaceDocument::editRefused, this,
            [this](const QString &reason) { showStatus(tr("Refused: %1").arg(reason)); });
    connect(m_document, &WorkspaceDocument::clusterReset, this, &MainWindow::fitLater);
    connect(m_scene, &TopologyScene::dropRefused, this,
            [this](const QString &reason) { showStatus(tr("Drop refused: %1").arg(reason)); });
    connect(m_scene, &TopologyScene::hoverMessage, this,
            [this](const QString &message) { showStatusText(message, 3000); });
    connect(m_modelPanel, &ModelPanel::statusMessage, this, [this](const QString &m) { showStatus(m); });
    connect(m_view, &TopologyView::zoomChanged, this,
            [this](double z) { m_zoom->setText(tr("Zoom %1%").arg(qRound(z * 100))); });
}

// The planning session's progress, messages and results in the window and the search dock.
void MainWindow::connectPlanning()
{
    connect(m_planning, &PlanSession::runStarted, this, [this](const QString &what) {
        m_progress->setValue(0);
        m_progress->show();
        m_searchPanel->progressBar()->setValue(0);
        m_searchPanel->setRunStatus(what);
        showStatus(what);
        updateRunActions();
    });
    connect(m_planning, &PlanSession::progress, this, [this](double fraction, double best) {
        const int v = qRound(1000 * fraction);
        m_progress->setValue(v);
        m_searchPanel->progressBar()->setValue(v);
        if (best > 0)
            m_searchPanel->setRunStatus(tr("Searching… best so far %1 s per iteration").arg(best, 0, 'f', 4));
    });
    connect(m_planning, &PlanSession::runEnded, this, [this] {
        m_progress->hide();
        updateRunActions();
    });
    connect(m_planning, &PlanSession::message, this, [this](const QString &m) {
        m_searchPanel->setRunStatus(m);
        showStatus(m, 15000);
    });
    connect(m_planning, &PlanSession::planChanged, this, &MainWindow::showPlan);
    connect(m_planning, &PlanSession::planChanged, this, [this](const PlanSnapshotPtr &current) {
        m_searchPanel->progressBar()->setValue(current ? 1000 : 0);
    });
    connect(m_planning, &PlanSession::staleChanged, this, &MainWindow::setPlanStale);
    connect(m_planning, &PlanSession::liveChanged, m_liveAction, &QAction::setChecked);
}

void MainWindow::createActions()
{
    createFileMenu();
    createEditMenu();
    createModelMenu();
    createPlanMenu();
    createPlanToolBar();
    createViewMenu();
    createHelpMenu();
}

// File: new, open, recent, save, export, quit.
void MainWindow::createFileMenu()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *a = file->addAction(tr("&New from Template…"), this, &MainWindow::newFromTemplate);
    a->setShortcut(QKeySequence::New);
    a = file->addAction(tr("&Open…"), this, &MainWindow::open);
    a->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    file->addAction(tr("&Import Topology…"), this, &MainWindow::importTopology);
    file->addSeparator();
    a = file->addAction(tr("&Save"), this, &MainWindow::save);
    a->setShortcut(QKeySequence::Save);
    a = file->addAction(tr("Save &As…"), this, &MainWindow::saveAs);
    // QKeySequence::SaveAs is empty on X11 without a desktop's key theme.
    a->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    file->addAction(tr("Save &Cluster As…"), this, &MainWindow::saveClusterAs);
    file->addSeparator();
    a = file->addAction(tr("&Export View as PNG/SVG/PDF…"), this, &MainWindow::exportViewAs);
    a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    // NEST Planner's own plan file (docs/formats.md), which nest-cli and the window read back;
    // the NEST paper artifact's solver output is under Export Plan As (issue 47).
    m_exportPlanAction = file->addAction(tr("Export &Plan as NEST Planner Plan JSON…"), this, &MainWindow::exportPlanAs);
    m_exportPlanAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    m_exportFrameworkMenu = file->addMenu(tr("Export Plan &As"));
    m_exportFrameworkMenu->setObjectName(QStringLiteral("exportPlanAsMenu"));
    for (const ExportFormat f : exportFormats()) {
        const QString text = f == ExportFormat::Nest ? tr("NEST Artifact JSON (the Paper Solver's Output)…")
                                                     : QString::fromUtf8(exportFormatTitle(f)) + QStringLiteral("…");
        QAction *fa = m_exportFrameworkMenu->addAction(text, this, [this, f] { exportPlanForFramework(f); });
        fa->setObjectName(QStringLiteral("exportPlanAs-") + QString::fromUtf8(toString(f)));
    }
    file->addSeparator();
    a = file->addAction(tr("&Quit"), this, &QWidget::close);
    a->setShortcut(QKeySequence::Quit);
    updateRecentMenu();
}

// Edit: undo, redo and the cluster edits on the selection.
void MainWindow::createEditMenu()
{
    QAction *a = nullptr;
    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    QAction *undo = m_document->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction *redo = m_document->undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setShortcut(QKeySequence::Redo);
    edit->addAction(undo);
    edit->addAction(redo);
    edit->addSeparator();
    m_deleteAction = edit->addAction(tr("&Delete"), this, [this] {
        m_document->removeGroups(m_document->selectedGroups());
    });
    m_deleteAction->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
    m_duplicateAction = edit->addAction(tr("D&uplicate"), this, [this] {
        const QList<int> sel = m_document->selectedGroups();
        if (!sel.isEmpty())
            m_document->duplicateGroup(sel.first());
    });
    m_duplicateAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    m_addRackAction = edit->addAction(tr("Add &Rack"), this, [this] {
        const QList<int> sel = m_document->selectedGroups();
        m_document->addRack(sel.isEmpty() ? -1 : sel.first());
    });
    m_addRackAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    m_addNodeAction = edit->addAction(tr("Add &Node"), this, [this] {
        const QList<int> sel = m_document->selectedGroups();
        m_document->addNode(sel.isEmpty() ? -1 : sel.first());
    });
    m_addNodeAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_N));
    edit->addSeparator();
    a = edit->addAction(tr("Select &None"), this, [this] { m_document->setSelection({}); });
    a->setShortcut(QKeySequence(Qt::Key_Escape));
}

// Model: calibration of the cost model to measured runs.
void MainWindow::createModelMenu()
{
    QMenu *model = menuBar()->addMenu(tr("&Model"));
    QAction *a = model->addAction(tr("&Calibrate from Measured Runs…"), this, &MainWindow::calibrate);
    a->setToolTip(tr("Fit the cost model's GEMM efficiency and step overhead to runs you measured"));
    m_removeCalibrationAction = model->addAction(tr("&Remove Calibration"), this, [this] {
        m_document->setCalibration(std::nullopt, tr("Remove calibration"));
    });
    updateCalibrationLabel();
}

void MainWindow::updateCalibrationLabel()
{
    if (!m_calibrationLabel)
        return;
    const std::optional<Calibration> &c = m_document->calibration();
    if (m_removeCalibrationAction)
        m_removeCalibrationAction->setEnabled(c.has_value());
    if (!c) {
        m_calibrationLabel->clear();
        m_calibrationLabel->setToolTip(QString());
        return;
    }
    const size_t n = c->runs.size();
    m_calibrationLabel->setText(n == 1 ? tr("calibrated (1 run)") : tr("calibrated (%1 runs)").arg(n));
    CostOptions cost;   // the search's framework and stack
    cost.framework = m_document->search().framework;
    cost.stack = m_document->search().stack;
    m_calibrationLabel->setToolTip(
        tr("Times are priced with a calibration fitted to measured runs; their error band: %1")
            .arg(QString::fromStdString(modelErrorBand(cost, c, m_document->topology()).text())));
}

void MainWindow::calibrate()
{
    CalibrationDialog dialog(m_document->topology(), m_document->model(), m_document->search().framework,
                             m_document->calibration(), this);
    if (dialog.exec() != QDialog::Accepted || !dialog.result())
        return;
    const size_t n = dialog.result()->runs.size();
    if (m_document->setCalibration(dialog.result(), tr("Calibrate from %n measured run(s)", nullptr, static_cast<int>(n))))
        showStatus(tr("Calibrated the cost model from %n measured run(s)", nullptr, static_cast<int>(n)));
}

// Plan: run, cancel, live mode, pin, baselines, sweep (the search dock shares run, cancel and live).
void MainWindow::createPlanMenu()
{
    QMenu *plan = menuBar()->addMenu(tr("&Plan"));
    m_runAction = plan->addAction(tr("&Run"), m_planning, &PlanSession::run);
    m_runAction->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_R), QKeySequence(Qt::Key_F5)});
    m_runAction->setToolTip(tr("Search for the best plan (Ctrl+R)"));
    m_cancelAction = plan->addAction(tr("&Cancel"), m_planning, &PlanSession::cancel);
    m_cancelAction->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Period), QKeySequence(Qt::SHIFT | Qt::Key_F5)});
    m_cancelAction->setToolTip(tr("Stop the search (Ctrl+.)"));
    m_liveAction = plan->addAction(tr("&Live Mode"));
    m_liveAction->setCheckable(true);
    m_liveAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    m_liveAction->setToolTip(tr("Re-plan automatically after every edit (Ctrl+L)"));
    connect(m_liveAction, &QAction::toggled, m_planning, &PlanSession::setLive);
    plan->addSeparator();
    m_pinAction = plan->addAction(tr("&Pin Current Plan"), m_planning, &PlanSession::pinCurrent);
    m_pinAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    m_pinnedMenu = plan->addMenu(tr("Show Pinned Plan"));
    plan->addSeparator();
    m_baselinesAction = plan->addAction(tr("Run &Baselines"), this, &MainWindow::runBaselines);
    m_baselinesAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    m_baselinesAction->setToolTip(tr("Run NEST, flat-network DP, Megatron-style and MCMC on the current inputs, pin and compare them (Ctrl+B)"));
    m_sweepAction = plan->addAction(tr("S&weep Cluster Parameter…"), this, &MainWindow::startSweep);
    m_sweepAction->setToolTip(tr("Vary one link parameter of the cluster, re-plan each point and plot the throughput"));
    m_searchPanel->setActions(m_runAction, m_cancelAction, m_liveAction);
}

// The Plan toolbar.
void MainWindow::createPlanToolBar()
{
    QToolBar *bar = addToolBar(tr("Plan"));
    bar->setObjectName(QStringLiteral("planToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    bar->addAction(m_runAction);
    bar->addAction(m_cancelAction);
    bar->addAction(m_liveAction);
    bar->addAction(m_pinAction);
    bar->addAction(m_baselinesAction);
}

// View: zoom, fit, the tabs (Alt+1..8), the docks and Reset Layout.
void MainWindow::createViewMenu()
{
    QAction *a = nullptr;
    QMenu *view = menuBar()->addMenu(tr("&View"));
    a = view->addAction(tr("Zoom &In"), m_view, &TopologyView::zoomIn);
    a->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
    a = view->addAction(tr("Zoom &Out"), m_view, &TopologyView::zoomOut);
    a->setShortcut(QKeySequence::ZoomOut);
    a = view->addAction(tr("&Fit to View"), m_view, &TopologyView::fitToView);
    a->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_0), QKeySequence(Qt::Key_F)});
    a = view->addAction(tr("Fit &Selection"), m_view, &TopologyView::fitSelection);
    a->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F));
    view->addSeparator();
    const QStringList titles{tr("&Topology"), tr("&Placement"), tr("&Memory"), tr("&Breakdown"), tr("T&imeline"),
                             tr("S&ummary"), tr("&Compare"), tr("S&weep")};
    for (int i = 0; i < titles.size(); ++i) {
        a = view->addAction(titles[i], this, [this, i] { m_tabs->setCurrentIndex(i); });
        a->setShortcut(QKeySequence(Qt::ALT | (Qt::Key_1 + i)));
    }
    view->addSeparator();
    for (QDockWidget *dock : findChildren<QDockWidget *>())
        view->addAction(dock->toggleViewAction());
    view->addSeparator();
    a = view->addAction(tr("&Reset Layout"), this, &MainWindow::resetLayout);
    a->setObjectName(QStringLiteral("resetLayout"));
    a->setStatusTip(tr("Show every dock again, in its default place and size for this window"));
}

// Help: the documentation and About.
void MainWindow::createHelpMenu()
{
    QAction *a = nullptr;
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    a = help->addAction(tr("&Documentation"), this, [] {
        QDesktopServices::openUrl(QUrl::fromLocalFile(QDir::cleanPath(QStringLiteral(NEST_SOURCE_DIR "/docs"))));
    });
    a->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&About NEST Planner"), this, &MainWindow::showAbout);
}

void MainWindow::updateRunActions()
{
    if (!m_runAction)
        return;
    const bool running = m_planning->isRunning();
    m_runAction->setEnabled(!running && !isEmptyState());
    m_liveAction->setEnabled(!isEmptyState() || m_liveAction->isChecked());
    m_cancelAction->setEnabled(running);
    m_pinAction->setEnabled(m_planning->current() != nullptr);
    m_exportPlanAction->setEnabled(m_planning->current() != nullptr);
    m_exportFrameworkMenu->setEnabled(m_planning->current() != nullptr);
    if (m_baselinesAction) {
        m_baselinesAction->setEnabled(!m_baselines->isRunning() && !isEmptyState());
        m_sweepAction->setEnabled(!isEmptyState());
    }
}

void MainWindow::updatePinnedMenu()
{
    if (!m_pinnedMenu)
        return;
    m_pinnedMenu->clear();
    const auto &plans = m_document->plans();
    for (int i = 0; i < static_cast<int>(plans.size()); ++i) {
        const QString label = QString::fromStdString(plans[i].label);
        m_pinnedMenu->addAction(label.isEmpty() ? tr("Plan %1").arg(i + 1) : label, m_planning,
                                [this, i] { m_planning->showPinned(i); });
    }
    m_pinnedMenu->setEnabled(!plans.empty());
}

void MainWindow::updateTitle()
{
    const QString name = m_document->fileName().isEmpty() ? tr("untitled")
                                                          : QFileInfo(m_document->fileName()).fileName();
    setWindowTitle(tr("%1[*] — NEST Planner").arg(name));
    setWindowModified(m_document->isModified());
}

void MainWindow::updateCounts()
{
    const Topology &t = m_document->topology();
    int nodes = 0;
    for (const TopoGroup &g : t.groups)
        nodes += g.level == 0 ? 1 : 0;
    m_counts->setText(tr("%1 · %2 · %3")
                          .arg(counted(t.deviceCount(), tr("device"), tr("devices")))
                          .arg(counted(nodes, tr("node"), tr("nodes")))
                          .arg(counted(t.levelCount(), tr("level"), tr("levels"))));
}

void MainWindow::updateEditActions()
{
    const bool any = !m_document->selection().isEmpty();
    m_deleteAction->setEnabled(any);
    m_duplicateAction->setEnabled(any);
}

void MainWindow::updateRecentMenu()
{
    if (!m_recentMenu)
        return;
    m_recentMenu->clear();
    const QStringList files = m_settings->recentFiles();
    for (const QString &f : files) {
        m_recentMenu->addAction(QFileInfo(f).fileName(), this, [this, f] { openInteractively(f); })->setToolTip(f);
    }
    m_recentMenu->setEnabled(!files.isEmpty());
    if (!files.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear List"), this, [this] {
            m_settings->clearRecentFiles();
            updateRecentMenu();
        });
    }
}

void MainWindow::showStatus(const QString &message, int timeoutMs)
{
    m_lastStatus = message;
    showStatusText(message, timeoutMs);
}

QString MainWindow::shownStatus() const
{
    return statusBar()->currentMessage();
}

void MainWindow::showStatusText(const QString &message, int timeoutMs)
{
    // Elided to the room left of the permanent fields (a temporary message is otherwise
    // drawn under them); the whole text is the status bar's tooltip.
    int room = statusBar()->width() - 24;
    for (QWidget *permanent : {static_cast<QWidget *>(m_planLabel), static_cast<QWidget *>(m_autosaveLabel),
                               static_cast<QWidget *>(m_calibrationLabel), static_cast<QWidget *>(m_counts),
                               static_cast<QWidget *>(m_zoom), static_cast<QWidget *>(m_progress)})
        if (permanent && !permanent->isHidden())
            room -= std::max(permanent->width(), permanent->sizeHint().width()) + 8;
    const QString firstLine = message.section(QLatin1Char('\n'), 0, 0);
    const QString shown = statusBar()->fontMetrics().elidedText(firstLine, Qt::ElideRight, std::max(room, 80));
    statusBar()->setToolTip(shown == message ? QString() : message);
    statusBar()->showMessage(shown, timeoutMs);
    m_statusFull = message;
    m_statusShown = shown;
}

void MainWindow::refitStatus()
{
    // A permanent field changed its text: the message on show may now run under it.
    if (!m_statusShown.isEmpty() && statusBar()->currentMessage() == m_statusShown)
        showStatusText(m_statusFull, 8000);
}

void MainWindow::fitLater()
{
    // The viewport has its final size only once the event loop has laid the window out.
    QTimer::singleShot(0, m_view, &TopologyView::fitToView);
}

void MainWindow::showEvent(QShowEvent *event)
{
    QMainWindow::showEvent(event);
    if (!m_fitted) {
        m_fitted = true;
        if (m_settings->windowState().isEmpty())
            applyDefaultLayout();   // the user's own layout, when saved, wins
        fitLater();
    }
}

bool MainWindow::isEmptyState() const
{
    return m_document->topology().deviceCount() == 0;
}

void MainWindow::updateEmptyState()
{
    const bool empty = isEmptyState();
    m_topologyStack->setCurrentWidget(empty ? static_cast<QWidget *>(m_welcome) : m_view);
    if (empty)
        m_welcome->setRecentFiles(m_settings->recentFiles());
    m_zoom->setVisible(!empty);
    if (m_addRackAction) {
        m_addRackAction->setEnabled(!empty);
        m_addNodeAction->setEnabled(!empty);
    }
    updateRunActions();
}

void MainWindow::showAbout()
{
    const QString docs = QDir::cleanPath(QStringLiteral(NEST_SOURCE_DIR "/docs"));
    QMessageBox::about(this, tr("About NEST Planner"),
                       tr("<h3>NEST Planner %1</h3>"
                          "<p>Plans how a large training job is placed on a datacenter cluster: the NEST "
                          "network- and memory-aware dynamic program over pipeline stages, devices per stage, "
                          "tensor / expert / sequence / context parallelism, data-parallel replication, ZeRO, "
                          "recomputation and micro-batch size.</p>"
                          "<p>Documentation: <a href=\"%2\">%3</a></p>")
                           .arg(QStringLiteral(NEST_VERSION), QUrl::fromLocalFile(docs).toString(), docs));
}

bool MainWindow::openFile(const QString &fileName, QString *error)
{
    return m_files->openFile(fileName, error);
}

bool MainWindow::openSample(const QString &fileName, QString *error)
{
    return m_files->openSample(fileName, error);
}

void MainWindow::newDocument(const Topology &cluster)
{
    m_files->newDocument(cluster);
}

bool MainWindow::saveWorkspace(const QString &fileName, QString *error)
{
    return m_files->saveWorkspace(fileName, error);
}

bool MainWindow::saveCluster(const QString &fileName, QString *error)
{
    return m_files->saveCluster(fileName, error);
}

bool MainWindow::save()
{
    return m_files->save();
}

bool MainWindow::saveAs()
{
    return m_files->saveAs();
}

bool MainWindow::maybeSave()
{
    return m_files->maybeSave();
}

bool MainWindow::offerRecovery()
{
    return m_files->offerRecovery();
}

void MainWindow::setOffersRecovery(bool on)
{
    m_files->setOffersRecovery(on);
}

bool MainWindow::setCurrentTab(const QString &name)
{
    const int i = tabNames().indexOf(name.toLower());
    if (i < 0)
        return false;
    m_tabs->setCurrentIndex(i);
    return true;
}

bool MainWindow::exportView(const QString &fileName, QString *error)
{
    bool ok = false;
    switch (m_tabs->currentIndex()) {
    case TopologyTab: ok = exportDiagram(m_scene, fileName, error); break;
    case PlacementTab: ok = m_placement->exportTo(fileName, error); break;
    case MemoryTab: ok = m_memory->exportTo(fileName, error); break;
    case BreakdownTab: ok = m_breakdown->exportTo(fileName, error); break;
    case TimelineTab: ok = m_timeline->exportTo(fileName, error); break;
    case SummaryTab: ok = m_summary->exportTo(fileName, error); break;
    case CompareTab: ok = m_compare->exportTo(fileName, error); break;
    case SweepTab: ok = m_sweepView->exportTo(fileName, error); break;
    default: *error = tr("%1: no view to export").arg(fileName); break;
    }
    if (ok)
        showStatus(tr("Exported %1").arg(QFileInfo(fileName).fileName()));
    return ok;
}

bool MainWindow::exportPlan(const QString &fileName, QString *error)
{
    const PlanSnapshotPtr current = m_planning->current();
    if (!current) {
        *error = tr("%1: not written: there is no plan yet (Plan ▸ Run)").arg(fileName);
        return false;
    }
    // With the band of its time, informational (docs/formats.md, "error_band").
    Json plan = planToJson(current->plan());
    if (!current->band.basis.empty())
        plan["error_band"] = errorBandToJson(current->band, current->report().iterationTime);
    const QByteArray data = QByteArray::fromStdString(jsonFileText(plan));
    if (!writeFileAtomically(fileName, data, error))
        return false;
    showStatus(tr("Exported the plan to %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    // A search still running is cancelled; its worker returns within its polling interval.
    m_planning->cancel();
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_autosaver->discardRecovery();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    if (event->mimeData()->hasUrls()) {
        for (const QUrl &url : event->mimeData()->urls()) {
            if (url.isLocalFile()) {
                event->acceptProposedAction();
                return;
            }
        }
    }
}

void MainWindow::dropEvent(QDropEvent *event)
{
    for (const QUrl &url : event->mimeData()->urls()) {
        if (!url.isLocalFile())
            continue;
        event->acceptProposedAction();
        openInteractively(url.toLocalFile());
        return;
    }
}

void MainWindow::newFromTemplate()
{
    if (!maybeSave())
        return;
    TemplateDialog dialog(this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const Result<Topology> t = dialog.cluster();
    if (!t) {
        warn(tr("New cluster"), QString::fromStdString(t.error()));
        return;
    }
    newDocument(*t);
    showStatus(tr("New cluster: %1 devices").arg(t->deviceCount()));
}

void MainWindow::importTopology()
{
    const QString file = QFileDialog::getOpenFileName(
        this, tr("Import topology"), m_settings->lastDirectory(),
        tr("Cluster descriptions (*.conf *.xml *.txt *.yml *.yaml);;All files (*)"));
    if (file.isEmpty())
        return;
    m_settings->setLastDirectory(QFileInfo(file).absolutePath());
    const Result<ClusterSketch> sketch = sketchCluster(file.toStdString(), {});
    if (!sketch) {
        warn(tr("Import failed"), QString::fromStdString(sketch.error()));
        return;
    }
    ImportTopologyDialog dialog(*sketch, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const Result<Topology> t = dialog.cluster();
    if (!t) {
        warn(tr("Import failed"), QString::fromStdString(t.error()));
        return;
    }
    if (m_document->replaceCluster(*t, tr("Import topology %1").arg(QFileInfo(file).fileName())))
        showStatus(tr("Imported %1: %2 devices").arg(QFileInfo(file).fileName()).arg(t->deviceCount()));
}

void MainWindow::open()
{
    const QString file = QFileDialog::getOpenFileName(
        this, tr("Open workspace, cluster or plan"), m_settings->lastDirectory(),
        tr("Workspaces, clusters and plans (*.nestws.json *.json);;All files (*)"));
    if (!file.isEmpty())
        openInteractively(file);
}

void MainWindow::openInteractively(const QString &file)
{
    // A plan leaves the document as it is; anything else replaces it: ask first.
    const Result<LoadedFile> peek = readDocumentFile(file);
    if (peek && peek->kind != LoadedFile::Kind::Plan && !maybeSave())
        return;
    QString error;
    if (!openFile(file, &error))
        warn(tr("Open failed"), error);
}

QString MainWindow::askSaveFileName(const QString &title, const QString &filters, const QString &suffix)
{
    QString selected;
    QString file = QFileDialog::getSaveFileName(this, title, m_files->suggestedFileName(suffix), filters, &selected);
    if (!file.isEmpty())
        m_settings->setLastDirectory(QFileInfo(file).absolutePath());  // the next dialog starts here
    if (file.isEmpty() || !QFileInfo(file).suffix().isEmpty())
        return file;
    // No extension typed: the chosen filter's, e.g. "PDF (*.pdf)" -> ".pdf".
    const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("\\*(\\.[A-Za-z0-9.]+)")).match(selected);
    return m.hasMatch() ? file + m.captured(1) : file;
}

void MainWindow::saveClusterAs()
{
    const QString file = askSaveFileName(tr("Save cluster"), tr("Cluster JSON (*.json)"), QStringLiteral(".json"));
    QString error;
    if (!file.isEmpty() && !saveCluster(file, &error))
        warn(tr("Save failed"), error);
}

void MainWindow::exportViewAs()
{
    const QString file = askSaveFileName(tr("Export view"), tr("PNG image (*.png);;SVG drawing (*.svg);;PDF (*.pdf)"),
                                         QLatin1Char('-') + tabNames().value(m_tabs->currentIndex()) + QStringLiteral(".png"));
    QString error;
    if (!file.isEmpty() && !exportView(file, &error))
        warn(tr("Export failed"), error);
}

bool MainWindow::exportPlanFiles(ExportFormat format, const QString &fileName, QString *summary, QString *error)
{
    const PlanSnapshotPtr current = m_planning->current();
    if (!current) {
        *error = tr("%1: not written: there is no plan yet (Plan ▸ Run)").arg(fileName);
        return false;
    }
    ExportRequest request = exportRequestFor(*current);
    const auto result = nest::exportPlan(request, format);
    if (!result) {
        *error = tr("%1: not written: %2").arg(fileName, QString::fromStdString(result.error()));
        return false;
    }
    *summary = QString::fromStdString(result->summary());
    return writeExport(std::move(request), *result, fileName, error);
}

bool MainWindow::writeExport(ExportRequest request, ExportResult result, const QString &fileName, QString *error)
{
    request.fileName = QFileInfo(fileName).fileName().toStdString();
    result.files = exportFiles(request, result);
    QStringList written;
    if (!writeExportFiles(result, fileName, &written, error))
        return false;
    const int beside = int(written.size()) - 1;
    showStatus(tr("Exported the plan for %1: %2%3")
                   .arg(QString::fromUtf8(exportFormatTitle(result.format)), QFileInfo(fileName).fileName(),
                        beside == 0   ? QString()
                        : beside == 1 ? tr(" and 1 file beside it")
                                      : tr(" and %1 files beside it").arg(beside)));
    return true;
}

void MainWindow::exportPlanForFramework(ExportFormat format)
{
    const PlanSnapshotPtr current = m_planning->current();
    if (!current)
        return;
    const QString title = QString::fromUtf8(exportFormatTitle(format));
    ExportRequest request = exportRequestFor(*current);
    const auto preview = nest::exportPlan(request, format);
    if (!preview) {
        warn(tr("Export failed"), QString::fromStdString(preview.error()));
        return;
    }
    if (preview->fellBack()) {
        // The fallback, with both times, before anything is saved.
        QMessageBox box(QMessageBox::Warning, tr("Export plan for %1").arg(title),
                        tr("%1 cannot run this plan as it is.").arg(title), QMessageBox::Cancel, this);
        QString details = tr("<p>What changes:</p><ul>");
        for (const std::string &c : preview->runnable.changes)
            details += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(c).toHtmlEscaped());
        details += QStringLiteral("</ul><p><b>%1</b></p>")
                       .arg(QString::fromStdString(preview->timeComparison()).toHtmlEscaped());
        // The GPUs it uses of the cluster's, never idled without saying so (issue 47).
        details += QStringLiteral("<p>%1</p>").arg(
            tr("The exported plan %1.").arg(QString::fromStdString(preview->gpuUsage()).toHtmlEscaped()));
        if (preview->alternative)
            details += QStringLiteral("<p>%1</p>").arg(
                tr("The best plan %1 runs as it is: %2 s per iteration on %3 of the %4 GPUs (%5).")
                    .arg(title)
                    .arg(preview->alternative->report.iterationTime, 0, 'f', 2)
                    .arg(preview->alternative->report.devicesUsed)
                    .arg(preview->devicesAvailable)
                    .arg(QString::fromStdString(preview->alternative->layout).toHtmlEscaped()));
        for (const std::string &n : preview->runnable.notes)
            details += QStringLiteral("<p>%1</p>").arg(tr("Note: %1").arg(QString::fromStdString(n).toHtmlEscaped()));
        box.setTextFormat(Qt::RichText);
        box.setInformativeText(details);
        QPushButton *go = box.addButton(tr("Export the Nearest Plan"), QMessageBox::AcceptRole);
        QPushButton *best = preview->alternative
                                ? box.addButton(tr("Export the Best Runnable Plan"), QMessageBox::ActionRole)
                                : nullptr;
        if (best)
            best->setObjectName(QStringLiteral("exportBestRunnable"));
        box.setDefaultButton(best ? best : go);
        box.exec();
        if (best && box.clickedButton() == best) {
            // The framework's best plan, which it runs as it is: exported without a fallback.
            request.plan = preview->alternative->plan;
            auto runnable = nest::exportPlan(request, format);
            if (!runnable) {
                warn(tr("Export failed"), QString::fromStdString(runnable.error()));
                return;
            }
            const QString suffix = QFileInfo(QString::fromStdString(defaultExportFileName(format))).suffix();
            const QString file = askSaveFileName(tr("Export plan for %1").arg(title),
                                                 tr("%1 files (*.%2)").arg(title, suffix),
                                                 QStringLiteral("-") + QString::fromStdString(defaultExportFileName(format)));
            QString error;
            if (!file.isEmpty() && !writeExport(std::move(request), *runnable, file, &error))
                warn(tr("Export failed"), error);
            return;
        }
        if (box.clickedButton() != go)
            return;
    }
    const QString suffix = QFileInfo(QString::fromStdString(defaultExportFileName(format))).suffix();
    const QString file = askSaveFileName(tr("Export plan for %1").arg(title),
                                         tr("%1 files (*.%2)").arg(title, suffix),
                                         QStringLiteral("-") + QString::fromStdString(defaultExportFileName(format)));
    if (file.isEmpty())
        return;
    // The plan priced above, its files named after the chosen file.
    QString error;
    if (!writeExport(std::move(request), *preview, file, &error))
        warn(tr("Export failed"), error);
}

void MainWindow::exportPlanAs()
{
    const QString file = askSaveFileName(tr("Export NEST Planner plan"), tr("NEST Planner plan JSON (*.json)"),
                                         QStringLiteral("-plan.json"));
    QString error;
    if (!file.isEmpty() && !exportPlan(file, &error))
        warn(tr("Export failed"), error);
}

} // namespace nest::ui
