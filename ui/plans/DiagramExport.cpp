#include "DiagramExport.h"

#include "WorkspaceDocument.h"
#include "SaveFile.h"
#include "TopologyItems.h"
#include "TopologyLayout.h"
#include "TopologyScene.h"

#include <QFileInfo>
#include <QFontMetricsF>
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

namespace {

// The picture around the diagram: a title band above it and a legend below it.
constexpr double kPad = 16;
constexpr double kTitlePixels = 20;
constexpr double kTextPixels = 12;
constexpr double kDiagramLegendRow = 20;
constexpr double kDiagramSwatch = 34;

QString diagramNumber(double v)
{
    return QString::number(v, 'g', 4);
}

} // namespace

QString diagramSubtitle(const Topology &t)
{
    QStringList types;
    for (const DeviceSpec &d : t.deviceTypes)
        types << QString::fromStdString(d.name);
    return QObject::tr("%1 devices (%2) · %3 levels%4")
        .arg(t.deviceCount())
        .arg(types.join(QStringLiteral(", ")))
        .arg(t.levelCount())
        .arg(t.railOptimized ? QObject::tr(" · rail-optimised") : QString());
}

QList<DiagramLegendEntry> diagramLegend(const Topology &t)
{
    QList<DiagramLegendEntry> out;
    for (int l = 0; l < t.levelCount(); ++l) {
        const LinkParams &k = t.levels[static_cast<size_t>(l)].link;
        QString text = QObject::tr("level %1, %2: %3 GB/s per device, %4 µs")
                           .arg(l)
                           .arg(QString::fromStdString(t.levels[static_cast<size_t>(l)].name))
                           .arg(diagramNumber(k.bandwidth / 1e9))
                           .arg(diagramNumber(k.latency * 1e6));
        if (k.oversubscription > 1)
            text += QObject::tr(", oversubscribed %1:1").arg(diagramNumber(k.oversubscription));
        out.append({DiagramLegendEntry::Link, levelColor(l), bandwidthWidth(k.bandwidth), text});
    }
    for (size_t i = 0; i < t.deviceTypes.size(); ++i) {
        const auto count = std::count_if(t.devices.begin(), t.devices.end(),
                                         [&](const Device &d) { return d.type == static_cast<int>(i); });
        out.append({DiagramLegendEntry::Device, deviceColor(t.deviceTypes[i].name), 0,
                    QObject::tr("device %1: %2 in the cluster").arg(QString::fromStdString(t.deviceTypes[i].name)).arg(count)});
    }
    if (std::any_of(t.groups.begin(), t.groups.end(), [](const TopoGroup &g) { return g.linkOverride.has_value(); }))
        out.append({DiagramLegendEntry::Override, levelColor(1), 2,
                    QObject::tr("dashed, *: a group with its own link parameters")});
    return out;
}

bool exportDiagram(TopologyScene *scene, const QString &fileName, QString *error)
{
    const QRectF source = scene->diagramRect();
    if (source.isEmpty()) {
        *error = QObject::tr("%1: nothing to export (the cluster is empty)").arg(fileName);
        return false;
    }
    const Topology &t = scene->document()->topology();
    const QString title = QString::fromStdString(t.name);
    const QString subtitle = diagramSubtitle(t);
    const QList<DiagramLegendEntry> legend = diagramLegend(t);
    const QFont titleFont = canvasFont(kTitlePixels, true);
    const QFont textFont = canvasFont(kTextPixels);
    const QFontMetricsF titleMetrics(titleFont), textMetrics(textFont);
    double textWidth = std::max(titleMetrics.horizontalAdvance(title), textMetrics.horizontalAdvance(subtitle));
    for (const DiagramLegendEntry &e : legend)
        textWidth = std::max(textWidth, kDiagramSwatch + 8 + textMetrics.horizontalAdvance(e.text));
    const double width = std::max(source.width(), textWidth + 2 * kPad);
    const double header = kPad + titleMetrics.height() + textMetrics.height() + 8;
    const double legendTop = header + source.height() + 8;
    const QSizeF size(width, legendTop + legend.size() * kDiagramLegendRow + kPad);

    return exportPainting(fileName, size, title, [&](QPainter *painter) {
        painter->setPen(QColor(0x22, 0x2b, 0x36));
        painter->setFont(titleFont);
        painter->drawText(QPointF(kPad, kPad + titleMetrics.ascent()), title);
        painter->setFont(textFont);
        painter->drawText(QPointF(kPad, kPad + titleMetrics.height() + textMetrics.ascent()), subtitle);
        const double left = (width - source.width()) / 2;
        scene->renderDiagram(painter, QRectF(QPointF(left, header), source.size()));
        painter->setFont(textFont);
        for (int i = 0; i < legend.size(); ++i) {
            const DiagramLegendEntry &e = legend[i];
            const double mid = legendTop + i * kDiagramLegendRow + kDiagramLegendRow / 2;
            if (e.kind == DiagramLegendEntry::Device) {
                painter->setPen(QPen(e.colour.darker(140), 1));
                painter->setBrush(e.colour);
                painter->drawRect(QRectF(kPad + kDiagramSwatch / 2 - 6, mid - 6, 12, 12));
            } else {
                painter->setPen(QPen(e.colour, e.width, e.kind == DiagramLegendEntry::Override ? Qt::DashLine : Qt::SolidLine,
                                     Qt::FlatCap));
                painter->drawLine(QPointF(kPad, mid), QPointF(kPad + kDiagramSwatch, mid));
            }
            painter->setPen(QColor(0x22, 0x2b, 0x36));
            painter->drawText(QPointF(kPad + kDiagramSwatch + 8, mid - textMetrics.height() / 2 + textMetrics.ascent()), e.text);
        }
    }, error);
}

} // namespace nest::ui
