#include "DocumentFiles.h"

#include "Autosaver.h"
#include "ClusterIO.h"
#include "PlanIO.h"
#include "Recovery.h"
#include "SaveFile.h"
#include "Settings.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

namespace nest::ui {

Result<LoadedFile> readDocumentFile(const QString &fileName)
{
    const std::string file = fileName.toStdString();
    Result<Json> j = readJsonFile(file);
    if (!j)
        return Result<LoadedFile>::failure(j.error());
    LoadedFile loaded;
    const auto format = j->is_object() ? j->find("format") : j->end();
    if (j->is_object() && format != j->end() && format->is_string() && format->get<std::string>() == "nest-plan") {
        Result<Plan> p = planFromJson(*j, file);
        if (!p)
            return Result<LoadedFile>::failure(p.error());
        loaded.kind = LoadedFile::Kind::Plan;
        loaded.plan = std::move(p).value();
        return loaded;
    }
    if (looksLikeWorkspace(*j)) {
        Result<Workspace> w = workspaceFromJson(*j, file);
        if (!w)
            return Result<LoadedFile>::failure(w.error());
        loaded.workspace = std::move(w).value();
        loaded.kind = LoadedFile::Kind::Workspace;
        return loaded;
    }
    Result<Topology> t = clusterFromJson(*j, file);
    if (!t)
        return Result<LoadedFile>::failure(t.error());
    loaded.workspace.cluster = std::move(t).value();
    loaded.kind = LoadedFile::Kind::Cluster;
    return loaded;
}

QString sampleWorkspacePath()
{
    const QString rel = QStringLiteral("sample_configs/workspaces/quickstart.nestws.json");
    const QString appDir = QCoreApplication::applicationDirPath();
    const QStringList candidates{appDir + QStringLiteral("/../") + rel, appDir + QStringLiteral("/../../") + rel,
                                 appDir + QStringLiteral("/../share/nest-planner/") + rel,
                                 QStringLiteral(NEST_SOURCE_DIR "/") + rel};
    for (const QString &c : candidates)
        if (QFileInfo::exists(c))
            return QDir::cleanPath(c);
    return {};
}

DocumentFiles::DocumentFiles(WorkspaceDocument *document, Settings &settings, Autosaver *autosaver,
                             Prompts prompts, QObject *parent)
    : QObject(parent)
    , m_document(document)
    , m_settings(settings)
    , m_autosaver(autosaver)
    , m_prompts(std::move(prompts))
{
}

QString DocumentFiles::suggestedFileName(const QString &suffix) const
{
    // The document's own name, else the cluster's, made safe for a file name.
    QString base = m_document->fileName().isEmpty() ? QString() : QFileInfo(m_document->fileName()).fileName();
    if (base.endsWith(QLatin1String(kWorkspaceExtension)))
        base.chop(int(qstrlen(kWorkspaceExtension)));
    else if (base.endsWith(QLatin1String(".json")))
        base.chop(5);
    if (base.isEmpty())
        base = QString::fromStdString(m_document->topology().name);
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    if (base.isEmpty())
        base = QStringLiteral("untitled");
    const QString dir = m_document->fileName().isEmpty() ? m_settings.saveDirectory()
                                                         : QFileInfo(m_document->fileName()).absolutePath();
    return QDir(dir).filePath(base + suffix);
}

void DocumentFiles::warn(const QString &title, const QString &message)
{
    emit status(message);
    m_prompts.warning(title, message);
}

bool DocumentFiles::openFile(const QString &fileName, QString *error)
{
    Result<LoadedFile> loaded = readDocumentFile(fileName);
    if (!loaded) {
        *error = QString::fromStdString(loaded.error());
        return false;
    }
    LoadedFile f = std::move(loaded).value();
    m_settings.addRecentFile(fileName);
    m_settings.setLastDirectory(QFileInfo(fileName).absolutePath());
    emit recentFilesChanged();
    if (f.kind == LoadedFile::Kind::Plan) {
        emit status(tr("Opened the plan %1: evaluated on the current cluster and model").arg(QFileInfo(fileName).fileName()));
        emit planOpened(f.plan, QFileInfo(fileName).absoluteFilePath());
        return true;
    }
    const auto kind = f.kind == LoadedFile::Kind::Cluster ? WorkspaceDocument::FileKind::Cluster
                                                          : WorkspaceDocument::FileKind::Workspace;
    if (kind == WorkspaceDocument::FileKind::Cluster) {
        // A bare cluster: keep the model and search settings being worked on.
        f.workspace.model = m_document->model();
        f.workspace.search = m_document->search();
    }
    m_autosaver->discardRecovery();   // the document it belonged to is being replaced
    m_document->load(std::move(f.workspace), QFileInfo(fileName).absoluteFilePath(), kind);
    emit status(tr("Opened %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

bool DocumentFiles::openSample(const QString &fileName, QString *error)
{
    Result<LoadedFile> loaded = readDocumentFile(fileName);
    if (!loaded) {
        *error = QString::fromStdString(loaded.error());
        return false;
    }
    if (loaded->kind == LoadedFile::Kind::Plan) {
        *error = tr("%1: a plan, not a workspace or cluster").arg(fileName);
        return false;
    }
    m_autosaver->discardRecovery();
    m_document->load(std::move(loaded).value().workspace, QString(), WorkspaceDocument::FileKind::Workspace);
    emit status(tr("Opened the sample %1 as an untitled workspace").arg(QFileInfo(fileName).fileName()));
    return true;
}

void DocumentFiles::newDocument(const Topology &cluster)
{
    Workspace w;
    w.cluster = cluster;
    w.model = m_document->model();
    w.search = m_document->search();
    m_autosaver->discardRecovery();
    m_document->load(std::move(w), QString(), WorkspaceDocument::FileKind::Workspace);
    // A new document is unsaved work: mark it modified so closing asks first.
    m_document->markUnsaved();
}

bool DocumentFiles::validate(const QString &fileName, QString *error) const
{
    const std::string problem = m_document->topology().validate();
    if (problem.empty())
        return true;
    *error = tr("%1: not saved: the cluster is invalid: %2").arg(fileName, QString::fromStdString(problem));
    return false;
}

bool DocumentFiles::saveWorkspace(const QString &fileName, QString *error)
{
    if (!validate(fileName, error))
        return false;
    const QByteArray data = QByteArray::fromStdString(workspaceToJson(m_document->workspace()).dump(2) + "\n");
    if (!writeFileAtomically(fileName, data, error))
        return false;
    m_document->markSaved(QFileInfo(fileName).absoluteFilePath(), WorkspaceDocument::FileKind::Workspace);
    afterSave();
    m_settings.addRecentFile(fileName);
    emit recentFilesChanged();
    emit status(tr("Saved workspace %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

bool DocumentFiles::saveCluster(const QString &fileName, QString *error)
{
    if (!validate(fileName, error))
        return false;
    const QByteArray data = QByteArray::fromStdString(clusterToJson(m_document->topology()).dump(2) + "\n");
    if (!writeFileAtomically(fileName, data, error))
        return false;
    const QString path = QFileInfo(fileName).absoluteFilePath();
    if (path == m_document->fileName()) {
        // The document's own file now holds the cluster only: model and search settings
        // that differ from the last workspace save stay modified.
        m_document->markSaved(path, WorkspaceDocument::FileKind::Cluster);
        afterSave();
    }
    m_settings.addRecentFile(fileName);
    emit recentFilesChanged();
    if (path == m_document->fileName() && m_document->isSettingsModified())
        emit status(tr("Saved cluster %1; the model and search settings are not in it and stay unsaved")
                        .arg(QFileInfo(fileName).fileName()));
    else
        emit status(tr("Saved cluster %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

void DocumentFiles::afterSave()
{
    // Everything is on disk: the recovery file has nothing left to recover.
    if (!m_document->isModified())
        m_autosaver->discardRecovery();
}

bool DocumentFiles::maybeSave()
{
    if (!m_document->isModified())
        return true;
    const UnsavedChoice answer = m_prompts.unsavedChanges(
        m_document->fileName().isEmpty() ? tr("This workspace") : QFileInfo(m_document->fileName()).fileName());
    if (answer == UnsavedChoice::Save)
        return save();
    return answer == UnsavedChoice::Discard;
}

bool DocumentFiles::offerRecovery()
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
            emit status(tr("Recovery file not used: %1")
                            .arg(data ? tr("%1: it belongs to %2").arg(file, data->documentFile)
                                      : QString::fromStdString(data.error())));
            continue;
        }
        if (!m_prompts.restoreRecovery({file, document})) {
            QFile::remove(file);
            m_autosaver->release();
            emit status(tr("Recovery file removed"));
            continue;
        }
        if (document.isEmpty()) {
            m_document->load(std::move(data->workspace), QString(), WorkspaceDocument::FileKind::Workspace);
            m_document->markUnsaved();
        } else {
            // Over the file it belongs to: "modified" compares with what is on disk.
            m_document->replaceContent(std::move(data->workspace));
        }
        m_autosaver->adopt(file);
        emit status(tr("Restored unsaved changes from %1").arg(file));
        return true;
    }
    return false;
}

bool DocumentFiles::save()
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
            emit status(tr("Not saved"));
            return false;
        }
        break;
    }
    if (!ok)
        warn(tr("Save failed"), error);
    return ok;
}

bool DocumentFiles::saveAs()
{
    const QString current = m_document->fileName();
    const QString suggested = current.isEmpty() ? suggestedFileName(QLatin1String(kWorkspaceExtension))
                              : m_document->fileKind() == WorkspaceDocument::FileKind::Cluster
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

} // namespace nest::ui
