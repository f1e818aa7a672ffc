#include "PlanExport.h"

#include "SaveFile.h"
#include "Calibration.h"
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
    for (size_t i = 0; i < result.files.size(); ++i) {
        const ExportFile &f = result.files[i];
        const QString path = i == 0 ? mainFile : dir.filePath(QString::fromStdString(f.name));
        if (!writeFileAtomically(path, QByteArray::fromStdString(f.text), error))
            return false;
        if (f.executable) {
            QFile file(path);
            file.setPermissions(file.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeGroup |
                                QFileDevice::ExeOther);
        }
        written->append(path);
    }
    return true;
}

} // namespace nest::ui
