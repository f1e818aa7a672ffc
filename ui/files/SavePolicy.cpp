#include "SavePolicy.h"

#include <QDir>
#include <QFileInfo>

namespace nest::ui {

SaveAction decideSave(const QString &fileName, WorkspaceDocument::FileKind kind, bool settingsModified)
{
    if (fileName.isEmpty())
        return SaveAction::AskWorkspaceFileName;
    if (kind == WorkspaceDocument::FileKind::Workspace)
        return SaveAction::WriteWorkspace;
    return settingsModified ? SaveAction::AskClusterOrWorkspace : SaveAction::WriteCluster;
}

QString workspaceNameFor(const QString &clusterFile)
{
    if (clusterFile.isEmpty())
        return {};
    const QFileInfo info(clusterFile);
    QString base = info.fileName();
    if (base.endsWith(QLatin1String(kWorkspaceExtension)))
        return info.absoluteFilePath();
    if (base.endsWith(QLatin1String(".json")))
        base.chop(5);
    return info.absoluteDir().filePath(base + QLatin1String(kWorkspaceExtension));
}

} // namespace nest::ui
