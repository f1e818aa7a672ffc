#include "MainWindow.h"

#include "Autosaver.h"
#include "ClusterIO.h"
#include "ClusterTreeView.h"
#include "DiagramExport.h"
#include "DialogPrompts.h"
#include "ModelPanel.h"
#include "PropertyEditor.h"
#include "Recovery.h"
#include "SaveFile.h"
#include "Settings.h"
#include "TemplateDialog.h"
#include "TopologyScene.h"
#include "TopologyView.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QUndoStack>

// The GUI library is static: its resources must be registered explicitly (outside any
// namespace, as Q_INIT_RESOURCE requires).
static void initNestResources()
{
    Q_INIT_RESOURCE(resources);
}

namespace nest::ui {

Result<LoadedFile> readDocumentFile(const QString &fileName)
{
    const std::string file = fileName.toStdString();
    Result<Json> j = readJsonFile(file);
    if (!j)
        return Result<LoadedFile>::failure(j.error());
    LoadedFile loaded;
    if (looksLikeWorkspace(*j)) {
        Result<Workspace> w = workspaceFromJson(*j, file);
        if (!w)
            return Result<LoadedFile>::failure(w.error());
        loaded.workspace = std::move(w).value();
        loaded.kind = ClusterDocument::FileKind::Workspace;
        return loaded;
    }
    Result<Topology> t = clusterFromJson(*j, file);
    if (!t)
        return Result<LoadedFile>::failure(t.error());
    loaded.workspace.cluster = std::move(t).value();
    loaded.kind = ClusterDocument::FileKind::Cluster;
    return loaded;
}

MainWindow::MainWindow(QWidget *parent, std::unique_ptr<Settings> settings)
    : QMainWindow(parent)
    , m_document(new ClusterDocument(this))
    , m_settings(settings ? std::move(settings) : std::make_unique<Settings>())
{
    initNestResources();
    setDefaultPrompts();
    setWindowIcon(QIcon(QStringLiteral(":/icons/nest.svg")));
    setDockOptions(AnimatedDocks | AllowTabbedDocks);
    m_scene = new TopologyScene(m_document, this);
    m_view = new TopologyView(m_scene);
    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_view, tr("Topology"));
    setCentralWidget(m_tabs);

    m_counts = new QLabel;
    m_zoom = new QLabel;
    statusBar()->addPermanentWidget(m_counts);
    statusBar()->addPermanentWidget(m_zoom);

    createDocks();
    createActions();

    connect(m_document, &ClusterDocument::clusterChanged, this, &MainWindow::updateCounts);
    connect(m_document, &ClusterDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(m_document, &ClusterDocument::fileNameChanged, this, &MainWindow::updateTitle);
    connect(m_document, &ClusterDocument::selectionChanged, this, &MainWindow::updateEditActions);
    connect(m_document, &ClusterDocument::editRefused, this,
            [this](const QString &reason) { showStatus(tr("Refused: %1").arg(reason)); });
    connect(m_document, &ClusterDocument::clusterReset, this, &MainWindow::fitLater);
    connect(m_scene, &TopologyScene::dropRefused, this,
            [this](const QString &reason) { showStatus(tr("Drop refused: %1").arg(reason)); });
    connect(m_scene, &TopologyScene::hoverMessage, this,
            [this](const QString &message) { statusBar()->showMessage(message, 3000); });
    connect(m_modelPanel, &ModelPanel::statusMessage, this, [this](const QString &m) { showStatus(m); });
    connect(m_view, &TopologyView::zoomChanged, this,
            [this](double z) { m_zoom->setText(tr("Zoom %1%").arg(qRound(z * 100))); });

    Workspace empty;
    empty.model = Json{{"preset", "llama2-7b"}};
    m_document->load(empty, QString(), ClusterDocument::FileKind::Workspace);

    m_autosaver = new Autosaver(m_document, m_settings->recoveryDirectory(),
                                m_settings->autosaveIntervalSeconds(), this);
    connect(m_autosaver, &Autosaver::autosaved, this, [this](const QString &) {
        m_lastAutosaveError.clear();
        statusBar()->showMessage(tr("Autosaved"), 2000);
    });
    connect(m_autosaver, &Autosaver::autosaveFailed, this, [this](const QString &error) {
        if (error != m_lastAutosaveError)   // once, not every interval
            showStatus(error, 15000);
        m_lastAutosaveError = error;
    });

    resize(1400, 900);
    restoreGeometry(m_settings->windowGeometry());
    restoreState(m_settings->windowState());
    updateTitle();
    updateCounts();
    updateEditActions();
    showStatus(tr("Ready"));
}

MainWindow::~MainWindow()
{
    // The scene mirrors the document: remove it before the document (an earlier child) goes.
    delete m_scene;
}

void MainWindow::setDefaultPrompts()
{
    m_prompts = dialogPrompts(this, *m_settings);
}

void MainWindow::setPrompts(const Prompts &prompts)
{
    if (prompts.clusterOrWorkspace)
        m_prompts.clusterOrWorkspace = prompts.clusterOrWorkspace;
    if (prompts.unsavedChanges)
        m_prompts.unsavedChanges = prompts.unsavedChanges;
    if (prompts.workspaceFileName)
        m_prompts.workspaceFileName = prompts.workspaceFileName;
    if (prompts.restoreRecovery)
        m_prompts.restoreRecovery = prompts.restoreRecovery;
    if (prompts.warning)
        m_prompts.warning = prompts.warning;
}

void MainWindow::warn(const QString &title, const QString &message)
{
    showStatus(message);
    m_prompts.warning(title, message);
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
    auto *clusterDock = new QDockWidget(tr("Cluster"), this);
    clusterDock->setObjectName(QStringLiteral("clusterDock"));
    clusterDock->setWidget(split);
    addDockWidget(Qt::LeftDockWidgetArea, clusterDock);

    m_modelPanel = new ModelPanel(m_document);
    auto *modelDock = new QDockWidget(tr("Model"), this);
    modelDock->setObjectName(QStringLiteral("modelDock"));
    modelDock->setWidget(m_modelPanel);
    addDockWidget(Qt::RightDockWidgetArea, modelDock);
    resizeDocks({clusterDock, modelDock}, {400, 400}, Qt::Horizontal);
}

void MainWindow::createActions()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *a = file->addAction(tr("&New from Template…"), this, &MainWindow::newFromTemplate);
    a->setShortcut(QKeySequence::New);
    a = file->addAction(tr("&Open…"), this, &MainWindow::open);
    a->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    file->addSeparator();
    a = file->addAction(tr("&Save"), this, &MainWindow::save);
    a->setShortcut(QKeySequence::Save);
    a = file->addAction(tr("Save &As…"), this, &MainWindow::saveAs);
    a->setShortcut(QKeySequence::SaveAs);
    file->addAction(tr("Save &Cluster As…"), this, &MainWindow::saveClusterAs);
    file->addAction(tr("&Export View as PNG/SVG/PDF…"), this, &MainWindow::exportViewAs);
    file->addSeparator();
    a = file->addAction(tr("&Quit"), this, &QWidget::close);
    a->setShortcut(QKeySequence::Quit);
    updateRecentMenu();

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
    for (QDockWidget *dock : findChildren<QDockWidget *>())
        view->addAction(dock->toggleViewAction());
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
    m_counts->setText(tr("%1 devices · %2 nodes · %3 levels").arg(t.deviceCount()).arg(nodes).arg(t.levelCount()));
}

void MainWindow::updateEditActions()
{
    const bool any = !m_document->selection().isEmpty();
    m_deleteAction->setEnabled(any);
    m_duplicateAction->setEnabled(any);
}

void MainWindow::updateRecentMenu()
{
    m_recentMenu->clear();
    const QStringList files = m_settings->recentFiles();
    for (const QString &f : files) {
        m_recentMenu->addAction(QFileInfo(f).fileName(), this, [this, f] {
            if (!maybeSave())
                return;
            QString error;
            if (!openFile(f, &error))
                warn(tr("Open failed"), error);
        })->setToolTip(f);
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
    statusBar()->showMessage(message, timeoutMs);
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
        fitLater();
    }
}

bool MainWindow::openFile(const QString &fileName, QString *error)
{
    Result<LoadedFile> loaded = readDocumentFile(fileName);
    if (!loaded) {
        *error = QString::fromStdString(loaded.error());
        return false;
    }
    LoadedFile f = std::move(loaded).value();
    if (f.kind == ClusterDocument::FileKind::Cluster) {
        // A bare cluster: keep the model and search settings being worked on.
        f.workspace.model = m_document->model();
        f.workspace.search = m_document->search();
    }
    m_autosaver->discardRecovery();   // the document it belonged to is being replaced
    m_document->load(std::move(f.workspace), QFileInfo(fileName).absoluteFilePath(), f.kind);
    m_settings->addRecentFile(fileName);
    m_settings->setLastDirectory(QFileInfo(fileName).absolutePath());
    updateRecentMenu();
    showStatus(tr("Opened %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

bool MainWindow::openSample(const QString &fileName, QString *error)
{
    Result<LoadedFile> loaded = readDocumentFile(fileName);
    if (!loaded) {
        *error = QString::fromStdString(loaded.error());
        return false;
    }
    m_autosaver->discardRecovery();
    m_document->load(std::move(loaded).value().workspace, QString(), ClusterDocument::FileKind::Workspace);
    showStatus(tr("Opened the sample %1 as an untitled workspace").arg(QFileInfo(fileName).fileName()));
    return true;
}

void MainWindow::newDocument(const Topology &cluster)
{
    Workspace w;
    w.cluster = cluster;
    w.model = m_document->model();
    w.search = m_document->search();
    m_autosaver->discardRecovery();
    m_document->load(std::move(w), QString(), ClusterDocument::FileKind::Workspace);
    // A new document is unsaved work: mark it modified so closing asks first.
    m_document->markUnsaved();
}

bool MainWindow::saveWorkspace(const QString &fileName, QString *error)
{
    const std::string problem = m_document->topology().validate();
    if (!problem.empty()) {
        *error = tr("%1: not saved: the cluster is invalid: %2").arg(fileName, QString::fromStdString(problem));
        return false;
    }
    const QByteArray data = QByteArray::fromStdString(workspaceToJson(m_document->workspace()).dump(2) + "\n");
    if (!writeFileAtomically(fileName, data, error))
        return false;
    m_document->markSaved(QFileInfo(fileName).absoluteFilePath(), ClusterDocument::FileKind::Workspace);
    afterSave();
    m_settings->addRecentFile(fileName);
    updateRecentMenu();
    showStatus(tr("Saved workspace %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

bool MainWindow::saveCluster(const QString &fileName, QString *error)
{
    const std::string problem = m_document->topology().validate();
    if (!problem.empty()) {
        *error = tr("%1: not saved: the cluster is invalid: %2").arg(fileName, QString::fromStdString(problem));
        return false;
    }
    const QByteArray data = QByteArray::fromStdString(clusterToJson(m_document->topology()).dump(2) + "\n");
    if (!writeFileAtomically(fileName, data, error))
        return false;
    const QString path = QFileInfo(fileName).absoluteFilePath();
    if (path == m_document->fileName()) {
        // The document's own file now holds the cluster only: model and search settings
        // that differ from the last workspace save stay modified.
        m_document->markSaved(path, ClusterDocument::FileKind::Cluster);
        afterSave();
    }
    m_settings->addRecentFile(fileName);
    updateRecentMenu();
    if (path == m_document->fileName() && m_document->isSettingsModified())
        showStatus(tr("Saved cluster %1; the model and search settings are not in it and stay unsaved")
                       .arg(QFileInfo(fileName).fileName()));
    else
        showStatus(tr("Saved cluster %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

bool MainWindow::exportView(const QString &fileName, QString *error)
{
    if (!exportDiagram(m_scene, fileName, error))
        return false;
    showStatus(tr("Exported %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

void MainWindow::afterSave()
{
    // Everything is on disk: the recovery file has nothing left to recover.
    if (!m_document->isModified())
        m_autosaver->discardRecovery();
}

bool MainWindow::maybeSave()
{
    if (!m_document->isModified())
        return true;
    const UnsavedChoice answer = m_prompts.unsavedChanges(
        m_document->fileName().isEmpty() ? tr("This workspace") : QFileInfo(m_document->fileName()).fileName());
    if (answer == UnsavedChoice::Save)
        return save();
    return answer == UnsavedChoice::Discard;
}

bool MainWindow::offerRecovery()
{
    const QString dir = m_autosaver->directory();
    QStringList documents{m_document->fileName()};
    if (!m_document->fileName().isEmpty())
        documents.append(QString());   // an untitled document's work, too
    for (const QString &document : documents) {
        const QString file = recoveryFileFor(dir, document);
        if (!recoveryIsNewer(file, document))
            continue;
        if (!m_autosaver->lock(file))
            continue;   // another running NEST Planner owns it
        Result<RecoveryData> data = readRecoveryFile(file);
        if (!data || data->documentFile != document) {
            m_autosaver->release();
            showStatus(tr("Recovery file not used: %1")
                           .arg(data ? tr("%1: it belongs to %2").arg(file, data->documentFile)
                                     : QString::fromStdString(data.error())));
            continue;
        }
        if (!m_prompts.restoreRecovery({file, document})) {
            QFile::remove(file);
            m_autosaver->release();
            showStatus(tr("Recovery file removed"));
            continue;
        }
        if (document.isEmpty()) {
            m_document->load(std::move(data->workspace), QString(), ClusterDocument::FileKind::Workspace);
            m_document->markUnsaved();
        } else {
            // Over the file it belongs to: "modified" compares with what is on disk.
            m_document->replaceContent(std::move(data->workspace));
        }
        m_autosaver->adopt(file);
        showStatus(tr("Restored unsaved changes from %1").arg(file));
        return true;
    }
    return false;
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_autosaver->discardRecovery();
    event->accept();
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

void MainWindow::open()
{
    if (!maybeSave())
        return;
    const QString file = QFileDialog::getOpenFileName(
        this, tr("Open workspace or cluster"), m_settings->lastDirectory(),
        tr("Workspaces and clusters (*.nestws.json *.json);;All files (*)"));
    if (file.isEmpty())
        return;
    QString error;
    if (!openFile(file, &error))
        warn(tr("Open failed"), error);
}

bool MainWindow::save()
{
    const QString file = m_document->fileName();
    QString error;
    bool ok = false;
    switch (decideSave(file, m_document->fileKind(), m_document->isSettingsModified())) {
    case SaveAction::AskWorkspaceFileName:
        return saveAs();
    case SaveAction::WriteWorkspace:
        ok = saveWorkspace(file, &error);
        break;
    case SaveAction::WriteCluster:
        ok = saveCluster(file, &error);
        break;
    case SaveAction::AskClusterOrWorkspace:
        switch (m_prompts.clusterOrWorkspace(file)) {
        case ClusterSaveChoice::SaveWorkspaceAs:
            return saveAs();
        case ClusterSaveChoice::SaveClusterOnly:
            ok = saveCluster(file, &error);
            break;
        case ClusterSaveChoice::Cancel:
            showStatus(tr("Not saved"));
            return false;
        }
        break;
    }
    if (!ok)
        warn(tr("Save failed"), error);
    return ok;
}

bool MainWindow::saveAs()
{
    const QString current = m_document->fileName();
    const QString suggested = current.isEmpty() ? QString()
                              : m_document->fileKind() == ClusterDocument::FileKind::Cluster
                                  ? workspaceNameFor(current)
                                  : current;
    QString file = m_prompts.workspaceFileName(suggested);
    if (file.isEmpty())
        return false;
    if (!file.endsWith(QLatin1String(kWorkspaceExtension)))
        file += QLatin1String(kWorkspaceExtension);
    QString error;
    if (!saveWorkspace(file, &error)) {
        warn(tr("Save failed"), error);
        return false;
    }
    return true;
}

void MainWindow::saveClusterAs()
{
    QString file = QFileDialog::getSaveFileName(this, tr("Save cluster"), m_settings->lastDirectory(),
                                                tr("Cluster JSON (*.json)"));
    if (file.isEmpty())
        return;
    if (!file.endsWith(QLatin1String(".json")))
        file += QLatin1String(".json");
    QString error;
    if (!saveCluster(file, &error))
        warn(tr("Save failed"), error);
}

void MainWindow::exportViewAs()
{
    const QString file = QFileDialog::getSaveFileName(this, tr("Export view"), m_settings->lastDirectory(),
                                                      tr("PNG image (*.png);;SVG drawing (*.svg);;PDF (*.pdf)"));
    if (file.isEmpty())
        return;
    QString error;
    if (!exportView(file, &error))
        warn(tr("Export failed"), error);
}

} // namespace nest::ui
