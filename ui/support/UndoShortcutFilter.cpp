#include "UndoShortcutFilter.h"

#include <QAbstractSpinBox>
#include <QEvent>
#include <QKeyEvent>
#include <QLineEdit>

namespace nest::ui {

namespace {

// The spin box `o` is, or whose line edit it is.
QAbstractSpinBox *spinBoxOf(QObject *o)
{
    if (auto *spin = qobject_cast<QAbstractSpinBox *>(o))
        return spin;
    if (qobject_cast<QLineEdit *>(o))
        return qobject_cast<QAbstractSpinBox *>(o->parent());
    return nullptr;
}

// Set while the user types into the spin box; cleared by Enter (the commit) and on focus-in.
constexpr const char *kTyping = "nestTypingUncommitted";

} // namespace

bool UndoShortcutFilter::eventFilter(QObject *watched, QEvent *event)
{
    const QEvent::Type type = event->type();
    if (type != QEvent::ShortcutOverride && type != QEvent::KeyPress && type != QEvent::FocusIn)
        return false;
    QAbstractSpinBox *spin = spinBoxOf(watched);
    if (!spin)
        return false;
    if (type == QEvent::FocusIn) {
        spin->setProperty(kTyping, false);
        return false;
    }
    auto *key = static_cast<QKeyEvent *>(event);
    const bool undoKey = key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo);
    if (type == QEvent::KeyPress) {
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter)
            spin->setProperty(kTyping, false);   // committed: one step on the undo stack
        else if (!undoKey && (!key->text().isEmpty() || key->key() == Qt::Key_Backspace || key->key() == Qt::Key_Delete))
            spin->setProperty(kTyping, true);
        return false;
    }
    if (!undoKey || spin->property(kTyping).toBool())
        return false;
    key->ignore();   // not claimed: the window's shortcut takes the key
    return true;
}

} // namespace nest::ui
