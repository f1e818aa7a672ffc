#include "DiagramExport.h"

#include "ClusterDocument.h"
#include "SaveFile.h"
#include "TopologyScene.h"

#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>

namespace nest::ui {

bool exportDiagram(TopologyScene *scene, const QString &fileName, QString *error)
{
    const QRectF source = scene->diagramRect();
    if (source.isEmpty()) {
        *error = QObject::tr("%1: nothing to export (the cluster is empty)").arg(fileName);
        return false;
    }
    const QString title = QString::fromStdString(scene->document()->topology().name);
    const QString lower = fileName.toLower();
    if (lower.endsWith(QLatin1String(".svg"))) {
        return writeFileAtomically(fileName, [&](QIODevice *device, QString *why) {
            QSvgGenerator svg;
            svg.setOutputDevice(device);
            svg.setSize(source.size().toSize());
            svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
            svg.setTitle(title);
            svg.setDescription(QObject::tr("NEST Planner topology diagram"));
            QPainter painter;
            if (!painter.begin(&svg)) {
                *why = QObject::tr("cannot start the SVG painter");
                return false;
            }
            scene->renderDiagram(&painter, QRectF(QPointF(0, 0), source.size()));
            return painter.end();
        }, error);
    }
    if (lower.endsWith(QLatin1String(".pdf"))) {
        return writeFileAtomically(fileName, [&](QIODevice *device, QString *why) {
            QPdfWriter pdf(device);
            pdf.setTitle(title);
            pdf.setPageSize(QPageSize(source.size(), QPageSize::Point));
            pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
            QPainter painter;
            if (!painter.begin(&pdf)) {
                *why = QObject::tr("cannot start the PDF painter");
                return false;
            }
            scene->renderDiagram(&painter, QRectF(QPointF(0, 0), QSizeF(pdf.width(), pdf.height())));
            return painter.end();
        }, error);
    }
    // PNG (default): 2x for crisp text, guarded to 16384 px per side and 256 MB.
    double scale = 2.0;
    const double maxSide = 16384;
    scale = std::min({scale, maxSide / source.width(), maxSide / source.height()});
    const double maxPixels = 64.0 * 1024 * 1024;
    if (source.width() * source.height() * scale * scale > maxPixels)
        scale = std::sqrt(maxPixels / (source.width() * source.height()));
    const QSize size = (source.size() * scale).toSize();
    QImage image(size.expandedTo(QSize(1, 1)), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) {
        *error = QObject::tr("%1: cannot allocate a %2×%3 image").arg(fileName).arg(size.width()).arg(size.height());
        return false;
    }
    image.fill(Qt::white);
    {
        QPainter painter(&image);
        painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
        scene->renderDiagram(&painter, QRectF(QPointF(0, 0), QSizeF(size)));
    }
    return writeFileAtomically(fileName, [&](QIODevice *device, QString *why) {
        if (!image.save(device, "PNG")) {
            *why = QObject::tr("PNG encoding failed");
            return false;
        }
        return true;
    }, error);
}

} // namespace nest::ui
