#pragma once
// Validating accessors over nlohmann::json that know where they are. Every loader reads
// through these so that a bad value produces one message naming the file, the JSON path
// (e.g. "levels[1].bandwidth_GBps") and the reason. Accessors throw JsonError; the public
// load functions catch it and return Result<T>::failure(formatError(file, path, reason)).
#include "Limits.h"
#include "Result.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <initializer_list>
#include <string>
#include <string_view>

namespace nest {

using Json = nlohmann::json;

class JsonError : public std::runtime_error {
public:
    JsonError(std::string path, std::string reason);
    const std::string &path() const { return m_path; }
    const std::string &reason() const { return m_reason; }

private:
    std::string m_path;
    std::string m_reason;
};

// "FILE: at PATH: REASON" ("FILE: REASON" when path is empty; "PATH: REASON" when file is).
std::string formatError(std::string_view file, std::string_view path, std::string_view reason);

// Child path helpers: childPath("levels", 2) == "levels[2]", childPath("a", "b") == "a.b".
std::string childPath(std::string_view parent, std::string_view key);
std::string childPath(std::string_view parent, size_t index);

// Reads and parses a whole file. Errors: missing, a directory, not a regular file (FIFO,
// device), above limits::maxFileBytes, unreadable, empty, malformed (with line and column).
// The message already names the file. Reads through readFileText(); the "nest_planner_version" key is taken out (ToolVersion.h).
Result<Json> readJsonFile(const std::string &file);
// Parses text; `origin` names the source in messages.
Result<Json> parseJsonText(const std::string &text, const std::string &origin);
// Writes pretty JSON (2-space indent), stamped with the tool version (ToolVersion.h), through writeFileAtomically()
// (FileGuard.h): only over a regular file, through symlinks, the previous file intact on failure.
Result<bool> writeJsonFile(const std::string &file, const Json &j);

// --- accessors (throw JsonError) --------------------------------------------------------
void requireObject(const Json &j, const std::string &path);
void requireArray(const Json &j, const std::string &path);
// An object whose every key is one of `known` (typos never pass): else JsonError at the
// first unknown key, listing the known ones.
void requireKnownKeys(const Json &obj, const std::string &path, std::initializer_list<const char *> known);
const Json &requireKey(const Json &obj, std::string_view key, const std::string &path);
bool has(const Json &obj, std::string_view key);

std::string getString(const Json &obj, std::string_view key, const std::string &path);
std::string getString(const Json &obj, std::string_view key, const std::string &path,
                      const std::string &fallback);
// Finite number; NaN/inf/strings/bools are rejected.
double getNumber(const Json &obj, std::string_view key, const std::string &path);
double getNumber(const Json &obj, std::string_view key, const std::string &path, double fallback);
double getPositive(const Json &obj, std::string_view key, const std::string &path);  // > 0
double getPositive(const Json &obj, std::string_view key, const std::string &path, double fallback);
double getNonNegative(const Json &obj, std::string_view key, const std::string &path);  // >= 0
double getNonNegative(const Json &obj, std::string_view key, const std::string &path, double fallback);
// Whole number in [minValue, maxValue].
long long getInt(const Json &obj, std::string_view key, const std::string &path,
                 long long minValue, long long maxValue);
long long getInt(const Json &obj, std::string_view key, const std::string &path,
                 long long minValue, long long maxValue, long long fallback);
bool getBool(const Json &obj, std::string_view key, const std::string &path, bool fallback);

// A number inside a documented range (Limits.h): JsonError at PATH.KEY with
// "must be at most 1e+07 GB/s, found 1e+300 (range 1e-06 to 1e+07 GB/s)".
double getInRange(const Json &obj, std::string_view key, const std::string &path, const Range &range);
double getInRange(const Json &obj, std::string_view key, const std::string &path, const Range &range,
                  double fallback);
// Throws JsonError(path, ...) when `value` is outside `range` (for values already read).
void requireInRange(double value, const Range &range, const std::string &path);

// Value-level checks for already-selected values.
double asNumber(const Json &v, const std::string &path);
long long asInt(const Json &v, const std::string &path, long long minValue, long long maxValue);

} // namespace nest
