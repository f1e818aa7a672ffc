#include "SaveFile.h"

#include "FileGuard.h"

#include <QSaveFile>

#include <cerrno>
#include <cstring>

#ifdef Q_OS_UNIX
#include <unistd.h>
#endif

namespace nest::ui {

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
    if (!file.open(QIODevice::WriteOnly)) {
        *error = QObject::tr("%1: cannot open for writing: %2").arg(fileName, file.errorString());
        return false;
    }
    QString why;
    const auto failed = [&](const QString &reason) {
        file.cancelWriting();
        *error = QObject::tr("%1: write failed: %2; the previous file is unchanged").arg(fileName, reason);
        return false;
    };
    if (!writer(&file, &why)) {
        // An encoder's own reason ("PNG encoding failed") with the device's, when it has one.
        if (why.isEmpty())
            why = file.errorString();
        else if (file.error() != QFileDevice::NoError)
            why = QObject::tr("%1 (%2)").arg(why, file.errorString());
        return failed(why);
    }
    // Checked here, before commit() renames the temporary file over the target: with Qt 6.4.2
    // commit() flushed the buffer itself, ignored that the flush failed (disk full) and
    // returned true, leaving a 0-byte file where a good one stood (issue 25). A writer that
    // ignores write() results (QSvgGenerator, QPdfWriter, QImageWriter) is caught too.
    if (file.error() != QFileDevice::NoError)
        return failed(file.errorString());
    if (!file.flush())
        return failed(file.errorString());
    const qint64 written = file.pos();
    if (file.size() < written)   // (a writer may seek back, never short of what it wrote)
        return failed(QObject::tr("only %1 of %2 bytes reached the disk").arg(file.size()).arg(written));
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
