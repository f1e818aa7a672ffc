#pragma once
// Core messages are shared by nest-cli and the window; where one tells the user which
// command-line flag to use ("give it with --seq N", "a smaller --max-stages"), the window
// names its own control instead (issue 25: GUI messages must not cite CLI flags).
#include <QString>

namespace nest::ui {

// `message` with every "--flag [VALUE]" replaced by the window's control for it ("the
// Sequence length field", "Max stages in the Search dock", ...); unknown flags lose their
// dashes ("the 'budget' setting").
QString windowWording(const QString &message);

// "1 stage", "4 stages": a count with the noun in the right number (English; `singular` and
// `plural` are translatable words).
QString counted(long long n, const QString &singular, const QString &plural);

} // namespace nest::ui
