#pragma once
// The mouse wheel over a docked panel scrolls the panel, not the value under the pointer.
// The search, model and property panels sit in scroll areas full of spin boxes and combo
// boxes; Qt gives each of them the wheel (and the focus with it), so scrolling down the
// search dock stepped whatever field passed under the pointer (the memory headroom went from
// 5 % to 0 %, an undo step the user did not mean). This filter, installed on the
// application, takes the wheel focus from spin and combo boxes (they keep Tab and click
// focus) and, while one inside a scroll area does not have the focus, hands its wheel events
// to the scroll area. A focused box (clicked or tabbed into) still steps with the wheel.
#include <QObject>

namespace nest::ui {

class ScrollWheelFilter : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
};

} // namespace nest::ui
