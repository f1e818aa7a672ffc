#pragma once
// Export of the topology diagram: one routine paints it (TopologyScene::renderDiagram) and
// this picks the format by the file's extension: .png (ARGB32_Premultiplied QImage, size
// guarded), .svg (QSvgGenerator with viewBox and title), .pdf (QPdfWriter). Every write goes
// through QSaveFile; every result is checked.
#include <QString>

namespace nest::ui {

class TopologyScene;

bool exportDiagram(TopologyScene *scene, const QString &fileName, QString *error);

} // namespace nest::ui
