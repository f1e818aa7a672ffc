#pragma once
// The one typed wrapper over QSettings: recent files (de-duplicated, newest first, capped,
// silently dropped when they no longer exist), window geometry and dock state, autosave.
#include <QByteArray>
#include <QSettings>
#include <QStringList>
#include <QVariantMap>

namespace nest::ui {

class Settings {
public:
    static constexpr int kMaxRecentFiles = 10;
    static constexpr int kDefaultAutosaveSeconds = 60;

    Settings();
    // For tests: settings stored in an INI file.
    explicit Settings(const QString &iniFile);

    QStringList recentFiles() const;   // only files that still exist
    void addRecentFile(const QString &fileName);
    void clearRecentFiles();

    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray &geometry);
    QByteArray windowState() const;
    void setWindowState(const QByteArray &state);

    QString lastDirectory() const;
    void setLastDirectory(const QString &dir);
    // Where a save or export dialog starts: the last directory, unless it is a bundled
    // sample folder (never write into the samples) or gone; then Documents, then home.
    QString saveDirectory() const;

    // Key "autosave/intervalSeconds": seconds between autosaves, 0 = off; default 60.
    int autosaveIntervalSeconds() const;
    void setAutosaveIntervalSeconds(int seconds);
    // Key "autosave/directory": where recovery files go; default
    // QStandardPaths::AppDataLocation + "/recovery".
    // Plan ▸ Sweep Cluster Parameter…'s last choices (SweepDialog::state).
    QVariantMap sweepDialog() const;
    void setSweepDialog(const QVariantMap &state);

    QString recoveryDirectory() const;
    void setRecoveryDirectory(const QString &dir);

private:
    mutable QSettings m_settings;
};

} // namespace nest::ui
