#include "TopologyItems.h"

#include "ClusterDocument.h"
#include "ClusterTreeModel.h"
#include "TopologyScene.h"

#include <QPainter>
#include <QStyleOptionGraphicsItem>

namespace nest::ui {

namespace {

const QColor kSelection(0x2d, 0x7f, 0xf9);
const QColor kText(0x22, 0x2b, 0x36);
const QColor kMuted(0x6b, 0x77, 0x85);

QFont font(double pointSize, bool bold = false)
{
    QFont f;
    f.setPointSizeF(pointSize);
    f.setBold(bold);
    return f;
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

} // namespace

// --- GroupItem ----------------------------------------------------------------------

GroupItem::GroupItem(const TopologyScene *scene, int group, GroupUid uid, const TopologyLayout::Box &box)
    : m_scene(scene)
    , m_group(group)
    , m_uid(uid)
    , m_box(box)
{
    m_level = scene->document()->topology().groups[group].level;
    setFlag(ItemIsSelectable);
    setZValue(box.container ? -10 + m_level * -1.0 : 1);
    setToolTip(QString::fromStdString(scene->document()->topology().groups[group].name));
}

QRectF GroupItem::boundingRect() const
{
    return (m_box.container ? m_box.rect.united(m_box.switchRect) : m_box.switchRect)
        .adjusted(-4, -4, 4, 4);
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
    const bool selected = isSelected() && !m_scene->isPrinting();
    const QColor accent = bandwidthColor(t.link(m_group).bandwidth);
    if (m_box.container) {
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
        p->setPen(pen);
        p->setBrush(fill);
        p->drawRoundedRect(m_box.rect, 8, 8);
        if (m_level == 1 && lod > 0.35 && !m_box.dropSlot.isEmpty() && !m_scene->isPrinting()) {
            p->setPen(QPen(QColor(0xc3, 0xcb, 0xd4), 1, Qt::DashLine));
            p->setBrush(Qt::NoBrush);
            p->drawRoundedRect(m_box.dropSlot, 4, 4);
            if (lod > 0.6) {
                p->setFont(font(7));
                p->setPen(QColor(0xa0, 0xa9, 0xb4));
                p->drawText(m_box.dropSlot, Qt::AlignCenter, QObject::tr("drop a node here"));
            }
        }
    }
    paintSwitch(p, m_box.switchRect, accent, lod);
    if (selected && !m_box.container) {
        p->setPen(QPen(kSelection, 2.5));
        p->setBrush(Qt::NoBrush);
        p->drawRoundedRect(m_box.switchRect.adjusted(-3, -3, 3, 3), 5, 5);
    }
    if (lod < 0.25)
        return;
    const QString name = QString::fromStdString(g.name);
    const QString detail = QObject::tr("%1 · %2 dev · %3")
                               .arg(QString::fromStdString(t.levels[g.level].name))
                               .arg(t.deviceCountUnder(m_group))
                               .arg(formatBandwidth(t.link(m_group).bandwidth));
    p->setPen(kText);
    if (m_box.container) {
        const QRectF label(m_box.rect.left() + 6, m_box.switchRect.bottom() + 1,
                           m_box.rect.width() - 12, 16);
        p->setFont(font(8, true));
        p->drawText(label, Qt::AlignHCenter | Qt::AlignTop, name);
        if (m_level >= 2 && lod > 0.5) {
            p->setFont(font(7));
            p->setPen(kMuted);
            p->drawText(label.translated(0, 14), Qt::AlignHCenter | Qt::AlignTop, detail);
        }
    } else {
        // The root: name and details to the right of its switch.
        const QRectF label(m_box.switchRect.right() + 10, m_box.switchRect.top() - 4, 400, 16);
        p->setFont(font(9, true));
        p->drawText(label, Qt::AlignLeft | Qt::AlignTop, name);
        p->setFont(font(7.5));
        p->setPen(kMuted);
        p->drawText(label.translated(0, 15), Qt::AlignLeft | Qt::AlignTop, detail);
    }
}

// --- NodeItem -----------------------------------------------------------------------

NodeItem::NodeItem(const TopologyScene *scene, int group, GroupUid uid, const QRectF &rect)
    : m_scene(scene)
    , m_group(group)
    , m_uid(uid)
    , m_rect(rect)
{
    setFlag(ItemIsSelectable);
    setZValue(5);
    const Topology &t = scene->document()->topology();
    const TopoGroup &g = t.groups[group];
    const DeviceSpec &d = t.deviceTypes[std::clamp<int>(g.deviceType, 0, int(t.deviceTypes.size()) - 1)];
    setToolTip(QObject::tr("%1: %2 × %3 (%4 GB, %5 TFLOP/s each)\nDrag onto another rack to move it.")
                   .arg(QString::fromStdString(g.name)).arg(g.devices.size())
                   .arg(QString::fromStdString(d.name)).arg(d.memoryBytes / 1e9, 0, 'g', 4)
                   .arg(d.peakFlops / 1e12, 0, 'g', 4));
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
    const QColor nvlink = bandwidthColor(t.link(m_group).bandwidth);

    QPen border(selected ? kSelection : nvlink.darker(115), selected ? 3 : 1.6);
    if (lod * layout::kDevice < 5) {
        // Folded: one glyph for the node, coloured by device type.
        p->setPen(border);
        p->setBrush(devColor.lighter(150));
        p->drawRect(m_rect);
        if (lod * m_rect.height() > 12) {
            p->setPen(kText);
            p->setFont(font(std::max(7.0, 7 / std::max(lod, 0.05))));
            p->drawText(m_rect, Qt::AlignCenter, QStringLiteral("%1×").arg(n));
        }
        return;
    }
    p->setPen(border);
    p->setBrush(Qt::white);
    p->drawRoundedRect(m_rect, 4, 4);
    if (lod > 0.45) {
        const QRectF title(m_rect.left() + 6, m_rect.top() + 2, m_rect.width() - 12, layout::kNodeTitle - 3);
        p->setFont(font(7.5, true));
        p->setPen(kText);
        p->drawText(title, Qt::AlignLeft | Qt::AlignVCenter, QString::fromStdString(g.name));
        p->setFont(font(6.5));
        p->setPen(kMuted);
        p->drawText(title, Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(typeName));
    }
    p->setPen(QPen(devColor.darker(135), 0.8));
    p->setBrush(devColor);
    for (int i = 0; i < n; ++i)
        p->drawRoundedRect(deviceRect(m_rect, n, i), 2.5, 2.5);
}

// --- LinkItem -----------------------------------------------------------------------

LinkItem::LinkItem(const TopologyLayout::Link &link)
    : m_path(link.path)
    , m_color(bandwidthColor(link.bandwidth))
    , m_width(bandwidthWidth(link.bandwidth))
{
    m_bounds = m_path.boundingRect().adjusted(-m_width, -m_width, m_width, m_width);
    setZValue(0);
    setAcceptedMouseButtons(Qt::NoButton);
}

QRectF LinkItem::boundingRect() const
{
    return m_bounds;
}

void LinkItem::paint(QPainter *p, const QStyleOptionGraphicsItem *, QWidget *)
{
    p->setPen(QPen(m_color, m_width, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    p->setBrush(Qt::NoBrush);
    p->drawPath(m_path);
}

} // namespace nest::ui
