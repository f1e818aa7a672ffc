#include "TopologyView.h"

#include "ClusterDocument.h"
#include "ClusterTreeModel.h"
#include "TopologyLayout.h"
#include "TopologyScene.h"

#include <QGraphicsItem>
#include <QKeyEvent>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace nest::ui {

TopologyView::TopologyView(TopologyScene *scene, QWidget *parent)
    : QGraphicsView(scene, parent)
    , m_scene(scene)
{
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setDragMode(RubberBandDrag);
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
}

double TopologyView::zoom() const
{
    return transform().m11();
}

void TopologyView::setZoom(double z)
{
    z = std::clamp(z, kMinZoom, kMaxZoom);
    setTransform(QTransform::fromScale(z, z));
    viewport()->update();
    emit zoomChanged(z);
}

void TopologyView::scaleBy(double factor)
{
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
    if (rect.isEmpty() || viewport()->width() < 10 || viewport()->height() < 10)
        return;
    const QRectF r = rect.adjusted(-20, -20, 20, 20);
    const double z = std::clamp(std::min(viewport()->width() / r.width(),
                                         viewport()->height() / r.height()) * 0.98,
                                kMinZoom, kMaxZoom);
    setTransform(QTransform::fromScale(z, z));
    centerOn(r.center());
    viewport()->update();
    emit zoomChanged(z);
}

void TopologyView::fitToView()
{
    fitRect(m_scene->diagramRect());
}

void TopologyView::fitSelection()
{
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
        setDragMode(RubberBandDrag);
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

void TopologyView::drawForeground(QPainter *painter, const QRectF &)
{
    const Topology &t = m_scene->document()->topology();
    if (t.levelCount() == 0)
        return;
    painter->save();
    painter->resetTransform();
    painter->setRenderHint(QPainter::Antialiasing);
    QFont f = font();
    f.setPointSizeF(8.5);
    painter->setFont(f);
    const QFontMetrics fm(f);
    const int lineH = fm.height() + 4;
    QStringList lines;
    int textW = fm.horizontalAdvance(tr("Links by level"));
    for (int l = 0; l < t.levelCount(); ++l) {
        const LinkParams &link = t.levels[l].link;
        QString s = tr("L%1 %2  %3").arg(l).arg(QString::fromStdString(t.levels[l].name),
                                             formatBandwidth(link.bandwidth));
        if (link.oversubscription > 1)
            s += tr("  %1:1").arg(link.oversubscription, 0, 'g', 3);
        lines << s;
        textW = std::max(textW, fm.horizontalAdvance(s));
    }
    const QRect box(10, 10, textW + 48, lineH * (t.levelCount() + 1) + 10);
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
    for (int l = 0; l < t.levelCount(); ++l) {
        const double bw = t.levels[l].link.bandwidth;
        const int y = box.top() + 5 + lineH * (l + 1);
        painter->setPen(QPen(bandwidthColor(bw), std::min(bandwidthWidth(bw), 6.0), Qt::SolidLine,
                             Qt::RoundCap));
        painter->drawLine(box.left() + 12, y + lineH / 2, box.left() + 32, y + lineH / 2);
        painter->setPen(QColor(0x22, 0x2b, 0x36));
        painter->drawText(QRect(box.left() + 40, y, textW + 4, lineH), Qt::AlignVCenter, lines[l]);
    }
    painter->restore();
}

} // namespace nest::ui
