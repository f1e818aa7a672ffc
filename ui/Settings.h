#pragma once
// The one typed wrapper over QSettings: recent files (de-duplicated, newest first, capped,
// silently dropped when they no longer exist), window geometry and dock state.
#include <QByteArray>
#include <QSettings>
#include <QStringList>

namespace nest::ui {

class Settings {
public:
    static constexpr int kMaxRecentFiles = 10;

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

private:
    mutable QSettings m_settings;
};

} // namespace nest::ui
