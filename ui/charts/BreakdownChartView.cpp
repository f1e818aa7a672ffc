#include "BreakdownChartView.h"

#include "LayerKindColours.h"
#include "LayerKindSplit.h"
#include "PlanComparison.h"
#include "PlotExport.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace nest::ui {

namespace {

constexpr int kCategories = 10;
const std::array<QColor, kCategories> kCategoryColours = {
    QColor(0x4c, 0x78, 0xa8), QColor(0x9d, 0x9d, 0x9d), QColor(0xf5, 0x85, 0x18), QColor(0xe4, 0x57, 0x56),
    QColor(0xee, 0xca, 0x3b), QColor(0x72, 0xb7, 0xb2), QColor(0x54, 0xa2, 0x4b), QColor(0xb2, 0x79, 0xa2),
    QColor(0x9d, 0x75, 0x5d), QColor(0xd8, 0xd8, 0xd8)};
constexpr double kSplitKey = 0;
// By kind, what belongs to no kind keeps its category's colour (p2p, bubble).
const QColor kP2pColour = kCategoryColours[5];
const QColor kBubbleColour = kCategoryColours[9];
const QColor kOtherColour(0x60, 0x60, 0x60);

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

double breakdownValueAt(const QCPBars *bars, double key)
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

    m_splitBox = new QComboBox(this);
    m_splitBox->setObjectName(QStringLiteral("breakdownSplit"));
    m_splitBox->addItem(tr("By category"), ByCategory);
    m_splitBox->addItem(tr("By layer kind"), ByKind);
    m_splitBox->setItemData(1, tr("Each stage's time split by the kinds of the layers it holds (dense, MoE, Mamba, "
                                  "MTP, embedding, head); pipeline p2p and bubble belong to no kind"),
                            Qt::ToolTipRole);
    connect(m_splitBox, &QComboBox::currentIndexChanged, this,
            [this](int index) { setSplit(static_cast<Split>(m_splitBox->itemData(index).toInt())); });
    toolbar()->addWidget(new QLabel(tr("Split:"), this));
    toolbar()->addWidget(m_splitBox);
    toolbar()->addStretch(1);

    recolour();
    rebuild();
}

void BreakdownChartView::setSplit(Split split)
{
    if (m_splitBox->currentIndex() != m_splitBox->findData(split))
        m_splitBox->setCurrentIndex(m_splitBox->findData(split));  // re-enters through the signal
    if (split == m_split)
        return;
    m_split = split;
    rebuild();
}

QStringList BreakdownChartView::categoryNames()
{
    return {tr("Compute"),       tr("Recompute"), tr("TP"),        tr("EP"),    tr("CP"), tr("Pipeline p2p"),
            tr("Gradient sync"), tr("ZeRO"),      tr("Optimizer"), tr("Bubble")};
}

// Both the stages' bars and the split are core's terms (one definition, shared with the
// Compare tab).
BreakdownChartView::Table BreakdownChartView::categoryTable() const
{
    Table t;
    t.series = categoryNames();
    t.colours.assign(kCategoryColours.begin(), kCategoryColours.end());
    t.values.resize(kCategories);
    const Plan &plan = m_snapshot->plan();
    for (const StageReport &s : m_snapshot->report().stages) {
        const auto stage = terms(stageSplit(plan, s));
        for (int c = 0; c < kCategories; ++c)
            t.values[static_cast<size_t>(c)] << stage[static_cast<size_t>(c)];
    }
    const auto split = terms(iterationSplit(plan, m_snapshot->report()));
    t.split.assign(split.begin(), split.end());
    return t;
}

namespace {

// "compute 1.200 s, TP 310.00 ms, ..." of one kind's part (its non-zero terms).
QString kindDetail(const IterationSplit &t)
{
    QStringList parts;
    const std::pair<QString, double> terms[] = {
        {BreakdownChartView::tr("compute"), t.compute},   {BreakdownChartView::tr("recompute"), t.recompute},
        {BreakdownChartView::tr("TP"), t.tp},             {BreakdownChartView::tr("EP"), t.ep},
        {BreakdownChartView::tr("CP"), t.cp},             {BreakdownChartView::tr("gradient sync"), t.gradientSync},
        {BreakdownChartView::tr("ZeRO"), t.zero},         {BreakdownChartView::tr("optimizer"), t.optimizer}};
    for (const auto &[name, v] : terms)
        if (v > 0)
            parts << QStringLiteral("%1 %2").arg(name, seconds(v));
    return parts.join(QStringLiteral(", "));
}

} // namespace

// By layer kind: core's layerKindSplit() of the report; per kind its share of every term,
// then p2p and bubble (and "Other", should core leave any other term to no kind).
BreakdownChartView::Table BreakdownChartView::kindTable() const
{
    Table t;
    const PlanKindSplit split = layerKindSplit(m_snapshot->plan(), m_snapshot->topology, m_snapshot->model,
                                               m_snapshot->cost, m_snapshot->report());
    if (split.stages.empty())
        return t;
    for (const std::string &kind : split.kinds) {
        t.series << QString::fromStdString(kind);
        t.colours.push_back(layerKindColour(t.series.back()));
    }
    const size_t kinds = split.kinds.size();
    t.series << categoryNames()[5] << categoryNames()[9] << tr("Other");
    t.colours.insert(t.colours.end(), {kP2pColour, kBubbleColour, kOtherColour});
    t.values.resize(kinds + 3);
    t.details.resize(kinds + 3);
    auto other = [](const IterationSplit &rest) { return rest.total() - rest.p2p - rest.bubble; };
    for (const StageKindSplit &s : split.stages) {
        for (size_t k = 0; k < kinds; ++k) {
            const auto it = std::find_if(s.kinds.begin(), s.kinds.end(),
                                         [&](const KindShare &share) { return share.kind == split.kinds[k]; });
            t.values[k] << (it == s.kinds.end() ? 0.0 : it->seconds());
            t.details[k].push_back(it == s.kinds.end() ? QString() : kindDetail(it->time));
        }
        t.values[kinds] << s.rest.p2p;
        t.values[kinds + 1] << s.rest.bubble;
        t.values[kinds + 2] << other(s.rest);
        for (size_t k = kinds; k < kinds + 3; ++k)
            t.details[k].push_back(QString());
    }
    for (const KindShare &k : split.iteration)
        t.split.push_back(k.seconds());
    t.split.insert(t.split.end(), {split.iterationRest.p2p, split.iterationRest.bubble, other(split.iterationRest)});
    const bool anyOther = t.split.back() > 0 ||
                          std::any_of(t.values.back().begin(), t.values.back().end(), [](double v) { return v > 0; });
    if (!anyOther) {
        t.series.removeLast();
        t.colours.pop_back();
        t.values.pop_back();
        t.details.pop_back();
        t.split.pop_back();
    }
    return t;
}

// One stacked series per table row, on the stages' axes and on the iteration split.
void BreakdownChartView::addBars(const Table &table)
{
    QCPAxis *splitX = m_splitRect->axis(QCPAxis::atBottom);
    QCPAxis *splitY = m_splitRect->axis(QCPAxis::atLeft);
    for (int c = 0; c < static_cast<int>(table.series.size()); ++c) {
        const auto at = static_cast<size_t>(c);
        const QColor colour = table.colours[at];
        auto *bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(table.series[c]);
        bars->setWidth(m_keys.size() > 64 ? 1.0 : 0.7);
        bars->setBrush(colour);
        bars->setPen(m_keys.size() > 64 ? QPen(Qt::NoPen) : QPen(colour.darker(130), 0));
        bars->setData(m_keys, table.values[at], true);
        if (!m_bars.isEmpty())
            bars->moveAbove(m_bars.back());
        m_bars << bars;
        auto *part = new QCPBars(splitX, splitY);
        part->setName(table.series[c]);
        part->setWidth(0.7);
        part->setBrush(colour);
        part->setPen(QPen(colour.darker(130), 0));
        part->setData({kSplitKey}, {table.split[at]}, true);
        part->removeFromLegend();
        if (!m_splitBars.isEmpty())
            part->moveAbove(m_splitBars.back());
        m_splitBars << part;
    }
}

// Shares of the iteration on the split bar, for segments tall enough to hold a label.
void BreakdownChartView::labelSplitBar(const std::vector<double> &split, double iterationTime)
{
    QCPAxis *splitX = m_splitRect->axis(QCPAxis::atBottom);
    QCPAxis *splitY = m_splitRect->axis(QCPAxis::atLeft);
    const double total = std::max(iterationTime, 1e-300);
    double base = 0;
    for (double v : split) {
        if (v / total >= 0.05) {
            auto *text = new QCPItemText(m_plot);
            text->setClipAxisRect(m_splitRect);
            text->position->setAxes(splitX, splitY);
            text->position->setCoords(kSplitKey, base + v / 2);
            text->setText(QStringLiteral("%1%").arg(std::round(100 * v / total)));
        }
        base += v;
    }
}

void BreakdownChartView::rebuild()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_bars.clear();
    m_splitBars.clear();
    m_keys.clear();
    m_series.clear();
    m_details.clear();
    setTitle(QString());
    if (showPlaceholderIfNoPlan())
        return;
    const Report &rep = m_snapshot->report();
    if (rep.stages.empty())
        return showPlaceholder(tr("The plan has no stage"));
    const Table table = m_split == ByKind ? kindTable() : categoryTable();
    if (table.series.isEmpty())
        return showPlaceholder(tr("The plan's stages cannot be split by layer kind"));
    showPlot();

    m_series = table.series;
    m_details = table.details;
    double top = rep.iterationTime;
    for (const StageReport &s : rep.stages) {
        m_keys << s.index;
        double stack = 0;
        for (const QVector<double> &v : table.values)
            stack += v[m_keys.size() - 1];
        top = std::max(top, stack);
    }
    addBars(table);
    labelSplitBar(table.split, rep.iterationTime);

    m_plot->xAxis->setRange(m_keys.front() - 0.6, m_keys.back() + 0.6);
    setValueRange(top, 1.05, 1);
    setTitle((m_split == ByKind ? tr("Time per stage by layer kind — %1 — iteration %2")
                                                  : tr("Time per stage — %1 — iteration %2"))
                                   .arg(QString::fromStdString(m_snapshot->label), seconds(rep.iterationTime)));
    recolour();
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

QVector<double> BreakdownChartView::seriesValues(const QString &name) const
{
    QVector<double> out;
    const int c = static_cast<int>(m_series.indexOf(name));
    if (c < 0 || c >= m_bars.size())
        return out;
    for (double k : m_keys)
        out << breakdownValueAt(m_bars[c], k);
    return out;
}

double BreakdownChartView::splitValue(const QString &name) const
{
    const int c = static_cast<int>(m_series.indexOf(name));
    return c < 0 || c >= m_splitBars.size() ? 0.0 : breakdownValueAt(m_splitBars[c], kSplitKey);
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
    const int stage = inMain ? static_cast<int>(m_keys.indexOf(key)) : -1;
    for (int c = bars.size() - 1; c >= 0; --c) {  // top of the stack first, as drawn
        const double v = breakdownValueAt(bars[c], key);
        sum += v;
        if (m_split == ByKind && v == 0)
            continue;  // kinds the stage does not hold
        text += QStringLiteral("<br>%1: %2").arg(bars[c]->name().toHtmlEscaped(), seconds(v));
        if (stage >= 0 && static_cast<size_t>(c) < m_details.size()) {
            const std::vector<QString> &details = m_details[static_cast<size_t>(c)];
            if (static_cast<size_t>(stage) < details.size() && !details[static_cast<size_t>(stage)].isEmpty())
                text += QStringLiteral(" <small>(%1)</small>").arg(details[static_cast<size_t>(stage)]);
        }
    }
    return text + tr("<br><b>total %1</b>").arg(seconds(sum));
}

} // namespace nest::ui
