#include "Settings.h"

#include "Recovery.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace nest::ui {

namespace {
const char *const kRecent = "files/recent";
const char *const kGeometry = "window/geometry";
const char *const kState = "window/state";
const char *const kLastDir = "files/lastDirectory";
const char *const kAutosaveInterval = "autosave/intervalSeconds";
const char *const kRecoveryDir = "autosave/directory";
const char *const kSweepDialog = "sweep/dialog";
} // namespace

Settings::Settings()
    : m_settings(QStringLiteral("nest-planner"), QStringLiteral("nest-planner"))
{
}

Settings::Settings(const QString &iniFile)
    : m_settings(iniFile, QSettings::IniFormat)
{
}

QStringList Settings::recentFiles() const
{
    QStringList out;
    for (const QString &f : m_settings.value(kRecent).toStringList())
        if (QFileInfo::exists(f) && !out.contains(f) && out.size() < kMaxRecentFiles)
            out.append(f);
    return out;
}

void Settings::addRecentFile(const QString &fileName)
{
    const QString path = QFileInfo(fileName).absoluteFilePath();
    QStringList list = recentFiles();
    list.removeAll(path);
    list.prepend(path);
    while (list.size() > kMaxRecentFiles)
        list.removeLast();
    m_settings.setValue(kRecent, list);
}

void Settings::clearRecentFiles()
{
    m_settings.remove(kRecent);
}

QByteArray Settings::windowGeometry() const
{
    return m_settings.value(kGeometry).toByteArray();
}

void Settings::setWindowGeometry(const QByteArray &geometry)
{
    m_settings.setValue(kGeometry, geometry);
}

QByteArray Settings::windowState() const
{
    return m_settings.value(kState).toByteArray();
}

void Settings::setWindowState(const QByteArray &state)
{
    m_settings.setValue(kState, state);
}

QString Settings::lastDirectory() const
{
    return m_settings.value(kLastDir).toString();
}

QString Settings::saveDirectory() const
{
    QString last = lastDirectory();
    if (!last.isEmpty() && QFileInfo(last).isDir() && QFileInfo(last).isWritable() &&
        !QDir::cleanPath(last).contains(QLatin1String("/sample_configs")))
        return last;
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    return QFileInfo(documents).isDir() ? documents : QDir::homePath();
}

void Settings::setLastDirectory(const QString &dir)
{
    m_settings.setValue(kLastDir, dir);
}

int Settings::autosaveIntervalSeconds() const
{
    bool ok = false;
    const int seconds = m_settings.value(kAutosaveInterval, kDefaultAutosaveSeconds).toInt(&ok);
    return ok && seconds >= 0 ? seconds : kDefaultAutosaveSeconds;
}

void Settings::setAutosaveIntervalSeconds(int seconds)
{
    m_settings.setValue(kAutosaveInterval, seconds);
}

QString Settings::recoveryDirectory() const
{
    const QString dir = m_settings.value(kRecoveryDir).toString();
    return dir.isEmpty() ? defaultRecoveryDirectory() : dir;
}

void Settings::setRecoveryDirectory(const QString &dir)
{
    m_settings.setValue(kRecoveryDir, dir);
}

QVariantMap Settings::sweepDialog() const
{
    return m_settings.value(kSweepDialog).toMap();
}

void Settings::setSweepDialog(const QVariantMap &state)
{
    m_settings.setValue(kSweepDialog, state);
}

} // namespace nest::ui
