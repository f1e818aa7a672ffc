#include "BreakdownChartView.h"

#include "PlanComparison.h"
#include "PlotExport.h"

#include <QEvent>
#include <QLabel>
#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace nest::ui {

namespace {

constexpr int kCategories = 10;
const std::array<QColor, kCategories> kColours = {
    QColor(0x4c, 0x78, 0xa8), QColor(0x9d, 0x9d, 0x9d), QColor(0xf5, 0x85, 0x18), QColor(0xe4, 0x57, 0x56),
    QColor(0xee, 0xca, 0x3b), QColor(0x72, 0xb7, 0xb2), QColor(0x54, 0xa2, 0x4b), QColor(0xb2, 0x79, 0xa2),
    QColor(0x9d, 0x75, 0x5d), QColor(0xd8, 0xd8, 0xd8)};
constexpr double kSplitKey = 0;

// An iteration split's categories in categoryNames() order.
std::array<double, kCategories> terms(const IterationSplit &is)
{
    return {is.compute, is.recompute, is.tp, is.ep, is.cp, is.p2p, is.gradientSync, is.zero, is.optimizer, is.bubble};
}

// One stage's seconds per iteration (see the header), as core defines them: the iteration
// split of a report that holds only this stage, as a pipeline of depth 1 (so nothing is
// divided and the stage's own bubble counts). Which terms scale with the number of
// micro-batches is iterationSplit's business, not this view's.
IterationSplit stageSplit(const Plan &plan, const StageReport &stage)
{
    Report one;
    one.stages = {stage};
    one.stages.front().index = 0;
    return iterationSplit(plan, one);
}

double valueAt(const QCPBars *bars, double key)
{
    const auto it = bars->data()->findBegin(key, false);
    return it != bars->data()->constEnd() && it->key == key ? it->value : 0.0;
}

QString seconds(double s)
{
    return s >= 1 ? QStringLiteral("%1 s").arg(s, 0, 'f', 3) : QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 2);
}

} // namespace

BreakdownChartView::BreakdownChartView(QWidget *parent)
    : PlotView(QStringLiteral("breakdownChartView"), QStringLiteral("breakdownPlot"), 5, parent)
{

    // Row 2 of the plot: the per-stage axis rect and, right of it, the iteration split.
    QCPAxisRect *main = m_plot->axisRect();
    auto *body = new QCPLayoutGrid;
    m_plot->plotLayout()->take(main);
    m_plot->plotLayout()->addElement(2, 0, body);
    body->addElement(0, 0, main);
    m_splitRect = new QCPAxisRect(m_plot);
    body->addElement(0, 1, m_splitRect);
    body->setColumnStretchFactor(0, 5);
    body->setColumnStretchFactor(1, 1);
    auto *group = new QCPMarginGroup(m_plot);
    main->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_splitRect->setMarginGroup(QCP::msTop | QCP::msBottom, group);

    m_plot->yAxis->setTicker(makeSecondsTicker());
    m_plot->yAxis->setLabel(tr("time per iteration"));
    m_plot->xAxis->setLabel(tr("pipeline stage"));
    auto stageTicker = QSharedPointer<QCPAxisTickerFixed>::create();
    stageTicker->setTickStep(1.0);
    stageTicker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(stageTicker);
    QCPAxis *splitX = m_splitRect->axis(QCPAxis::atBottom);
    auto splitTicker = QSharedPointer<QCPAxisTickerText>::create();
    splitTicker->addTick(kSplitKey, tr("mean over\nstages"));
    splitX->setTicker(splitTicker);
    splitX->setLabel(tr("iteration split"));
    splitX->setRange(-0.6, 0.6);
    m_splitRect->axis(QCPAxis::atLeft)->setTicker(makeSecondsTicker());
    connect(m_plot->yAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), m_splitRect->axis(QCPAxis::atLeft),
            qOverload<const QCPRange &>(&QCPAxis::setRange));
    showToolTipsOnHover(m_plot, [this](const QPoint &pos) { return toolTipAt(pos); });

    recolour();
    rebuild();
}

QStringList BreakdownChartView::categoryNames()
{
    return {tr("Compute"),       tr("Recompute"), tr("TP"),        tr("EP"),    tr("CP"), tr("Pipeline p2p"),
            tr("Gradient sync"), tr("ZeRO"),      tr("Optimizer"), tr("Bubble")};
}

void BreakdownChartView::rebuild()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_bars.clear();
    m_splitBars.clear();
    m_keys.clear();
    plotTitle(m_plot)->setText(QString());
    if (showPlaceholderIfNoPlan())
        return;
    const Report &rep = m_snapshot->report();
    if (rep.stages.empty())
        return showPlaceholder(tr("The plan has no stage"));
    showPlot();

    // Both the stages' bars and the split are core's terms (one definition, shared with the
    // Compare tab).
    const Plan &plan = m_snapshot->plan();
    std::array<QVector<double>, kCategories> values;
    double top = 0;
    for (const StageReport &s : rep.stages) {
        m_keys << s.index;
        const auto stage = terms(stageSplit(plan, s));
        double stack = 0;
        for (int c = 0; c < kCategories; ++c) {
            values[c] << stage[c];
            stack += stage[c];
        }
        top = std::max(top, stack);
    }
    top = std::max(top, rep.iterationTime);
    const std::array<double, kCategories> split = terms(iterationSplit(plan, rep));

    const QStringList names = categoryNames();
    QCPAxis *splitX = m_splitRect->axis(QCPAxis::atBottom);
    QCPAxis *splitY = m_splitRect->axis(QCPAxis::atLeft);
    for (int c = 0; c < kCategories; ++c) {
        auto *bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(names[c]);
        bars->setWidth(m_keys.size() > 64 ? 1.0 : 0.7);
        bars->setBrush(kColours[c]);
        bars->setPen(m_keys.size() > 64 ? QPen(Qt::NoPen) : QPen(kColours[c].darker(130), 0));
        bars->setData(m_keys, values[c], true);
        if (!m_bars.isEmpty())
            bars->moveAbove(m_bars.back());
        m_bars << bars;
        auto *part = new QCPBars(splitX, splitY);
        part->setName(names[c]);
        part->setWidth(0.7);
        part->setBrush(kColours[c]);
        part->setPen(QPen(kColours[c].darker(130), 0));
        part->setData({kSplitKey}, {split[c]}, true);
        part->removeFromLegend();
        if (!m_splitBars.isEmpty())
            part->moveAbove(m_splitBars.back());
        m_splitBars << part;
    }
    // Shares of the iteration on the split bar, for segments tall enough to hold a label.
    const double total = std::max(rep.iterationTime, 1e-300);
    double base = 0;
    for (int c = 0; c < kCategories; ++c) {
        if (split[c] / total >= 0.05) {
            auto *text = new QCPItemText(m_plot);
            text->setClipAxisRect(m_splitRect);
            text->position->setAxes(splitX, splitY);
            text->position->setCoords(kSplitKey, base + split[c] / 2);
            text->setText(QStringLiteral("%1%").arg(std::round(100 * split[c] / total)));
        }
        base += split[c];
    }

    m_plot->xAxis->setRange(m_keys.front() - 0.6, m_keys.back() + 0.6);
    setValueRange(top, 1.05, 1);
    plotTitle(m_plot)->setText(tr("Time per stage — %1 — iteration %2")
                                   .arg(QString::fromStdString(m_snapshot->label), seconds(rep.iterationTime)));
    recolour();
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

QVector<double> BreakdownChartView::seriesValues(const QString &name) const
{
    QVector<double> out;
    const int c = static_cast<int>(categoryNames().indexOf(name));
    if (c < 0 || c >= m_bars.size())
        return out;
    for (double k : m_keys)
        out << valueAt(m_bars[c], k);
    return out;
}

double BreakdownChartView::splitValue(const QString &name) const
{
    const int c = static_cast<int>(categoryNames().indexOf(name));
    return c < 0 || c >= m_splitBars.size() ? 0.0 : valueAt(m_splitBars[c], kSplitKey);
}

void BreakdownChartView::recolour()
{
    applyPlotPalette(m_plot, palette());
    for (int i = 0; i < m_plot->itemCount(); ++i)
        if (auto *text = qobject_cast<QCPItemText *>(m_plot->item(i)))
            text->setColor(QColor(0x20, 0x20, 0x20));  // on the bars' light colours
}

void BreakdownChartView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        recolour();
        m_plot->replot(QCustomPlot::rpQueuedRefresh);
    }
}

QString BreakdownChartView::toolTipAt(const QPoint &pos) const
{
    const bool inMain = m_plot->axisRect()->rect().contains(pos);
    if (m_bars.isEmpty() || (!inMain && !m_splitRect->rect().contains(pos)))
        return {};
    const QVector<QCPBars *> &bars = inMain ? m_bars : m_splitBars;
    const double key = inMain ? std::round(m_plot->xAxis->pixelToCoord(pos.x())) : kSplitKey;
    if (inMain && !m_keys.contains(key))
        return {};
    QString text = inMain ? tr("<b>stage %1</b>").arg(key) : tr("<b>iteration split (mean over stages)</b>");
    double sum = 0;
    for (int c = bars.size() - 1; c >= 0; --c) {  // top of the stack first, as drawn
        const double v = valueAt(bars[c], key);
        sum += v;
        text += QStringLiteral("<br>%1: %2").arg(bars[c]->name(), seconds(v));
    }
    return text + tr("<br><b>total %1</b>").arg(seconds(sum));
}

} // namespace nest::ui
