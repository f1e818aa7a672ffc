#include "ComparisonReport.h"

#include "BreakdownChartView.h"
#include "ToolVersion.h"
#include "MemoryChartView.h"
#include "PlacementOverlay.h"
#include "PlacementThumbnail.h"
#include "SaveFile.h"

#include <QDateTime>
#include <QFileInfo>
#include <QGuiApplication>
#include <QPageLayout>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace nest::ui {

namespace {

constexpr int kDpi = 96;          // every device draws at 96 dpi: fonts look alike everywhere
constexpr int kReportMargin = 36;
constexpr int kSheetWidth = 1600;
const QColor kBestFill(0xd4, 0xed, 0xda);
const QColor kGrid(0xb0, 0xb0, 0xb0);
const QColor kBad(0xa0, 0x1c, 0x1c);

QString title()
{
    return QObject::tr("NEST Planner — plan comparison");
}

QFont reportFont(double points, bool bold = false)
{
    QFont f = QGuiApplication::font();
    f.setPointSizeF(points);
    f.setBold(bold);
    return f;
}

// Draws `text` wrapped into width w at (x, y) (or only measures it); returns its height.
int paragraph(QPainter &p, int x, int y, int w, const QString &text, const QFont &f, bool draw = true,
              const QColor &colour = Qt::black)
{
    p.setFont(f);
    const QRect r = p.boundingRect(QRect(x, y, w, 100000), Qt::TextWordWrap, text);
    if (draw) {
        p.setPen(colour);
        p.drawText(QRect(x, y, w, r.height()), Qt::TextWordWrap, text);
    }
    return r.height();
}

// Off-screen chart views and thumbnails of every plan; value axes shared.
struct Views {
    std::vector<std::unique_ptr<MemoryChartView>> memory;
    std::vector<std::unique_ptr<BreakdownChartView>> breakdown;
    std::vector<std::unique_ptr<PlacementThumbnail>> thumbnails;
    explicit Views(const QList<PlanSnapshotPtr> &plans)
    {
        QList<PlotView *> mem, time;
        for (const PlanSnapshotPtr &s : plans) {
            memory.push_back(std::make_unique<MemoryChartView>());
            breakdown.push_back(std::make_unique<BreakdownChartView>());
            thumbnails.push_back(std::make_unique<PlacementThumbnail>());
            memory.back()->setSnapshot(s);
            breakdown.back()->setSnapshot(s);
            thumbnails.back()->setSnapshot(s);
            if (infeasibleText(*s).isEmpty()) {  // drawn: shares the axes
                mem << memory.back().get();
                time << breakdown.back().get();
            }
        }
        shareValueAxes(mem, 1.1);
        shareValueAxes(time, 1.05);
    }
};

// The plot scaled uniformly into `target` (vector output stays vector), its title and
// legend fitted to the width it is drawn at (the view is never shown).
void drawPlot(QCPPainter &p, PlotView *view, const QRectF &target)
{
    QCustomPlot *plot = view->plot();
    const double scale = std::min(1.0, target.width() / 600.0);
    const int w = static_cast<int>(target.width() / scale), h = static_cast<int>(target.height() / scale);
    view->setExportWidth(w);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    p.save();
    p.translate(target.topLeft());
    p.scale(scale, scale);
    p.setClipRect(QRect(0, 0, w, h));
    plot->toPainter(&p, w, h);
    p.restore();
    view->setExportWidth(0);
}

int heading(QPainter &p, int x, int y, int w, const QString &text)
{
    return paragraph(p, x, y, w, text, reportFont(16, true)) + 10;
}

QString columnTitle(const PlanSnapshot &s, bool reference)
{
    QString t = QString::fromStdString(s.label);
    return reference ? QObject::tr("%1 (reference)").arg(t) : t;
}

// The metric table as a grid of text; returns its height.
int metricTable(QPainter &p, const QRect &area, const QList<PlanSnapshotPtr> &plans,
                const std::vector<MetricRow> &rows, int reference, bool draw)
{
    const int n = static_cast<int>(plans.size());
    const int firstW = 210, pad = 6;
    const int colW = n > 0 ? (area.width() - firstW) / n : 0;
    const QFont normal = reportFont(9), bold = reportFont(9, true);
    int y = area.top();
    const auto rowOf = [&](const QString &head, const QStringList &cells, const std::vector<bool> &best, bool header) {
        int h = paragraph(p, 0, 0, firstW - 2 * pad, head, bold, false);
        for (int i = 0; i < n; ++i)
            h = std::max(h, paragraph(p, 0, 0, colW - 2 * pad, cells[i], header || best[size_t(i)] ? bold : normal, false));
        h += 2 * pad;
        if (draw) {
            for (int i = 0; i < n; ++i)
                if (best[size_t(i)])
                    p.fillRect(QRect(area.left() + firstW + i * colW, y, colW, h), kBestFill);
            paragraph(p, area.left() + pad, y + pad, firstW - 2 * pad, head, bold);
            for (int i = 0; i < n; ++i)
                paragraph(p, area.left() + firstW + i * colW + pad, y + pad, colW - 2 * pad, cells[i],
                          header || best[size_t(i)] ? bold : normal);
            p.setPen(QPen(kGrid, 1));
            p.drawLine(area.left(), y + h, area.left() + firstW + n * colW, y + h);
        }
        y += h;
    };
    QStringList heads;
    for (int i = 0; i < n; ++i)
        heads << columnTitle(*plans[i], i == reference);
    rowOf(QObject::tr("Metric"), heads, std::vector<bool>(size_t(n), false), true);
    for (const MetricRow &row : rows) {
        QStringList cells;
        std::vector<bool> best;
        for (int i = 0; i < n; ++i) {
            best.push_back(row.best == i);
            cells << metricCellText(row, i, reference) + (row.best == i ? QObject::tr(" — best") : QString());
        }
        rowOf(metricRowTitle(row), cells, best, false);
    }
    if (draw) {
        p.setPen(QPen(kGrid, 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRect(area.left(), area.top(), firstW + n * colW, y - area.top()));
        for (int i = 0; i <= n; ++i)
            p.drawLine(area.left() + firstW + i * colW, area.top(), area.left() + firstW + i * colW, y);
    }
    return y - area.top();
}

// One column per plan: its title, cluster, memory chart and breakdown chart (or why not).
void chartColumns(QCPPainter &p, const QRect &area, const QList<PlanSnapshotPtr> &plans, Views &views)
{
    const int n = static_cast<int>(plans.size());
    const int colW = area.width() / std::max(n, 1);
    for (int i = 0; i < n; ++i) {
        const PlanSnapshot &s = *plans[i];
        const int x = area.left() + i * colW, w = colW - 10;
        int y = area.top();
        y += paragraph(p, x, y, w, QString::fromStdString(s.label), reportFont(11, true));
        y += paragraph(p, x, y, w, QObject::tr("%1 · %2").arg(QString::fromStdString(s.planner), clusterText(s)), reportFont(9));
        y += 6;
        const QString why = infeasibleText(s);
        if (!why.isEmpty()) {
            paragraph(p, x, y, w, QObject::tr("No charts: %1").arg(why), reportFont(9), true, kBad);
            continue;
        }
        const int h = (area.bottom() - y - 8) / 2;
        drawPlot(p, views.memory[size_t(i)].get(), QRectF(x, y, w, h));
        drawPlot(p, views.breakdown[size_t(i)].get(), QRectF(x, y + h + 8, w, h));
    }
}

// The stage colours of a plan, as the thumbnail draws them; returns the height used.
int stageLegend(QPainter &p, int x, int y, int w, const PlanSnapshot &s, bool draw)
{
    const int depth = s.plan().pipelineDepth();
    p.setFont(reportFont(8));
    const int box = p.fontMetrics().height() - 4;
    int cx = x;
    int cy = y;
    const auto entry = [&](const QColor &c, const QString &text) {
        const int ew = box + 4 + p.fontMetrics().horizontalAdvance(text) + 10;
        if (cx + ew > x + w && cx > x) {
            cx = x;
            cy += p.fontMetrics().height();
        }
        if (draw) {
            p.fillRect(QRect(cx, cy + 2, box, box), c);
            p.setPen(Qt::black);
            p.drawText(QPoint(cx + box + 4, cy + p.fontMetrics().ascent()), text);
        }
        cx += ew;
    };
    for (int k = 0; k < std::min(depth, 16); ++k)
        entry(PlacementOverlay::paletteColour(k, depth), QObject::tr("stage %1").arg(k));
    if (depth > 16)
        entry(Qt::transparent, QObject::tr("… %1 stages").arg(depth));
    entry(PlacementOverlay::unusedColour(), QObject::tr("unused"));
    return cy - y + p.fontMetrics().height();
}

// The thumbnails in a grid of `columns`.
void placements(QPainter &p, const QRect &area, const QList<PlanSnapshotPtr> &plans, Views &views, int columns)
{
    const int n = static_cast<int>(plans.size());
    const int rows = (n + columns - 1) / std::max(columns, 1);
    const int cellW = area.width() / std::max(columns, 1), cellH = area.height() / std::max(rows, 1);
    for (int i = 0; i < n; ++i) {
        const int x = area.left() + (i % columns) * cellW, w = cellW - 16;
        int y = area.top() + (i / columns) * cellH;
        y += paragraph(p, x, y, w, QObject::tr("%1 — %2").arg(QString::fromStdString(plans[i]->label),
                                                              QString::fromStdString(plans[i]->planner)),
                       reportFont(11, true));
        const int legend = stageLegend(p, x, 0, w, *plans[i], false);  // drawn below the picture
        const int h = area.top() + (i / columns + 1) * cellH - y - legend - 16;
        p.setFont(reportFont(9));
        p.setPen(Qt::black);
        views.thumbnails[size_t(i)]->paint(p, QRect(x, y, w, std::max(h, 20)));
        stageLegend(p, x, y + std::max(h, 20) + 4, w, *plans[i], true);
    }
}

int inputs(QPainter &p, const QRect &area, const QList<PlanSnapshotPtr> &plans, int reference)
{
    const int x = area.left(), w = area.width();
    int y = area.top();
    const PlanSnapshot &ref = *plans[std::clamp(reference, 0, int(plans.size()) - 1)];
    const Plan &plan = ref.plan();
    y += paragraph(p, x, y, w, QObject::tr("Model: %1; global batch %2; sequence length %3")
                                   .arg(QString::fromStdString(ref.model.name)).arg(plan.globalBatch).arg(plan.seqLength),
                   reportFont(11));
    y += paragraph(p, x, y, w, QObject::tr("Reference plan: %1").arg(QString::fromStdString(ref.label)), reportFont(11)) + 12;
    for (int i = 0; i < int(plans.size()); ++i) {
        const PlanSnapshot &s = *plans[i];
        y += paragraph(p, x, y, w, columnTitle(s, i == reference), reportFont(12, true));
        QString text = QObject::tr("Planner: %1. Cluster: %2. Model: %3, global batch %4, sequence length %5.")
                           .arg(QString::fromStdString(s.planner), clusterText(s), QString::fromStdString(s.model.name))
                           .arg(s.plan().globalBatch).arg(s.plan().seqLength);
        text += QLatin1Char('\n') + QObject::tr("Settings: %1").arg(settingsSummary(s));
        const QString why = infeasibleText(s);
        text += QLatin1Char('\n') + (why.isEmpty() ? QObject::tr("Feasible.") : QObject::tr("Infeasible: %1").arg(why));
        y += paragraph(p, x + 12, y, w - 12, text, reportFont(10)) + 12;
    }
    return y - area.top();
}

template <typename Writer>
bool writeWith(const QString &fileName, QString *error, Writer &&writer)
{
    return writeFileAtomically(fileName, std::function<bool(QIODevice *, QString *)>(writer), error);
}

} // namespace

std::vector<ComparedPlan> comparedPlans(const QList<PlanSnapshotPtr> &plans)
{
    std::vector<ComparedPlan> out;
    for (const PlanSnapshotPtr &s : plans)
        out.push_back({s->label, s->planner, &s->plan(), &s->report(), s->stats.wallSeconds, s->band,
                       s->topology.deviceCount()});
    return out;
}

QString metricRowTitle(const MetricRow &row)
{
    const QString name = QString::fromStdString(row.name);
    return row.unit.empty() ? name : QStringLiteral("%1 (%2)").arg(name, QString::fromStdString(row.unit));
}

namespace {

// A cell's text with its difference to the reference: "(+3.0 %, 1.03×)", "(+1.2 points)".
QString withDifference(const MetricRow &row, size_t i, const QString &text)
{
    if (std::isfinite(row.ratio[i]))
        return text + QStringLiteral(" (%1%2 %, %3×)")
                          .arg(row.ratio[i] >= 1 ? QStringLiteral("+") : QString())
                          .arg(100 * (row.ratio[i] - 1), 0, 'f', 1)
                          .arg(row.ratio[i], 0, 'f', 2);
    if (std::isfinite(row.difference[i]) && row.valueUnit == "fraction")  // reference 0 %
        return text + QObject::tr(" (%1%2 points)")
                          .arg(row.difference[i] >= 0 ? QStringLiteral("+") : QString())
                          .arg(100 * row.difference[i], 0, 'f', 1);
    if (std::isfinite(row.difference[i]))
        return text + QObject::tr(" (difference %1)").arg(row.difference[i], 0, 'g', 4);
    return text;
}

} // namespace

QString metricCellText(const MetricRow &row, int plan, int reference)
{
    const size_t i = static_cast<size_t>(plan);
    QString text = QString::fromStdString(row.texts[i]);
    if (plan == reference || i >= row.ratio.size())
        return text;
    if (i < row.withinModelError.size() && row.withinModelError[i])
        return withDifference(row, i, text) + QObject::tr(" — within model error");
    return withDifference(row, i, text);
}

QString settingsSummary(const PlanSnapshot &s)
{
    const SearchSettings &st = s.settings;
    QStringList mbs, schedules;
    for (int mb : st.microBatches)
        mbs << QString::number(mb);
    for (Schedule sc : st.schedules)
        schedules << QString::fromLatin1(toString(sc));
    return QObject::tr("planner %1; micro-batches %2; schedules %3; headroom %4 %; framework %5, %6 stack")
        .arg(QString::fromStdString(st.planner), mbs.join(QLatin1Char('/')), schedules.join(QLatin1Char('/')))
        .arg(100 * st.memoryHeadroom, 0, 'g', 3)
        .arg(QString::fromLatin1(toString(st.framework)), QString::fromLatin1(toString(st.stack)));
}

QString clusterText(const PlanSnapshot &s)
{
    return QObject::tr("%1 — %2 devices").arg(QString::fromStdString(s.topology.name)).arg(s.topology.deviceCount());
}

QString infeasibleText(const PlanSnapshot &s)
{
    const std::vector<std::string> &why = !s.analysis.errors.empty() ? s.analysis.errors : s.report().reasons;
    if (s.report().feasible && s.analysis.wellFormed())
        return {};
    QStringList lines;
    for (const std::string &w : why)
        lines << QString::fromStdString(w);
    return lines.isEmpty() ? QObject::tr("the plan is infeasible") : lines.join(QStringLiteral("; "));
}

void shareValueAxes(const QList<PlotView *> &views, double padding)
{
    double top = 0;
    for (const PlotView *v : views)
        top = std::max(top, v->dataMaximum());
    for (PlotView *v : views)
        v->setValueAxisMaximum(top * padding);
}

namespace {

// Page k of the report (Inputs, Metrics, Charts, Placement): its heading, its section and
// the footer; the first page also has the title and the date.
void reportPage(QCPPainter &p, const QRect &body, int k, const QStringList &sections,
                const QList<PlanSnapshotPtr> &plans, const std::vector<MetricRow> &rows, int ref, Views &views)
{
    int y = body.top();
    if (k == 0) {
        y += paragraph(p, body.left(), y, body.width(), title(), reportFont(20, true)) + 4;
        y += paragraph(p, body.left(), y, body.width(),
                       QLocale().toString(QDateTime::currentDateTime(), QLocale::LongFormat), reportFont(10)) + 16;
    }
    y += heading(p, body.left(), y, body.width(), sections[k]);
    const QRect area(body.left(), y, body.width(), body.bottom() - y - 24);
    if (k == 0)
        inputs(p, area, plans, ref);
    else if (k == 1)
        metricTable(p, area, plans, rows, ref, true);
    else if (k == 2)
        chartColumns(p, area, plans, views);
    else
        placements(p, area, plans, views, plans.size() <= 2 ? int(plans.size()) : 2);
    paragraph(p, body.left(), body.bottom() - 14, body.width(),
              QObject::tr("%1 — page %2 of %3").arg(title()).arg(k + 1).arg(sections.size()), reportFont(8), true,
              Qt::darkGray);
}

} // namespace

bool writeComparisonReport(const QString &pdfFile, const QList<PlanSnapshotPtr> &plans, int reference,
                           QString *error)
{
    if (plans.isEmpty()) {
        *error = QObject::tr("%1: nothing to compare").arg(pdfFile);
        return false;
    }
    const int ref = std::clamp(reference, 0, int(plans.size()) - 1);
    const std::vector<MetricRow> rows = compareMetrics(comparedPlans(plans), ref);
    Views views(plans);
    return writeWith(pdfFile, error, [&](QIODevice *device, QString *why) {
        QPdfWriter pdf(device);
        pdf.setResolution(kDpi);
        pdf.setTitle(title());
        pdf.setCreator(QStringLiteral("NEST Planner"));
        if (!pdf.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Landscape, QMarginsF(0, 0, 0, 0)))) {
            *why = QObject::tr("cannot set an A4 page");
            return false;
        }
        QCPPainter p;
        if (!p.begin(&pdf)) {
            *why = QObject::tr("cannot start the PDF painter");
            return false;
        }
        p.setMode(QCPPainter::pmVectorized);
        p.setMode(QCPPainter::pmNonCosmetic);
        const QRect page(0, 0, pdf.width(), pdf.height());
        const QRect body = page.adjusted(kReportMargin, kReportMargin, -kReportMargin, -kReportMargin);
        const QStringList sections = {QObject::tr("Inputs"), QObject::tr("Metrics"), QObject::tr("Charts"),
                                      QObject::tr("Placement")};
        for (int k = 0; k < sections.size(); ++k) {
            if (k > 0 && !pdf.newPage()) {
                *why = QObject::tr("cannot start page %1").arg(k + 1);
                return false;
            }
            reportPage(p, body, k, sections, plans, rows, ref, views);
        }
        if (!p.end()) {
            *why = QObject::tr("cannot finish the PDF");
            return false;
        }
        return true;
    });
}

bool exportComparisonImage(const QString &fileName, const QList<PlanSnapshotPtr> &plans, int reference,
                           QString *error)
{
    const QString suffix = QFileInfo(fileName).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("svg")) {
        *error = QObject::tr("%1: unknown image format \"%2\" (use .png or .svg)").arg(fileName, suffix);
        return false;
    }
    if (plans.isEmpty()) {
        *error = QObject::tr("%1: nothing to compare").arg(fileName);
        return false;
    }
    const int ref = std::clamp(reference, 0, int(plans.size()) - 1);
    const std::vector<MetricRow> rows = compareMetrics(comparedPlans(plans), ref);
    Views views(plans);
    const int w = kSheetWidth, inner = w - 2 * kReportMargin;
    QImage scratch(8, 8, QImage::Format_ARGB32_Premultiplied);
    QPainter measure(&scratch);
    const int tableH = metricTable(measure, QRect(kReportMargin, 0, inner, 0), plans, rows, ref, false);
    measure.end();
    const int chartsH = 820, placementH = 300;
    const int h = kReportMargin + 40 + 30 + tableH + 30 + 40 + chartsH + 40 + placementH + kReportMargin;
    // Draws the sheet; the same for both formats.
    const auto sheet = [&](QCPPainter &p) {
        p.fillRect(QRect(0, 0, w, h), Qt::white);
        int y = kReportMargin;
        y += paragraph(p, kReportMargin, y, inner, title(), reportFont(20, true)) + 10;
        y += heading(p, kReportMargin, y, inner, QObject::tr("Metrics"));
        y += metricTable(p, QRect(kReportMargin, y, inner, tableH), plans, rows, ref, true) + 30;
        y += heading(p, kReportMargin, y, inner, QObject::tr("Charts"));
        chartColumns(p, QRect(kReportMargin, y, inner, chartsH), plans, views);
        y += chartsH + 10;
        y += heading(p, kReportMargin, y, inner, QObject::tr("Placement"));
        placements(p, QRect(kReportMargin, y, inner, placementH), plans, views, int(plans.size()));
    };
    if (suffix == QLatin1String("svg"))
        return writeWith(fileName, error, [&](QIODevice *device, QString *why) {
            QSvgGenerator svg;
            svg.setOutputDevice(device);
            svg.setResolution(kDpi);
            svg.setSize(QSize(w, h));
            svg.setViewBox(QRect(0, 0, w, h));
            svg.setTitle(title());
            QCPPainter p;
            if (!p.begin(&svg)) {
                *why = QObject::tr("cannot start the SVG painter");
                return false;
            }
            p.setMode(QCPPainter::pmVectorized);
            sheet(p);
            return p.end();
        });
    QImage image(w, h, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) {
        *error = QObject::tr("%1: cannot allocate a %2×%3 image").arg(fileName).arg(w).arg(h);
        return false;
    }
    image.setDotsPerMeterX(qRound(kDpi / 0.0254));
    image.setDotsPerMeterY(qRound(kDpi / 0.0254));
    QCPPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    sheet(p);
    p.end();
    return writeWith(fileName, error, [&](QIODevice *device, QString *why) {
        if (!image.save(device, "PNG")) {
            *why = QObject::tr("PNG encoding failed");
            return false;
        }
        return true;
    });
}

bool exportComparisonData(const QString &fileName, const QList<PlanSnapshotPtr> &plans, int reference,
                          QString *error)
{
    const QString suffix = QFileInfo(fileName).suffix().toLower();
    if (suffix != QLatin1String("json") && suffix != QLatin1String("csv")) {
        *error = QObject::tr("%1: unknown data format \"%2\" (use .json or .csv)").arg(fileName, suffix);
        return false;
    }
    const std::vector<ComparedPlan> compared = comparedPlans(plans);
    const int ref = plans.isEmpty() ? 0 : std::clamp(reference, 0, int(plans.size()) - 1);
    const std::vector<MetricRow> rows = compareMetrics(compared, ref);
    const std::string text = suffix == QLatin1String("csv") ? comparisonCsv(compared, rows, ref)
                                                            : jsonFileText(comparisonJson(compared, rows, ref));
    return writeFileAtomically(fileName, QByteArray::fromStdString(text), error);
}

} // namespace nest::ui
