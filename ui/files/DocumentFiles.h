#pragma once
// The document's file work, out of the window: open a workspace, a cluster or a plan file;
// save (QSaveFile) without silently dropping what a cluster file cannot hold
// (SavePolicy.h); validation before writing; the prompt before discarding unsaved changes;
// recent files; and the recovery file offered at start-up (Autosaver.h, Recovery.h).
// Functions return success and an error that names the file and the reason; the
// questions go through Prompts so that tests answer them.
#include "WorkspaceDocument.h"
#include "Plan.h"
#include "Recovery.h"
#include "SavePolicy.h"

#include <QObject>
#include <QString>

#include <optional>

namespace nest::ui {

class Autosaver;
class Settings;

// A workspace, cluster or plan file read from disk.
struct LoadedFile {
    enum class Kind { Workspace, Cluster, Plan };
    Kind kind = Kind::Workspace;
    Workspace workspace;   // Workspace and Cluster (a cluster's model/settings stay default)
    Plan plan;             // Plan
};
// Reads `fileName` as a plan ("format": "nest-plan"), a workspace when it looks like one,
// else a cluster file.
Result<LoadedFile> readDocumentFile(const QString &fileName);
// The bundled quick-start workspace (next to the program, in its share folder, or in the
// source tree); "" when not found.
QString sampleWorkspacePath();

class DocumentFiles : public QObject {
    Q_OBJECT
public:
    DocumentFiles(WorkspaceDocument *document, Settings &settings, Autosaver *autosaver, Prompts prompts,
                  QObject *parent = nullptr);

    Prompts &prompts() { return m_prompts; }

    // Loads a workspace or cluster file (no prompt), or, for a plan file, emits
    // planOpened() and leaves the document as it is. On failure the document stays and
    // *error names the file and the reason.
    bool openFile(const QString &fileName, QString *error);
    // A bundled sample as an untitled document (Save asks for a name; not a recent file).
    bool openSample(const QString &fileName, QString *error);
    // Replaces the document with a new, unsaved one holding `cluster` (no prompt).
    void newDocument(const Topology &cluster);
    // Write the workspace / only the cluster to `fileName` (no prompt).
    bool saveWorkspace(const QString &fileName, QString *error);
    bool saveCluster(const QString &fileName, QString *error);
    // File ▸ Save / Save As, with their questions; true when written.
    bool save();
    bool saveAs();
    // Asks Save / Discard / Cancel when there are unsaved changes; true to go on.
    bool maybeSave();
    // At start-up: lists every recovery file newer than its document and not held by a
    // running NEST Planner (Prompts::chooseRecovery); true when one was restored. Opening a
    // file offers its own recovery file (Prompts::restoreRecovery) in openFile().
    bool offerRecovery();
    // Off in a batch run (--export, --screenshot): nothing is offered, nothing asked.
    void setOffersRecovery(bool on) { m_offersRecovery = on; }
    // A file name for a save or export dialog: the document's (or cluster's) name with
    // `suffix` ("-memory.png", ".nestws.json"), next to the document or in
    // Settings::saveDirectory() (never in a sample folder).
    QString suggestedFileName(const QString &suffix) const;

signals:
    void status(const QString &message);
    void recentFilesChanged();
    void planOpened(const nest::Plan &plan, const QString &fileName);

private:
    void warn(const QString &title, const QString &message);
    void afterSave();
    bool validate(const QString &fileName, QString *error) const;
    // Locks and reads a recovery file that may be offered: readable, named after its
    // document, newer than it, not this process's own. Unlocked again when it is not.
    std::optional<RecoveryData> claimRecovery(const QString &file);
    void restoreRecovery(RecoveryData data, const QString &file);
    bool offerRecoveryOf(const QString &document);

    WorkspaceDocument *m_document;
    Settings &m_settings;
    Autosaver *m_autosaver;
    Prompts m_prompts;
    bool m_offersRecovery = true;
};

} // namespace nest::ui
