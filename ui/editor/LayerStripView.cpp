#include "LayerStripView.h"

#include "LayerKindColours.h"

#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

namespace {

// "blocks 3–60", "MTP module 0", "blocks 60–60 and MTP module 0": positions [first, end) of
// a strip whose first `blocks` positions are decoder blocks and the rest MTP modules.
QString positions(long long first, long long end, long long blocks)
{
    const auto range = [](const QString &one, const QString &many, long long a, long long b) {
        return a + 1 == b ? one.arg(a) : many.arg(a).arg(b - 1);
    };
    QStringList parts;
    if (first < blocks)
        parts << range(LayerStripView::tr("block %1"), LayerStripView::tr("blocks %1–%2"), first, std::min(end, blocks));
    if (end > blocks)
        parts << range(LayerStripView::tr("MTP module %1"), LayerStripView::tr("MTP modules %1–%2"),
                       std::max(first, blocks) - blocks, end - blocks);
    return parts.join(LayerStripView::tr(" and "));
}

} // namespace

LayerStripView::LayerStripView(QWidget *parent)
    : QWidget(parent)
    , m_legend(new QLabel(this))
{
    setObjectName(QStringLiteral("layerStrip"));
    m_legend->setObjectName(QStringLiteral("layerLegend"));
    m_legend->setWordWrap(true);
    m_legend->setTextFormat(Qt::RichText);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, kBarHeight + 3, 0, 0);
    layout->addWidget(m_legend);
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void LayerStripView::clear()
{
    setProfile(ModelProfile{});
}

void LayerStripView::setProfile(const ModelProfile &profile)
{
    m_runs = layerRuns(profile);
    m_counts = layerKindCounts(profile);
    m_blocks = std::count_if(profile.layers.begin(), profile.layers.end(),
                             [](const LayerProfile &l) { return isDecoderBlock(l.kind); });
    m_runStart.clear();
    m_runKind.clear();
    m_total = 0;
    for (const LayerRun &r : m_runs) {
        m_runStart.push_back(m_total);
        m_runKind.push_back(kindIndex(r.kind));
        m_total += r.count;
    }
    QStringList items;
    for (const LayerRun &c : m_counts)
        items << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2&nbsp;%3")
                     .arg(layerKindColour(QString::fromStdString(c.kind)).name(),
                          QString::fromStdString(c.kind).toHtmlEscaped())
                     .arg(c.count);
    m_legend->setText(items.isEmpty() ? tr("<i>no blocks</i>") : items.join(QStringLiteral(" · ")));
    m_legend->setToolTip(m_runs.empty() ? QString()
                                        : tr("Pattern: %1").arg(QString::fromStdString(formatLayerPattern(m_runs))));
    layOut();
    update();
}

QString LayerStripView::legendText() const
{
    QStringList items;
    for (const LayerRun &c : m_counts)
        items << QStringLiteral("%1 %2").arg(QString::fromStdString(c.kind)).arg(c.count);
    return items.join(QStringLiteral(" · "));
}

int LayerStripView::kindIndex(const std::string &kind) const
{
    const auto it = std::find_if(m_counts.begin(), m_counts.end(), [&](const LayerRun &c) { return c.kind == kind; });
    return static_cast<int>(it - m_counts.begin());
}

QRect LayerStripView::barRect() const
{
    return QRect(0, 0, width(), kBarHeight);
}

void LayerStripView::layOut()
{
    m_segments.clear();
    m_perRun = false;
    const int width = std::max(barRect().width() - 2, 1);  // inside the 1-pixel frame
    if (m_total <= 0)
        return;
    m_perRun = static_cast<double>(m_runs.size()) * kMinRunWidth <= width;
    if (m_perRun)
        layOutRuns(width);
    else
        layOutColumns(width);
}

// Few enough runs: one segment each, as wide as its share of the layers but at least
// kMinRunWidth (the runs held to the minimum give their excess up; the others share the
// rest in proportion).
void LayerStripView::layOutRuns(double width)
{
    const size_t n = m_runs.size();
    std::vector<bool> held(n, false);
    double free = width;
    long long freeLayers = m_total;
    for (bool changed = true; changed && freeLayers > 0;) {
        changed = false;
        for (size_t i = 0; i < n; ++i) {
            if (held[i] || m_runs[i].count * free / static_cast<double>(freeLayers) >= kMinRunWidth)
                continue;
            held[i] = true;
            free -= kMinRunWidth;
            freeLayers -= m_runs[i].count;
            changed = true;
        }
    }
    double x = 1;
    for (size_t i = 0; i < n; ++i) {
        const double w = held[i] ? kMinRunWidth : m_runs[i].count * free / static_cast<double>(freeLayers);
        m_segments.push_back({x, x + w, m_runKind[i], static_cast<int>(i), static_cast<int>(i) + 1});
        x += w;
    }
}

// More runs than the bar has room for: one pixel column at a time, in bands by the share of
// each kind in the column's layers (rounded to whole pixel rows, largest remainders first),
// equal neighbours merged. O(runs + width x kinds).
void LayerStripView::layOutColumns(int width)
{
    const int n = static_cast<int>(m_runs.size());
    const int rows = kBarHeight - 2;
    std::vector<double> perKind(m_counts.size());
    int r = 0;
    for (int px = 0; px < width; ++px) {
        const double lo = static_cast<double>(m_total) * px / width;
        const double hi = static_cast<double>(m_total) * (px + 1) / width;
        std::fill(perKind.begin(), perKind.end(), 0.0);
        int k = r;
        for (; k < n && static_cast<double>(m_runStart[k]) < hi; ++k) {
            const double start = static_cast<double>(m_runStart[k]);
            const double overlap = std::min(hi, start + m_runs[k].count) - std::max(lo, start);
            if (overlap > 0)
                perKind[static_cast<size_t>(m_runKind[k])] += overlap;
        }
        const int first = r, end = std::max(k, r + 1);
        while (r < n && static_cast<double>(m_runStart[r] + m_runs[r].count) <= hi)
            ++r;
        const int kind = static_cast<int>(std::max_element(perKind.begin(), perKind.end()) - perKind.begin());
        std::vector<std::pair<int, int>> bands = pixelBands(perKind, hi - lo, rows);
        if (bands.size() == 1)
            bands.clear();
        const double x = 1 + px;
        if (!m_segments.empty()) {
            Segment &last = m_segments.back();
            if (last.kind == kind && last.bands == bands && last.x1 == x) {
                last.x1 = x + 1;
                last.endRun = std::max(last.endRun, end);
                continue;
            }
        }
        m_segments.push_back({x, x + 1, kind, first, end, std::move(bands)});
    }
}

// The rows of a column each kind takes: its share of `layers` in `rows` whole rows, the
// leftover rows to the largest remainders; kinds without a row left out.
std::vector<std::pair<int, int>> LayerStripView::pixelBands(const std::vector<double> &perKind, double layers, int rows)
{
    std::vector<std::pair<int, int>> bands;
    std::vector<std::pair<double, size_t>> remainders;
    int used = 0;
    for (size_t k = 0; k < perKind.size(); ++k) {
        if (perKind[k] <= 0)
            continue;
        const double exact = perKind[k] / layers * rows;
        const int whole = static_cast<int>(exact);
        bands.emplace_back(static_cast<int>(k), whole);
        remainders.emplace_back(exact - whole, bands.size() - 1);
        used += whole;
    }
    std::sort(remainders.begin(), remainders.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    for (size_t i = 0; used < rows && i < remainders.size(); ++i, ++used)
        ++bands[remainders[i].second].second;
    std::erase_if(bands, [](const auto &b) { return b.second == 0; });
    return bands;
}

QString LayerStripView::toolTipAt(const QPoint &pos) const
{
    if (!barRect().contains(pos) || m_segments.empty())
        return {};
    const auto it = std::upper_bound(m_segments.begin(), m_segments.end(), static_cast<double>(pos.x()),
                                     [](double x, const Segment &s) { return x < s.x0; });
    if (it == m_segments.begin())
        return {};
    const Segment &s = *(it - 1);
    if (pos.x() >= s.x1)
        return {};
    const long long first = m_runStart[static_cast<size_t>(s.firstRun)];
    const long long end = m_runStart[static_cast<size_t>(s.endRun - 1)] + m_runs[static_cast<size_t>(s.endRun - 1)].count;
    const QString kind = QString::fromStdString(m_counts[static_cast<size_t>(s.kind)].kind).toHtmlEscaped();
    if (s.endRun - s.firstRun == 1)
        return tr("<b>%1</b> × %2<br>%3").arg(kind).arg(end - first).arg(positions(first, end, m_blocks));
    // Several runs in a few pixels: what they hold, by kind.
    std::vector<long long> perKind(m_counts.size(), 0);
    for (int r = s.firstRun; r < s.endRun; ++r)
        perKind[static_cast<size_t>(m_runKind[static_cast<size_t>(r)])] += m_runs[static_cast<size_t>(r)].count;
    QStringList mix;
    for (size_t k = 0; k < perKind.size(); ++k)
        if (perKind[k] > 0)
            mix << QStringLiteral("%1 %2").arg(QString::fromStdString(m_counts[k].kind).toHtmlEscaped()).arg(perKind[k]);
    return tr("<b>mostly %1</b>: %2 runs, %3 layers<br>%4<br>%5")
        .arg(kind)
        .arg(s.endRun - s.firstRun)
        .arg(end - first)
        .arg(mix.join(QStringLiteral(" · ")), positions(first, end, m_blocks));
}

void LayerStripView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    const QRect bar = barRect();
    if (m_segments.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawRect(bar.adjusted(0, 0, -1, -1));
        p.drawText(bar, Qt::AlignCenter, tr("no blocks"));
        return;
    }
    const double top = bar.top() + 1, height = bar.height() - 2;
    const auto colour = [this](int kind) {
        return layerKindColour(QString::fromStdString(m_counts[static_cast<size_t>(kind)].kind));
    };
    for (const Segment &s : m_segments) {
        if (s.bands.empty()) {
            p.fillRect(QRectF(s.x0, top, s.x1 - s.x0, height), colour(s.kind));
            continue;
        }
        double y = top;
        for (const auto &[kind, rows] : s.bands) {
            p.fillRect(QRectF(s.x0, y, s.x1 - s.x0, rows), colour(kind));
            y += rows;
        }
    }
    if (m_perRun) {  // a thin gap between runs, so that neighbours of close colours part
        p.setPen(QPen(palette().color(QPalette::Base), 1));
        for (size_t i = 1; i < m_segments.size(); ++i)
            p.drawLine(QPointF(m_segments[i].x0, top), QPointF(m_segments[i].x0, top + height));
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
}

void LayerStripView::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    layOut();
}

bool LayerStripView::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
            event->ignore();
        } else {
            QToolTip::showText(help->globalPos(), text, this);
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace nest::ui
