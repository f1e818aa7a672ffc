#include "Recovery.h"

#include "ToolVersion.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace nest::ui {

QString defaultRecoveryDirectory()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/recovery");
}

QString recoveryFileFor(const QString &directory, const QString &documentFile)
{
    if (documentFile.isEmpty())
        return QDir(directory).filePath(QStringLiteral("untitled.recovery.json"));
    const QString path = QFileInfo(documentFile).absoluteFilePath();
    const QByteArray hash = QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha1).toHex().left(12);
    // The readable part is the file name without characters that are awkward in names.
    QString base = QFileInfo(path).fileName();
    for (QChar &c : base)
        if (!c.isLetterOrNumber() && c != QLatin1Char('-') && c != QLatin1Char('_') && c != QLatin1Char('.'))
            c = QLatin1Char('_');
    return QDir(directory).filePath(base + QLatin1Char('-') + QString::fromLatin1(hash) +
                                    QStringLiteral(".recovery.json"));
}

QByteArray recoveryToBytes(const RecoveryData &data)
{
    const Json j{{"format", "nest-recovery"},
                 {"version", 1},
                 {"document", data.documentFile.toStdString()},
                 {"kind", data.kind == WorkspaceDocument::FileKind::Cluster ? "cluster" : "workspace"},
                 {"workspace", workspaceToJson(data.workspace)}};
    return QByteArray::fromStdString(jsonFileText(j, 1));
}

Result<RecoveryData> readRecoveryFile(const QString &file)
{
    const std::string name = file.toStdString();
    const Result<Json> j = readJsonFile(name);
    if (!j)
        return Result<RecoveryData>::failure(j.error());
    RecoveryData data;
    try {
        requireObject(*j, "");
        if (getString(*j, "format", "") != "nest-recovery")
            throw JsonError("format", "expected \"nest-recovery\"");
        getInt(*j, "version", "", 1, 1);
        data.documentFile = QString::fromStdString(getString(*j, "document", ""));
        const std::string kind = getString(*j, "kind", "");
        if (kind != "workspace" && kind != "cluster")
            throw JsonError("kind", "expected one of \"workspace\", \"cluster\"");
        data.kind = kind == "cluster" ? WorkspaceDocument::FileKind::Cluster : WorkspaceDocument::FileKind::Workspace;
        const Json &ws = requireKey(*j, "workspace", "");
        Result<Workspace> w = workspaceFromJson(ws, name + " (workspace)");
        if (!w)
            return Result<RecoveryData>::failure(w.error());
        data.workspace = std::move(w).value();
    } catch (const JsonError &e) {
        return Result<RecoveryData>::failure(formatError(name, e.path(), e.reason()));
    }
    return data;
}

bool recoveryIsNewer(const QString &recoveryFile, const QString &documentFile)
{
    const QFileInfo recovery(recoveryFile);
    if (!recovery.isFile())
        return false;
    if (documentFile.isEmpty())
        return true;
    const QFileInfo document(documentFile);
    if (!document.exists())
        return true;
    return recovery.lastModified() > document.lastModified();
}

namespace {
const QLatin1String kRecoverySuffix(".recovery.json");
}

QString keptRecoveryFile(const QString &recoveryFile)
{
    QString base = recoveryFile;
    if (base.endsWith(kRecoverySuffix))
        base.chop(kRecoverySuffix.size());
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss"));
    QString kept = base + QStringLiteral(".kept-") + stamp + kRecoverySuffix;
    for (int i = 2; QFileInfo::exists(kept); ++i)
        kept = base + QStringLiteral(".kept-") + stamp + QStringLiteral("-%1").arg(i) + kRecoverySuffix;
    return kept;
}

bool isKeptRecoveryFileOf(const QString &file, const QString &canonical)
{
    QString base = QFileInfo(canonical).absoluteFilePath();
    if (base.endsWith(kRecoverySuffix))
        base.chop(kRecoverySuffix.size());
    const QString path = QFileInfo(file).absoluteFilePath();
    return path.startsWith(base + QStringLiteral(".kept-")) && path.endsWith(kRecoverySuffix);
}

QStringList recoveryFilesIn(const QString &directory)
{
    const QFileInfoList found = QDir(directory).entryInfoList({QStringLiteral("*.recovery.json")}, QDir::Files,
                                                              QDir::Time);
    QStringList files;
    for (const QFileInfo &f : found)
        files << f.absoluteFilePath();
    return files;
}

} // namespace nest::ui
