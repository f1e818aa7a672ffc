#include "ToolVersion.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <vector>

namespace nest {

namespace {

std::mutex g_mutex;
std::map<std::string, std::string, std::less<>> g_newer;  // file -> the newer version it names

// The leading dotted whole numbers of `v`.
std::vector<long> parts(std::string_view v)
{
    std::vector<long> out;
    size_t i = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
        long n = 0;
        while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) && n < 1'000'000'000)
            n = n * 10 + (v[i++] - '0');
        out.push_back(n);
        if (i < v.size() && v[i] == '.')
            ++i;
        else
            break;
    }
    return out;
}

} // namespace

const char *toolVersion()
{
    return NEST_VERSION;
}

int compareVersions(std::string_view a, std::string_view b)
{
    const std::vector<long> x = parts(a), y = parts(b);
    for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
        const long p = i < x.size() ? x[i] : 0, q = i < y.size() ? y[i] : 0;
        if (p != q)
            return p < q ? -1 : 1;
    }
    return 0;
}

std::string jsonFileText(const nlohmann::json &j, int indent)
{
    const auto replace = nlohmann::json::error_handler_t::replace;
    if (!j.is_object())
        return j.dump(indent, ' ', false, replace) + "\n";
    nlohmann::json stamped = j;
    stamped[kToolVersionKey] = toolVersion();
    return stamped.dump(indent, ' ', false, replace) + "\n";
}

std::optional<std::string> takeToolVersion(nlohmann::json &j, const std::string &file)
{
    if (!j.is_object())
        return std::nullopt;
    const auto it = j.find(kToolVersionKey);
    if (it == j.end())
        return std::nullopt;
    if (!it->is_string() || parts(it->get<std::string>()).empty())
        return std::string("expected the version of NEST Planner that wrote the file (a string such as \"") +
               toolVersion() + "\"), found " + it->dump();
    const std::string version = it->get<std::string>();
    j.erase(it);
    if (compareVersions(version, toolVersion()) > 0) {
        const std::lock_guard lock(g_mutex);
        g_newer[file] = version;
    }
    return std::nullopt;
}

std::string newerVersionNote(std::string_view file)
{
    const std::lock_guard lock(g_mutex);
    const auto it = g_newer.find(file);
    if (it == g_newer.end())
        return {};
    return " (" + std::string(file) + " was written by NEST Planner " + it->second + ", newer than this " +
           toolVersion() + ": it may use what this version does not know; update NEST Planner)";
}

} // namespace nest
