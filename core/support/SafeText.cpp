#include "SafeText.h"

#include <cstdio>

namespace nest {

namespace {

bool asciiAlnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::string hexByte(unsigned char c)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    return buf;
}

// One byte as a message shows it: the character, or an escape for control and non-ASCII bytes.
std::string shown(unsigned char c)
{
    switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
    }
    if (c < 0x20 || c >= 0x7f)
        return hexByte(c);
    return std::string(1, static_cast<char>(c));
}

} // namespace

std::string oneLine(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        // U+0085 (C2 85), U+2028 (E2 80 A8), U+2029 (E2 80 A9): line breaks to YAML 1.1 and
        // some editors.
        if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
            out += "\\u0085";
            ++i;
            continue;
        }
        if (c == 0xe2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
            (static_cast<unsigned char>(text[i + 2]) == 0xa8 || static_cast<unsigned char>(text[i + 2]) == 0xa9)) {
            out += static_cast<unsigned char>(text[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
            i += 2;
            continue;
        }
        if (c < 0x20 || c == 0x7f)
            out += shown(c);
        else
            out += static_cast<char>(c);
    }
    return out;
}

std::string hostNameProblem(std::string_view name)
{
    const std::string rule = " (a host name is ASCII letters, digits, '-', '.' and '_')";
    if (name.empty())
        return "an empty host name" + rule;
    const std::string quoted = "'" + oneLine(name.substr(0, 80)) + (name.size() > 80 ? "..." : "") + "'";
    if (name.size() > maxHostNameLength)
        return quoted + " is not a host name: " + std::to_string(name.size()) + " characters, above the limit of " +
               std::to_string(maxHostNameLength);
    for (size_t i = 0; i < name.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(name[i]);
        if (asciiAlnum(c) || c == '.' || c == '_' || (c == '-' && i > 0))
            continue;
        if (c == '-')
            return quoted + " is not a host name: it starts with '-', which launchers read as an option" + rule;
        const std::string what = c == ' ' ? "a space" : c < 0x20 || c >= 0x7f ? shown(c) : "'" + shown(c) + "'";
        return quoted + " is not a host name: " + what + " at position " + std::to_string(i + 1) + rule;
    }
    return {};
}

std::string shellQuote(std::string_view text)
{
    bool bare = !text.empty();
    for (const char ch : text) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (!(asciiAlnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == ',' || c == '@' ||
              c == '+')) {
            bare = false;
            break;
        }
    }
    if (bare)
        return std::string(text);
    std::string out = "'";
    for (const char ch : text) {
        if (ch == '\'')
            out += "'\\''";
        else
            out += ch;
    }
    out += "'";
    return out;
}

} // namespace nest
