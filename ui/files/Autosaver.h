#pragma once
// Autosave: every `intervalSeconds` while the document has unsaved changes (and changed
// since the last autosave), the whole workspace is written to the document's recovery
// file (Recovery.h) through QSaveFile. The user's own file is never written. The window
// removes the recovery file on a clean save or close (discardRecovery), and when an edit
// is undone back to the saved state the next tick removes it.
//
// Two instances editing the same document would write the same recovery file: a
// QLockFile next to it (released when the process ends, detected as stale after a crash)
// keeps the second one from autosaving that document; it reports why instead.
#include <QObject>
#include <QString>

#include <memory>

class QLockFile;
class QTimer;

namespace nest::ui {

class WorkspaceDocument;

class Autosaver : public QObject {
    Q_OBJECT
public:
    // intervalSeconds <= 0: autosave off (autosaveNow still works).
    Autosaver(WorkspaceDocument *document, const QString &directory, int intervalSeconds,
              QObject *parent = nullptr);
    ~Autosaver() override;

    QString directory() const { return m_directory; }
    int intervalSeconds() const { return m_interval; }
    // The recovery file of the current document.
    QString recoveryFile() const;

    // Writes the recovery file now when the document is modified and changed since the
    // last write; removes it when the document is not modified. False with *error when a
    // write was needed and failed (or another instance holds the document's lock).
    bool autosaveNow(QString *error);
    // Removes the recovery file this process wrote or adopted (after a clean save, a close,
    // or before another document replaces this one).
    void discardRecovery();
    // Takes the lock of `recoveryFile` for this process; false when another live process
    // holds it. Start-up calls it before offering a recovery file.
    bool lock(const QString &recoveryFile);
    void release();
    // Takes over a recovery file restored at start-up: it is this process's to update and
    // to remove on a clean save or close.
    bool adopt(const QString &recoveryFile);
    // Whether `recoveryFile` is the one this process wrote or adopted.
    bool owns(const QString &recoveryFile) const;

signals:
    void autosaved(const QString &recoveryFile);
    void autosaveFailed(const QString &error);

private:
    void tick();
    void documentRenamed();

    WorkspaceDocument *m_document;
    QString m_directory;
    int m_interval;
    QTimer *m_timer;
    bool m_pending = false;              // changed since the last write
    QString m_written;                   // the recovery file this process last wrote
    QString m_lockedFile;                // the recovery file m_lock guards
    std::unique_ptr<QLockFile> m_lock;
};

} // namespace nest::ui
