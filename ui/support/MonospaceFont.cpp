#include "MonospaceFont.h"

#include <QFontDatabase>
#include <QFontInfo>
#include <QStringList>

namespace nest::ui {

QFont monospaceFont()
{
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    font.setStyleHint(QFont::Monospace);
    font.setFixedPitch(true);
    if (QFontInfo(font).fixedPitch())
        return font;
    for (const QString &family : QFontDatabase::families()) {
        if (QFontDatabase::isFixedPitch(family)) {
            font.setFamilies({family});
            break;
        }
    }
    return font;
}

} // namespace nest::ui
