// The mouse wheel over the search dock scrolls the dock (ScrollWheelFilter): before, every spin
// and combo box passing under the pointer took the wheel, so scrolling down the dock set the
// memory headroom of the quick-start workspace from 5 % to 0 % (found driving the window under
// Xvfb). A box the user clicked or tabbed into still steps with the wheel.
#include "SearchPanel.h"
#include "TestWindow.h"
#include "WorkspaceDocument.h"

#include <QAbstractScrollArea>
#include <QDoubleSpinBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QUndoStack>
#include <QtTest>

using namespace nest;
using namespace nest::ui;

namespace {

// One notch of the wheel down over `w`'s centre, delivered as the window system does (to the
// widget under the pointer, through the application's filters).
void wheelDown(QWidget *w)
{
    const QPointF local(w->width() / 2.0, w->height() / 2.0);
    QWheelEvent e(local, w->mapToGlobal(local), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(w, &e);
}

QScrollArea *scrollAreaOf(QWidget *w)
{
    for (QWidget *p = w->parentWidget(); p; p = p->parentWidget())
        if (auto *area = qobject_cast<QScrollArea *>(p))
            return area;
    return nullptr;
}

} // namespace

class TestScrollWheel : public QObject {
    Q_OBJECT
private slots:
    void theWheelScrollsTheDockNotTheFieldUnderThePointer()
    {
        QTemporaryDir dir;
        auto window = uitest::testWindow(dir.filePath(QStringLiteral("settings.ini")));
        window->resize(1200, 600);  // short: the search dock scrolls
        window->show();
        QVERIFY(QTest::qWaitForWindowExposed(window.get()));
        uitest::openQuickstart(*window);
        QDoubleSpinBox *headroom = window->searchPanel()->headroomSpin();
        QScrollArea *area = scrollAreaOf(headroom);
        QVERIFY(area);
        QScrollBar *bar = area->verticalScrollBar();
        QVERIFY(bar->maximum() > 0);
        const double before = headroom->value();
        const int undoSteps = window->document()->undoStack()->count();
        QVERIFY(!headroom->hasFocus());
        const int top = bar->value();
        wheelDown(headroom);
        QCOMPARE(headroom->value(), before);  // not stepped
        QCOMPARE(window->document()->undoStack()->count(), undoSteps);  // nothing to undo
        QVERIFY(bar->value() > top);  // the dock scrolled instead
        QVERIFY(!headroom->hasFocus());  // and the wheel gave it no focus
        QCOMPARE(headroom->focusPolicy(), Qt::StrongFocus);
        // Focused (a click or Tab), the box steps with the wheel as before.
        headroom->setFocus(Qt::TabFocusReason);
        QTRY_VERIFY(headroom->hasFocus());
        wheelDown(headroom);
        QVERIFY(headroom->value() < before);
    }
};

QTEST_MAIN(TestScrollWheel)
#include "test_scroll_wheel.moc"
