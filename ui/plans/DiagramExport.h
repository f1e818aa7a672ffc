#pragma once
// Export of diagrams: one routine paints a picture in logical units (pixels at 100 %) and
// this picks the format by the file's extension: .png (ARGB32_Premultiplied QImage at 2x,
// size guarded), .svg (QSvgGenerator with viewBox and title), .pdf (QPdfWriter, one page of
// the picture's size in points, text kept as text). Any other extension is refused. Every
// write goes through QSaveFile; every result is checked; errors read "FILE: reason".
#include "Topology.h"

#include <QColor>
#include <QList>
#include <QSizeF>
#include <QString>

#include <functional>

class QPainter;

namespace nest::ui {

class TopologyScene;

// `paint` draws the picture into the rectangle (0, 0, size) of the painter it is given.
bool exportPainting(const QString &fileName, const QSizeF &size, const QString &title,
                    const std::function<void(QPainter *)> &paint, QString *error);

// One line of the topology export's legend: a link level (its colour and the pen width of
// its bandwidth), a device type (its colour), or the mark of a group's own link parameters.
struct DiagramLegendEntry {
    enum Kind { Link, Device, Override } kind;
    QColor colour;
    double width;   // pen width of a link swatch
    QString text;   // "level 1, rack: 50 GB/s per device, 2 µs"; "device h100: 64 in the cluster"
};
QList<DiagramLegendEntry> diagramLegend(const Topology &t);
// "64 devices (h100-sxm-80gb) · 3 levels", under the title.
QString diagramSubtitle(const Topology &t);

// The topology diagram (TopologyScene::renderDiagram) under a title (the cluster's name and
// diagramSubtitle) and above its legend (diagramLegend: what the colours and widths say).
bool exportDiagram(TopologyScene *scene, const QString &fileName, QString *error);

} // namespace nest::ui
