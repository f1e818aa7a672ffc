#include "PlanExport.h"

#include "Calibration.h"
#include "FileGuard.h"
#include "SearchSettings.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace nest::ui {

ExportRequest exportRequestFor(const PlanSnapshot &snapshot)
{
    ExportRequest r;
    r.plan = snapshot.plan();
    r.topology = snapshot.topology;
    r.model = snapshot.model;
    r.cost = calibratedSearchOptions(snapshot.settings, snapshot.model, snapshot.topology, snapshot.calibration).cost;
    if (snapshot.modelSource) {
        auto config = snapshot.modelSource->config(snapshot.label);
        if (config) {
            r.config = *config;
            r.config->seqLength = r.plan.seqLength;
        }
    }
    return r;
}

bool writeExportFiles(const ExportResult &result, const QString &mainFile, QStringList *written, QString *error)
{
    const QDir dir = QFileInfo(mainFile).absoluteDir();
    std::vector<FileToWrite> set;
    QStringList paths;
    for (size_t i = 0; i < result.files.size(); ++i) {
        const ExportFile &f = result.files[i];
        const QString path = i == 0 ? mainFile : dir.filePath(QString::fromStdString(f.name));
        set.push_back({QFile::encodeName(path).toStdString(), f.text, f.executable});
        paths.append(path);
    }
    // A launch script is not replaced when its rank map or hostfile cannot be written.
    const Result<bool> ok = writeFilesAtomically(set);
    if (!ok) {
        *error = QString::fromStdString(ok.error());
        return false;
    }
    written->append(paths);
    return true;
}

} // namespace nest::ui
