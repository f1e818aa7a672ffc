#pragma once
// The spin box of a link value (bandwidth, latency, oversubscription) in the property
// editor and the import dialog: range, decimals and unit suffix; no keyboard tracking, so a
// typed value is one edit when committed; accelerated stepping.
#include <QDoubleSpinBox>
#include <QString>

namespace nest::ui {

QDoubleSpinBox *linkSpinBox(double min, double max, int decimals, const QString &suffix, const QString &objectName);

} // namespace nest::ui
