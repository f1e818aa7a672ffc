#include "PlotExport.h"

#include "SaveFile.h"

#include <QFileInfo>
#include <QLabel>
#include <QPageLayout>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QToolTip>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace nest::ui {

namespace {

constexpr int kMaxSide = 16384;  // PNG size guard (pixels per side)

// Bytes on the axis, GB in the labels. Steps stay "nice" because 1e9 is a power of ten.
class BytesTicker : public QCPAxisTicker {
protected:
    QString getTickLabel(double tick, const QLocale &locale, QChar, int) override
    {
        return locale.toString(tick / 1e9, 'g', 4);
    }
};

// Seconds on the axis; the unit of the labels follows the visible range (set in
// getTickStep(), which generate() calls before it makes the labels).
class SecondsTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange &range) override
    {
        const double span = std::abs(range.size());
        if (span < 2e-3) {
            m_scale = 1e6;
            m_unit = QStringLiteral("µs");
        } else if (span < 2.0) {
            m_scale = 1e3;
            m_unit = QStringLiteral("ms");
        } else {
            m_scale = 1;
            m_unit = QStringLiteral("s");
        }
        return QCPAxisTicker::getTickStep(range);
    }
    QString getTickLabel(double tick, const QLocale &locale, QChar, int) override
    {
        const double v = std::abs(tick * m_scale) < 1e-9 ? 0.0 : tick * m_scale;
        return locale.toString(v, 'g', 4) + QLatin1Char(' ') + m_unit;
    }

private:
    double m_scale = 1;
    QString m_unit = QStringLiteral("s");
};

bool renderSvg(QCustomPlot *plot, QIODevice *device, int w, int h, QString *why)
{
    QSvgGenerator svg;
    svg.setOutputDevice(device);
    svg.setResolution(plot->logicalDpiX());  // fonts as laid out on screen
    svg.setSize(QSize(w, h));
    svg.setViewBox(QRect(0, 0, w, h));
    const QCPTextElement *title = plotTitle(plot);
    svg.setTitle(title ? title->text() : QObject::tr("NEST Planner chart"));
    svg.setDescription(QObject::tr("NEST Planner chart"));
    QCPPainter painter;
    if (!painter.begin(&svg)) {
        *why = QObject::tr("cannot start the SVG painter");
        return false;
    }
    painter.setMode(QCPPainter::pmVectorized);
    plot->toPainter(&painter, w, h);
    return painter.end();
}

bool renderPdf(QCustomPlot *plot, QIODevice *device, int w, int h, QString *why)
{
    QPdfWriter pdf(device);
    const int dpi = plot->logicalDpiX();
    pdf.setResolution(dpi);
    const QCPTextElement *title = plotTitle(plot);
    pdf.setTitle(title ? title->text() : QObject::tr("NEST Planner chart"));
    pdf.setCreator(QStringLiteral("NEST Planner"));
    const QPageSize page(QSizeF(w, h) * 72.0 / dpi, QPageSize::Point, QString(), QPageSize::ExactMatch);
    if (!pdf.setPageLayout(QPageLayout(page, QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)))) {
        *why = QObject::tr("cannot set a %1×%2 page").arg(w).arg(h);
        return false;
    }
    QCPPainter painter;
    if (!painter.begin(&pdf)) {
        *why = QObject::tr("cannot start the PDF painter");
        return false;
    }
    // Vector output: glyphs stay text (pdftotext finds them), pens scale with the page.
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNonCosmetic);
    painter.setWindow(QRect(0, 0, w, h));
    plot->toPainter(&painter, w, h);
    return painter.end();
}

} // namespace

bool exportPlot(QCustomPlot *plot, const QString &fileName, QString *error, int width, int height)
{
    const QString suffix = QFileInfo(fileName).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("svg") && suffix != QLatin1String("pdf")) {
        *error = QObject::tr("%1: unknown export format \"%2\" (use .png, .svg or .pdf)").arg(fileName, suffix);
        return false;
    }
    if (!plot) {
        *error = QObject::tr("%1: nothing to export").arg(fileName);
        return false;
    }
    const int w = std::clamp(width, 1, kMaxSide);
    const int h = std::clamp(height, 1, kMaxSide);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    if (suffix == QLatin1String("svg"))
        return writeFileAtomically(fileName, [&](QIODevice *d, QString *why) { return renderSvg(plot, d, w, h, why); },
                                   error);
    if (suffix == QLatin1String("pdf"))
        return writeFileAtomically(fileName, [&](QIODevice *d, QString *why) { return renderPdf(plot, d, w, h, why); },
                                   error);
    const QPixmap pixmap = plot->toPixmap(w, h);
    if (pixmap.isNull()) {
        *error = QObject::tr("%1: cannot render a %2×%3 image").arg(fileName).arg(w).arg(h);
        return false;
    }
    return writeFileAtomically(fileName, [&](QIODevice *d, QString *why) {
        if (!pixmap.save(d, "PNG")) {
            *why = QObject::tr("PNG encoding failed");
            return false;
        }
        return true;
    }, error);
}

QCPTextElement *setupPlotTitleAndLegend(QCustomPlot *plot, int legendColumns)
{
    QCPLayoutGrid *layout = plot->plotLayout();
    auto *title = new QCPTextElement(plot, QString(), QFont(plot->font().family(), 12, QFont::Bold));
    title->setObjectName(QStringLiteral("plotTitle"));
    layout->insertRow(0);
    layout->addElement(0, 0, title);
    // The legend between two stretching spacers: as narrow as its entries, centred.
    if (plot->axisRect())
        plot->axisRect()->insetLayout()->take(plot->legend);
    auto *legendRow = new QCPLayoutGrid;
    layout->insertRow(1);
    layout->addElement(1, 0, legendRow);
    legendRow->addElement(0, 0, new QCPLayoutElement(plot));
    legendRow->addElement(0, 1, plot->legend);
    legendRow->addElement(0, 2, new QCPLayoutElement(plot));
    legendRow->setColumnStretchFactors({1, 0.001, 1});
    plot->legend->setVisible(true);
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setWrap(std::max(legendColumns, 1));
    plot->legend->setMargins(QMargins(4, 2, 4, 2));
    layout->setRowStretchFactor(0, 0.001);
    layout->setRowStretchFactor(1, 0.001);
    return title;
}

QCPTextElement *plotTitle(const QCustomPlot *plot)
{
    if (!plot || plot->plotLayout()->rowCount() == 0)
        return nullptr;
    return qobject_cast<QCPTextElement *>(plot->plotLayout()->element(0, 0));
}

void applyPlotPalette(QCustomPlot *plot, const QPalette &palette)
{
    const QColor text = palette.color(QPalette::WindowText);
    const QColor base = palette.color(QPalette::Base);
    QColor grid = palette.color(QPalette::Mid);
    grid.setAlpha(110);
    plot->setBackground(base);
    for (QCPAxisRect *rect : plot->axisRects()) {
        for (QCPAxis *axis : rect->axes()) {
            axis->setBasePen(QPen(text, 0));
            axis->setTickPen(QPen(text, 0));
            axis->setSubTickPen(QPen(text, 0));
            axis->setTickLabelColor(text);
            axis->setLabelColor(text);
            axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
            axis->grid()->setZeroLinePen(QPen(grid, 0));
        }
    }
    plot->legend->setBrush(base);
    plot->legend->setBorderPen(QPen(palette.color(QPalette::Mid), 0));
    plot->legend->setTextColor(text);
    for (QCPLayoutElement *el : plot->plotLayout()->elements(true))
        if (auto *t = qobject_cast<QCPTextElement *>(el))
            t->setTextColor(text);
}

QSharedPointer<QCPAxisTicker> makeBytesTicker()
{
    return QSharedPointer<BytesTicker>::create();
}

QSharedPointer<QCPAxisTicker> makeSecondsTicker()
{
    return QSharedPointer<SecondsTicker>::create();
}

void showToolTipsOnHover(QCustomPlot *plot, std::function<QString(const QPoint &)> textAt)
{
    QObject::connect(plot, &QCustomPlot::mouseMove, plot, [plot, textAt = std::move(textAt)](QMouseEvent *event) {
        const QString text = textAt(event->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, plot);
    });
}

QString noPlanText()
{
    return QObject::tr("No plan yet: press Run (Ctrl+R)");
}

QString staleText()
{
    return QObject::tr("Stale: the cluster or model changed since this plan; re-run to update");
}

QLabel *makeStaleBanner(QWidget *parent)
{
    auto *banner = new QLabel(staleText(), parent);
    banner->setObjectName(QStringLiteral("staleBanner"));
    banner->setWordWrap(true);
    banner->setMargin(4);
    banner->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #664d03; border: 1px solid #e0c36b; }"));
    banner->hide();
    return banner;
}

QLabel *makePlaceholder(QWidget *parent)
{
    auto *label = new QLabel(noPlanText(), parent);
    label->setObjectName(QStringLiteral("placeholder"));
    label->setAlignment(Qt::AlignCenter);
    label->setWordWrap(true);
    return label;
}

} // namespace nest::ui
