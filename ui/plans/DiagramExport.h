#pragma once
// Export of diagrams: one routine paints a picture in logical units (pixels at 100 %) and
// this picks the format by the file's extension: .png (ARGB32_Premultiplied QImage at 2x,
// size guarded), .svg (QSvgGenerator with viewBox and title), .pdf (QPdfWriter, one page of
// the picture's size in points, text kept as text). Any other extension is refused. Every
// write goes through QSaveFile; every result is checked; errors read "FILE: reason".
#include <QSizeF>
#include <QString>

#include <functional>

class QPainter;

namespace nest::ui {

class TopologyScene;

// `paint` draws the picture into the rectangle (0, 0, size) of the painter it is given.
bool exportPainting(const QString &fileName, const QSizeF &size, const QString &title,
                    const std::function<void(QPainter *)> &paint, QString *error);

// The topology diagram (TopologyScene::renderDiagram) with the cluster's name as title.
bool exportDiagram(TopologyScene *scene, const QString &fileName, QString *error);

} // namespace nest::ui
