#include "SaveFile.h"

#include "FileGuard.h"

#include <QSaveFile>

#include <cerrno>
#include <cstring>

#ifdef Q_OS_UNIX
#include <unistd.h>
#endif

namespace nest::ui {

namespace {

// What the writers see: every write() reaches the file whole or fails. A file engine's
// partial write (a disk that fills midway) returns a short count without an error, and
// QTextStream (QSvgGenerator) then drops the rest silently: a 174 kB SVG became a 64 kB file
// and the export reported success. Here a short write is retried; the retry's error fails it.
class WriteAll : public QIODevice {
public:
    explicit WriteAll(QFileDevice *file) : m_file(file) { open(QIODevice::WriteOnly); }
    bool isSequential() const override { return true; }
    qint64 accepted() const { return m_accepted; }
    bool failed() const { return !m_reason.isEmpty(); }
    QString reason() const { return m_reason; }

protected:
    qint64 readData(char *, qint64) override { return -1; }
    qint64 writeData(const char *data, qint64 len) override
    {
        if (failed())
            return -1;
        qint64 done = 0;
        while (done < len) {
            const qint64 n = m_file->write(data + done, len - done);
            if (n <= 0) {
                m_reason = m_file->errorString().isEmpty() ? QStringLiteral("write failed") : m_file->errorString();
                setErrorString(m_reason);
                return -1;
            }
            done += n;
        }
        m_accepted += len;
        return len;
    }

private:
    QFileDevice *m_file;
    qint64 m_accepted = 0;
    QString m_reason;
};

} // namespace

bool writeFileAtomically(const QString &fileName, const QByteArray &data, QString *error)
{
    return writeFileAtomically(
        fileName,
        [&data](QIODevice *device, QString *why) {
            if (device->write(data) != data.size()) {
                *why = device->errorString();
                return false;
            }
            return true;
        },
        error);
}

bool writeFileAtomically(const QString &fileName,
                         const std::function<bool(QIODevice *, QString *)> &writer, QString *error)
{
    // Only a regular file is replaced, and a symlink is written through to its target
    // (the link stays): the same rule as core's writeFileAtomically (FileGuard.h).
    const Result<std::string> target = resolveWriteTarget(fileName.toStdString());
    if (!target) {
        *error = QString::fromStdString(target.error());
        return false;
    }
    QSaveFile file(QString::fromStdString(*target));
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) {
        *error = QObject::tr("%1: cannot open for writing: %2").arg(fileName, file.errorString());
        return false;
    }
    QString why;
    const auto failed = [&](const QString &reason) {
        file.cancelWriting();
        *error = QObject::tr("%1: write failed: %2; the previous file is unchanged").arg(fileName, reason);
        return false;
    };
    WriteAll device(&file);
    if (!writer(&device, &why)) {
        // An encoder's own reason ("PNG encoding failed") with the device's, when it has one.
        const QString device_reason = device.failed() ? device.reason() : file.errorString();
        if (why.isEmpty())
            why = device_reason;
        else if ((device.failed() || file.error() != QFileDevice::NoError) && !why.contains(device_reason))
            why = QObject::tr("%1 (%2)").arg(why, device_reason);
        return failed(why);
    }
    // Checked here, before commit() renames the temporary file over the target: with Qt 6.4.2
    // commit() flushed the buffer itself, ignored that the flush failed (disk full) and
    // returned true, leaving a 0-byte file where a good one stood (issue 25). A writer that
    // ignores write() results (QSvgGenerator, QPdfWriter, QImageWriter) is caught too.
    if (device.failed())
        return failed(device.reason());
    if (file.error() != QFileDevice::NoError)
        return failed(file.errorString());
    if (!file.flush())
        return failed(file.errorString());
    if (file.size() != device.accepted())
        return failed(QObject::tr("only %1 of %2 bytes reached the disk").arg(file.size()).arg(device.accepted()));
#ifdef Q_OS_UNIX
    // commit() also ignores a failed fsync, where a file system that allocates late reports
    // a full disk.
    if (::fsync(file.handle()) != 0)
        return failed(QString::fromLocal8Bit(std::strerror(errno)));
#endif
    if (!file.commit()) {
        *error = QObject::tr("%1: could not be saved: %2; the previous file is unchanged")
                     .arg(fileName, file.errorString());
        return false;
    }
    return true;
}

} // namespace nest::ui
