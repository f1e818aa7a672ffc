#pragma once
// The fixed-pitch font of text that lines up in columns (plan JSON, launch files). The
// platform's fixed font when it is one; otherwise the first installed monospaced family
// (a fresh machine's font database can resolve the "monospace" alias to a proportional
// face, as seen on a CI run), with the fixed-pitch hint set either way.
#include <QFont>

namespace nest::ui {

QFont monospaceFont();

} // namespace nest::ui
