#include "PlacementThumbnail.h"

#include "PlacementOverlay.h"

#include <QPaintEvent>
#include <QPainter>

#include <algorithm>
#include <utility>
#include <cmath>

namespace nest::ui {

namespace {

constexpr double kMinSquare = 2.0;  // below this a node is drawn as bands

} // namespace

PlacementThumbnail::PlacementThumbnail(QWidget *parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("placementThumbnail"));
    setAttribute(Qt::WA_OpaquePaintEvent);
}

void PlacementThumbnail::setSnapshot(PlanSnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    m_racks.clear();
    m_colours.clear();
    m_caption.clear();
    m_maxNodes = m_maxDevices = 0;
    if (m_snapshot) {
        const Topology &topo = m_snapshot->topology;
        const Report &rep = m_snapshot->report();
        const int depth = m_snapshot->plan().pipelineDepth();
        m_colours.assign(static_cast<size_t>(topo.deviceCount()), PlacementOverlay::unusedColour());
        for (const DeviceReport &d : rep.devices)
            if (d.device >= 0 && d.device < topo.deviceCount() && d.stage >= 0)
                m_colours[static_cast<size_t>(d.device)] = PlacementOverlay::paletteColour(d.stage, depth);
        if (topo.levelCount() >= 2) {
            for (int rack : topo.groupsAtLevel(1))
                m_racks.push_back(topo.groups[static_cast<size_t>(rack)].children);
        } else {
            m_racks.push_back(topo.groupsAtLevel(0));
        }
        for (const std::vector<int> &nodes : m_racks) {
            m_maxNodes = std::max(m_maxNodes, static_cast<int>(nodes.size()));
            for (int n : nodes)
                m_maxDevices = std::max(m_maxDevices, static_cast<int>(topo.groups[static_cast<size_t>(n)].devices.size()));
        }
        m_caption = tr("%1 — %2 devices").arg(QString::fromStdString(topo.name)).arg(topo.deviceCount());
    }
    setToolTip(m_caption);
    update();
}

QColor PlacementThumbnail::deviceColour(int device) const
{
    return device >= 0 && device < static_cast<int>(m_colours.size()) ? m_colours[static_cast<size_t>(device)]
                                                                      : QColor();
}

QImage PlacementThumbnail::render(QSize size) const
{
    QImage image(size.expandedTo(QSize(1, 1)), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setPen(Qt::black);
    painter.setFont(font());
    paint(painter, image.rect());
    return image;
}

void PlacementThumbnail::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    painter.setPen(palette().color(QPalette::WindowText));
    paint(painter, rect());
}

void PlacementThumbnail::paint(QPainter &painter, const QRect &rect) const
{
    const int captionHeight = painter.fontMetrics().height() + 4;
    const QRect captionRect(rect.left(), rect.bottom() - captionHeight + 1, rect.width(), captionHeight);
    if (!m_snapshot) {
        painter.drawText(rect, Qt::AlignCenter | Qt::TextWordWrap, tr("No plan"));
        return;
    }
    painter.drawText(captionRect, Qt::AlignCenter | Qt::TextSingleLine,
                     painter.fontMetrics().elidedText(m_caption, Qt::ElideRight, rect.width()));
    paintDevices(painter, rect.adjusted(2, 2, -2, -captionHeight));
}

namespace {

// Racks in a grid of rackRows rows, the nodes of a rack in nodeCols columns: the shape that
// gives the largest device squares in `area` (a node is one row of devices).
std::pair<int, int> thumbnailGrid(int racks, int maxNodes, int maxDevices, const QRect &area)
{
    int rackRows = 1, nodeCols = 1;
    double best = -1;
    for (int rows = 1; rows <= racks; ++rows) {
        const int cols = (racks + rows - 1) / rows;
        if (rows > 1 && (racks + rows - 2) / (rows - 1) == cols)
            continue;  // same grid as fewer rows
        for (int c = 1; c <= maxNodes; ++c) {
            const int r = (maxNodes + c - 1) / c;
            if (c > 1 && (maxNodes + c - 2) / (c - 1) == r)
                continue;
            const double side = std::min(area.width() / double(cols * c * maxDevices), area.height() / double(rows * r));
            if (side > best) {
                best = side;
                rackRows = rows;
                nodeCols = c;
            }
        }
    }
    return {rackRows, nodeCols};
}

} // namespace

void PlacementThumbnail::paintDevices(QPainter &painter, const QRect &area) const
{
    const int racks = static_cast<int>(m_racks.size());
    if (racks == 0 || m_maxNodes == 0 || m_maxDevices == 0 || area.width() < 2 || area.height() < 2)
        return;
    const auto [rackRows, nodeCols] = thumbnailGrid(racks, m_maxNodes, m_maxDevices, area);
    const int rackCols = (racks + rackRows - 1) / rackRows;
    const int nodeRows = (m_maxNodes + nodeCols - 1) / nodeCols;
    const double rackW = area.width() / double(rackCols), rackH = area.height() / double(rackRows);
    const double rackGap = rackW >= 24 && rackH >= 24 ? 4 : 0;
    const double cellW = (rackW - rackGap) / nodeCols, cellH = (rackH - rackGap) / nodeRows;
    const double gap = std::min(cellW, cellH) >= 8 ? 2 : 0;
    const double nodeW = cellW - gap, nodeH = cellH - gap;
    const double side = std::min(nodeW / m_maxDevices, nodeH);
    const Topology &topo = m_snapshot->topology;
    QColor frame = painter.pen().color();
    frame.setAlpha(90);
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing, false);
    for (int r = 0; r < racks; ++r) {
        const QRectF rackRect(area.left() + (r % rackCols) * rackW, area.top() + (r / rackCols) * rackH, rackW, rackH);
        const QRectF inner = rackRect.adjusted(rackGap / 2, rackGap / 2, -rackGap / 2, -rackGap / 2);
        const std::vector<int> &nodes = m_racks[static_cast<size_t>(r)];
        for (size_t i = 0; i < nodes.size(); ++i) {
            const std::vector<int> &devices = topo.groups[static_cast<size_t>(nodes[i])].devices;
            const double x = inner.left() + static_cast<double>(i % size_t(nodeCols)) * cellW + gap / 2;
            const double y = inner.top() + static_cast<double>(i / size_t(nodeCols)) * cellH + gap / 2;
            if (side >= kMinSquare) {
                // Squares side by side, centred in the node's cell.
                const double x0 = x + (nodeW - side * static_cast<double>(devices.size())) / 2;
                const double y0 = y + (nodeH - side) / 2;
                const double inset = side >= 5 ? 1 : 0;
                for (size_t j = 0; j < devices.size(); ++j)
                    painter.fillRect(QRectF(x0 + static_cast<double>(j) * side, y0, side - inset, side - inset),
                                     deviceColour(devices[j]));
                continue;
            }
            // Squares under 2 px: one band per run of equal colours across the node's cell.
            const double w = nodeW / std::max<size_t>(devices.size(), 1);
            size_t start = 0;
            for (size_t j = 1; j <= devices.size(); ++j) {
                if (j < devices.size() && deviceColour(devices[j]) == deviceColour(devices[start]))
                    continue;
                painter.fillRect(QRectF(x + static_cast<double>(start) * w, y, static_cast<double>(j - start) * w,
                                        std::max(nodeH, 1.0)),
                                 deviceColour(devices[start]));
                start = j;
            }
        }
        if (rackGap > 0 && racks > 1) {
            painter.setPen(QPen(frame, 0));
            painter.setBrush(Qt::NoBrush);
            painter.drawRect(rackRect.adjusted(1, 1, -1, -1));
        }
    }
    painter.restore();
}

} // namespace nest::ui
