#include "MemoryChartView.h"

#include "LayerKindColours.h"
#include "LayerKindSplit.h"
#include "PlotExport.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace nest::ui {

namespace {

// Bars at most this many get outlines and a width of 0.7; more are drawn edge to edge.
constexpr int kOutlinedBars = 64;
const QColor kOverColour(0xd6, 0x27, 0x28);
const std::vector<QColor> kComponentColours = {QColor(0x4c, 0x78, 0xa8), QColor(0x72, 0xb7, 0xb2),
                                              QColor(0xb2, 0x79, 0xa2), QColor(0xf5, 0x85, 0x18),
                                              QColor(0xee, 0xca, 0x3b), QColor(0x9d, 0x9d, 0x9d)};
// By kind, what belongs to no kind: greys, apart from every kind's colour.
const QColor kWorkingColour(0xd4, 0xd4, 0xd4);
const QColor kOverheadColour(0x9d, 0x9d, 0x9d);

// The value plotted at exactly `key` in a data container, 0 when there is none.
template <typename Container>
double memoryValueAt(const Container &data, double key)
{
    const auto it = data.findBegin(key, false);
    return it != data.constEnd() && it->key == key ? it->value : 0.0;
}

QString memoryGb(double bytes)
{
    return QStringLiteral("%1 GB").arg(bytes / 1e9, 0, 'f', 2);
}

} // namespace

MemoryChartView::MemoryChartView(QWidget *parent)
    : PlotView(QStringLiteral("memoryChartView"), QStringLiteral("memoryPlot"), 4, parent)
{
    m_modeBox = new QComboBox(this);
    m_modeBox->setObjectName(QStringLiteral("memoryMode"));
    m_modeBox->addItem(tr("Per device"), PerDevice);
    m_modeBox->addItem(tr("Per stage"), PerStage);
    m_modeBox->addItem(tr("Per stage, by layer kind"), PerStageByKind);
    m_modeBox->setItemData(2, tr("Each stage's memory split by the kinds of the layers it holds (dense, MoE, Mamba, "
                                 "MTP, embedding, head); working activations and overhead belong to no kind"),
                           Qt::ToolTipRole);
    connect(m_modeBox, &QComboBox::currentIndexChanged, this,
            [this](int index) { setMode(static_cast<Mode>(m_modeBox->itemData(index).toInt())); });

    m_plot->yAxis->setTicker(makeBytesTicker());
    m_plot->yAxis->setLabel(tr("memory (GB)"));
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    showToolTipsOnHover(m_plot, [this](const QPoint &pos) { return toolTipAt(pos); });

    toolbar()->addWidget(new QLabel(tr("Show:"), this));
    toolbar()->addWidget(m_modeBox);
    toolbar()->addStretch(1);
    recolour();
    rebuild();
}

QStringList MemoryChartView::componentNames()
{
    return {tr("Weights"), tr("Gradients"), tr("Optimizer state"), tr("Activations"), tr("Stash"), tr("Overhead")};
}

QString MemoryChartView::capacityName()
{
    return tr("Capacity");
}

QString MemoryChartView::overCapacityName()
{
    return tr("Over capacity");
}

void MemoryChartView::setMode(Mode mode)
{
    if (m_modeBox->currentIndex() != m_modeBox->findData(mode))
        m_modeBox->setCurrentIndex(m_modeBox->findData(mode));  // re-enters through the signal
    if (mode == m_mode)
        return;
    m_mode = mode;
    rebuild();
}

std::vector<MemoryChartView::Row> MemoryChartView::collectRows()
{
    if (m_mode == PerStageByKind)
        return collectKindRows();
    m_series = componentNames();
    m_colours = kComponentColours;
    std::vector<Row> rows;
    const Report &rep = m_snapshot->report();
    if (m_mode == PerDevice) {
        for (const DeviceReport &d : rep.devices) {
            if (d.stage < 0)
                continue;
            rows.push_back({static_cast<double>(d.device),
                            {d.weights, d.gradients, d.optimizerState, d.activations, d.stash, d.overhead},
                            d.total, d.capacity, d.total > d.capacity,
                            tr("device %1 (stage %2, replica %3, shard %4)")
                                .arg(d.device).arg(d.stage).arg(d.replica).arg(d.shard), {}});
        }
    } else {
        for (const StageReport &s : rep.stages) {
            const StageCost &c = s.cost;
            rows.push_back({static_cast<double>(s.index),
                            {c.weights, c.gradients, c.optimizerState, c.activations, c.stash, c.overhead},
                            c.memoryTotal, c.memoryCapacity, !c.fitsMemory,
                            tr("stage %1 (layers %2-%3, worst device)")
                                .arg(s.index).arg(s.firstLayer).arg(s.endLayer - 1), {}});
        }
    }
    return rows;
}

// Per stage by layer kind: core's layerKindSplit() of the report, one series per kind of the
// plan, then the working activations and the overhead (and, should core leave any memory to
// no kind beyond those, "Other").
std::vector<MemoryChartView::Row> MemoryChartView::collectKindRows()
{
    const Report &rep = m_snapshot->report();
    const PlanKindSplit split =
        layerKindSplit(m_snapshot->plan(), m_snapshot->topology, m_snapshot->model, m_snapshot->cost, rep);
    m_series.clear();
    m_colours.clear();
    for (const std::string &kind : split.kinds) {
        m_series << QString::fromStdString(kind);
        m_colours.push_back(layerKindColour(m_series.back()));
    }
    const int kinds = static_cast<int>(m_series.size());
    m_series << componentNames()[3] << componentNames()[5];
    m_colours.push_back(kWorkingColour);
    m_colours.push_back(kOverheadColour);
    std::vector<Row> rows;
    double other = 0;
    for (size_t i = 0; i < split.stages.size(); ++i) {
        const StageReport &s = rep.stages[i];
        const StageKindSplit &k = split.stages[i];
        Row row{static_cast<double>(s.index), std::vector<double>(static_cast<size_t>(kinds) + 3, 0.0),
                s.cost.memoryTotal, s.cost.memoryCapacity, !s.cost.fitsMemory,
                tr("stage %1 (layers %2-%3, worst device)").arg(s.index).arg(s.firstLayer).arg(s.endLayer - 1),
                std::vector<QString>(static_cast<size_t>(kinds) + 3)};
        for (const KindShare &share : k.kinds) {
            const auto at = static_cast<size_t>(m_series.indexOf(QString::fromStdString(share.kind)));
            row.parts[at] = share.bytes();
            row.details[at] = tr("weights %1, gradients %2, optimizer %3, stash %4")
                                  .arg(memoryGb(share.weights), memoryGb(share.gradients), memoryGb(share.optimizerState), memoryGb(share.stash));
        }
        row.parts[static_cast<size_t>(kinds)] = k.activations;
        row.parts[static_cast<size_t>(kinds) + 1] = k.overhead;
        row.parts[static_cast<size_t>(kinds) + 2] = k.restBytes - k.activations - k.overhead;
        other = std::max(other, row.parts.back());
        rows.push_back(std::move(row));
    }
    if (other > 0) {
        m_series << tr("Other");
        m_colours.push_back(QColor(0x60, 0x60, 0x60));
    } else {
        for (Row &row : rows) {
            row.parts.pop_back();
            row.details.pop_back();
        }
    }
    return rows;
}

MemoryChartView::Bars MemoryChartView::barsOfRows() const
{
    Bars b;
    b.values.resize(static_cast<size_t>(m_series.size()));
    for (size_t i = 0; i < m_rows.size(); ++i) {
        const Row &r = m_rows[i];
        b.keys << r.key;
        for (size_t c = 0; c < b.values.size(); ++c)
            b.values[c] << r.parts[c];
        // Step line (left steps): one segment key-0.5 .. key+0.5 per bar, broken (NaN)
        // where keys are not consecutive (unused devices).
        if (i > 0 && r.key != m_rows[i - 1].key + 1) {
            b.capKeys << m_rows[i - 1].key + 0.5 << m_rows[i - 1].key + 0.5;
            b.capValues << m_rows[i - 1].capacity << std::numeric_limits<double>::quiet_NaN();
        }
        b.capKeys << r.key - 0.5;
        b.capValues << r.capacity;
        if (r.over) {
            b.overKeys << r.key;
            b.overValues << r.total;
        }
        b.top = std::max({b.top, r.total, r.capacity});
    }
    b.capKeys << m_rows.back().key + 0.5;
    b.capValues << m_rows.back().capacity;
    return b;
}

// The stacked bars, the capacity line and, when some are over it, their outlines and markers.
void MemoryChartView::addBars(const Bars &b)
{
    const bool many = m_rows.size() > static_cast<size_t>(kOutlinedBars);
    QCPBars *below = nullptr;
    for (size_t c = 0; c < b.values.size(); ++c) {
        auto *bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(m_series[static_cast<int>(c)]);
        bars->setWidth(many ? 1.0 : 0.7);
        bars->setBrush(m_colours[c]);
        bars->setPen(many ? QPen(Qt::NoPen) : QPen(m_colours[c].darker(130), 0));
        bars->setData(b.keys, b.values[c], true);
        if (below)
            bars->moveAbove(below);
        below = bars;
    }
    m_capacity = m_plot->addGraph();
    m_capacity->setName(capacityName());
    m_capacity->setLineStyle(QCPGraph::lsStepLeft);
    m_capacity->setData(b.capKeys, b.capValues, true);
    if (m_overCount > 0) {
        auto *outline = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        outline->setName(overCapacityName());
        outline->setWidth(many ? 1.0 : 0.7);
        outline->setBrush(Qt::NoBrush);
        outline->setPen(QPen(kOverColour, 2));
        outline->setData(b.overKeys, b.overValues, true);
        QCPGraph *markers = m_plot->addGraph();
        markers->setLineStyle(QCPGraph::lsNone);
        markers->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, kOverColour, kOverColour, 7));
        markers->setData(b.overKeys, QVector<double>(b.overValues.size(), b.top * 1.04), true);
        markers->removeFromLegend();
    }
}

// "Memory per device — LABEL · PRECISION · NVLink domains of N — K devices over capacity".
QString MemoryChartView::chartTitle() const
{
    const QString label = QString::fromStdString(m_snapshot->label);
    QString text = (m_mode == PerDevice ? tr("Memory per device — %1")
                    : m_mode == PerStage ? tr("Memory per stage — %1")
                                         : tr("Memory per stage by layer kind — %1"))
                       .arg(label);
    // The precision the weights are kept in, and the NVLink domain the devices group into.
    text += QStringLiteral(" · ") + QString::fromStdString(precisionLabel(m_snapshot->plan().precision));
    const Topology &topo = m_snapshot->topology;
    if (const int level = topo.nvlinkDomainLevel(); level >= 0 && m_mode == PerDevice) {
        const std::vector<int> domains = topo.groupsAtLevel(level);
        if (!domains.empty())
            text += tr(" · NVLink domains of %1").arg(topo.deviceCountUnder(domains.front()));
    }
    if (m_overCount > 0)
        text += (m_mode == PerDevice ? (m_overCount == 1 ? tr(" — %1 device over capacity")
                                                         : tr(" — %1 devices over capacity"))
                                     : (m_overCount == 1 ? tr(" — %1 stage over capacity")
                                                         : tr(" — %1 stages over capacity")))
                    .arg(m_overCount);
    return text;
}

void MemoryChartView::rebuild()
{
    m_plot->clearPlottables();
    m_capacity = nullptr;
    m_keys.clear();
    m_rows.clear();
    m_overCount = 0;
    setTitle(QString());
    if (showPlaceholderIfNoPlan())
        return;
    m_rows = collectRows();
    if (m_rows.empty())
        return showPlaceholder(m_mode == PerStageByKind ? tr("The plan's stages cannot be split by layer kind")
                                                        : tr("The plan uses no device"));
    showPlot();

    const Bars bars = barsOfRows();
    m_overCount = static_cast<int>(bars.overKeys.size());
    m_keys = bars.keys;
    addBars(bars);

    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setLabel(m_mode == PerDevice ? tr("device id") : tr("pipeline stage"));
    m_plot->xAxis->setRange(bars.keys.front() - 0.6, bars.keys.back() + 0.6);
    setValueRange(bars.top, 1.1, 1e9);
    setTitle(chartTitle());
    recolour();
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

QVector<double> MemoryChartView::seriesValues(const QString &name) const
{
    QVector<double> out;
    if (name == capacityName() && m_capacity) {
        for (double k : m_keys)
            out << memoryValueAt(*m_capacity->data(), k - 0.5);
        return out;
    }
    for (int i = 0; i < m_plot->plottableCount(); ++i) {
        auto *bars = qobject_cast<QCPBars *>(m_plot->plottable(i));
        if (!bars || bars->name() != name)
            continue;
        for (double k : m_keys)
            out << memoryValueAt(*bars->data(), k);
        return out;
    }
    if (name == overCapacityName() && !m_keys.isEmpty())
        return QVector<double>(m_keys.size(), 0.0);  // nothing over capacity
    return out;
}

void MemoryChartView::recolour()
{
    applyPlotPalette(m_plot, palette());
    if (m_capacity)
        m_capacity->setPen(QPen(palette().color(QPalette::WindowText), 2, Qt::DashLine));
}

void MemoryChartView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        recolour();
        m_plot->replot(QCustomPlot::rpQueuedRefresh);
    }
}

QString MemoryChartView::toolTipAt(const QPoint &pos) const
{
    if (m_rows.empty() || !m_plot->axisRect()->rect().contains(pos))
        return {};
    const double key = std::round(m_plot->xAxis->pixelToCoord(pos.x()));
    const auto it = std::lower_bound(m_rows.begin(), m_rows.end(), key,
                                     [](const Row &r, double k) { return r.key < k; });
    if (it == m_rows.end() || it->key != key)
        return {};
    QString text = QStringLiteral("<b>%1</b>").arg(it->name.toHtmlEscaped());
    for (int c = 0; c < m_series.size(); ++c) {  // bottom of the stack first
        const auto at = static_cast<size_t>(c);
        if (m_mode == PerStageByKind && it->parts[at] == 0)
            continue;  // kinds the stage does not hold
        text += QStringLiteral("<br>%1: %2").arg(m_series[c].toHtmlEscaped(), memoryGb(it->parts[at]));
        if (at < it->details.size() && !it->details[at].isEmpty())
            text += QStringLiteral(" <small>(%1)</small>").arg(it->details[at]);
    }
    text += QStringLiteral("<br><b>%1</b> of %2").arg(memoryGb(it->total), memoryGb(it->capacity));
    if (it->over)
        text += QStringLiteral("<br><font color=\"%1\">%2</font>").arg(kOverColour.name(), overCapacityName());
    return text;
}

} // namespace nest::ui
