#include "TextCase.h"

#include <cctype>
#include <cstdio>

namespace nest {

std::string asciiLower(std::string s)
{
    for (char &c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string presetKey(std::string s)
{
    for (char &c : s)
        c = c == '_' || c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string fixedDecimals(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

} // namespace nest
