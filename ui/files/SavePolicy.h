#pragma once
// What File ▸ Save does, and the questions the window asks around saving, as plain
// functions and values so that tests can check the decisions without a modal dialog.
//
// A document opened from a cluster file is saved back as a cluster file, which holds only
// the cluster: when the model or search settings were changed too, Save must not drop
// them silently, so it asks "Save Workspace As… / Save Cluster Only / Cancel".
#include "WorkspaceDocument.h"

#include <QList>
#include <QString>

#include <functional>

namespace nest::ui {

enum class SaveAction {
    AskWorkspaceFileName,    // no file yet: Save As (a workspace)
    WriteWorkspace,          // write the whole workspace to its file
    WriteCluster,            // a cluster file and only the cluster changed: write it
    AskClusterOrWorkspace,   // a cluster file but the settings changed: ask
};

SaveAction decideSave(const QString &fileName, WorkspaceDocument::FileKind kind, bool settingsModified);

enum class ClusterSaveChoice { SaveWorkspaceAs, SaveClusterOnly, Cancel };
enum class UnsavedChoice { Save, Discard, Cancel };

// A recovery file the window may offer (see Recovery.h).
struct RecoveryOffer {
    QString recoveryFile;
    QString documentFile;   // "" = an untitled document
};

// What to do with the recovery file of a document being opened.
enum class RecoveryChoice { Restore, OpenOriginal, Discard };

// What to do with the recovery files listed at start-up.
struct RecoveryAnswer {
    enum class Action { Restore, Discard, Later };
    Action action = Action::Later;
    int index = -1;   // the offer restored or discarded
};

// The questions the window asks. Each member has a default that shows a dialog; tests
// replace them with answers.
struct Prompts {
    // The document came from `clusterFile` and its model or search settings changed.
    std::function<ClusterSaveChoice(const QString &clusterFile)> clusterOrWorkspace;
    // Before discarding unsaved changes (open, new, quit).
    std::function<UnsavedChoice(const QString &documentName)> unsavedChanges;
    // A file name for Save As (a workspace); `suggested` may be empty; "" = cancelled.
    std::function<QString(const QString &suggested)> workspaceFileName;
    // The recovery file of the document being opened: restore it, open the file as it is on
    // disk and keep the recovery file for later (put aside, offered at the next start), or
    // discard it (deleted).
    std::function<RecoveryChoice(const RecoveryOffer &offer)> restoreRecovery;
    // At start-up: every recovery file that can be restored, newest first; restore one,
    // discard one (the list is asked again without it), or leave them all for later.
    std::function<RecoveryAnswer(const QList<RecoveryOffer> &offers)> chooseRecovery;
    // A failure to report (save or open failed).
    std::function<void(const QString &title, const QString &message)> warning;
};

// A workspace file name next to a cluster file: "dir/a.json" -> "dir/a.nestws.json".
QString workspaceNameFor(const QString &clusterFile);

} // namespace nest::ui
