#include "TopologyItems.h"

#include "WindowWording.h"

#include "WorkspaceDocument.h"
#include "ClusterTreeModel.h"
#include "TopologyScene.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>

#include <algorithm>
#include <cmath>
#include <functional>

namespace nest::ui {

namespace {

const QColor kSelection(0x2d, 0x7f, 0xf9);
const QColor kText(0x22, 0x2b, 0x36);
const QColor kMuted(0x6b, 0x77, 0x85);
const QColor kNvlinkDomain(0x5b, 0x9b, 0x00);  // NVLink domains in a placement (NVIDIA green, darkened)

// Sizes in scene units (pixels at 100 % zoom), never points: a point size is resolved
// against the paint device's resolution, so the same item would print 12x too large on a
// 1200 dpi PDF writer and too small in a 72 dpi SVG.
QFont itemFont(double pixels, bool bold = false)
{
    return canvasFont(pixels, bold);
}

constexpr double kNamePixels = 10;   // node names
constexpr double kTypePixels = 9;    // device types in node headers

// The on-screen size (pixels) under which a zoomed-out label is scaled up against the zoom.
constexpr double kReadablePixels = 10;
// Labels shrunk (to fit their box) below this on-screen size are not drawn.
constexpr double kSmallestPixels = 5;

// A stale overlay's colours: washed out towards white.
QColor dimmed(const QColor &c)
{
    return QColor::fromRgbF(c.redF() * 0.45f + 0.55f, c.greenF() * 0.45f + 0.55f, c.blueF() * 0.45f + 0.55f);
}

void hatch(QPainter *p, const QRectF &r)
{
    p->setPen(Qt::NoPen);
    p->setBrush(QBrush(QColor(0x55, 0x5f, 0x6a, 110), Qt::BDiagPattern));
    p->drawRect(r);
}

double lodOf(const QStyleOptionGraphicsItem *option, const QPainter *painter)
{
    return option->levelOfDetailFromTransform(painter->worldTransform());
}

void paintSwitch(QPainter *p, const QRectF &r, const QColor &accent, double lod)
{
    p->setPen(QPen(accent.darker(140), 1.2));
    p->setBrush(QColor(0x2f, 0x3e, 0x4e));
    p->drawRoundedRect(r, 4, 4);
    if (lod < 0.3)
        return;
    // Port LEDs.
    p->setPen(Qt::NoPen);
    p->setBrush(accent.lighter(130));
    const int ports = 8;
    const double step = (r.width() - 16) / (ports - 1);
    for (int i = 0; i < ports; ++i)
        p->drawEllipse(QPointF(r.left() + 8 + i * step, r.center().y()), 2.2, 2.2);
}

QString overrideTip(const Topology &t, int group)
{
    const TopoGroup &g = t.groups[group];
    if (!g.linkOverride)
        return {};
    return QObject::tr("\n* own link: %1 (level %2: %3)")
        .arg(formatBandwidth(g.linkOverride->bandwidth), QString::fromStdString(t.levels[g.level].name),
             formatBandwidth(t.levels[g.level].link.bandwidth));
}

} // namespace

QFont canvasFont(double pixels, bool bold)
{
    QFont f;
    f.setPixelSize(std::max(1, static_cast<int>(std::lround(pixels))));
    f.setBold(bold);
    return f;
}

NodeHeader nodeHeaderLayout(const QRectF &nodeRect, const QString &name, const QString &type)
{
    const QRectF title(nodeRect.left() + 6, nodeRect.top() + 2, nodeRect.width() - 12, layout::kNodeTitle - 3);
    const QFontMetricsF nameFm(itemFont(kNamePixels, true)), typeFm(itemFont(kTypePixels));
    constexpr double gap = 6;
    constexpr double minType = 28;   // narrower than this, an elided type says nothing
    NodeHeader h;
    const double nameW = nameFm.horizontalAdvance(name);
    const double typeW = typeFm.horizontalAdvance(type);
    double nameRoom = title.width();
    if (nameW + gap + typeW <= title.width()) {
        h.type = type;
    } else if (title.width() - nameW - gap >= minType) {
        h.type = typeFm.elidedText(type, Qt::ElideRight, title.width() - nameW - gap);
    }
    if (!h.type.isEmpty()) {
        const double w = typeFm.horizontalAdvance(h.type);
        h.typeRect = QRectF(title.right() - w, title.top(), w, title.height());
        nameRoom = title.width() - w - gap;
    }
    h.name = nameFm.elidedText(name, Qt::ElideRight, nameRoom);
    h.nameRect = QRectF(title.left(), title.top(), std::min(nameRoom, nameFm.horizontalAdvance(h.name)),
                        title.height());
    return h;
}

// --- GroupItem ----------------------------------------------------------------------

GroupItem::GroupItem(const TopologyScene *scene, int group, GroupUid uid, const TopologyLayout::Box &box)
    : m_scene(scene)
    , m_group(group)
    , m_uid(uid)
    , m_box(box)
{
    setFlag(ItemIsSelectable, !scene->isReadOnly());
    readGroup();
}

void GroupItem::readGroup()
{
    const Topology &t = m_scene->document()->topology();
    m_level = t.groups[m_group].level;
    setZValue(m_box.container ? -10 + m_level * -1.0 : 1);
    setToolTip(QString::fromStdString(t.groups[m_group].name) + overrideTip(t, m_group));
}

bool GroupItem::sync(int group, const TopologyLayout::Box &box, bool refresh)
{
    const bool moved = box.rect != m_box.rect || box.switchRect != m_box.switchRect ||
                       box.dropSlot != m_box.dropSlot || box.container != m_box.container;
    if (!moved && !refresh) {
        m_group = group;   // renumbered only: it reads and looks the same
        return false;
    }
    if (moved)
        prepareGeometryChange();
    m_group = group;
    m_box = box;
    readGroup();
    update();
    return true;
}

QRectF GroupItem::detailRect() const
{
    if (m_box.container)
        return QRectF(m_box.rect.left() + 6, m_box.switchRect.bottom() + 15, m_box.rect.width() - 12, 16);
    return QRectF(m_box.switchRect.right() + 10, m_box.switchRect.top() + 11, 400, 16);
}

QRectF GroupItem::boundingRect() const
{
    // Everything it paints: the frame, the switch with its badge, the detail line.
    return (m_box.container ? m_box.rect.united(m_box.switchRect) : m_box.switchRect)
        .united(detailRect())
        .adjusted(-4, -10, 10, 4);
}

QString GroupItem::detailText() const
{
    const Topology &t = m_scene->document()->topology();
    const TopoGroup &g = t.groups[m_group];
    QString s = QObject::tr("%1 · %2 dev · %3")
                    .arg(QString::fromStdString(t.levels[g.level].name))
                    .arg(t.deviceCountUnder(m_group))
                    .arg(formatBandwidth(t.link(m_group).bandwidth));
    if (g.linkOverride)
        s += QObject::tr("* (level: %1)").arg(formatBandwidth(t.levels[g.level].link.bandwidth));
    return s;
}

QStringList GroupItem::blockLines() const
{
    const Topology &t = m_scene->document()->topology();
    int nodes = 0;
    std::vector<int> types;
    std::function<void(int)> walk = [&](int g) {
        if (t.groups[g].level == 0) {
            ++nodes;
            if (std::find(types.begin(), types.end(), t.groups[g].deviceType) == types.end())
                types.push_back(t.groups[g].deviceType);
            return;
        }
        for (int c : t.groups[g].children)
            walk(c);
    };
    walk(m_group);
    QString type = QObject::tr("mixed devices");
    if (types.size() == 1 && types[0] >= 0 && types[0] < static_cast<int>(t.deviceTypes.size()))
        type = QString::fromStdString(t.deviceTypes[types[0]].name);
    QString name = QString::fromStdString(t.groups[m_group].name);
    if (t.groups[m_group].linkOverride)
        name += QStringLiteral(" *");
    return {name, counted(t.deviceCountUnder(m_group), QObject::tr("device"), QObject::tr("devices")), type,
            counted(nodes, QObject::tr("node"), QObject::tr("nodes"))};
}

void GroupItem::paintBlock(QPainter *p, double lod) const
{
    const QColor tint = levelColor(m_level);
    QColor fill = tint.lighter(185);
    fill.setAlpha(255);
    QPen pen(tint.darker(110), std::max(1.0, 1.2 / lod));
    if (m_scene->document()->topology().groups[m_group].linkOverride)
        pen.setStyle(Qt::DashLine);
    if (isSelected() && !m_scene->isPrinting())
        pen = QPen(kSelection, std::max(3.0, 2.5 / lod));
    if (m_highlight == 1)
        pen = QPen(QColor(0x2e, 0x9e, 0x4f), std::max(2.5, 2.5 / lod));
    else if (m_highlight == 2)
        pen = QPen(QColor(0xc0, 0x39, 0x2b), std::max(2.5, 2.5 / lod));
    p->setPen(pen);
    p->setBrush(QColor::fromRgbF(fill.redF() * 0.35f + 0.65f, fill.greenF() * 0.35f + 0.65f,
                                 fill.blueF() * 0.35f + 0.65f));
    p->drawRoundedRect(m_box.rect, 8, 8);
    // Text of a readable size on screen, shrunk to fit the block. When all four lines (name,
    // devices, device type, nodes) would be too small to read, the last ones go first, and a
    // line still too wide is elided rather than clipped mid-glyph.
    const QStringList all = blockLines();
    const QRectF inner = m_box.rect.adjusted(4, 4, -4, -4);
    constexpr double kReadablePixels = 8;
    QStringList lines;
    double pixels = 0;
    for (qsizetype n = all.size(); n >= 1; --n) {
        lines = all.first(n);
        double widest = 0;
        for (int i = 0; i < lines.size(); ++i)
            widest = std::max(widest, QFontMetricsF(itemFont(100, i == 0)).horizontalAdvance(lines[i]) / 100.0);
        pixels = std::min({11 / lod, inner.width() / std::max(widest, 1e-6), inner.height() / (lines.size() * 1.3)});
        if (pixels * lod >= kReadablePixels)
            break;
        if (n == 1)   // the name alone: fitted to the width down to the smallest size, then elided
            pixels = std::min({11 / lod, inner.height() / 1.3,
                               std::max(inner.width() / std::max(widest, 1e-6), kSmallestPixels / lod)});
    }
    if (pixels * lod < kSmallestPixels)
        return;
    const double lineH = pixels * 1.3;
    double y = inner.center().y() - lineH * lines.size() / 2;
    for (int i = 0; i < lines.size(); ++i) {
        const QFont f = itemFont(pixels, i == 0);
        p->setFont(f);
        p->setPen(i == 0 ? kText : kMuted);
        const QString text = QFontMetricsF(f).elidedText(lines[i], Qt::ElideRight, inner.width());
        // Elided only while most of it stays readable: never "…" or "rac…".
        if (text == lines[i] || text.size() - 1 >= std::max<qsizetype>(4, lines[i].size() * 6 / 10))
            p->drawText(QRectF(inner.left(), y, inner.width(), lineH), Qt::AlignCenter, text);
        y += lineH;
    }
}

QPainterPath GroupItem::shape() const
{
    QPainterPath path;
    path.addRect(m_box.container ? m_box.rect : m_box.switchRect.adjusted(-60, -4, 60, 20));
    return path;
}

void GroupItem::setDropHighlight(int state)
{
    if (m_highlight != state) {
        m_highlight = state;
        update();
    }
}

void GroupItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const Topology &t = m_scene->document()->topology();
    const TopoGroup &g = t.groups[m_group];
    const double lod = lodOf(option, p);
    if (m_scene->isHidden(m_group, lod))
        return;
    if (m_scene->isCollapsed(m_group, lod)) {
        paintBlock(p, lod);
        return;
    }
    const bool selected = isSelected() && !m_scene->isPrinting();
    const QColor accent = levelColor(m_level);
    if (m_box.container) {
        paintContainer(p, lod, selected);
        paintDropSlot(p, lod);
    }
    paintSwitch(p, m_box.switchRect, accent, lod);
    if (g.linkOverride)
        paintOverrideBadge(p, accent);
    if (selected && !m_box.container) {
        p->setPen(QPen(kSelection, 2.5));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(m_box.switchRect.adjusted(-3, -3, 3, 3), 5, 5);
    }
    // The name is drawn by the group's LabelItem; the details only where readable, and not
    // for racks: their nodes start right under the name and would hide the line (an
    // override shows as the badge and the dashed link; the tooltip has both values).
    if (lod < 0.5 || (m_box.container && m_level < 2))
        return;
    p->setPen(kMuted);
    p->setFont(itemFont(m_box.container ? 9 : 10));
    p->drawText(detailRect(), (m_box.container ? Qt::AlignHCenter : Qt::AlignLeft) | Qt::AlignTop,
                m_box.container ? p->fontMetrics().elidedText(detailText(), Qt::ElideRight,
                                                                 static_cast<int>(detailRect().width()))
                                : detailText());
}

// The container's frame: its highlight (drop target), selection or NVLink domain outline.
void GroupItem::paintContainer(QPainter *p, double lod, bool selected) const
{
    const Topology &t = m_scene->document()->topology();
    QColor fill = m_level == 1 ? QColor(0xf3, 0xf5, 0xf8) : QColor(0xfa, 0xfb, 0xfc);
    QPen pen(QColor(0xb4, 0xbe, 0xc9), 1.2);
    if (m_level >= 2)
        pen.setStyle(Qt::DashLine);
    if (m_highlight == 1) {
        fill = QColor(0xe3, 0xf6, 0xe6);
        pen = QPen(QColor(0x2e, 0x9e, 0x4f), 2.5);
    } else if (m_highlight == 2) {
        fill = QColor(0xfb, 0xe9, 0xe7);
        pen = QPen(QColor(0xc0, 0x39, 0x2b), 2.5);
    }
    if (selected)
        pen = QPen(kSelection, 3);
    // A placement shows where its groups sit relative to the NVLink domains: the group
    // that closes one (an NVL72 rack) is outlined in NVLink's colour and tagged.
    const bool domain = m_scene->overlay() != nullptr && m_level == t.nvlinkDomainLevel() && m_highlight == 0;
    if (domain)
        pen = QPen(kNvlinkDomain, 3);
    p->setPen(pen);
    p->setBrush(fill);
    p->drawRoundedRect(m_box.rect, 8, 8);
    if (domain && lod > 0.4) {
        const QString tag = QObject::tr("NVLink domain");
        p->setFont(itemFont(9, true));
        const double w = p->fontMetrics().horizontalAdvance(tag) + 10;
        const QRectF r(m_box.rect.right() - w - 6, m_box.rect.bottom() - 16, w, 14);
        p->setPen(Qt::NoPen);
        p->setBrush(kNvlinkDomain);
        p->drawRoundedRect(r, 3, 3);
        p->setPen(Qt::white);
        p->drawText(r, Qt::AlignCenter, tag);
    }
}

// Where a node may be dropped into a rack (editable, on screen).
void GroupItem::paintDropSlot(QPainter *p, double lod) const
{
    if (m_level == 1 && lod > 0.35 && !m_box.dropSlot.isEmpty() && !m_scene->isPrinting() &&
        !m_scene->isReadOnly()) {
        p->setPen(QPen(QColor(0xc3, 0xcb, 0xd4), 1, Qt::DashLine));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(m_box.dropSlot, 4, 4);
        if (lod > 0.6) {
            p->setFont(itemFont(9));
            p->setPen(QColor(0xa0, 0xa9, 0xb4));
            p->drawText(m_box.dropSlot, Qt::AlignCenter, QObject::tr("drop a node here"));
        }
    }
}

// The override badge: a "*" on the switch's corner, in the level's colour.
void GroupItem::paintOverrideBadge(QPainter *p, const QColor &accent) const
{
    const QRectF badge(m_box.switchRect.right() - 6, m_box.switchRect.top() - 8, 14, 14);
    p->setPen(QPen(accent.darker(130), 1));
    p->setBrush(Qt::white);
    p->drawEllipse(badge);
    p->setFont(itemFont(12, true));
    p->setPen(kText);
    p->drawText(badge.translated(0, 2), Qt::AlignCenter, QStringLiteral("*"));
}

// --- NodeItem -----------------------------------------------------------------------

NodeItem::NodeItem(const TopologyScene *scene, int group, GroupUid uid, const QRectF &rect)
    : m_scene(scene)
    , m_group(group)
    , m_uid(uid)
    , m_rect(rect)
{
    setFlag(ItemIsSelectable, !scene->isReadOnly());
    setZValue(5);
    readGroup();
}

bool NodeItem::sync(int group, const QRectF &rect, bool refresh)
{
    const bool moved = rect != m_rect;
    if (!moved && !refresh) {
        m_group = group;   // renumbered only: it reads and looks the same
        return false;
    }
    if (moved)
        prepareGeometryChange();
    m_group = group;
    m_rect = rect;
    readGroup();
    update();
    return true;
}

void NodeItem::readGroup()
{
    const Topology &t = m_scene->document()->topology();
    const TopoGroup &g = t.groups[m_group];
    const DeviceSpec &d = t.deviceTypes[std::clamp<int>(g.deviceType, 0, int(t.deviceTypes.size()) - 1)];
    QString tip = QObject::tr("%1: %2 × %3 (%4 GB, %5 TFLOP/s each)")
                      .arg(QString::fromStdString(g.name)).arg(g.devices.size())
                      .arg(QString::fromStdString(d.name)).arg(d.memoryBytes / 1e9, 0, 'g', 4)
                      .arg(d.peakFlops / 1e12, 0, 'g', 4);
    if (!m_scene->isReadOnly())
        tip += QObject::tr("\nDrag onto another rack to move it.");
    setToolTip(tip);
}

QRectF NodeItem::boundingRect() const
{
    return m_rect.adjusted(-3, -3, 3, 3);
}

QPainterPath NodeItem::shape() const
{
    QPainterPath path;
    path.addRect(m_rect);
    return path;
}

int NodeItem::deviceAt(const QPointF &itemPos) const
{
    const Topology &t = m_scene->document()->topology();
    const int n = static_cast<int>(t.groups[m_group].devices.size());
    for (int i = 0; i < n; ++i)
        if (deviceRect(m_rect, n, i).contains(itemPos))
            return i;
    return -1;
}

std::vector<PlacementOverlay::Band> NodeItem::bands() const
{
    const PlacementOverlay *overlay = m_scene->overlay();
    return overlay ? overlay->nodeBands(m_group) : std::vector<PlacementOverlay::Band>();
}

void NodeItem::paintBands(QPainter *p, const PlacementOverlay &overlay, double lod) const
{
    const std::vector<PlacementOverlay::Band> &bands = overlay.nodeBands(m_group);
    int total = 0;
    for (const auto &band : bands)
        total += band.devices;
    double x = m_rect.left();
    p->setPen(Qt::NoPen);
    for (const auto &band : bands) {
        const double w = m_rect.width() * band.devices / std::max(1, total);
        p->setBrush(overlay.isStale() ? dimmed(band.colour) : band.colour);
        p->drawRect(QRectF(x, m_rect.top(), w, m_rect.height()));
        x += w;
    }
    if (overlay.isStale())
        hatch(p, m_rect);
    const bool over = overlay.nodeOverCapacity(m_group);
    // At least a visible on-screen width however far out the zoom is.
    const double width = over ? std::max(2.5, 2.0 / lod) : std::max(1.0, 0.8 / lod);
    p->setPen(QPen(over ? PlacementOverlay::overCapacityColour() : QColor(0x44, 0x4e, 0x5a), width));
    p->setBrush(Qt::NoBrush);
    p->drawRect(m_rect);
}

void NodeItem::paintDevices(QPainter *p, const PlacementOverlay *overlay, const QColor &typeColour) const
{
    const std::vector<int> &ids = m_scene->document()->topology().groups[m_group].devices;
    const int n = static_cast<int>(ids.size());
    if (!overlay) {
        p->setPen(QPen(typeColour.darker(135), 0.8));
        p->setBrush(typeColour);
        for (int i = 0; i < n; ++i)
            p->drawRoundedRect(deviceRect(m_rect, n, i), 2.5, 2.5);
        return;
    }
    for (int i = 0; i < n; ++i) {
        const QRectF r = deviceRect(m_rect, n, i);
        QColor c = overlay->deviceColour(ids[i]);
        if (!c.isValid())
            c = PlacementOverlay::unusedColour();
        if (overlay->isStale())
            c = dimmed(c);
        if (overlay->isOverCapacity(ids[i]))
            p->setPen(QPen(PlacementOverlay::overCapacityColour(), 2.2));
        else
            p->setPen(QPen(c.darker(140), 0.8));
        p->setBrush(c);
        p->drawRoundedRect(r, 2.5, 2.5);
        if (overlay->isStale())
            hatch(p, r);
    }
}

void NodeItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const Topology &t = m_scene->document()->topology();
    const TopoGroup &g = t.groups[m_group];
    const int n = static_cast<int>(g.devices.size());
    const std::string &typeName =
        t.deviceTypes[std::clamp<int>(g.deviceType, 0, int(t.deviceTypes.size()) - 1)].name;
    const QColor devColor = deviceColor(typeName);
    const double lod = lodOf(option, p);
    const bool selected = isSelected() && !m_scene->isPrinting();
    if (m_scene->isHidden(m_group, lod))
        return;
    const QColor nvlink = levelColor(0);
    const PlacementOverlay *overlay = m_scene->overlay();

    QPen border(selected ? kSelection : nvlink.darker(115), selected ? 3 : 1.6);
    if (lod * layout::kDevice < 5) {
        // Folded: one glyph for the node; with an overlay, one band per stage or replica.
        if (overlay && !overlay->nodeBands(m_group).empty()) {
            paintBands(p, *overlay, lod);
            return;
        }
        p->setPen(border);
        p->setBrush(devColor.lighter(150));
        p->drawRect(m_rect);
        if (lod * m_rect.height() > 12) {
            p->setPen(kText);
            p->setFont(itemFont(std::max(9.0, 9 / std::max(lod, 0.05))));
            p->drawText(m_rect, Qt::AlignCenter, QStringLiteral("%1×").arg(n));
        }
        return;
    }
    p->setPen(border);
    p->setBrush(Qt::white);
    p->drawRoundedRect(m_rect, 4, 4);
    if (lod > 0.45) {
        const NodeHeader h = nodeHeaderLayout(m_rect, QString::fromStdString(g.name), QString::fromStdString(typeName));
        p->setFont(itemFont(kNamePixels, true));
        p->setPen(kText);
        p->drawText(h.nameRect, Qt::AlignLeft | Qt::AlignVCenter, h.name);
        if (!h.type.isEmpty()) {
            p->setFont(itemFont(kTypePixels));
            p->setPen(kMuted);
            p->drawText(h.typeRect, Qt::AlignRight | Qt::AlignVCenter, h.type);
        }
    }
    paintDevices(p, overlay, devColor);
}

// --- LabelItem ----------------------------------------------------------------------

namespace {
constexpr double kLabelPixels = 11;      // container names at 100 %
constexpr double kRootLabelPixels = 12;  // the root's name
} // namespace

LabelItem::LabelItem(const TopologyScene *scene, int group, const TopologyLayout::Box &box)
    : m_scene(scene)
    , m_group(group)
    , m_box(box)
    , m_root(!box.container)
{
    setZValue(50);
    setAcceptedMouseButtons(Qt::NoButton);
    setAcceptHoverEvents(false);
    readGroup();
}

void LabelItem::readGroup()
{
    const QString text = QString::fromStdString(m_scene->document()->topology().groups[m_group].name);
    if (text == m_text && m_widthPerPixel > 0)
        return;
    m_text = text;
    m_widthPerPixel = QFontMetricsF(itemFont(100, true)).horizontalAdvance(m_text) / 100.0;
}

bool LabelItem::sync(int group, const TopologyLayout::Box &box, bool refresh)
{
    const bool moved = box.rect != m_box.rect || box.switchRect != m_box.switchRect || box.labelBand != m_box.labelBand ||
                       box.container != m_box.container;
    if (!moved && !refresh) {
        m_group = group;   // renumbered only: it reads and looks the same
        return false;
    }
    if (moved)
        prepareGeometryChange();
    m_group = group;
    m_box = box;
    m_root = !box.container;
    readGroup();
    update();
    return true;
}

QRectF LabelItem::naturalRect() const
{
    if (m_root)
        return QRectF(m_box.switchRect.right() + 10, m_box.switchRect.top() - 4, 400, 16);
    return QRectF(m_box.rect.left() + 6, m_box.switchRect.bottom() + 1, m_box.rect.width() - 12, 16);
}

QRectF LabelItem::boundingRect() const
{
    return naturalRect().united(m_box.rect);
}

void LabelItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const double lod = lodOf(option, p);
    // A collapsed group's block carries its own name.
    if (m_scene->isHidden(m_group, lod) || m_scene->isCollapsed(m_group, lod))
        return;
    const double natural = m_root ? kRootLabelPixels : kLabelPixels;
    p->setPen(kText);
    if (natural * lod >= kReadablePixels) {
        p->setFont(itemFont(natural, true));
        p->drawText(naturalRect(), (m_root ? Qt::AlignLeft : Qt::AlignHCenter) | Qt::AlignTop, m_text);
        return;
    }
    // Zoomed out: keep the name readable on screen, but inside its box (a name wider than
    // its rack would cover the neighbours' names).
    // A switch group's name stays in its header band, above its children (their blocks
    // carry names of their own); a rack's below its switch.
    const QRectF &box = m_box.rect;
    const QRectF &band = m_box.labelBand;
    double pixels = kReadablePixels / lod;
    const double maxWidth = !band.isEmpty() ? band.width() * (m_root ? 1.0 : 0.92)
                                            : box.width() * 0.92;
    const double maxHeight = !band.isEmpty() ? band.height() : box.height() * 0.3;
    pixels = std::min({pixels, maxWidth / std::max(m_widthPerPixel, 1e-6), maxHeight});
    if (pixels * lod < kSmallestPixels)
        return;
    // Outlined text (a white halo) rather than a plate: the node colours stay visible
    // between the letters.
    const QFont f = itemFont(pixels, true);
    const QFontMetricsF fm(f);
    const double width = fm.horizontalAdvance(m_text);
    const QPointF baseline = m_root ? (band.isEmpty() ? QPointF(m_box.switchRect.right() + 10, box.top() + 2 + fm.ascent())
                                                      : QPointF(band.left(), band.top() + fm.ascent()))
                                    : QPointF(box.center().x() - width / 2,
                                              m_box.switchRect.bottom() + 1 + fm.ascent());
    QPainterPath path;
    path.addText(baseline, f, m_text);
    p->setBrush(Qt::NoBrush);
    p->strokePath(path, QPen(QColor(255, 255, 255, 230), pixels * 0.22, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    p->fillPath(path, kText);
}

// --- LinkItem -----------------------------------------------------------------------

LinkItem::LinkItem(const TopologyScene *scene, const TopologyLayout::Link &link)
    : m_scene(scene)
    , m_link(link)
{
    readLink();
    setZValue(0);
    setAcceptedMouseButtons(Qt::NoButton);
}

void LinkItem::readLink()
{
    m_width = bandwidthWidth(m_link.bandwidth);
    m_bounds = m_link.path.boundingRect().adjusted(-m_width, -m_width, m_width, m_width);
}

bool LinkItem::sync(const TopologyLayout::Link &link)
{
    if (link.group == m_link.group && link.level == m_link.level && link.bandwidth == m_link.bandwidth &&
        link.overridden == m_link.overridden && link.path == m_link.path)
        return false;
    prepareGeometryChange();
    m_link = link;
    readLink();
    update();
    return true;
}

QRectF LinkItem::boundingRect() const
{
    return m_bounds;
}

void LinkItem::paint(QPainter *p, const QStyleOptionGraphicsItem *option, QWidget *)
{
    const double lod = lodOf(option, p);
    if (m_scene->isHidden(m_link.group, lod) || m_scene->isCollapsed(m_link.group, lod))
        return;
    QPen pen(colour(), m_width, Qt::SolidLine, Qt::FlatCap, Qt::RoundJoin);
    if (m_link.overridden)
        pen.setDashPattern({2.5, 1.5});
    p->setPen(pen);
    p->setBrush(Qt::NoBrush);
    p->drawPath(m_link.path);
}

} // namespace nest::ui
