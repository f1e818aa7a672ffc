#include "TopologyLayout.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace nest::ui {

using namespace layout;

namespace {

struct Measurer {
    const Topology &t;
    std::vector<QSizeF> size;
    std::vector<int> perRow;  // children per row (level >= 2)
    std::vector<double> header;  // header height (level >= 2)
    int rackColumns = 1;      // node columns of racks with more than kColumnsFrom nodes
    int rootPerRow = 0;       // 0 = automatic

    static constexpr int kColumnsFrom = 4;

    int columnsOf(int rack) const
    {
        const int n = static_cast<int>(t.groups[rack].children.size());
        return n > kColumnsFrom ? std::clamp(rackColumns, 1, n) : 1;
    }

    bool isContainer(int g) const
    {
        const TopoGroup &group = t.groups[g];
        return group.level == 1 || (group.level >= 2 && g != t.root);
    }

    QSizeF measure(int g)
    {
        const TopoGroup &group = t.groups[g];
        QSizeF s;
        if (group.level == 0) {
            const int n = std::max<int>(1, static_cast<int>(group.devices.size()));
            const int cols = deviceColumns(n);
            const int rows = (n + cols - 1) / cols;
            s.setWidth(std::max(96.0, 2 * kNodePad + cols * kDevice + (cols - 1) * kDeviceGap));
            s.setHeight(kNodeTitle + kNodePad + rows * kDevice + (rows - 1) * kDeviceGap + kNodePad);
        } else if (group.level == 1) {
            const int n = static_cast<int>(group.children.size());
            const int cols = columnsOf(g);
            double nodeW = 0;
            std::vector<double> rowH((n + cols - 1) / cols, 0.0);
            for (int i = 0; i < n; ++i) {
                const QSizeF cs = measure(group.children[i]);
                nodeW = std::max(nodeW, cs.width());
                rowH[i / cols] = std::max(rowH[i / cols], cs.height());
            }
            double h = kRackHeader;
            for (double r : rowH)
                h += r + kNodeGap;
            h += kSlot + kRackPad;
            const double w = std::max(kSwitchW + 2 * kRackPad,
                                      kBackplane + 2 * kRackPad + cols * nodeW + (cols - 1) * kNodeGap);
            s = QSizeF(w, h);
        } else {
            const int n = static_cast<int>(group.children.size());
            double sumW = 0, sumH = 0;
            for (int c : group.children) {
                const QSizeF cs = measure(c);
                sumW += cs.width();
                sumH += cs.height();
            }
            int per = n;
            if (g == t.root && rootPerRow > 0) {
                per = std::min(rootPerRow, std::max(1, n));
            } else if (n > 8) {
                const double avgW = sumW / n, avgH = sumH / n;
                per = static_cast<int>(std::lround(std::sqrt(n * 1.8 * avgH / std::max(1.0, avgW))));
                per = std::clamp(per, 1, n);
            }
            perRow[g] = std::max(1, per);
            const int rows = n == 0 ? 0 : (n + perRow[g] - 1) / perRow[g];
            const double trunk = rows > 1 ? 18 : 0;
            double tallest = 0;
            for (int c : group.children)
                tallest = std::max(tallest, size[c].height());
            header[g] = std::min(kGroupHeader + kHeaderShare * tallest, kMaxGroupHeader);
            double w = 0, h = header[g];
            for (int r = 0; r < rows; ++r) {
                double rowW = 0, rowH = 0;
                for (int i = r * perRow[g]; i < std::min(n, (r + 1) * perRow[g]); ++i) {
                    const QSizeF cs = size[group.children[i]];
                    rowW += cs.width() + (rowW > 0 ? kChildGap : 0);
                    rowH = std::max(rowH, cs.height());
                }
                w = std::max(w, rowW);
                h += rowH + (r + 1 < rows ? kRowGap : 0);
            }
            w = std::max(w + trunk, kSwitchW + 40);
            if (isContainer(g)) {
                w += 2 * kRackPad;
                h += kRackPad;
            }
            s = QSizeF(w, h);
        }
        size[g] = s;
        return s;
    }
};

QRectF switchAt(double centerX, double top)
{
    return QRectF(centerX - kSwitchW / 2, top, kSwitchW, kSwitchH);
}

// Where a link coming from above enters child `c`.
QPointF entryPoint(const TopologyLayout &out, const Topology &t, int c)
{
    const auto &b = out.boxes[c];
    if (t.groups[c].level == 0)
        return QPointF(b.rect.center().x(), b.rect.top());
    return QPointF(b.switchRect.center().x(), b.switchRect.top());
}

// Picks the racks' node columns and the root's children per row that let the diagram be
// shown largest in a view of this aspect ratio (width / height).
void chooseShape(Measurer &m, double aspect)
{
    const Topology &t = m.t;
    bool bigRacks = false;
    for (const TopoGroup &g : t.groups)
        bigRacks = bigRacks || (g.level == 1 && static_cast<int>(g.children.size()) > Measurer::kColumnsFrom);
    const int rootChildren = static_cast<int>(t.groups[t.root].children.size());
    std::vector<int> pers;   // distinct children-per-row counts (one per row count)
    if (t.groups[t.root].level >= 2)
        for (int rows = 1; rows <= rootChildren; ++rows) {
            const int per = (rootChildren + rows - 1) / rows;
            if (pers.empty() || pers.back() != per)
                pers.push_back(per);
        }
    if (pers.empty())
        pers.push_back(0);
    const std::vector<int> columns = bigRacks ? std::vector<int>{1, 2, 3, 4, 6, 8} : std::vector<int>{1};
    double best = -1;
    int bestCols = 1, bestPer = 0;
    for (int cols : columns)
        for (int per : pers) {
            m.rackColumns = cols;
            m.rootPerRow = per;
            const QSizeF s = m.measure(t.root);
            // The zoom that fits it into a view `aspect` wide and 1 high.
            const double zoom = std::min(aspect / std::max(1.0, s.width()), 1.0 / std::max(1.0, s.height()));
            if (zoom > best * 1.0001) {
                best = zoom;
                bestCols = cols;
                bestPer = per;
            }
        }
    m.rackColumns = bestCols;
    m.rootPerRow = bestPer;
}

} // namespace

int deviceColumns(int deviceCount)
{
    if (deviceCount <= 8)
        return std::max(1, deviceCount);
    if (deviceCount <= 64)
        return 8;
    return static_cast<int>(std::ceil(std::sqrt(static_cast<double>(deviceCount))));
}

QRectF deviceRect(const QRectF &nodeRect, int deviceCount, int i)
{
    const int cols = deviceColumns(deviceCount);
    const double gridW = cols * kDevice + (cols - 1) * kDeviceGap;
    const double left = nodeRect.left() + (nodeRect.width() - gridW) / 2;
    const int col = i % cols, row = i / cols;
    return QRectF(left + col * (kDevice + kDeviceGap),
                  nodeRect.top() + kNodeTitle + row * (kDevice + kDeviceGap), kDevice, kDevice);
}

namespace {

// Places every group below the root, top-down, from the sizes the Measurer found; records
// each group's box and each switch's links.
class Placer {
public:
    Placer(const Topology &t, const Measurer &m, TopologyLayout &out) : t(t), m(m), out(out) {}

    void place(int g, QPointF topLeft)
    {
        const TopoGroup &group = t.groups[g];
        TopologyLayout::Box &box = out.boxes[g];  // sized up front: references stay valid
        box.group = g;
        box.rect = QRectF(topLeft, m.size[g]);
        box.container = m.isContainer(g);
        if (group.level == 0)
            return;
        if (group.level == 1)
            placeRack(g, box);
        else
            placeSwitchGroup(g, box);
    }

private:
    const Topology &t;
    const Measurer &m;
    TopologyLayout &out;

    // A rack: its leaf switch, its nodes in rows of columnsOf() from a backplane, and the
    // drop slot below them.
    void placeRack(int g, TopologyLayout::Box &box)
    {
        const TopoGroup &group = t.groups[g];
        const double cx = box.rect.center().x();
        box.switchRect = switchAt(cx, box.rect.top() + 8);
        double y = box.rect.top() + kRackHeader;
        const double x = box.rect.left() + kRackPad + kBackplane;
        TopologyLayout::Link link{g, group.level, t.link(g).bandwidth, group.linkOverride.has_value(), {}};
        const double bx = box.rect.left() + kRackPad + kBackplane / 2 - 2;
        const double sy = box.switchRect.center().y();
        link.path.moveTo(box.switchRect.left(), sy);
        link.path.lineTo(bx, sy);
        double lastY = sy;
        const int kids = static_cast<int>(group.children.size());
        const int cols = m.columnsOf(g);
        double nodeW = 0;
        for (int c : group.children)
            nodeW = std::max(nodeW, m.size[c].width());
        for (int r = 0; r * cols < kids; ++r) {
            double rowH = 0;
            const int begin = r * cols, end = std::min(kids, begin + cols);
            for (int i = begin; i < end; ++i) {
                const int c = group.children[i];
                place(c, QPointF(x + (i - begin) * (nodeW + kNodeGap), y));
                rowH = std::max(rowH, m.size[c].height());
            }
            if (cols == 1) {
                // One column: a stub from the backplane into each node's side.
                const QRectF rr = out.boxes[group.children[begin]].rect;
                link.path.moveTo(bx, rr.center().y());
                link.path.lineTo(rr.left(), rr.center().y());
                lastY = rr.center().y();
            } else {
                // Columns: a bus in the gap above the row, a drop into each node's top.
                const double busY = y - kNodeGap / 2;
                const QRectF last = out.boxes[group.children[end - 1]].rect;
                link.path.moveTo(bx, busY);
                link.path.lineTo(last.center().x(), busY);
                for (int i = begin; i < end; ++i) {
                    const QRectF rr = out.boxes[group.children[i]].rect;
                    link.path.moveTo(rr.center().x(), busY);
                    link.path.lineTo(rr.center().x(), rr.top());
                }
                lastY = busY;
            }
            y += rowH + kNodeGap;
        }
        link.path.moveTo(bx, sy);
        link.path.lineTo(bx, lastY);
        box.dropSlot = QRectF(x, y, box.rect.right() - kRackPad - x, kSlot);
        out.links.push_back(std::move(link));
    }

    // level >= 2: switch on top, children in rows below, bus links.
    void placeSwitchGroup(int g, TopologyLayout::Box &box)
    {
        const TopoGroup &group = t.groups[g];
        const double cx = box.rect.center().x();
        const double pad = box.container ? kRackPad : 0;
        box.switchRect = switchAt(cx, box.rect.top() + (box.container ? 12 : 4));
        const int count = static_cast<int>(group.children.size());
        const int per = m.perRow[g];
        const int rows = count == 0 ? 0 : (count + per - 1) / per;
        const double trunkX = box.rect.left() + pad + 8;
        const double inner = box.rect.left() + pad + (rows > 1 ? 18 : 0);
        double y = box.rect.top() + m.header[g];
        // The name's band: down to just above the first row's bus (busY = y - 12).
        const double bandBottom = y - 16;
        box.labelBand = box.container
                            ? QRectF(box.rect.left() + pad, box.switchRect.bottom() + 1, box.rect.width() - 2 * pad,
                                     bandBottom - box.switchRect.bottom() - 1)
                            : QRectF(box.switchRect.right() + 10, box.rect.top() + 2,
                                     box.rect.right() - box.switchRect.right() - 20, bandBottom - box.rect.top() - 2);
        TopologyLayout::Link link{g, group.level, t.link(g).bandwidth, group.linkOverride.has_value(), {}};
        const QPointF swBottom(box.switchRect.center().x(), box.switchRect.bottom());
        double firstBus = -1, lastBus = -1;
        for (int r = 0; r < rows; ++r) {
            double rowW = 0, rowH = 0;
            const int begin = r * per, end = std::min(count, (r + 1) * per);
            for (int i = begin; i < end; ++i) {
                const QSizeF cs = m.size[group.children[i]];
                rowW += cs.width() + (i > begin ? kChildGap : 0);
                rowH = std::max(rowH, cs.height());
            }
            const double avail = box.rect.right() - pad - inner;
            double x = inner + std::max(0.0, (avail - rowW) / 2);
            const double busY = y - 12;
            double minX = rows > 1 ? trunkX : swBottom.x(), maxX = minX;
            for (int i = begin; i < end; ++i) {
                const int c = group.children[i];
                place(c, QPointF(x, y));
                const QPointF e = entryPoint(out, t, c);
                link.path.moveTo(e.x(), busY);
                link.path.lineTo(e);
                minX = std::min(minX, e.x());
                maxX = std::max(maxX, e.x());
                x += m.size[c].width() + kChildGap;
            }
            if (rows == 1) {
                minX = std::min(minX, swBottom.x());
                maxX = std::max(maxX, swBottom.x());
            }
            link.path.moveTo(minX, busY);
            link.path.lineTo(maxX, busY);
            if (firstBus < 0)
                firstBus = busY;
            lastBus = busY;
            y += rowH + kRowGap;
        }
        if (rows > 0) {
            link.path.moveTo(swBottom);
            link.path.lineTo(swBottom.x(), firstBus);
            if (rows > 1) {
                link.path.moveTo(std::min(trunkX, swBottom.x()), firstBus);
                link.path.lineTo(std::max(trunkX, swBottom.x()), firstBus);
                link.path.moveTo(trunkX, firstBus);
                link.path.lineTo(trunkX, lastBus);
            }
            out.links.push_back(std::move(link));
        }
    }
};

} // namespace

TopologyLayout computeLayout(const Topology &t, double aspect)
{
    TopologyLayout out;
    const int n = static_cast<int>(t.groups.size());
    out.boxes.resize(n);
    if (t.root < 0 || t.root >= n)
        return out;
    Measurer m{t, std::vector<QSizeF>(n), std::vector<int>(n, 1), std::vector<double>(n, kGroupHeader)};
    if (aspect > 0)
        chooseShape(m, aspect);
    m.measure(t.root);
    out.rackColumns = m.rackColumns;
    out.rootPerRow = m.rootPerRow;
    Placer(t, m, out).place(t.root, QPointF(0, 0));
    out.bounds = out.boxes[t.root].rect;
    return out;
}

QColor levelColor(int level)
{
    // Okabe & Ito (2008), without yellow (too pale on white): blue, orange, bluish green,
    // reddish purple, vermillion, sky blue, black.
    static const QColor palette[] = {QColor(0x00, 0x72, 0xb2), QColor(0xe6, 0x9f, 0x00),
                                     QColor(0x00, 0x9e, 0x73), QColor(0xcc, 0x79, 0xa7),
                                     QColor(0xd5, 0x5e, 0x00), QColor(0x56, 0xb4, 0xe9),
                                     QColor(0x00, 0x00, 0x00)};
    constexpr int count = sizeof(palette) / sizeof(palette[0]);
    return palette[((level % count) + count) % count];
}

double bandwidthWidth(double bytesPerSecond)
{
    const double x = std::clamp(std::log10(std::max(bytesPerSecond, 1.0) / 1e9), 0.0, 3.0);
    return 1.5 + 1.6 * x;
}

QColor deviceColor(const std::string &typeName)
{
    static const QColor palette[] = {QColor(0x76, 0xb9, 0x00), QColor(0x3b, 0x82, 0xc4),
                                     QColor(0xd9, 0x77, 0x06), QColor(0x8e, 0x44, 0xad),
                                     QColor(0xc0, 0x39, 0x2b), QColor(0x16, 0xa0, 0x85),
                                     QColor(0x7f, 0x8c, 0x8d)};
    // Stable across runs (std::hash is not guaranteed to be): FNV-1a.
    std::uint32_t h = 2166136261u;
    for (unsigned char c : typeName)
        h = (h ^ c) * 16777619u;
    return palette[h % (sizeof(palette) / sizeof(palette[0]))];
}

} // namespace nest::ui
