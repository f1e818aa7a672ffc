#pragma once
// Ctrl+Z right after a value was committed in a spin box: the spin box's line edit claims
// the Undo and Redo keys (its own text history) although its edit is already one step on
// the document's undo stack, so the key did nothing while Edit ▸ Undo worked (issue 25).
// This filter, installed on the application, lets the window's Undo / Redo shortcuts have
// the keys whenever nothing was typed into the focused spin box since its last commit
// (Enter, or focus leaving and coming back); while a value is being typed the line edit
// keeps its own undo.
#include <QObject>

namespace nest::ui {

class UndoShortcutFilter : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
};

} // namespace nest::ui
