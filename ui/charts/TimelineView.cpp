#include "TimelineView.h"

#include "PlotExport.h"

#include <QCoreApplication>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace nest::ui {

namespace {

// Visible blocks of a kind above which no numbers are drawn (a bound on the paint time; below
// it every block wide enough for its number gets one, in a smaller font if need be).
constexpr int kMaxLabelledBlocks = 6000;
constexpr int kMaxOutlinedBlocks = 2000; // visible blocks of a kind, above which no outlines

struct KindStyle {
    const char *kind;
    const char *legend;
    QColor colour;
    double offset, height;  // within the stage's row (1 unit tall, y grows downwards)
    bool numbered;
};
const std::array<KindStyle, 8> kStyles = {{
    {"forward", QT_TRANSLATE_NOOP("TimelineView", "Forward"), QColor(0x4c, 0x78, 0xa8), 0, 0.6, true},
    {"recompute", QT_TRANSLATE_NOOP("TimelineView", "Recompute"), QColor(0x9d, 0x9d, 0x9d), 0, 0.6, true},
    {"backward", QT_TRANSLATE_NOOP("TimelineView", "Backward"), QColor(0xf5, 0x85, 0x18), 0, 0.6, true},
    {"send", QT_TRANSLATE_NOOP("TimelineView", "Send"), QColor(0x2e, 0x7f, 0x7a), 0.385, 0.13, false},
    {"recv", QT_TRANSLATE_NOOP("TimelineView", "Receive"), QColor(0x88, 0xd0, 0xcb), -0.385, 0.13, false},
    {"dp-sync", QT_TRANSLATE_NOOP("TimelineView", "Gradient sync"), QColor(0x54, 0xa2, 0x4b), 0, 0.6, false},
    {"optimizer", QT_TRANSLATE_NOOP("TimelineView", "Optimizer"), QColor(0x9d, 0x75, 0x5d), 0, 0.6, false},
    {"", QT_TRANSLATE_NOOP("TimelineView", "Other"), QColor(0xb2, 0x79, 0xa2), 0, 0.3, false},
}};

} // namespace

// All blocks of one kind, painted in one pass over the visible time window.
class TimelineBlocks : public QCPAbstractPlottable {
public:
    struct Block {
        double start, end;
        int row, microBatch;
        std::string kind;
    };
    TimelineBlocks(QCPAxis *time, QCPAxis *rows, const KindStyle &style)
        : QCPAbstractPlottable(time, rows), m_style(style)
    {
        setName(QCoreApplication::translate("TimelineView", style.legend));
        setBrush(style.colour);
        setPen(QPen(style.colour.darker(140), 0));
        setSelectable(QCP::stNone);
        setAntialiased(false);  // axis-aligned rectangles: crisp and several times faster
        setAntialiasedFill(false);
    }
    void setBlocks(std::vector<Block> blocks)
    {
        std::sort(blocks.begin(), blocks.end(), [](const Block &a, const Block &b) { return a.start < b.start; });
        m_blocks = std::move(blocks);
        m_longest = m_end = 0;
        m_lastRow = 0;
        for (const Block &b : m_blocks) {
            m_longest = std::max(m_longest, b.end - b.start);
            m_end = std::max(m_end, b.end);
            m_lastRow = std::max(m_lastRow, b.row);
        }
    }
    int count() const { return static_cast<int>(m_blocks.size()); }
    const Block *blockAt(double time, double y) const
    {
        for (const Block &b : m_blocks)
            if (time >= b.start && time <= b.end && std::abs(y - b.row - m_style.offset) <= m_style.height / 2)
                return &b;
        return nullptr;
    }
    double selectTest(const QPointF &, bool, QVariant *) const override { return -1; }
    QCPRange getKeyRange(bool &found, QCP::SignDomain) const override
    {
        found = !m_blocks.empty();
        return found ? QCPRange(m_blocks.front().start, m_end) : QCPRange();
    }
    QCPRange getValueRange(bool &found, QCP::SignDomain, const QCPRange &) const override
    {
        found = !m_blocks.empty();
        return found ? QCPRange(-0.5, m_lastRow + 0.5) : QCPRange();
    }

protected:
    void draw(QCPPainter *painter) override
    {
        if (m_blocks.empty())
            return;
        const QCPRange range = keyAxis()->range();
        // Sorted by start: the visible ones start in [lower - longest, upper].
        auto it = std::lower_bound(m_blocks.begin(), m_blocks.end(), range.lower - m_longest,
                                   [](const Block &b, double t) { return b.start < t; });
        QVector<QRectF> rects;
        std::vector<const Block *> shown;
        for (; it != m_blocks.end() && it->start <= range.upper; ++it) {
            if (it->end < range.lower)
                continue;
            const double half = m_style.height / 2;
            QRectF r(coordsToPixels(it->start, it->row + m_style.offset - half),
                     coordsToPixels(it->end, it->row + m_style.offset + half));
            r = r.normalized();
            if (r.width() < 1)
                r.setWidth(1);  // keep short events visible
            rects << r;
            shown.push_back(&*it);
        }
        applyDefaultAntialiasingHint(painter);
        painter->setPen(rects.size() > kMaxOutlinedBlocks ? QPen(Qt::NoPen) : mPen);
        painter->setBrush(mBrush);
        painter->drawRects(rects);
        if (!m_style.numbered || rects.size() > kMaxLabelledBlocks)
            return;
        QFont font = painter->font();
        font.setPointSizeF(7.5);
        QFont small = font;
        small.setPointSizeF(5.5);
        painter->setPen(mBrush.color().lightness() < 150 ? Qt::white : Qt::black);
        const QFontMetrics metrics(font, painter->device());
        const QFontMetrics smallMetrics(small, painter->device());
        for (int i = 0; i < rects.size(); ++i) {
            const QString text = QString::number(shown[static_cast<size_t>(i)]->microBatch);
            const QRectF &r = rects[i];
            if (r.width() >= metrics.horizontalAdvance(text) + 4 && r.height() >= metrics.ascent()) {
                painter->setFont(font);
                painter->drawText(r, Qt::AlignCenter, text);
            } else if (r.width() >= smallMetrics.horizontalAdvance(text) + 2 && r.height() >= smallMetrics.ascent()) {
                painter->setFont(small);
                painter->drawText(r, Qt::AlignCenter, text);
            }
        }
    }
    void drawLegendIcon(QCPPainter *painter, const QRectF &rect) const override
    {
        const double h = std::max(rect.height() * m_style.height / 0.6, 3.0);
        painter->setPen(mPen);
        painter->setBrush(mBrush);
        painter->drawRect(QRectF(rect.left(), rect.center().y() - h / 2, rect.width(), h));
    }

private:
    KindStyle m_style;
    std::vector<Block> m_blocks;  // sorted by start
    double m_longest = 0, m_end = 0;
    int m_lastRow = 0;
};

TimelineView::TimelineView(QWidget *parent)
    : PlotView(QStringLiteral("timelineView"), QStringLiteral("timelinePlot"), 4, parent)
{
    for (const KindStyle &style : kStyles)
        m_layers << new TimelineBlocks(m_plot->xAxis, m_plot->yAxis, style);  // owned by the plot
    m_plot->xAxis->setTicker(makeSecondsTicker());
    m_plot->xAxis->setLabel(tr("time since the start of the iteration"));
    m_plot->yAxis->setRangeReversed(true);  // stage 0 at the top
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    connect(m_plot->xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, &TimelineView::clampTimeRange);
    showToolTipsOnHover(m_plot, [this](const QPoint &pos) { return toolTipAt(pos); });

    m_fitButton = new QPushButton(tr("Fit"), this);
    m_fitButton->setObjectName(QStringLiteral("timelineFit"));
    m_fitButton->setToolTip(tr("Show the whole iteration (wheel: zoom time, drag: pan)"));
    connect(m_fitButton, &QPushButton::clicked, this, &TimelineView::fit);
    toolbar()->addWidget(m_fitButton);
    toolbar()->addStretch(1);
    applyPlotPalette(m_plot, palette());
    rebuild();
}

QStringList TimelineView::kinds()
{
    QStringList out;
    for (const KindStyle &style : kStyles)
        if (*style.kind)
            out << QString::fromLatin1(style.kind);
    return out;
}

int TimelineView::blockCount(const QString &kind) const
{
    const int i = static_cast<int>(kinds().indexOf(kind));
    return i >= 0 ? m_layers[i]->count() : m_otherCounts.value(kind, 0);
}

QCPRange TimelineView::timeRange() const
{
    return m_plot->xAxis->range();
}

void TimelineView::showPlaceholder(const QString &text)
{
    PlotView::showPlaceholder(text);
    m_fitButton->setEnabled(false);
}

void TimelineView::rebuild()
{
    std::vector<std::vector<TimelineBlocks::Block>> blocks(kStyles.size());
    m_otherCounts.clear();
    m_makespan = 0;
    m_rows = 0;
    if (m_snapshot && m_snapshot->analysis.wellFormed() && m_snapshot->simulation().error.empty()) {
        const SimulationResult &sim = m_snapshot->simulation();
        const QStringList known = kinds();
        for (const TimelineEvent &e : sim.events) {
            const QString kind = QString::fromStdString(e.kind);
            qsizetype i = known.indexOf(kind);
            if (i < 0) {
                i = known.size();  // the "other" layer
                ++m_otherCounts[kind];
            }
            blocks[static_cast<size_t>(i)].push_back({e.start, e.end, e.stage, e.microBatch, e.kind});
            m_rows = std::max(m_rows, e.stage + 1);
        }
        m_makespan = sim.makespan;
        m_rows = std::max(m_rows, static_cast<int>(m_snapshot->plan().stages.size()));
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        TimelineBlocks *layer = m_layers[static_cast<int>(i)];
        if (blocks[i].empty())
            layer->removeFromLegend();
        else
            layer->addToLegend();
        layer->setBlocks(std::move(blocks[i]));
    }
    setTitle(QString());
    if (showPlaceholderIfNoPlan())
        return;
    if (!m_snapshot->simulation().error.empty())
        return showPlaceholder(tr("The simulator could not run this plan: %1")
                                   .arg(QString::fromStdString(m_snapshot->simulation().error)));
    if (m_makespan <= 0)
        return showPlaceholder(tr("The simulation has no event"));
    showPlot();
    m_fitButton->setEnabled(true);

    auto rowTicker = QSharedPointer<QCPAxisTickerText>::create();
    const int every = std::max(1, m_rows / 32);  // a readable number of row labels
    for (int s = 0; s < m_rows; s += every)
        rowTicker->addTick(s, tr("stage %1").arg(s));
    m_plot->yAxis->setTicker(rowTicker);
    const auto secs = [](double s) { return QString::number(s, 'f', 3); };
    // The total with the model's error band as bounds: "simulated 20.100 s (18.9-23.4 s;
    // evaluator 20.000 s)".
    const ErrorBand &band = m_snapshot->band;
    setTitle(tr("Timeline of one iteration — %1\nsimulated %2 s (%3evaluator %4 s)")
                                   .arg(QString::fromStdString(m_snapshot->label), secs(m_makespan),
                                        band.basis.empty() ? QString()
                                                           : QString::fromStdString(band.bounds(m_makespan)) + tr("; "),
                                        secs(m_snapshot->report().iterationTime)));
    fit();
}

void TimelineView::fit()
{
    if (m_makespan <= 0)
        return;
    m_plot->xAxis->setRange(-0.01 * m_makespan, 1.01 * m_makespan);
    m_plot->yAxis->setRange(-0.5, m_rows - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

void TimelineView::clampTimeRange(const QCPRange &range)
{
    if (m_makespan <= 0)
        return;
    const double lo = -0.05 * m_makespan, hi = 1.05 * m_makespan, minSize = 1e-6 * m_makespan;
    QCPRange r = range;
    if (r.size() < minSize)
        r = QCPRange(r.center() - minSize / 2, r.center() + minSize / 2);
    if (r.size() > hi - lo)
        r = QCPRange(lo, hi);
    else if (r.lower < lo)
        r = QCPRange(lo, lo + r.size());
    else if (r.upper > hi)
        r = QCPRange(hi - r.size(), hi);
    if (r != range)
        m_plot->xAxis->setRange(r);  // re-enters once with r, which passes
}

void TimelineView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        applyPlotPalette(m_plot, palette());
        m_plot->replot(QCustomPlot::rpQueuedRefresh);
    }
}

QString TimelineView::toolTipAt(const QPoint &pos) const
{
    if (m_makespan <= 0 || !m_plot->axisRect()->rect().contains(pos))
        return {};
    const double t = m_plot->xAxis->pixelToCoord(pos.x());
    const double y = m_plot->yAxis->pixelToCoord(pos.y());
    for (const TimelineBlocks *layer : m_layers) {
        if (const TimelineBlocks::Block *b = layer->blockAt(t, y)) {
            QString text = tr("<b>%1</b> — stage %2").arg(QString::fromStdString(b->kind)).arg(b->row);
            if (b->microBatch >= 0)
                text += tr(", micro-batch %1").arg(b->microBatch);
            return text + tr("<br>%1 ms – %2 ms (%3 ms)")
                              .arg(b->start * 1e3, 0, 'f', 3)
                              .arg(b->end * 1e3, 0, 'f', 3)
                              .arg((b->end - b->start) * 1e3, 0, 'f', 3);
        }
    }
    return {};
}

} // namespace nest::ui
