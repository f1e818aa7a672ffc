#pragma once
// Every file the GUI writes goes through here: QSaveFile, checking the write and commit(),
// with an error naming the file and the reason (Tiled's SaveFile habit).
#include <QByteArray>
#include <QString>

#include <functional>

class QIODevice;

namespace nest::ui {

// Writes `data` to `fileName` atomically. On failure returns false and sets *error.
bool writeFileAtomically(const QString &fileName, const QByteArray &data, QString *error);
// Lets `writer` write to the device (returns false with a reason on failure), then commits.
bool writeFileAtomically(const QString &fileName,
                         const std::function<bool(QIODevice *, QString *)> &writer, QString *error);

} // namespace nest::ui
