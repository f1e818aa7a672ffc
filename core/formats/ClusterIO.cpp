#include "ClusterIO.h"

#include "ClusterTemplates.h"
#include "SafeText.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <map>
#include <set>

namespace nest {

namespace {

constexpr double kFileGBps = 1e9;         // bandwidth_GBps -> bytes/s (as linkFromUnits)
constexpr double kFileMicrosecond = 1e-6;  // latency_us -> s (as linkFromUnits)
const std::string MaxDevicesText = std::to_string(Topology::maxDevices);

std::string joinedNames(const std::vector<std::string> &items)
{
    std::string out;
    for (const auto &s : items)
        out += (out.empty() ? "" : ", ") + s;
    return out;
}

// Unknown keys are errors (a typo must not pass silently); "comment", "description" and keys
// starting with '_' are free for notes.
void checkKeys(const Json &obj, const std::string &path, std::initializer_list<const char *> allowed)
{
    for (const auto &item : obj.items()) {
        const std::string &key = item.key();
        if (key == "comment" || key == "description" || (!key.empty() && key[0] == '_'))
            continue;
        if (std::find_if(allowed.begin(), allowed.end(), [&key](const char *a) { return key == a; }) != allowed.end())
            continue;
        std::vector<std::string> names(allowed.begin(), allowed.end());
        throw JsonError(childPath(path, key), "unknown key (expected one of: " + joinedNames(names) + ")");
    }
}

double oversubscriptionAt(const Json &obj, const std::string &path, double fallback)
{
    const double x = getNumber(obj, "oversubscription", path, fallback);
    if (!(x >= 1))
        throw JsonError(childPath(path, "oversubscription"),
                        "must be >= 1 (1 = non-blocking, 2 = 2:1 oversubscribed), found " +
                            obj.at("oversubscription").dump());
    requireInRange(x, limits::oversubscription, childPath(path, "oversubscription"));
    return x;
}

// A level's link: bandwidth_GBps required, latency_us default 0, oversubscription default 1.
LinkParams levelLink(const Json &obj, const std::string &path)
{
    const double gbps = getPositive(obj, "bandwidth_GBps", path);
    requireInRange(gbps, limits::bandwidthGBps, childPath(path, "bandwidth_GBps"));
    const double us = getNonNegative(obj, "latency_us", path, 0.0);
    requireInRange(us, limits::latencyUs, childPath(path, "latency_us"));
    return linkFromUnits(gbps, us, oversubscriptionAt(obj, path, 1.0));
}

// A group's override: each key optional, falling back to the level's value.
LinkParams overrideLink(const Json &obj, const std::string &path, const LinkParams &base)
{
    requireObject(obj, path);
    checkKeys(obj, path, {"bandwidth_GBps", "latency_us", "oversubscription"});
    LinkParams l = base;
    if (has(obj, "bandwidth_GBps")) {
        const double gbps = getPositive(obj, "bandwidth_GBps", path);
        requireInRange(gbps, limits::bandwidthGBps, childPath(path, "bandwidth_GBps"));
        l.bandwidth = gbps * kFileGBps;
    }
    if (has(obj, "latency_us")) {
        const double us = getNonNegative(obj, "latency_us", path);
        requireInRange(us, limits::latencyUs, childPath(path, "latency_us"));
        l.latency = us * kFileMicrosecond;
    }
    l.oversubscription = oversubscriptionAt(obj, path, base.oversubscription);
    return l;
}

std::string readLevelName(const Json &obj, const std::string &path, const std::vector<std::string> &earlier)
{
    std::string name = getString(obj, "name", path);
    if (name.empty())
        throw JsonError(childPath(path, "name"), "must not be empty");
    if (std::find(earlier.begin(), earlier.end(), name) != earlier.end())
        throw JsonError(childPath(path, "name"), "duplicate level name '" + name + "'");
    return name;
}

const Json &levelArray(const Json &j)
{
    const Json &lv = requireKey(j, "levels", "");
    requireArray(lv, "levels");
    if (lv.empty())
        throw JsonError("levels", "must list at least one level (innermost first)");
    if (lv.size() > static_cast<size_t>(Topology::maxLevels))
        throw JsonError("levels", "has " + std::to_string(lv.size()) + " levels; at most " +
                                      std::to_string(Topology::maxLevels) + " are supported");
    return lv;
}

// `rail_optimized` (optional, default false): GPU i of every node on rail (leaf) i above
// the node level (Topology::railOptimized); needs a switch level above the nodes.
bool railOptimizedKey(const Json &j, size_t levelCount)
{
    const bool rail = getBool(j, "rail_optimized", "", false);
    if (rail && levelCount < 2)
        throw JsonError("rail_optimized", "needs a switch level above the node level; the cluster has " +
                                              std::to_string(levelCount) + " level");
    return rail;
}

// The innermost level's name names the nodes that do not name themselves ("node" -> node0,
// node1, ...): host names in the launch files (issue 48), so it must make one.
void checkNodeNamePrefix(const std::string &levelName, const std::string &path)
{
    if (const std::string why = hostNameProblem(levelName + "0"); !why.empty())
        throw JsonError(path, "names the nodes that have no name of their own (NAME0, NAME1, ...), which are "
                              "host names in launch files: " + why);
}

// --- compact ------------------------------------------------------------------------------
Topology parseCompact(const Json &j)
{
    checkKeys(j, "", {"name", "format", "device", "levels", "rail_optimized"});
    const std::string name = getString(j, "name", "", "cluster");
    const DeviceSpec device = deviceFromJson(requireKey(j, "device", ""), "device");
    const Json &lv = levelArray(j);
    std::vector<UniformLevel> levels;
    std::vector<std::string> names;
    long long devices = 1;
    for (size_t i = 0; i < lv.size(); ++i) {
        const std::string path = childPath("levels", i);
        requireObject(lv[i], path);
        checkKeys(lv[i], path, {"name", "fanout", "bandwidth_GBps", "latency_us", "oversubscription"});
        UniformLevel u;
        u.name = readLevelName(lv[i], path, names);
        if (i == 0)
            checkNodeNamePrefix(u.name, childPath(path, "name"));
        names.push_back(u.name);
        u.fanout = static_cast<int>(getInt(lv[i], "fanout", path, 1, Topology::maxDevices));
        u.link = levelLink(lv[i], path);
        devices *= u.fanout;
        if (devices > Topology::maxDevices)
            throw JsonError(childPath(path, "fanout"), "the levels give more than " + MaxDevicesText +
                                                           " devices, the most supported");
        levels.push_back(std::move(u));
    }
    Topology t = Topology::uniform(name, device, levels);
    t.railOptimized = railOptimizedKey(j, levels.size());
    return t;
}

// --- explicit -----------------------------------------------------------------------------
class ExplicitParser {
public:
    Topology parse(const Json &j)
    {
        checkKeys(j, "", {"name", "format", "device", "device_types", "levels", "tree", "rail_optimized"});
        m_topo.name = getString(j, "name", "", "cluster");
        parseDeviceTypes(j);
        const Json &lv = levelArray(j);
        for (size_t i = 0; i < lv.size(); ++i) {
            const std::string path = childPath("levels", i);
            requireObject(lv[i], path);
            if (has(lv[i], "fanout"))
                throw JsonError(childPath(path, "fanout"),
                                "belongs to the compact form; in the explicit form the tree lists the children");
            checkKeys(lv[i], path, {"name", "bandwidth_GBps", "latency_us", "oversubscription"});
            m_levelNames.push_back(readLevelName(lv[i], path, m_levelNames));
            m_topo.levels.push_back({m_levelNames.back(), levelLink(lv[i], path)});
        }
        m_counters.assign(m_levelNames.size(), 0);
        m_topo.root = parseGroup(requireKey(j, "tree", ""), "tree", m_topo.levelCount() - 1, -1);
        // Device types in first-use order, then the unused ones in key order.
        std::vector<std::string> order = m_used;
        for (const auto &[key, spec] : m_types)
            if (!m_typeIndex.count(key))
                order.push_back(key);
        for (const auto &key : order)
            m_topo.deviceTypes.push_back(m_types.at(key));
        m_topo.reindex();
        m_topo.railOptimized = railOptimizedKey(j, m_topo.levels.size());
        return std::move(m_topo);
    }

private:
    void parseDeviceTypes(const Json &j)
    {
        if (has(j, "device") && has(j, "device_types"))
            throw JsonError("device", "give either \"device\" (one type for every node) or \"device_types\", not both");
        if (has(j, "device")) {
            const DeviceSpec d = deviceFromJson(j.at("device"), "device");
            m_types.emplace(d.name, d);
            return;
        }
        const Json &types = requireKey(j, "device_types", "");
        requireObject(types, "device_types");
        if (types.empty())
            throw JsonError("device_types", "must declare at least one device type");
        for (const auto &[key, value] : types.items()) {
            if (key.empty())
                throw JsonError("device_types", "a device type key must not be empty");
            m_types.emplace(key, deviceFromJson(value, childPath("device_types", key)));
        }
    }

    std::string levelList() const { return joinedNames(m_levelNames); }

    int deviceTypeOf(const Json &o, const std::string &path)
    {
        std::string key;
        if (has(o, "device")) {
            key = getString(o, "device", path);
            if (!m_types.count(key)) {
                std::vector<std::string> declared;
                for (const auto &[k, spec] : m_types)
                    declared.push_back(k);
                throw JsonError(childPath(path, "device"),
                                "unknown device type '" + key + "' (declared: " + joinedNames(declared) + ")");
            }
        } else if (m_types.size() == 1) {
            key = m_types.begin()->first;
        } else {
            throw JsonError(childPath(path, "device"), "required field is missing (several device types are declared)");
        }
        const auto it = m_typeIndex.find(key);
        if (it != m_typeIndex.end())
            return it->second;
        const int index = static_cast<int>(m_used.size());
        m_typeIndex[key] = index;
        m_used.push_back(key);
        return index;
    }

    int parseGroup(const Json &o, const std::string &path, int level, int parent)
    {
        requireObject(o, path);
        checkKeys(o, path, {"name", "level", "link", "children", "device", "devices"});
        const std::string &expected = m_levelNames[level];
        if (has(o, "level")) {
            const std::string given = getString(o, "level", path);
            const auto it = std::find(m_levelNames.begin(), m_levelNames.end(), given);
            if (it == m_levelNames.end())
                throw JsonError(childPath(path, "level"),
                                "unknown level name '" + given + "' (levels, innermost first: " + levelList() + ")");
            if (it - m_levelNames.begin() != level)
                throw JsonError(childPath(path, "level"),
                                "'" + given + "' found at a depth where the tree reaches level '" + expected +
                                    "': each branch must go down through every level (" + levelList() + ")");
        }
        TopoGroup g;
        g.name = getString(o, "name", path, expected + std::to_string(m_counters[level]));
        ++m_counters[level];
        if (g.name.empty())
            throw JsonError(childPath(path, "name"), "must not be empty");
        if (level == 0) {
            if (!has(o, "name"))
                checkNodeNamePrefix(m_levelNames[0], "levels[0].name");
            else if (const std::string why = hostNameProblem(g.name); !why.empty())
                throw JsonError(childPath(path, "name"), "a node's name is its host name in launch files: " + why);
        }
        g.level = level;
        g.parent = parent;
        if (has(o, "link"))
            g.linkOverride = overrideLink(o.at("link"), childPath(path, "link"), m_topo.levels[level].link);
        if (level == 0) {
            if (has(o, "children"))
                throw JsonError(childPath(path, "children"),
                                "a group at level '" + expected + "' (the innermost level) holds devices, not "
                                "children: the tree is deeper than the " + std::to_string(m_levelNames.size()) +
                                " declared levels (" + levelList() + ")");
            const long long n = getInt(o, "devices", path, 1, Topology::maxDevices);
            m_deviceTotal += n;
            if (m_deviceTotal > Topology::maxDevices)
                throw JsonError(childPath(path, "devices"),
                                "the tree has more than " + MaxDevicesText + " devices, the most supported");
            g.deviceType = deviceTypeOf(o, path);
            g.devices.assign(static_cast<size_t>(n), 0);
            m_topo.groups.push_back(std::move(g));
            return static_cast<int>(m_topo.groups.size()) - 1;
        }
        if (has(o, "devices") || has(o, "device"))
            throw JsonError(childPath(path, has(o, "devices") ? "devices" : "device"),
                            "devices sit only in groups of level '" + m_levelNames[0] + "'; this group is at level '" +
                                expected + "': the tree is shallower than the declared levels (" + levelList() + ")");
        const Json &children = requireKey(o, "children", path);
        const std::string childrenPath = childPath(path, "children");
        requireArray(children, childrenPath);
        if (children.empty())
            throw JsonError(childrenPath, "must list at least one child group");
        const int index = static_cast<int>(m_topo.groups.size());
        m_topo.groups.push_back(std::move(g));
        for (size_t i = 0; i < children.size(); ++i) {
            const int child = parseGroup(children[i], childPath(childrenPath, i), level - 1, index);
            m_topo.groups[index].children.push_back(child);
        }
        return index;
    }

    Topology m_topo;
    std::map<std::string, DeviceSpec> m_types;
    std::map<std::string, int> m_typeIndex;
    std::vector<std::string> m_used;
    std::vector<std::string> m_levelNames;
    std::vector<int> m_counters;
    long long m_deviceTotal = 0;
};

// --- template reference -------------------------------------------------------------------
Topology parseTemplate(const Json &j)
{
    checkKeys(j, "", {"name", "format", "template", "params", "device"});
    const std::string key = getString(j, "template", "");
    const ClusterTemplate *tmpl = findClusterTemplate(key);
    if (!tmpl) {
        std::vector<std::string> known;
        for (const auto &t : clusterTemplates())
            known.push_back(t.key);
        throw JsonError("template", "unknown cluster template '" + key + "' (known: " + joinedNames(known) + ")");
    }
    std::map<std::string, double> params;
    if (has(j, "params")) {
        const Json &p = j.at("params");
        requireObject(p, "params");
        for (const auto &[k, v] : p.items())
            params[k] = asNumber(v, childPath("params", k));
    }
    DeviceSpec device = templateDefaultDevice(*tmpl);
    if (has(j, "device")) {
        const Json &d = j.at("device");
        if (!(d.is_string() && d.get<std::string>() == tmpl->defaultDevice))
            device = deviceFromJson(d, "device");
    }
    Topology t = buildCluster(*tmpl, params, device, "params");
    if (has(j, "name"))
        t.name = getString(j, "name", "");
    return t;
}

// --- writing ------------------------------------------------------------------------------
// value / scale, nudged by an ulp or two where needed so that reading it back (x * scale)
// gives `value` exactly.
double toUnits(double value, double scale)
{
    const double y = value / scale;
    if (!std::isfinite(y) || y * scale == value)
        return y;
    for (const double towards : {HUGE_VAL, -HUGE_VAL}) {
        double z = y;
        for (int k = 0; k < 4; ++k) {
            z = std::nextafter(z, towards);
            if (z * scale == value)
                return z;
        }
    }
    return y;
}

Json linkJson(const LinkParams &l)
{
    return {{"bandwidth_GBps", toUnits(l.bandwidth, kFileGBps)},
            {"latency_us", toUnits(l.latency, kFileMicrosecond)},
            {"oversubscription", l.oversubscription}};
}

class ExplicitWriter {
public:
    explicit ExplicitWriter(const Topology &t) : m_t(t), m_visited(t.groups.size(), 0)
    {
        std::set<std::string> taken;
        for (size_t i = 0; i < t.deviceTypes.size(); ++i) {
            std::string key = t.deviceTypes[i].name.empty() ? "type" : t.deviceTypes[i].name;
            for (int n = 2; taken.count(key); ++n)
                key = (t.deviceTypes[i].name.empty() ? "type" : t.deviceTypes[i].name) + "-" + std::to_string(n);
            taken.insert(key);
            m_keys.push_back(key);
        }
    }

    Json write()
    {
        Json j;
        j["name"] = m_t.name;
        j["format"] = "explicit";
        Json types = Json::object();
        for (size_t i = 0; i < m_t.deviceTypes.size(); ++i)
            types[m_keys[i]] = deviceToJson(m_t.deviceTypes[i]);
        j["device_types"] = types;
        Json levels = Json::array();
        for (const auto &l : m_t.levels) {
            Json lj = linkJson(l.link);
            lj["name"] = l.name;
            levels.push_back(lj);
        }
        j["levels"] = levels;
        if (m_t.railOptimized)
            j["rail_optimized"] = true;
        if (m_t.root >= 0 && m_t.root < static_cast<int>(m_t.groups.size()))
            j["tree"] = group(m_t.root);
        return j;
    }

private:
    Json group(int g)
    {
        m_visited[g] = 1;
        const TopoGroup &grp = m_t.groups[g];
        Json j;
        j["name"] = grp.name;
        if (grp.level >= 0 && grp.level < m_t.levelCount())
            j["level"] = m_t.levels[grp.level].name;
        if (grp.linkOverride)
            j["link"] = linkJson(*grp.linkOverride);
        if (grp.level == 0) {
            if (m_keys.size() > 1 && grp.deviceType >= 0 && grp.deviceType < static_cast<int>(m_keys.size()))
                j["device"] = m_keys[grp.deviceType];
            j["devices"] = grp.devices.size();
            return j;
        }
        Json children = Json::array();
        for (int c : grp.children)  // skip what a broken tree would make us loop on
            if (c >= 0 && c < static_cast<int>(m_t.groups.size()) && !m_visited[c])
                children.push_back(group(c));
        j["children"] = children;
        return j;
    }

    const Topology &m_t;
    std::vector<char> m_visited;
    std::vector<std::string> m_keys;
};

} // namespace

Result<Topology> clusterFromJson(const Json &j, const std::string &origin)
{
    try {
        requireObject(j, "");
        std::string form;
        if (has(j, "format")) {
            form = getString(j, "format", "");
            if (form != "compact" && form != "explicit" && form != "template")
                throw JsonError("format", "unknown format '" + form + "' (compact, explicit or template)");
        } else {
            form = has(j, "template") ? "template" : has(j, "tree") ? "explicit" : "compact";
        }
        Topology t = form == "template" ? parseTemplate(j) : form == "explicit" ? ExplicitParser().parse(j)
                                                                                 : parseCompact(j);
        if (const std::string why = t.validate(); !why.empty())
            return Result<Topology>::failure(formatError(origin, "", why));
        return t;
    } catch (const JsonError &e) {
        return Result<Topology>::failure(formatError(origin, e.path(), e.reason()));
    } catch (const std::exception &e) {
        return Result<Topology>::failure(formatError(origin, "", std::string("cannot read the cluster: ") + e.what()));
    }
}

Json clusterToJson(const Topology &t)
{
    return ExplicitWriter(t).write();
}

std::optional<Json> clusterToCompactJson(const Topology &t)
{
    if (t.deviceTypes.size() != 1 || t.root < 0 || !t.validate().empty())
        return std::nullopt;
    std::vector<UniformLevel> levels(t.levels.size());
    int g = t.root;
    for (int l = t.levelCount() - 1; l >= 0; --l) {
        const TopoGroup &grp = t.groups[g];
        levels[l] = {t.levels[l].name, static_cast<int>(l == 0 ? grp.devices.size() : grp.children.size()),
                     t.levels[l].link};
        if (l > 0)
            g = grp.children.front();
    }
    Topology rebuilt = Topology::uniform(t.name, t.deviceTypes[0], levels);
    rebuilt.railOptimized = t.railOptimized;
    if (!(rebuilt == t))
        return std::nullopt;
    Json lv = Json::array();
    for (const auto &l : levels) {
        Json lj = linkJson(l.link);
        if (l.link.oversubscription == 1)
            lj.erase("oversubscription");
        lj["name"] = l.name;
        lj["fanout"] = l.fanout;
        lv.push_back(lj);
    }
    Json out{{"name", t.name}, {"device", deviceToJson(t.deviceTypes[0])}, {"levels", lv}};
    if (t.railOptimized)
        out["rail_optimized"] = true;
    return out;
}

Result<Topology> loadCluster(const std::string &file)
{
    auto j = readJsonFile(file);
    if (!j)
        return Result<Topology>::failure(j.error());
    return clusterFromJson(*j, file);
}

Result<bool> saveCluster(const std::string &file, const Topology &t)
{
    if (const std::string why = t.validate(); !why.empty())
        return Result<bool>::failure(formatError(file, "", "not saved: " + why));
    return writeJsonFile(file, clusterToJson(t));
}

Result<Topology> resolveCluster(const std::string &fileOrPreset)
{
    std::error_code ec;
    if (!fileOrPreset.empty() && std::filesystem::exists(fileOrPreset, ec))
        return loadCluster(fileOrPreset);
    for (const auto &p : clusterPresets())
        if (p.key == fileOrPreset)
            return clusterPreset(fileOrPreset);
    if (findClusterTemplate(fileOrPreset))
        return makeCluster(fileOrPreset, {});
    const bool looksLikeFile = fileOrPreset.find('/') != std::string::npos ||
                               (fileOrPreset.size() > 5 && fileOrPreset.substr(fileOrPreset.size() - 5) == ".json");
    if (looksLikeFile)
        return loadCluster(fileOrPreset);
    std::vector<std::string> presets;
    for (const auto &p : clusterPresets())
        presets.push_back(p.key);
    std::vector<std::string> templates;
    for (const auto &t : clusterTemplates())
        templates.push_back(t.key);
    return Result<Topology>::failure("'" + fileOrPreset + "' is neither a cluster file nor a cluster preset (presets: " +
                                     joinedNames(presets) + "; templates: " + joinedNames(templates) + ")");
}

} // namespace nest
