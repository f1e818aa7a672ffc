#include "DiagramExport.h"

#include "WorkspaceDocument.h"
#include "SaveFile.h"
#include "TopologyScene.h"

#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>

namespace nest::ui {

namespace {

// PDF viewers refuse pages beyond 200 inches; larger pictures are scaled down to fit.
constexpr double kMaxPdfPoints = 14400;

bool writeSvg(const QString &fileName, const QSizeF &size, const QString &title,
              const std::function<void(QPainter *)> &paint, QString *error)
{
    return writeFileAtomically(fileName, [&](QIODevice *device, QString *why) {
        QSvgGenerator svg;
        svg.setOutputDevice(device);
        svg.setSize(size.toSize());
        svg.setViewBox(QRectF(QPointF(0, 0), size));
        svg.setTitle(title);
        svg.setDescription(QObject::tr("NEST Planner diagram"));
        QPainter painter;
        if (!painter.begin(&svg)) {
            *why = QObject::tr("cannot start the SVG painter");
            return false;
        }
        paint(&painter);
        return painter.end();
    }, error);
}

bool writePdf(const QString &fileName, const QSizeF &size, const QString &title,
              const std::function<void(QPainter *)> &paint, QString *error)
{
    return writeFileAtomically(fileName, [&](QIODevice *device, QString *why) {
        // One logical unit = one point; the painter maps units to the writer's device
        // pixels with a plain scale, so text stays text at its size (fonts are sized in
        // pixels, not points: see TopologyItems.cpp).
        const double fit = std::min({1.0, kMaxPdfPoints / size.width(), kMaxPdfPoints / size.height()});
        QPdfWriter pdf(device);
        pdf.setTitle(title);
        pdf.setCreator(QStringLiteral("NEST Planner"));
        pdf.setPageSize(QPageSize(size * fit, QPageSize::Point, QString(), QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        QPainter painter;
        if (!painter.begin(&pdf)) {
            *why = QObject::tr("cannot start the PDF painter");
            return false;
        }
        painter.scale(pdf.width() / size.width(), pdf.height() / size.height());
        paint(&painter);
        return painter.end();
    }, error);
}

bool writePng(const QString &fileName, const QSizeF &size,
              const std::function<void(QPainter *)> &paint, QString *error)
{
    // 2x for crisp text, guarded to 16384 px per side and 256 MB.
    const double maxSide = 16384;
    double scale = std::min({2.0, maxSide / size.width(), maxSide / size.height()});
    const double maxPixels = 64.0 * 1024 * 1024;
    if (size.width() * size.height() * scale * scale > maxPixels)
        scale = std::sqrt(maxPixels / (size.width() * size.height()));
    const QSize pixels = (size * scale).toSize().expandedTo(QSize(1, 1));
    QImage image(pixels, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) {
        *error = QObject::tr("%1: cannot allocate a %2×%3 image").arg(fileName).arg(pixels.width()).arg(pixels.height());
        return false;
    }
    image.fill(Qt::white);
    {
        QPainter painter(&image);
        painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
        painter.scale(pixels.width() / size.width(), pixels.height() / size.height());
        paint(&painter);
    }
    return writeFileAtomically(fileName, [&](QIODevice *device, QString *why) {
        if (!image.save(device, "PNG")) {
            *why = QObject::tr("PNG encoding failed");
            return false;
        }
        return true;
    }, error);
}

} // namespace

bool exportPainting(const QString &fileName, const QSizeF &size, const QString &title,
                    const std::function<void(QPainter *)> &paint, QString *error)
{
    if (size.isEmpty()) {
        *error = QObject::tr("%1: nothing to export").arg(fileName);
        return false;
    }
    const QString suffix = QFileInfo(fileName).suffix().toLower();
    if (suffix == QLatin1String("svg"))
        return writeSvg(fileName, size, title, paint, error);
    if (suffix == QLatin1String("pdf"))
        return writePdf(fileName, size, title, paint, error);
    if (suffix == QLatin1String("png"))
        return writePng(fileName, size, paint, error);
    *error = QObject::tr("%1: unknown image format \"%2\" (use .png, .svg or .pdf)").arg(fileName, suffix);
    return false;
}

bool exportDiagram(TopologyScene *scene, const QString &fileName, QString *error)
{
    const QRectF source = scene->diagramRect();
    if (source.isEmpty()) {
        *error = QObject::tr("%1: nothing to export (the cluster is empty)").arg(fileName);
        return false;
    }
    const QString title = QString::fromStdString(scene->document()->topology().name);
    return exportPainting(fileName, source.size(), title, [&](QPainter *painter) {
        scene->renderDiagram(painter, QRectF(QPointF(0, 0), source.size()));
    }, error);
}

} // namespace nest::ui
