#include "SaveFile.h"

#include "FileGuard.h"

#include <QSaveFile>

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
    if (!writer(&file, &why)) {
        file.cancelWriting();
        *error = QObject::tr("%1: write failed: %2; the previous file is unchanged")
                     .arg(fileName, why.isEmpty() ? file.errorString() : why);
        return false;
    }
    if (!file.commit()) {
        *error = QObject::tr("%1: could not be saved: %2; the previous file is unchanged")
                     .arg(fileName, file.errorString());
        return false;
    }
    return true;
}

} // namespace nest::ui
