#include "DocumentFiles.h"
#include "ToolVersion.h"
#include "SourceDir.h"

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

#include <optional>

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
    // Next to the document, unless it is a bundled sample: then where the user last chose a
    // file (Settings::saveDirectory), never the samples folder (issue 49).
    const QString own = m_document->fileName().isEmpty() ? QString() : QFileInfo(m_document->fileName()).absolutePath();
    const QString dir = own.isEmpty() || QDir::cleanPath(own).contains(QLatin1String("/sample_configs"))
                            ? m_settings.saveDirectory()
                            : own;
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
    const QString path = QFileInfo(fileName).absoluteFilePath();
    m_document->load(std::move(f.workspace), path, kind);
    emit status(tr("Opened %1").arg(QFileInfo(fileName).fileName()));
    offerRecoveryOf(path);   // unsaved work on it from a session that did not close cleanly
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
    const QByteArray data = QByteArray::fromStdString(jsonFileText(workspaceToJson(m_document->workspace())));
    if (!writeFileAtomically(fileName, data, error))
        return false;
    m_document->markSaved(QFileInfo(fileName).absoluteFilePath(), WorkspaceDocument::FileKind::Workspace);
    afterSave();
    m_settings.addRecentFile(fileName);
    m_settings.setLastDirectory(QFileInfo(fileName).absolutePath());
    emit recentFilesChanged();
    emit status(tr("Saved workspace %1").arg(QFileInfo(fileName).fileName()));
    return true;
}

bool DocumentFiles::saveCluster(const QString &fileName, QString *error)
{
    if (!validate(fileName, error))
        return false;
    const QByteArray data = QByteArray::fromStdString(jsonFileText(clusterToJson(m_document->topology())));
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

std::optional<RecoveryData> DocumentFiles::claimRecovery(const QString &file)
{
    if (m_autosaver->owns(file))
        return std::nullopt;   // this process's own autosave of the open document
    if (!m_autosaver->lock(file))
        return std::nullopt;   // another running NEST Planner owns it
    Result<RecoveryData> data = readRecoveryFile(file);
    if (!data) {
        m_autosaver->release();
        emit status(tr("Recovery file not used: %1").arg(QString::fromStdString(data.error())));
        return std::nullopt;
    }
    const QString canonical = recoveryFileFor(m_autosaver->directory(), data->documentFile);
    if (QFileInfo(canonical).absoluteFilePath() != QFileInfo(file).absoluteFilePath() &&
        !isKeptRecoveryFileOf(file, canonical)) {
        m_autosaver->release();
        emit status(tr("Recovery file not used: %1: it belongs to %2").arg(file, data->documentFile));
        return std::nullopt;
    }
    if (!recoveryIsNewer(file, data->documentFile)) {
        m_autosaver->release();   // the document was saved after it: nothing to recover
        return std::nullopt;
    }
    return std::move(data).value();
}

void DocumentFiles::restoreRecovery(RecoveryData data, const QString &file)
{
    const QString document = data.documentFile;
    if (document.isEmpty()) {
        m_document->load(std::move(data.workspace), QString(), WorkspaceDocument::FileKind::Workspace);
        m_document->markUnsaved();
    } else if (document == m_document->fileName()) {
        // Over the file it belongs to: "modified" compares with what is on disk.
        m_document->replaceContent(std::move(data.workspace));
    } else if (Result<LoadedFile> onDisk = readDocumentFile(document);
               onDisk && onDisk->kind != LoadedFile::Kind::Plan) {
        const auto kind = onDisk->kind == LoadedFile::Kind::Cluster ? WorkspaceDocument::FileKind::Cluster
                                                                     : WorkspaceDocument::FileKind::Workspace;
        m_document->load(std::move(onDisk).value().workspace, document, kind);
        m_document->replaceContent(std::move(data.workspace));
    } else {
        // Its file is gone or unreadable: the recovered work under its name, unsaved.
        m_document->load(std::move(data.workspace), document, data.kind);
        m_document->markUnsaved();
    }
    m_autosaver->adopt(file);
    emit status(tr("Restored unsaved changes to %1 from %2")
                    .arg(document.isEmpty() ? tr("an untitled workspace") : QFileInfo(document).fileName(), file));
}

bool DocumentFiles::offerRecoveryOf(const QString &document)
{
    if (!m_offersRecovery || !m_prompts.restoreRecovery)
        return false;
    const QString file = recoveryFileFor(m_autosaver->directory(), document);
    if (!QFileInfo::exists(file))
        return false;
    std::optional<RecoveryData> data = claimRecovery(file);
    if (!data || data->documentFile != document)
        return false;
    switch (m_prompts.restoreRecovery({file, document})) {
    case RecoveryChoice::Restore:
        restoreRecovery(std::move(*data), file);
        return true;
    case RecoveryChoice::Discard:
        QFile::remove(file);
        m_autosaver->release();
        emit status(tr("Recovery file removed"));
        return false;
    case RecoveryChoice::OpenOriginal:
        break;
    }
    // The original as it is on disk; the autosaved work put aside where autosave never
    // writes, until the user restores or discards it at a start-up.
    const QString kept = keptRecoveryFile(file);
    const bool moved = QFile::rename(file, kept);
    m_autosaver->release();
    emit status(moved ? tr("Opened the file as saved; the autosaved changes are kept in %1 and offered at the next start")
                            .arg(kept)
                      : tr("Opened the file as saved; the autosaved changes stay in %1").arg(file));
    return false;
}

bool DocumentFiles::offerRecovery()
{
    if (!m_offersRecovery || !m_prompts.chooseRecovery)
        return false;
    for (;;) {
        QList<RecoveryOffer> offers;
        for (const QString &file : recoveryFilesIn(m_autosaver->directory())) {
            std::optional<RecoveryData> data = claimRecovery(file);
            if (!data)
                continue;
            m_autosaver->release();   // taken again when restored
            // The name autosave uses for that document, so that its lock is the same one.
            const QString canonical = recoveryFileFor(m_autosaver->directory(), data->documentFile);
            offers.append({isKeptRecoveryFileOf(file, canonical) ? file : canonical, data->documentFile});
        }
        if (offers.isEmpty())
            return false;
        const RecoveryAnswer answer = m_prompts.chooseRecovery(offers);
        if (answer.action == RecoveryAnswer::Action::Later || answer.index < 0 || answer.index >= offers.size())
            return false;
        const RecoveryOffer &chosen = offers.at(answer.index);
        if (answer.action == RecoveryAnswer::Action::Discard) {
            if (m_autosaver->lock(chosen.recoveryFile)) {
                QFile::remove(chosen.recoveryFile);
                m_autosaver->release();
                emit status(tr("Recovery file removed: %1").arg(chosen.recoveryFile));
            }
            continue;
        }
        if (!maybeSave())
            return false;
        m_autosaver->discardRecovery();   // the open document's own, if any, is being replaced
        std::optional<RecoveryData> data = claimRecovery(chosen.recoveryFile);
        if (!data)
            continue;   // gone or taken meanwhile: ask again with what is left
        restoreRecovery(std::move(*data), chosen.recoveryFile);
        return true;
    }
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
