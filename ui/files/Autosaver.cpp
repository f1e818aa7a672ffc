#include "Autosaver.h"

#include "WorkspaceDocument.h"
#include "Recovery.h"
#include "SaveFile.h"

#include <QDir>
#include <QFileInfo>
#include <QLockFile>
#include <QTimer>

namespace nest::ui {

Autosaver::Autosaver(WorkspaceDocument *document, const QString &directory, int intervalSeconds, QObject *parent)
    : QObject(parent)
    , m_document(document)
    , m_directory(directory)
    , m_interval(intervalSeconds)
    , m_timer(new QTimer(this))
{
    const auto changed = [this] { m_pending = true; };
    connect(document, &WorkspaceDocument::clusterChanged, this, changed);
    connect(document, &WorkspaceDocument::modelChanged, this, changed);
    connect(document, &WorkspaceDocument::searchChanged, this, changed);
    // Pinned plans (pin, rename, delete) and the calibration are saved in the workspace too:
    // an edit of only those was never autosaved (found by test_full_disk, issue 25).
    connect(document, &WorkspaceDocument::plansChanged, this, changed);
    connect(document, &WorkspaceDocument::calibrationChanged, this, changed);
    connect(document, &WorkspaceDocument::fileNameChanged, this, &Autosaver::documentRenamed);
    connect(m_timer, &QTimer::timeout, this, &Autosaver::tick);
    if (m_interval > 0) {
        m_timer->setInterval(m_interval * 1000);
        m_timer->start();
    }
}

Autosaver::~Autosaver()
{
    release();
}

QString Autosaver::recoveryFile() const
{
    return recoveryFileFor(m_directory, m_document->fileName());
}

bool Autosaver::lock(const QString &recoveryFile)
{
    if (m_lock && m_lockedFile == recoveryFile)
        return true;
    release();
    if (!QDir().mkpath(QFileInfo(recoveryFile).absolutePath()))
        return false;
    auto lock = std::make_unique<QLockFile>(recoveryFile + QStringLiteral(".lock"));
    lock->setStaleLockTime(0);   // only a dead owner makes it stale, never age
    if (!lock->tryLock(0))
        return false;
    m_lock = std::move(lock);
    m_lockedFile = recoveryFile;
    return true;
}

bool Autosaver::adopt(const QString &recoveryFile)
{
    if (!lock(recoveryFile))
        return false;
    m_written = recoveryFile;
    return true;
}

bool Autosaver::owns(const QString &recoveryFile) const
{
    return !m_written.isEmpty() && QFileInfo(m_written).absoluteFilePath() == QFileInfo(recoveryFile).absoluteFilePath();
}

void Autosaver::release()
{
    if (m_lock)
        m_lock->unlock();
    m_lock.reset();
    m_lockedFile.clear();
}

bool Autosaver::autosaveNow(QString *error)
{
    const QString file = recoveryFile();
    if (!m_document->isModified()) {
        if (!m_written.isEmpty())
            discardRecovery();
        return true;
    }
    if (!m_pending && QFileInfo::exists(file))
        return true;
    // Never the user's own file (a directory choice that would put both in one place).
    if (QFileInfo(file).absoluteFilePath() == QFileInfo(m_document->fileName()).absoluteFilePath()) {
        *error = tr("%1: autosave refused: the recovery file would be the document itself").arg(file);
        return false;
    }
    if (!lock(file)) {
        *error = tr("%1: autosave off for this document: another NEST Planner is editing it, or the "
                    "folder is not writable").arg(file);
        return false;
    }
    RecoveryData data{m_document->workspace(), m_document->fileName(), m_document->fileKind()};
    if (!writeFileAtomically(file, recoveryToBytes(data), error))
        return false;
    m_pending = false;
    m_written = file;
    emit autosaved(file);
    return true;
}

void Autosaver::discardRecovery()
{
    // Only what this process wrote or adopted (perhaps under the document's previous name):
    // another document's recovery file waits for the start-up that offers it.
    if (!m_written.isEmpty())
        QFile::remove(m_written);
    m_written.clear();
    release();
    m_pending = m_document->isModified();
}

void Autosaver::tick()
{
    QString error;
    if (!autosaveNow(&error))
        emit autosaveFailed(error);
}

void Autosaver::documentRenamed()
{
    // The recovery file follows the document's name; the next write locks the new one, and
    // discardRecovery still removes what was written under the old name.
    m_pending = m_document->isModified();
}

} // namespace nest::ui
