#pragma once
// Every file the GUI writes goes through here: QSaveFile, checking the write and commit(),
// with an error naming the file and the reason (Tiled's SaveFile habit).
#include <QByteArray>
#include <QString>

#include <functional>

class QIODevice;

namespace nest::ui {

// Writes `data` to `fileName` atomically. Replaces only a regular file ("FILE: not a regular
// file (refusing to replace a FIFO)"), writes through a symlink to its target (the link
// stays a link), and on failure leaves the previous file intact, returns false and sets
// *error ("FILE: REASON; the previous file is unchanged").
bool writeFileAtomically(const QString &fileName, const QByteArray &data, QString *error);
// Lets `writer` write to the device (returns false with a reason on failure), then commits.
bool writeFileAtomically(const QString &fileName,
                         const std::function<bool(QIODevice *, QString *)> &writer, QString *error);

} // namespace nest::ui
