#include "LinkSpinBox.h"

namespace nest::ui {

QDoubleSpinBox *linkSpinBox(double min, double max, int decimals, const QString &suffix, const QString &objectName)
{
    auto *s = new QDoubleSpinBox;
    s->setRange(min, max);
    s->setDecimals(decimals);
    s->setSuffix(suffix);
    s->setKeyboardTracking(false);
    s->setObjectName(objectName);
    s->setAccelerated(true);
    return s;
}

} // namespace nest::ui
