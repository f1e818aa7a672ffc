#pragma once
// Recovery files: what autosave writes while a document has unsaved changes, and what
// start-up offers to restore after a crash. They live under
// QStandardPaths::AppDataLocation/recovery (never next to, or over, the user's file), one
// per document, named after the document plus a hash of its absolute path:
//
// {"format": "nest-recovery", "version": 1,
//  "document": "/abs/path/of/the/file.json" or "" (untitled),
//  "kind": "workspace" | "cluster",         (what Save would write the document as)
//  "workspace": { ...the whole workspace, as in a *.nestws.json file... }}
#include "WorkspaceDocument.h"
#include "Result.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace nest::ui {

struct RecoveryData {
    Workspace workspace;
    QString documentFile;   // "" = untitled
    WorkspaceDocument::FileKind kind = WorkspaceDocument::FileKind::Workspace;
};

// AppDataLocation + "/recovery".
QString defaultRecoveryDirectory();
// The recovery file for a document ("" = untitled) in `directory`.
QString recoveryFileFor(const QString &directory, const QString &documentFile);

QByteArray recoveryToBytes(const RecoveryData &data);
// Errors name the file, the JSON path and the reason.
Result<RecoveryData> readRecoveryFile(const QString &file);

// Whether start-up should offer `recoveryFile` for `documentFile`: it exists and is newer
// than the document (always, when the document is untitled or its file is gone).
bool recoveryIsNewer(const QString &recoveryFile, const QString &documentFile);

// Where Open Original puts a document's recovery file aside, so that autosave never writes
// over it: "<name>.kept-<yyyyMMdd-hhmmss>.recovery.json" next to it (issue 49: No deleted it).
// It stays until the user restores or discards it at a start-up.
QString keptRecoveryFile(const QString &recoveryFile);
// Whether `file` is a kept copy of the recovery file `canonical` (recoveryFileFor's name).
bool isKeptRecoveryFileOf(const QString &file, const QString &canonical);

// Every recovery file in `directory` (*.recovery.json), newest first.
QStringList recoveryFilesIn(const QString &directory);

} // namespace nest::ui
