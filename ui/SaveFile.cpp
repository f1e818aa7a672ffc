#include "SaveFile.h"

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
    QSaveFile file(fileName);
    if (!file.open(QIODevice::WriteOnly)) {
        *error = QObject::tr("%1: cannot open for writing: %2").arg(fileName, file.errorString());
        return false;
    }
    QString why;
    if (!writer(&file, &why)) {
        file.cancelWriting();
        *error = QObject::tr("%1: write failed: %2").arg(fileName, why.isEmpty() ? file.errorString() : why);
        return false;
    }
    if (!file.commit()) {
        *error = QObject::tr("%1: could not be saved: %2").arg(fileName, file.errorString());
        return false;
    }
    return true;
}

} // namespace nest::ui
