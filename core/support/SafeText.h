#pragma once
// Text that leaves the tool inside another language (issue 48, docs/reliability.md "Names
// and quoting"): host names checked where they are read, values quoted by the shell's own
// rules, comment lines that cannot end early. A cluster's node names become the HOSTS of the
// exported launch scripts, DeepSpeed's --include list and the hostfile; a name such as
// "n1;$(rm -rf ~)" or one with a newline would run, or break the script, when the user ran it.
// So node names are refused on load and import (hostNameProblem), and every value the
// exporters write into bash is quoted (shellQuote) and every comment line is flattened
// (commentText), even for names the loaders would refuse.
#include <cstddef>
#include <string>
#include <string_view>

namespace nest {

// The longest host name accepted (a DNS name is at most 253 characters).
inline constexpr std::size_t maxHostNameLength = 253;

// "" when `name` is a host name: 1..253 of ASCII letters, digits, '-', '.' and '_', not
// starting with '-' (a leading '-' reads as an option to the launchers). Otherwise the reason,
// naming the first offending character: "'n1;x' is not a host name: ';' at position 3 (a host
// name is letters, digits, '-', '.' and '_')". Control and non-ASCII bytes are shown escaped
// (\n, \x1b, \xc3), so the message itself stays on one line.
std::string hostNameProblem(std::string_view name);

// `text` with control characters, DEL and the Unicode line and paragraph separators (U+0085,
// U+2028, U+2029) written as escapes (\n, \r, \t, \x1b, \u2028): one line in any language
// whose comments end at a line break. Everything else, non-ASCII letters included, is kept.
std::string oneLine(std::string_view text);

// `text` as one bash word with no expansion: unchanged when it is non-empty and made only of
// ASCII letters, digits and  _ - . / : , @ +  (none special to bash anywhere in a word), else
// in single quotes with each ' written as '\'' ("it's" -> 'it'\''s'). Bytes
// pass through unchanged inside the quotes, newlines and non-ASCII included: the word is the
// value, byte for byte.
std::string shellQuote(std::string_view text);

} // namespace nest
