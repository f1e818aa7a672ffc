#include "TopologyView.h"

#include "WorkspaceDocument.h"
#include "ClusterTreeModel.h"
#include "TopologyLayout.h"
#include "TopologyScene.h"

#include "TopologyItems.h"

#include <QContextMenuEvent>
#include <QGraphicsItem>
#include <QKeyEvent>
#include <QMenu>
#include <QPainter>
#include <QScrollBar>
#include <QTimer>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace nest::ui {

TopologyView::TopologyView(TopologyScene *scene, QWidget *parent)
    : QGraphicsView(scene, parent)
    , m_scene(scene)
{
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    // A read-only scene selects nothing: the left button pans instead.
    setDragMode(scene->isReadOnly() ? ScrollHandDrag : RubberBandDrag);
    setRubberBandSelectionMode(Qt::ContainsItemShape);
    setTransformationAnchor(AnchorUnderMouse);
    setResizeAnchor(AnchorViewCenter);
    setViewportUpdateMode(SmartViewportUpdate);
    setOptimizationFlags(DontAdjustForAntialiasing);
    setFocusPolicy(Qt::StrongFocus);
    setFrameShape(QFrame::NoFrame);
    // The legend is painted in viewport coordinates: repaint it fully when scrolling.
    for (QScrollBar *bar : {horizontalScrollBar(), verticalScrollBar()})
        connect(bar, &QScrollBar::valueChanged, viewport(), qOverload<>(&QWidget::update));
    // fitRect widens the view's scene rect (to place the diagram clear of the legend); a
    // changed diagram must stay reachable by scrolling.
    connect(scene, &QGraphicsScene::sceneRectChanged, this, [this](const QRectF &rect) {
        setSceneRect(rect.united(mapToScene(viewport()->rect()).boundingRect()));
        refitLater();
    });
    // The legend lies outside the scene's items: an edit repaints only the items it changed,
    // so repaint the legend (all of the viewport's foreground) with every change.
    connect(scene->document(), &WorkspaceDocument::clusterChanged, viewport(), qOverload<>(&QWidget::update));
}

void TopologyView::resizeEvent(QResizeEvent *event)
{
    QGraphicsView::resizeEvent(event);
    const QSize s = viewport()->size();
    if (s.width() > 50 && s.height() > 50)
        m_scene->setLayoutAspect(static_cast<double>(s.width()) / s.height());
    refitLater();
}

void TopologyView::refitLater()
{
    if (!m_autoFit || m_refitQueued)
        return;
    m_refitQueued = true;
    QTimer::singleShot(0, this, [this] {
        m_refitQueued = false;
        if (m_autoFit)
            fitToView();
    });
}

std::unique_ptr<QMenu> TopologyView::contextMenuAt(const QPointF &scenePos)
{
    auto menu = std::make_unique<QMenu>(this);
    WorkspaceDocument *doc = m_scene->document();
    const Topology &t = doc->topology();
    int group = -1;
    if (!m_scene->isReadOnly())
        for (QGraphicsItem *item : m_scene->items(scenePos)) {
            if (item->type() == NodeItemType) {
                group = static_cast<NodeItem *>(item)->group();
                break;
            }
            if (item->type() == GroupItemType) {
                group = static_cast<GroupItem *>(item)->group();
                break;
            }
        }
    // Captured by uid: an action runs after other edits may have renumbered the groups.
    const GroupUid uid = group >= 0 ? doc->uidOf(group) : GroupUid{};
    auto current = [doc, uid] { return doc->groupOf(uid); };
    if (group >= 0 && t.groups[group].level == 0) {
        menu->addAction(tr("Duplicate"), doc, [doc, current] { doc->duplicateGroup(current()); });
        menu->addAction(tr("Delete"), doc, [doc, current] { doc->removeGroups({current()}); });
        QMenu *move = menu->addMenu(tr("Move to rack"));
        move->setObjectName(QStringLiteral("moveToRack"));
        for (int g = 0; g < static_cast<int>(t.groups.size()); ++g) {
            if (t.groups[g].level != 1 || g == t.groups[group].parent)
                continue;
            const GroupUid rack = doc->uidOf(g);
            move->addAction(QString::fromStdString(t.groups[g].name), doc,
                            [doc, current, rack] { doc->moveNode(current(), doc->groupOf(rack)); });
        }
        move->setEnabled(!move->isEmpty());
    } else if (group >= 0 && group != t.root) {
        if (t.groups[group].level == 1)
            menu->addAction(tr("Add Node"), doc, [doc, current] { doc->addNode(current()); });
        else
            menu->addAction(tr("Add Rack"), doc, [doc, current] { doc->addRack(current()); });
        menu->addAction(tr("Duplicate"), doc, [doc, current] { doc->duplicateGroup(current()); });
        menu->addAction(tr("Delete"), doc, [doc, current] { doc->removeGroups({current()}); });
    } else {
        if (!m_scene->isReadOnly() && !t.groups.empty())
            menu->addAction(tr("Add Rack"), doc, [doc] { doc->addRack(-1); });
        menu->addAction(tr("Fit"), this, &TopologyView::fitToView);
    }
    return menu;
}

void TopologyView::contextMenuEvent(QContextMenuEvent *event)
{
    const std::unique_ptr<QMenu> menu = contextMenuAt(mapToScene(event->pos()));
    menu->exec(event->globalPos());
    event->accept();
}

double TopologyView::zoom() const
{
    return transform().m11();
}

void TopologyView::setZoom(double z)
{
    m_autoFit = false;
    z = std::clamp(z, kMinZoom, kMaxZoom);
    setTransform(QTransform::fromScale(z, z));
    viewport()->update();
    emit zoomChanged(z);
}

void TopologyView::scaleBy(double factor)
{
    m_autoFit = false;   // the user's zoom stays until the next fit
    const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
    if (target == zoom())
        return;
    const double f = target / zoom();
    scale(f, f);
    viewport()->update();
    emit zoomChanged(zoom());
}

void TopologyView::zoomIn()
{
    const ViewportAnchor a = transformationAnchor();
    setTransformationAnchor(AnchorViewCenter);
    scaleBy(1.25);
    setTransformationAnchor(a);
}

void TopologyView::zoomOut()
{
    const ViewportAnchor a = transformationAnchor();
    setTransformationAnchor(AnchorViewCenter);
    scaleBy(1 / 1.25);
    setTransformationAnchor(a);
}

void TopologyView::fitRect(const QRectF &rect)
{
    const double w = viewport()->width(), h = viewport()->height();
    if (rect.isEmpty() || w < 10 || h < 10)
        return;
    const QRectF r = rect.adjusted(-20, -20, 20, 20);
    // Keep the diagram clear of the legend in the top-left corner: fit it below the legend
    // or right of it, whichever allows the larger zoom.
    const QRect legend = legendRect();
    QRectF area(0, 0, w, h);
    double z = std::min(w / r.width(), h / r.height());
    if (!legend.isEmpty()) {
        const QRectF below(0, legend.bottom() + 6, w, h - legend.bottom() - 6);
        const QRectF right(legend.right() + 6, 0, w - legend.right() - 6, h);
        const double zBelow = below.height() > 10 ? std::min(below.width() / r.width(), below.height() / r.height()) : 0;
        const double zRight = right.width() > 10 ? std::min(right.width() / r.width(), right.height() / r.height()) : 0;
        if (std::max(zBelow, zRight) > 0) {
            area = zBelow >= zRight ? below : right;
            z = std::max(zBelow, zRight);
        }
    }
    z = std::clamp(z * 0.98, kMinZoom, kMaxZoom);
    setTransform(QTransform::fromScale(z, z));
    // The scene point for the viewport's centre that puts the diagram's centre at the
    // area's centre; the view's scene rect must reach that far (a scene smaller than the
    // viewport would otherwise just be centred).
    const QPointF c = r.center() - (area.center() - QPointF(w / 2, h / 2)) / z;
    const QRectF shown(c.x() - (w - 2) / (2 * z), c.y() - (h - 2) / (2 * z), (w - 2) / z, (h - 2) / z);
    setSceneRect(m_scene->sceneRect().united(shown));
    centerOn(c);
    viewport()->update();
    emit zoomChanged(z);
}

void TopologyView::fitToView()
{
    m_autoFit = true;
    fitRect(m_scene->diagramRect());
}

void TopologyView::fitSelection()
{
    m_autoFit = false;   // the user's choice of what to show
    QRectF r;
    for (QGraphicsItem *item : m_scene->selectedItems())
        r = r.united(item->sceneBoundingRect());
    fitRect(r.isEmpty() ? m_scene->diagramRect() : r);
}

void TopologyView::wheelEvent(QWheelEvent *event)
{
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    scaleBy(std::pow(1.2, steps));
    event->accept();
}

void TopologyView::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
        m_spaceHeld = true;
        setDragMode(ScrollHandDrag);
        setInteractive(false);
        event->accept();
        return;
    }
    if (event->modifiers() & Qt::ControlModifier) {
        if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal) {
            zoomIn();
            return;
        }
        if (event->key() == Qt::Key_Minus) {
            zoomOut();
            return;
        }
        if (event->key() == Qt::Key_0) {
            fitToView();
            return;
        }
    }
    QGraphicsView::keyPressEvent(event);
}

void TopologyView::keyReleaseEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
        m_spaceHeld = false;
        setDragMode(m_scene->isReadOnly() ? ScrollHandDrag : RubberBandDrag);
        setInteractive(true);
        event->accept();
        return;
    }
    QGraphicsView::keyReleaseEvent(event);
}

void TopologyView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() == Qt::MiddleButton) {
        m_panning = true;
        m_panLast = event->position().toPoint();
        viewport()->setCursor(Qt::ClosedHandCursor);
        event->accept();
        return;
    }
    QGraphicsView::mousePressEvent(event);
}

void TopologyView::mouseMoveEvent(QMouseEvent *event)
{
    if (m_panning) {
        const QPoint p = event->position().toPoint();
        const QPoint d = p - m_panLast;
        m_panLast = p;
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - d.x());
        verticalScrollBar()->setValue(verticalScrollBar()->value() - d.y());
        event->accept();
        return;
    }
    QGraphicsView::mouseMoveEvent(event);
}

void TopologyView::mouseReleaseEvent(QMouseEvent *event)
{
    if (m_panning && event->button() == Qt::MiddleButton) {
        m_panning = false;
        viewport()->unsetCursor();
        event->accept();
        return;
    }
    QGraphicsView::mouseReleaseEvent(event);
}

QFont TopologyView::legendFont() const
{
    QFont f = font();
    f.setPointSizeF(8.5);
    return f;
}

QStringList TopologyView::legendLines() const
{
    const Topology &t = m_scene->document()->topology();
    QStringList lines;
    for (int l = 0; l < t.levelCount(); ++l) {
        const LinkParams &link = t.levels[l].link;
        QString s = tr("L%1 %2  %3").arg(l).arg(QString::fromStdString(t.levels[l].name),
                                             formatBandwidth(link.bandwidth));
        if (link.oversubscription > 1)
            s += tr("  %1:1").arg(link.oversubscription, 0, 'g', 3);
        lines << s;
    }
    if (hasOverrides())
        lines << tr("* dashed: a group's own link");
    return lines;
}

bool TopologyView::hasOverrides() const
{
    for (const TopoGroup &g : m_scene->document()->topology().groups)
        if (g.linkOverride)
            return true;
    return false;
}

QRect TopologyView::legendRect() const
{
    const QStringList lines = legendLines();
    if (lines.isEmpty())
        return {};
    const QFontMetrics fm(legendFont());
    const int lineH = fm.height() + 4;
    int textW = fm.horizontalAdvance(tr("Links by level"));
    for (const QString &line : lines)
        textW = std::max(textW, fm.horizontalAdvance(line));
    return QRect(10, 10, textW + 48, lineH * (static_cast<int>(lines.size()) + 1) + 10);
}

void TopologyView::drawForeground(QPainter *painter, const QRectF &)
{
    const Topology &t = m_scene->document()->topology();
    if (t.levelCount() == 0)
        return;
    painter->save();
    painter->resetTransform();
    painter->setRenderHint(QPainter::Antialiasing);
    const QFont f = legendFont();
    painter->setFont(f);
    const QFontMetrics fm(f);
    const int lineH = fm.height() + 4;
    const QStringList lines = legendLines();
    const QRect box = legendRect();
    const int textW = box.width() - 48;
    painter->setPen(QColor(0xcf, 0xd6, 0xde));
    painter->setBrush(QColor(255, 255, 255, 235));
    painter->drawRoundedRect(box, 6, 6);
    painter->setPen(QColor(0x22, 0x2b, 0x36));
    QFont bold = f;
    bold.setBold(true);
    painter->setFont(bold);
    painter->drawText(QRect(box.left() + 10, box.top() + 5, textW + 30, lineH), Qt::AlignVCenter,
                      tr("Links by level"));
    painter->setFont(f);
    for (int l = 0; l < static_cast<int>(lines.size()); ++l) {
        const bool note = l >= t.levelCount();   // the override note: a dashed grey sample
        const double bw = note ? 0 : t.levels[l].link.bandwidth;
        const int y = box.top() + 5 + lineH * (l + 1);
        QPen pen(note ? QColor(0x6b, 0x77, 0x85) : levelColor(l), note ? 2.5 : std::min(bandwidthWidth(bw), 6.0),
                 Qt::SolidLine, Qt::FlatCap);
        if (note)
            pen.setDashPattern({2.5, 1.5});
        painter->setPen(pen);
        painter->drawLine(box.left() + 12, y + lineH / 2, box.left() + 32, y + lineH / 2);
        painter->setPen(QColor(0x22, 0x2b, 0x36));
        painter->drawText(QRect(box.left() + 40, y, textW + 4, lineH), Qt::AlignVCenter, lines[l]);
    }
    painter->restore();
}

} // namespace nest::ui
