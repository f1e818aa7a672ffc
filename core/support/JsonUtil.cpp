#include "JsonUtil.h"

#include "FileGuard.h"
#include "ToolVersion.h"

#include <algorithm>
#include <cmath>

namespace nest {

JsonError::JsonError(std::string path, std::string reason)
    : std::runtime_error(path.empty() ? reason : path + ": " + reason)
    , m_path(std::move(path))
    , m_reason(std::move(reason))
{
}

std::string formatError(std::string_view file, std::string_view path, std::string_view reason)
{
    std::string out;
    if (!file.empty())
        out += std::string(file) + ": ";
    if (!path.empty())
        out += "at " + std::string(path) + ": ";
    out += reason;
    if (!file.empty())
        out += newerVersionNote(file);  // the file came from a newer NEST Planner (ToolVersion.h)
    return out;
}

std::string childPath(std::string_view parent, std::string_view key)
{
    if (parent.empty())
        return std::string(key);
    return std::string(parent) + "." + std::string(key);
}

std::string childPath(std::string_view parent, size_t index)
{
    return std::string(parent) + "[" + std::to_string(index) + "]";
}

static std::string lineColumn(const std::string &text, size_t byte)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < text.size() && i + 1 < byte; ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

namespace {

// Finds the JSON path of a value nlohmann's parser rejects after the lexer accepted it (a number
// that overflows a double, "1e999", is reported as out_of_range 406 without a position).
class PathSax {
public:
    bool null() { return value(); }
    bool boolean(bool) { return value(); }
    bool number_integer(Json::number_integer_t) { return value(); }
    bool number_unsigned(Json::number_unsigned_t) { return value(); }
    bool number_float(Json::number_float_t, const std::string &) { return value(); }
    bool string(std::string &) { return value(); }
    bool binary(Json::binary_t &) { return value(); }
    bool start_object(std::size_t) { return open(false); }
    bool start_array(std::size_t) { return open(true); }
    bool key(std::string &k)
    {
        m_frames.back().key = k;
        return true;
    }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &e)
    {
        errorPath = path();
        reason = e.what();
        if (const auto pos = reason.find("] "); pos != std::string::npos)
            reason = reason.substr(pos + 2);
        return false;
    }

    std::string errorPath, reason;
    size_t depthLimit = 0;  // 0: none; else stop (tooDeep) at the first value nested deeper
    bool tooDeep = false;

private:
    struct Frame {
        bool array = false;
        size_t index = 0;
        std::string key;
    };
    // path() with long keys cut and, past 12 levels, the middle levels left out:
    // "a.b.c.d.e.f.g.h ...(244 levels)... [0][0][0][0]".
    std::string shortPath() const
    {
        std::vector<std::string> parts;
        for (const auto &f : m_frames) {
            if (f.array) {
                parts.push_back("[" + std::to_string(f.index) + "]");
            } else {
                std::string key = f.key.size() > 40 ? f.key.substr(0, 40) + "..." : f.key;
                parts.push_back(parts.empty() ? key : "." + key);
            }
        }
        std::string p;
        for (size_t i = 0; i < parts.size(); ++i) {
            if (parts.size() > 12 && i == 8) {
                p += " ...(" + std::to_string(parts.size() - 12) + " levels)... ";
                i = parts.size() - 4;
                p += parts[i][0] == '.' ? parts[i].substr(1) : parts[i];
                continue;
            }
            p += parts[i];
        }
        return p;
    }
    std::string path() const
    {
        std::string p;
        for (const auto &f : m_frames)
            p = f.array ? childPath(p, f.index) : childPath(p, f.key);
        return p;
    }
    bool value()
    {
        if (!m_frames.empty() && m_frames.back().array)
            ++m_frames.back().index;
        return true;
    }
    bool open(bool array)
    {
        if (depthLimit > 0 && m_frames.size() >= depthLimit) {
            // The path of the first value nested one level too deep, shortened.
            errorPath = shortPath();
            tooDeep = true;
            return false;
        }
        m_frames.push_back({array, 0, {}});
        return true;
    }
    bool close()
    {
        m_frames.pop_back();
        return value();
    }
    std::vector<Frame> m_frames;
};

// The deepest nesting of objects and arrays in `text`, brackets inside strings not counted: a
// linear scan, before nlohmann_json builds (and later copies, recursively) the tree. Malformed
// text is left to the parser.
int nestingDepth(const std::string &text)
{
    int depth = 0, deepest = 0;
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '{' || c == '[') {
            deepest = std::max(deepest, ++depth);
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return deepest;
}

} // namespace

Result<Json> parseJsonText(const std::string &text, const std::string &origin)
{
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        return Result<Json>::failure(formatError(origin, "", "the file is empty"));
    if (const int depth = nestingDepth(text); depth > limits::maxJsonDepth) {
        PathSax sax;
        sax.depthLimit = limits::maxJsonDepth;
        Json::sax_parse(text, &sax, Json::input_format_t::json, false);
        const std::string reason = "objects and arrays nested more than " + std::to_string(limits::maxJsonDepth) +
                                   " levels deep (" + std::to_string(depth) + "); no NEST file needs more than about 40";
        if (sax.tooDeep)
            return Result<Json>::failure(formatError(origin, sax.errorPath.empty() ? "(top level)" : sax.errorPath,
                                                     reason));
        // The scan counted brackets the parser would reject first (malformed text): fall
        // through to the parser's own message.
    }
    try {
        return Json::parse(text);
    } catch (const Json::parse_error &e) {
        std::string what = e.what();
        // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line..."
        const auto pos = what.find("] ");
        if (pos != std::string::npos)
            what = what.substr(pos + 2);
        return Result<Json>::failure(formatError(
            origin, "", "malformed JSON near " + lineColumn(text, e.byte) + " (" + what + ")"));
    } catch (const Json::exception &e) {
        // The lexer accepted something the parser then rejected without a position (a
        // number that overflows a double, "1e999": out_of_range 406): find its path.
        PathSax sax;
        Json::sax_parse(text, &sax, Json::input_format_t::json, false);
        if (!sax.reason.empty())
            return Result<Json>::failure(
                formatError(origin, sax.errorPath, "number out of range, not a finite double (" + sax.reason + ")"));
        return Result<Json>::failure(formatError(origin, "", std::string("cannot parse: ") + e.what()));
    }
}

Result<Json> readJsonFile(const std::string &file)
{
    const Result<std::string> text = readFileText(file);
    if (!text)
        return Result<Json>::failure(text.error());
    Result<Json> j = parseJsonText(*text, file);
    if (j) {
        // The tool version the file was written by (ToolVersion.h) is no part of any format.
        Json value = std::move(j).value();
        if (const auto problem = takeToolVersion(value, file))
            return Result<Json>::failure(formatError(file, kToolVersionKey, *problem));
        return value;
    }
    return j;
}

Result<bool> writeJsonFile(const std::string &file, const Json &j)
{
    // Text from the outside (a file name as a cluster's name) need not be UTF-8: such bytes
    // become U+FFFD instead of an exception (issue 48).
    return writeFileAtomically(file, jsonFileText(j));  // stamped with the tool's version
}

void requireObject(const Json &j, const std::string &path)
{
    if (!j.is_object())
        throw JsonError(path, std::string("expected an object, found ") + j.type_name());
}

void requireKnownKeys(const Json &obj, const std::string &path, std::initializer_list<const char *> known)
{
    requireObject(obj, path);
    for (const auto &item : obj.items()) {
        bool ok = false;
        for (const char *k : known)
            ok = ok || item.key() == k;
        if (ok)
            continue;
        std::string list;
        for (const char *k : known)
            list += (list.empty() ? "" : ", ") + std::string(k);
        throw JsonError(childPath(path, item.key()), "unknown key (expected one of: " + list + ")");
    }
}

void requireArray(const Json &j, const std::string &path)
{
    if (!j.is_array())
        throw JsonError(path, std::string("expected an array, found ") + j.type_name());
}

bool has(const Json &obj, std::string_view key)
{
    return obj.is_object() && obj.contains(std::string(key)) && !obj.at(std::string(key)).is_null();
}

const Json &requireKey(const Json &obj, std::string_view key, const std::string &path)
{
    requireObject(obj, path);
    const auto it = obj.find(std::string(key));
    if (it == obj.end() || it->is_null())
        throw JsonError(childPath(path, key), "required field is missing");
    return *it;
}

std::string getString(const Json &obj, std::string_view key, const std::string &path)
{
    const Json &v = requireKey(obj, key, path);
    if (!v.is_string())
        throw JsonError(childPath(path, key), std::string("expected a string, found ") + v.type_name());
    return v.get<std::string>();
}

std::string getString(const Json &obj, std::string_view key, const std::string &path,
                      const std::string &fallback)
{
    return has(obj, key) ? getString(obj, key, path) : fallback;
}

double asNumber(const Json &v, const std::string &path)
{
    if (!v.is_number())
        throw JsonError(path, std::string("expected a number, found ") + v.type_name());
    const double x = v.get<double>();
    if (!std::isfinite(x))
        throw JsonError(path, "must be a finite number");
    return x;
}

long long asInt(const Json &v, const std::string &path, long long minValue, long long maxValue)
{
    const double x = asNumber(v, path);
    if (std::floor(x) != x)
        throw JsonError(path, "expected a whole number, found " + v.dump());
    if (x < static_cast<double>(minValue) || x > static_cast<double>(maxValue))
        throw JsonError(path, "must be between " + std::to_string(minValue) + " and " +
                                  std::to_string(maxValue) + ", found " + v.dump());
    return static_cast<long long>(x);
}

double getNumber(const Json &obj, std::string_view key, const std::string &path)
{
    return asNumber(requireKey(obj, key, path), childPath(path, key));
}

double getNumber(const Json &obj, std::string_view key, const std::string &path, double fallback)
{
    return has(obj, key) ? getNumber(obj, key, path) : fallback;
}

double getPositive(const Json &obj, std::string_view key, const std::string &path)
{
    const double x = getNumber(obj, key, path);
    if (!(x > 0))
        throw JsonError(childPath(path, key), "must be positive, found " + obj.at(std::string(key)).dump());
    return x;
}

double getPositive(const Json &obj, std::string_view key, const std::string &path, double fallback)
{
    return has(obj, key) ? getPositive(obj, key, path) : fallback;
}

double getNonNegative(const Json &obj, std::string_view key, const std::string &path)
{
    const double x = getNumber(obj, key, path);
    if (x < 0)
        throw JsonError(childPath(path, key), "must not be negative, found " + obj.at(std::string(key)).dump());
    return x;
}

double getNonNegative(const Json &obj, std::string_view key, const std::string &path, double fallback)
{
    return has(obj, key) ? getNonNegative(obj, key, path) : fallback;
}

long long getInt(const Json &obj, std::string_view key, const std::string &path, long long minValue,
                 long long maxValue)
{
    return asInt(requireKey(obj, key, path), childPath(path, key), minValue, maxValue);
}

long long getInt(const Json &obj, std::string_view key, const std::string &path, long long minValue,
                 long long maxValue, long long fallback)
{
    return has(obj, key) ? getInt(obj, key, path, minValue, maxValue) : fallback;
}

void requireInRange(double value, const Range &range, const std::string &path)
{
    if (auto problem = rangeProblem(value, range))
        throw JsonError(path, *problem);
}

double getInRange(const Json &obj, std::string_view key, const std::string &path, const Range &range)
{
    const double x = getNumber(obj, key, path);
    requireInRange(x, range, childPath(path, key));
    return x;
}

double getInRange(const Json &obj, std::string_view key, const std::string &path, const Range &range,
                  double fallback)
{
    return has(obj, key) ? getInRange(obj, key, path, range) : fallback;
}

bool getBool(const Json &obj, std::string_view key, const std::string &path, bool fallback)
{
    if (!has(obj, key))
        return fallback;
    const Json &v = obj.at(std::string(key));
    if (!v.is_boolean())
        throw JsonError(childPath(path, key), std::string("expected true or false, found ") + v.type_name());
    return v.get<bool>();
}

} // namespace nest
