#include "ScrollWheelFilter.h"

#include <QAbstractSpinBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QScrollArea>
#include <QWheelEvent>

namespace nest::ui {

namespace {

// The spin or combo box `o` is, or that `o` is part of (a spin box's line edit, an editable
// combo box's line edit); nullptr for anything else.
QWidget *valueBoxOf(QObject *o)
{
    for (int depth = 0; o && depth < 2; ++depth, o = o->parent()) {
        if (auto *spin = qobject_cast<QAbstractSpinBox *>(o))
            return spin;
        if (auto *combo = qobject_cast<QComboBox *>(o))
            return combo;
    }
    return nullptr;
}

QScrollArea *scrollAreaAbove(QWidget *w)
{
    for (QWidget *p = w->parentWidget(); p; p = p->parentWidget())
        if (auto *area = qobject_cast<QScrollArea *>(p))
            return area;
    return nullptr;
}

} // namespace

bool ScrollWheelFilter::eventFilter(QObject *watched, QEvent *event)
{
    if (event->type() == QEvent::Polish) {
        // Before the box first shows: Tab and click focus only, no focus from the wheel.
        if (QWidget *box = valueBoxOf(watched); box && box == watched && box->focusPolicy() == Qt::WheelFocus)
            box->setFocusPolicy(Qt::StrongFocus);
        return false;
    }
    if (event->type() != QEvent::Wheel)
        return false;
    QWidget *box = valueBoxOf(watched);
    if (!box || box->hasFocus())
        return false;
    QScrollArea *area = scrollAreaAbove(box);
    if (!area)
        return false;
    // The scroll area's viewport scrolls as if the pointer were over empty panel space.
    auto *wheel = static_cast<QWheelEvent *>(event);
    const QPointF at = area->viewport()->mapFromGlobal(wheel->globalPosition());
    QWheelEvent forwarded(at, wheel->globalPosition(), wheel->pixelDelta(), wheel->angleDelta(), wheel->buttons(),
                          wheel->modifiers(), wheel->phase(), wheel->inverted(), wheel->source());
    QCoreApplication::sendEvent(area->viewport(), &forwarded);
    return true;
}

} // namespace nest::ui
