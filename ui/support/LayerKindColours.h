#pragma once
// One colour per layer kind (a layer's layerLabel(): "dense", "moe", "mamba", "sliding",
// "global", "mla", "attention", "mlp", "mtp", "embedding", "head", ...), shared by the model
// panel's layer strip and the plan charts' split by kind, so that "moe" is the same colour
// everywhere. The built-in kinds have fixed colours (Tableau 10, as the charts); a kind a
// model defines itself gets one from a second palette, by its name.
#include <QColor>
#include <QString>

namespace nest::ui {

QColor layerKindColour(const QString &kind);

} // namespace nest::ui
