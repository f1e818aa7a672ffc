#include "Topology.h"

#include "SafeText.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace nest {

namespace {

// Builds the subtree of a uniform topology in depth-first pre-order; counters[L] numbers the
// groups of level L across the whole tree ("rack3", "node12").
int buildUniform(Topology &t, const std::vector<UniformLevel> &levels, int level, std::vector<int> &counters)
{
    const int index = static_cast<int>(t.groups.size());
    TopoGroup g;
    g.name = levels[level].name + std::to_string(counters[level]++);
    g.level = level;
    const int fanout = std::max(0, levels[level].fanout);
    if (level == 0)
        g.devices.assign(fanout, 0);  // ids assigned by reindex()
    t.groups.push_back(std::move(g));
    if (level > 0) {
        for (int i = 0; i < fanout; ++i) {
            const int child = buildUniform(t, levels, level - 1, counters);
            t.groups[index].children.push_back(child);
        }
    }
    return index;
}

std::string trimmedNumber(double x)
{
    if (std::isnan(x))
        return "NaN";
    if (std::isinf(x))
        return x > 0 ? "inf" : "-inf";
    std::string s = std::to_string(x);
    // Trim trailing zeros of std::to_string's fixed notation ("25.000000" -> "25").
    if (s.find('.') != std::string::npos) {
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.')
            s.pop_back();
    }
    return s;
}

// Empty when the link is usable; otherwise the reason.
std::string checkLink(const LinkParams &l)
{
    if (!std::isfinite(l.bandwidth) || !(l.bandwidth > 0))
        return "bandwidth must be a positive finite number of bytes/s, found " + trimmedNumber(l.bandwidth);
    if (!std::isfinite(l.latency) || l.latency < 0)
        return "latency must be a finite number of seconds >= 0, found " + trimmedNumber(l.latency);
    if (!std::isfinite(l.oversubscription) || !(l.oversubscription >= 1))
        return "oversubscription must be a finite ratio >= 1, found " + trimmedNumber(l.oversubscription);
    return {};
}

} // namespace

Topology Topology::uniform(std::string name, DeviceSpec device, const std::vector<UniformLevel> &levels)
{
    Topology t;
    t.name = std::move(name);
    t.deviceTypes.push_back(std::move(device));
    for (const auto &l : levels)
        t.levels.push_back({l.name, l.link});
    if (levels.empty() || static_cast<int>(levels.size()) > maxLevels)
        return t;  // validate() names the problem
    // Refuse to expand absurd sizes: the result stays without a tree and validate() says so.
    long long devices = 1;
    for (const auto &l : levels) {
        devices *= std::max(0, l.fanout);
        if (devices > maxDevices)
            return t;
    }
    std::vector<int> counters(levels.size(), 0);
    t.root = buildUniform(t, levels, static_cast<int>(levels.size()) - 1, counters);
    t.reindex();
    return t;
}

void Topology::reindex()
{
    devices.clear();
    m_ancestors.clear();
    m_preorder.clear();
    const int groupCount = static_cast<int>(groups.size());
    m_firstDevice.assign(groupCount, 0);
    m_deviceCount.assign(groupCount, 0);
    if (root < 0 || root >= groupCount)
        return;
    const int levelCountValue = levelCount();
    groups[root].parent = -1;

    // Iterative depth-first walk; `path` holds the groups from the root to the current one.
    std::vector<char> visited(groupCount, 0);
    std::vector<std::pair<int, size_t>> path;  // (group, next child position)
    auto enter = [&](int g) {
        visited[g] = 1;
        m_preorder.push_back(g);
        m_firstDevice[g] = static_cast<int>(devices.size());
        path.emplace_back(g, 0);
        TopoGroup &group = groups[g];
        if (group.level != 0)
            return;
        const int depth = static_cast<int>(path.size()) - 1;
        for (size_t i = 0; i < group.devices.size(); ++i) {
            const int id = static_cast<int>(devices.size());
            group.devices[i] = id;
            devices.push_back({id, g, group.deviceType, static_cast<int>(i)});
            for (int level = 0; level < levelCountValue; ++level)
                m_ancestors.push_back(depth - level >= 0 ? path[depth - level].first : -1);
        }
    };
    enter(root);
    while (!path.empty()) {
        auto &[g, next] = path.back();
        const TopoGroup &group = groups[g];
        if (group.level != 0 && next < group.children.size()) {
            const int child = group.children[next++];
            if (child >= 0 && child < groupCount && !visited[child]) {
                groups[child].parent = g;
                enter(child);
            }
            continue;
        }
        m_deviceCount[g] = static_cast<int>(devices.size()) - m_firstDevice[g];
        path.pop_back();
    }
}

int Topology::level(int a, int b) const
{
    if (a == b)
        return -1;
    const size_t n = levels.size();
    const int *pa = m_ancestors.data() + static_cast<size_t>(a) * n;
    const int *pb = m_ancestors.data() + static_cast<size_t>(b) * n;
    for (size_t l = 0; l < n; ++l)
        if (pa[l] == pb[l])
            return static_cast<int>(l);
    return static_cast<int>(n) - 1;
}

int Topology::lcaGroup(int a, int b) const
{
    if (a == b)
        return devices[a].node;
    return ancestor(a, level(a, b));
}

int Topology::spanLevel(const std::vector<int> &deviceIds) const
{
    // Levels of lowest common ancestors form an ultrametric: level(x, y) <=
    // max(level(x, z), level(z, y)), so the highest pair level is the highest level of any
    // member against the first one.
    int span = -1;
    for (size_t i = 1; i < deviceIds.size(); ++i)
        span = std::max(span, level(deviceIds[0], deviceIds[i]));
    return span;
}

std::vector<int> Topology::levelsSpanned(const std::vector<int> &deviceIds) const
{
    std::vector<int> ids = deviceIds;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::vector<int> out;
    if (ids.size() < 2)
        return out;
    // Level L is crossed when one group of level L holds members below two different
    // children (two different devices for L = 0).
    std::vector<std::pair<int, int>> keys(ids.size());
    for (int l = 0; l < levelCount(); ++l) {
        for (size_t i = 0; i < ids.size(); ++i)
            keys[i] = {ancestor(ids[i], l), l == 0 ? ids[i] : ancestor(ids[i], l - 1)};
        std::sort(keys.begin(), keys.end());
        for (size_t i = 1; i < keys.size(); ++i) {
            if (keys[i].first == keys[i - 1].first && keys[i].second != keys[i - 1].second) {
                out.push_back(l);
                break;
            }
        }
    }
    return out;
}

LinkParams Topology::link(int group) const
{
    const TopoGroup &g = groups[group];
    if (g.linkOverride)
        return *g.linkOverride;
    return levels[g.level].link;
}

LinkParams Topology::link(int a, int b) const
{
    return link(lcaGroup(a, b));
}

std::vector<int> Topology::devicesUnder(int group) const
{
    std::vector<int> out;
    if (group < 0 || group >= static_cast<int>(m_deviceCount.size()))
        return out;
    out.resize(m_deviceCount[group]);
    std::iota(out.begin(), out.end(), m_firstDevice[group]);
    return out;
}

int Topology::deviceCountUnder(int group) const
{
    if (group < 0 || group >= static_cast<int>(m_deviceCount.size()))
        return 0;
    return m_deviceCount[group];
}

int Topology::railDeviceCountUnder(int group, int rail) const
{
    if (group < 0 || group >= static_cast<int>(m_deviceCount.size()))
        return 0;
    int k = 0;
    const int first = m_firstDevice[group];
    for (int d = first; d < first + m_deviceCount[group]; ++d)
        if (devices[static_cast<size_t>(d)].indexInNode == rail)
            ++k;
    return k;
}

std::vector<int> regularBlockSizes(const Topology &topo)
{
    const int levels = topo.levelCount();
    const int groupCount = static_cast<int>(topo.groups.size());
    if (levels == 0 || topo.root < 0 || topo.root >= groupCount || topo.groups[topo.root].level != levels - 1 ||
        topo.deviceCount() == 0)
        return {};
    std::vector<int> fanout(static_cast<size_t>(levels), -1);  // children (nodes: devices) per group
    int nodeType = -1;
    std::vector<int> stack{topo.root};
    size_t visited = 0;
    while (!stack.empty()) {
        const int g = stack.back();
        stack.pop_back();
        if (++visited > topo.groups.size())
            return {};  // a cycle
        const TopoGroup &group = topo.groups[static_cast<size_t>(g)];
        if (group.linkOverride || group.level < 0 || group.level >= levels)
            return {};
        const int count = static_cast<int>(group.level == 0 ? group.devices.size() : group.children.size());
        int &f = fanout[static_cast<size_t>(group.level)];
        if (count == 0 || (f >= 0 && f != count))
            return {};
        f = count;
        if (group.level == 0) {
            if (nodeType >= 0 && nodeType != group.deviceType)
                return {};
            nodeType = group.deviceType;
            continue;
        }
        for (int c : group.children) {
            if (c < 0 || c >= groupCount || topo.groups[static_cast<size_t>(c)].level != group.level - 1)
                return {};
            stack.push_back(c);
        }
    }
    std::vector<int> sizes(static_cast<size_t>(levels));
    long long size = 1;
    for (int l = 0; l < levels; ++l) {
        size *= fanout[static_cast<size_t>(l)];
        if (size > topo.deviceCount())
            return {};
        sizes[static_cast<size_t>(l)] = static_cast<int>(size);
    }
    if (sizes.back() != topo.deviceCount())
        return {};  // the ids were not rebuilt after an edit (reindex())
    return sizes;
}

std::vector<int> Topology::groupsAtLevel(int lvl) const
{
    std::vector<int> out;
    for (int g : m_preorder)
        if (groups[g].level == lvl)
            out.push_back(g);
    return out;
}

namespace {

// "group 'rack0' (#3, level 1 'rack')".
std::string groupLabel(const Topology &t, int g)
{
    const TopoGroup &group = t.groups[g];
    std::string s = "group '" + group.name + "' (#" + std::to_string(g);
    if (group.level >= 0 && group.level < t.levelCount())
        s += ", level " + std::to_string(group.level) + " '" + t.levels[group.level].name + "'";
    return s + ")";
}

std::string levelsProblem(const Topology &t)
{
    const int levelCount = t.levelCount();
    if (t.levels.empty())
        return "the cluster has no levels";
    if (levelCount > Topology::maxLevels)
        return "the cluster has " + std::to_string(levelCount) + " levels; at most " +
               std::to_string(Topology::maxLevels) + " are supported";
    for (int l = 0; l < levelCount; ++l) {
        const TopoLevel &lv = t.levels[l];
        if (lv.name.empty())
            return "level " + std::to_string(l) + " has no name";
        for (int k = 0; k < l; ++k)
            if (t.levels[k].name == lv.name)
                return "levels " + std::to_string(k) + " and " + std::to_string(l) + " share the name '" +
                       lv.name + "'";
        if (const std::string why = checkLink(lv.link); !why.empty())
            return "level " + std::to_string(l) + " '" + lv.name + "': " + why;
    }
    return {};
}

std::string deviceTypesProblem(const Topology &t)
{
    if (t.deviceTypes.empty())
        return "the cluster declares no device type";
    for (size_t i = 0; i < t.deviceTypes.size(); ++i) {
        const DeviceSpec &d = t.deviceTypes[i];
        const std::string what = "device type " + std::to_string(i) + " '" + d.name + "': ";
        if (d.name.empty())
            return "device type " + std::to_string(i) + " has no name";
        if (!std::isfinite(d.peakFlops) || !(d.peakFlops > 0))
            return what + "peak FLOP/s must be positive, found " + trimmedNumber(d.peakFlops);
        if (!std::isfinite(d.memoryBytes) || !(d.memoryBytes > 0))
            return what + "memory capacity must be positive, found " + trimmedNumber(d.memoryBytes);
        if (!std::isfinite(d.memoryBandwidth) || !(d.memoryBandwidth > 0))
            return what + "memory bandwidth must be positive, found " + trimmedNumber(d.memoryBandwidth);
    }
    return {};
}

// Group g on its own: its level, name and link; a node's devices (added to deviceTotal), an
// inner group's children (each recorded in referencedBy, which must see it only once).
std::string groupProblem(const Topology &t, int g, std::vector<int> &referencedBy, long long &deviceTotal)
{
    const int groupCount = static_cast<int>(t.groups.size());
    const TopoGroup &group = t.groups[g];
    if (group.level < 0 || group.level >= t.levelCount())
        return groupLabel(t, g) + ": level " + std::to_string(group.level) + " is out of range (the cluster has " +
               std::to_string(t.levelCount()) + " levels)";
    if (group.name.empty())
        return "group #" + std::to_string(g) + " has no name";
    if (group.linkOverride) {
        if (const std::string why = checkLink(*group.linkOverride); !why.empty())
            return groupLabel(t, g) + ": link override: " + why;
    }
    if (group.level == 0) {
        if (!group.children.empty())
            return groupLabel(t, g) + ": a node (level 0) cannot have child groups";
        if (group.devices.empty())
            return groupLabel(t, g) + ": an empty node (no devices)";
        // A node's name is the host the launch files run on (issue 48): no shell syntax.
        if (const std::string why = hostNameProblem(group.name); !why.empty())
            return "node #" + std::to_string(g) + ": " + why;
        if (group.deviceType < 0 || group.deviceType >= static_cast<int>(t.deviceTypes.size()))
            return groupLabel(t, g) + ": device type index " + std::to_string(group.deviceType) +
                   " is out of range (" + std::to_string(t.deviceTypes.size()) + " types declared)";
        deviceTotal += static_cast<long long>(group.devices.size());
        if (deviceTotal > Topology::maxDevices)
            return "the cluster has more than " + std::to_string(Topology::maxDevices) + " devices";
        return {};
    }
    if (!group.devices.empty())
        return groupLabel(t, g) + ": only nodes (level 0) hold devices";
    if (group.children.empty())
        return groupLabel(t, g) + ": has no child groups";
    for (int child : group.children) {
        if (child < 0 || child >= groupCount)
            return groupLabel(t, g) + ": child index " + std::to_string(child) + " does not name a group";
        if (child == g)
            return groupLabel(t, g) + ": lists itself as a child (a cycle)";
        if (child == t.root)
            return groupLabel(t, g) + ": lists the root as a child (a cycle)";
        if (referencedBy[child] >= 0)
            return "group '" + t.groups[child].name + "' (#" + std::to_string(child) + ") is a child of both '" +
                   t.groups[referencedBy[child]].name + "' and '" + group.name + "'";
        referencedBy[child] = g;
        if (t.groups[child].level != group.level - 1)
            return groupLabel(t, child) + ": is a child of " + groupLabel(t, g) + " and must be at level " +
                   std::to_string(group.level - 1);
    }
    return {};
}

// The tree as a whole: a root at the top level that nobody lists, every other group listed by
// exactly the parent its index names. Counts the devices into deviceTotal.
std::string treeProblem(const Topology &t, long long &deviceTotal)
{
    const int groupCount = static_cast<int>(t.groups.size());
    const int root = t.root;
    if (t.groups.empty())
        return "the cluster has no groups (an empty tree, or more than " + std::to_string(Topology::maxDevices) +
               " devices requested)";
    if (root < 0 || root >= groupCount)
        return "the root index " + std::to_string(root) + " does not name a group (there are " +
               std::to_string(groupCount) + ")";
    std::vector<int> referencedBy(groupCount, -1);
    for (int g = 0; g < groupCount; ++g)
        if (std::string why = groupProblem(t, g, referencedBy, deviceTotal); !why.empty())
            return why;
    if (t.groups[root].level != t.levelCount() - 1)
        return groupLabel(t, root) + ": the root must be at the top level " + std::to_string(t.levelCount() - 1) +
               " (level count and tree depth disagree)";
    if (referencedBy[root] >= 0)
        return groupLabel(t, root) + ": the root is listed as a child of '" + t.groups[referencedBy[root]].name +
               "' (a cycle)";
    if (t.groups[root].parent != -1)
        return groupLabel(t, root) + ": the root has a parent index";
    for (int g = 0; g < groupCount; ++g) {
        if (g == root)
            continue;
        if (referencedBy[g] < 0)
            return groupLabel(t, g) + ": not reachable from the root (no parent lists it)";
        if (t.groups[g].parent != referencedBy[g])
            return groupLabel(t, g) + ": parent index " + std::to_string(t.groups[g].parent) +
                   " disagrees with the parent '" + t.groups[referencedBy[g]].name + "' that lists it (call reindex())";
    }
    // Every group has exactly one parent, levels drop by one per step and the root sits at
    // the top: the structure is a tree reaching every group, so no cycle remains.
    return {};
}

} // namespace

std::string Topology::validate() const
{
    if (std::string why = levelsProblem(*this); !why.empty())
        return why;
    if (std::string why = deviceTypesProblem(*this); !why.empty())
        return why;
    long long deviceTotal = 0;
    if (std::string why = treeProblem(*this, deviceTotal); !why.empty())
        return why;
    if (deviceTotal == 0)
        return "the cluster has no devices";

    // The index reindex() builds must be current.
    const int groupCount = static_cast<int>(groups.size());
    const char *const stale = "the device index is stale (call Topology::reindex() after editing the tree)";
    if (static_cast<long long>(devices.size()) != deviceTotal ||
        m_ancestors.size() != devices.size() * levels.size() || m_deviceCount.size() != groups.size())
        return stale;
    for (size_t i = 0; i < devices.size(); ++i) {
        const Device &d = devices[i];
        if (d.id != static_cast<int>(i) || d.node < 0 || d.node >= groupCount)
            return stale;
        const TopoGroup &node = groups[d.node];
        if (d.indexInNode < 0 || d.indexInNode >= static_cast<int>(node.devices.size()) ||
            node.devices[d.indexInNode] != d.id || d.type != node.deviceType)
            return stale;
    }
    return {};
}

LinkParams Topology::achievableLink(int group) const
{
    LinkParams l = link(group);
    const TopoGroup &g = groups[static_cast<size_t>(group)];
    if (g.level > nvlinkDomainLevel())
        l.bandwidth *= scaleOutEfficiency();
    else if (g.level == 0 && g.deviceType >= 0 && g.deviceType < static_cast<int>(deviceTypes.size()))
        l.bandwidth *= deviceTypes[static_cast<size_t>(g.deviceType)].scaleUpEfficiency;  // a node: its own GPUs
    else
        l.bandwidth *= scaleUpEfficiency();
    return l;
}

LinkParams Topology::achievableLevelLink(int level) const
{
    LinkParams l = levels[static_cast<size_t>(level)].link;
    l.bandwidth *= level <= nvlinkDomainLevel() ? scaleUpEfficiency() : scaleOutEfficiency();
    return l;
}

namespace {
// The lowest of one DeviceSpec share over the device types, 1 without any.
double lowestShare(const std::vector<DeviceSpec> &types, double DeviceSpec::*share)
{
    double e = 1.0;
    for (const DeviceSpec &d : types)
        e = std::min(e, d.*share);
    return e;
}
} // namespace

double Topology::scaleUpEfficiency() const
{
    return lowestShare(deviceTypes, &DeviceSpec::scaleUpEfficiency);
}

double Topology::scaleOutEfficiency() const
{
    return lowestShare(deviceTypes, &DeviceSpec::scaleOutEfficiency);
}

int Topology::nvlinkDomainLevel() const
{
    if (levels.empty())
        return -1;
    int top = 0;
    while (top + 1 < levelCount() && levels[static_cast<size_t>(top + 1)].link.bandwidth == levels[0].link.bandwidth)
        ++top;
    return top;
}

} // namespace nest
