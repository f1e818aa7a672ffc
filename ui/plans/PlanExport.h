#pragma once
// A shown plan (current or pinned) as a framework's launch files (issue 21, File ▸ Export
// Plan As): the request core's exportPlan() takes, built from the snapshot's own cluster,
// model and settings, and the writing of every file of the result next to the main file
// (all or nothing through core's writeFilesAtomically; launch scripts made executable).
#include "FrameworkExport.h"
#include "PlanSnapshot.h"

#include <QString>
#include <QStringList>

namespace nest::ui {

// The plan, cluster and model of `snapshot`, its model's hyperparameters (shape flags) when
// it has them, and the cost options of its settings (framework profile, memory headroom).
ExportRequest exportRequestFor(const PlanSnapshot &snapshot);

// Writes result.files, the first as `mainFile` and the others beside it, all or nothing
// (issue 48): false with the file and the reason in `error`, and then no file was changed.
bool writeExportFiles(const ExportResult &result, const QString &mainFile, QStringList *written, QString *error);

} // namespace nest::ui
