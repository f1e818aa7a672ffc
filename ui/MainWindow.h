#pragma once
// The editor window: docks for the cluster (tree + property editor) and the model, the
// Topology canvas tab in the centre, File / Edit / View menus, and a status bar with the
// cluster's counts and messages. File handling: open a workspace or a cluster file, save
// (QSaveFile) without silently dropping what a cluster file cannot hold (SavePolicy.h),
// recent files, a prompt before discarding unsaved changes, autosave to a recovery file and
// the offer to restore it at start-up (Autosaver.h, Recovery.h).
#include "ClusterDocument.h"
#include "SavePolicy.h"
#include "Settings.h"

#include <QMainWindow>

#include <memory>

class QAction;
class QLabel;
class QMenu;
class QTabWidget;

namespace nest::ui {

class Autosaver;
class ClusterTreeView;
class ModelPanel;
class PropertyEditor;
class TopologyScene;
class TopologyView;

// A workspace or cluster file read from disk, or the reason it could not be read.
struct LoadedFile {
    Workspace workspace;
    ClusterDocument::FileKind kind = ClusterDocument::FileKind::Workspace;
};
// Reads `fileName` as a workspace when it looks like one, else as a cluster file (whose
// model and settings are left default: the caller may keep its own).
Result<LoadedFile> readDocumentFile(const QString &fileName);

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // settings: null = the user's settings (QSettings defaults).
    explicit MainWindow(QWidget *parent = nullptr, std::unique_ptr<Settings> settings = {});
    ~MainWindow() override;

    ClusterDocument *document() const { return m_document; }
    TopologyScene *scene() const { return m_scene; }
    TopologyView *view() const { return m_view; }
    ClusterTreeView *treeView() const { return m_tree; }
    PropertyEditor *propertyEditor() const { return m_properties; }
    ModelPanel *modelPanel() const { return m_modelPanel; }
    Settings &settings() const { return *m_settings; }
    Autosaver *autosaver() const { return m_autosaver; }

    // Replaces the questions the window asks (the members that are set); tests answer them.
    void setPrompts(const Prompts &prompts);

    // Loads a workspace or cluster file (no prompt). On failure the current document stays
    // and *error names the file and the reason.
    bool openFile(const QString &fileName, QString *error);
    // Opens a bundled sample as an untitled document: Save asks for a new name, so the
    // shipped file is never overwritten, and the sample does not enter the recent files.
    bool openSample(const QString &fileName, QString *error);
    // Replaces the document with a new, unsaved one (no prompt).
    void newDocument(const Topology &cluster);
    // Write the workspace / only the cluster to `fileName` (no prompt). Writing the
    // document's own file marks what it holds as saved.
    bool saveWorkspace(const QString &fileName, QString *error);
    bool saveCluster(const QString &fileName, QString *error);
    // File ▸ Save / Save As, with their questions (see SavePolicy.h); true when written.
    bool save();
    bool saveAs();
    bool exportView(const QString &fileName, QString *error);
    // Shows a message in the status bar (and keeps the last one for tests).
    void showStatus(const QString &message, int timeoutMs = 8000);
    QString lastStatus() const { return m_lastStatus; }

    // Asks Save / Discard / Cancel when there are unsaved changes; true to go on.
    bool maybeSave();

    // At start-up: when a recovery file newer than the document (or an untitled one)
    // exists, asks whether to restore it; restores it (the document stays modified) or
    // removes it. True when restored.
    bool offerRecovery();

protected:
    void closeEvent(QCloseEvent *event) override;
    void showEvent(QShowEvent *event) override;

private:
    void createActions();
    void createDocks();
    void updateTitle();
    void updateCounts();
    void updateRecentMenu();
    void updateEditActions();
    void fitLater();

    void newFromTemplate();
    void open();
    void saveClusterAs();
    void setDefaultPrompts();
    void warn(const QString &title, const QString &message);
    void afterSave();
    void exportViewAs();

    ClusterDocument *m_document;
    std::unique_ptr<Settings> m_settings;
    Prompts m_prompts;
    Autosaver *m_autosaver = nullptr;
    QString m_lastAutosaveError;
    TopologyScene *m_scene;
    TopologyView *m_view;
    QTabWidget *m_tabs;
    ClusterTreeView *m_tree = nullptr;
    PropertyEditor *m_properties = nullptr;
    ModelPanel *m_modelPanel = nullptr;
    QLabel *m_counts;
    QLabel *m_zoom;
    QMenu *m_recentMenu = nullptr;
    QAction *m_deleteAction = nullptr;
    QAction *m_duplicateAction = nullptr;
    QAction *m_addRackAction = nullptr;
    QAction *m_addNodeAction = nullptr;
    QString m_lastStatus;
    bool m_fitted = false;
};

} // namespace nest::ui
