#pragma once
// The one message form of the cluster importers: "FILE:LINE: REASON" ("FILE: REASON" when
// no line applies), as compilers write it, so an editor can jump to the line.
#include <string>
#include <string_view>

namespace nest {

inline std::string importError(std::string_view file, int line, std::string_view reason)
{
    std::string out(file);
    if (line > 0)
        out += ":" + std::to_string(line);
    out += ": ";
    out += reason;
    return out;
}

} // namespace nest
