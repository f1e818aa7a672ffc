#include "ClusterEdits.h"

#include <algorithm>
#include <functional>
#include <set>

namespace nest {

namespace {

void pruneDeviceTypes(Topology &t);

// Renumbers the groups in depth-first preorder from the root (uids follow), the order the
// cluster loader and Topology::uniform produce, so that a saved and reloaded cluster
// compares equal to the edited one. Unreachable groups are dropped.
void canonicalOrder(ClusterState &s)
{
    Topology &t = s.topology;
    const int n = static_cast<int>(t.groups.size());
    if (t.root < 0 || t.root >= n)
        return;
    std::vector<int> order;
    order.reserve(n);
    std::vector<int> stack{t.root};
    while (!stack.empty()) {
        const int g = stack.back();
        stack.pop_back();
        order.push_back(g);
        const auto &children = t.groups[g].children;
        for (auto it = children.rbegin(); it != children.rend(); ++it)
            stack.push_back(*it);
    }
    std::vector<int> remap(n, -1);
    for (int i = 0; i < static_cast<int>(order.size()); ++i)
        remap[order[i]] = i;
    std::vector<TopoGroup> groups;
    std::vector<GroupUid> uids;
    groups.reserve(order.size());
    uids.reserve(order.size());
    for (int g : order) {
        TopoGroup copy = t.groups[g];
        copy.parent = copy.parent >= 0 ? remap[copy.parent] : -1;
        for (int &c : copy.children)
            c = remap[c];
        groups.push_back(std::move(copy));
        uids.push_back(s.uids[g]);
    }
    t.groups = std::move(groups);
    s.uids = std::move(uids);
    t.root = 0;
}

// Normalises group order and device types, reindexes and validates; the edit is refused
// with validate()'s message.
Result<ClusterState> finish(ClusterState s)
{
    canonicalOrder(s);
    pruneDeviceTypes(s.topology);
    s.topology.reindex();
    std::string problem = s.topology.validate();
    if (!problem.empty())
        return Result<ClusterState>::failure(problem);
    return s;
}

Result<ClusterState> refuse(std::string reason)
{
    return Result<ClusterState>::failure(std::move(reason));
}

bool validGroup(const Topology &t, int g)
{
    return g >= 0 && g < static_cast<int>(t.groups.size());
}

std::string shownLevelName(const Topology &t, int level)
{
    if (level >= 0 && level < t.levelCount() && !t.levels[level].name.empty())
        return t.levels[level].name;
    return "level " + std::to_string(level);
}

// Appends a copy of `from`'s subtree at `src` under `parent` of `s`; returns its index.
int appendCopy(ClusterState &s, const Topology &from, int src, int parent, GroupUid &nextUid)
{
    TopoGroup copy = from.groups[src];
    copy.parent = parent;
    copy.children.clear();
    const int index = static_cast<int>(s.topology.groups.size());
    s.topology.groups.push_back(copy);
    s.uids.push_back(nextUid++);
    for (int child : from.groups[src].children) {
        const int c = appendCopy(s, from, child, index, nextUid);
        s.topology.groups[index].children.push_back(c);
    }
    return index;
}

// Renames the copied subtree at `g` so that no name clashes with the rest of the tree.
void renameUnique(ClusterState &s, int g)
{
    TopoGroup &group = s.topology.groups[g];
    std::string prefix = group.name;
    const auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
    // "rack0" (the compact form's and the templates' names): the next free "rackN", where a
    // copy was named "rack0-1" (issue 49).
    size_t digits = prefix.size();
    while (digits > 0 && isDigit(prefix[digits - 1]))
        --digits;
    if (digits > 0 && digits < prefix.size() && prefix[digits - 1] != '-') {
        prefix.resize(digits);
        group.name.clear();  // so it does not count as taken
        std::set<std::string> taken;
        for (const TopoGroup &other : s.topology.groups)
            taken.insert(other.name);
        for (int i = 0;; ++i)
            if (!taken.count(prefix + std::to_string(i))) {
                s.topology.groups[g].name = prefix + std::to_string(i);
                break;
            }
        for (int child : s.topology.groups[g].children)
            renameUnique(s, child);
        return;
    }
    // "rack-3" -> "rack"; "node-copy" stays.
    const auto dash = prefix.find_last_of('-');
    if (dash != std::string::npos && dash + 1 < prefix.size() &&
        std::all_of(prefix.begin() + static_cast<long>(dash) + 1, prefix.end(), isDigit))
        prefix.resize(dash);
    if (prefix.empty())
        prefix = shownLevelName(s.topology, group.level);
    group.name.clear();  // so it does not count as taken
    s.topology.groups[g].name = uniqueGroupName(s.topology, prefix);
    for (int child : s.topology.groups[g].children)
        renameUnique(s, child);
}

void collectSubtree(const Topology &t, int g, std::set<int> &out)
{
    out.insert(g);
    for (int c : t.groups[g].children)
        collectSubtree(t, c, out);
}

// Erases the groups in `doomed` (a set closed under descendants) and renumbers the rest.
void eraseGroups(ClusterState &s, const std::set<int> &doomed)
{
    Topology &t = s.topology;
    std::vector<int> remap(t.groups.size(), -1);
    int next = 0;
    for (int i = 0; i < static_cast<int>(t.groups.size()); ++i)
        if (!doomed.count(i))
            remap[i] = next++;
    std::vector<TopoGroup> groups;
    std::vector<GroupUid> uids;
    groups.reserve(next);
    uids.reserve(next);
    for (int i = 0; i < static_cast<int>(t.groups.size()); ++i) {
        if (remap[i] < 0)
            continue;
        TopoGroup g = t.groups[i];
        g.parent = g.parent >= 0 ? remap[g.parent] : -1;
        std::vector<int> children;
        for (int c : g.children)
            if (remap[c] >= 0)
                children.push_back(remap[c]);
        g.children = std::move(children);
        groups.push_back(std::move(g));
        uids.push_back(s.uids[i]);
    }
    t.root = t.root >= 0 ? remap[t.root] : -1;
    t.groups = std::move(groups);
    s.uids = std::move(uids);
}

// Drops device types no node uses and orders the rest by first use in depth-first order
// (the order the cluster loader produces, so a saved file reloads to an equal topology).
void pruneDeviceTypes(Topology &t)
{
    std::vector<int> remap(t.deviceTypes.size(), -1);
    std::vector<DeviceSpec> kept;
    std::function<void(int)> visit = [&](int g) {
        const TopoGroup &group = t.groups[g];
        if (group.level == 0 && group.deviceType >= 0 &&
            group.deviceType < static_cast<int>(remap.size()) && remap[group.deviceType] < 0) {
            remap[group.deviceType] = static_cast<int>(kept.size());
            kept.push_back(t.deviceTypes[group.deviceType]);
        }
        for (int c : group.children)
            visit(c);
    };
    if (t.root >= 0 && t.root < static_cast<int>(t.groups.size()))
        visit(t.root);
    if (kept.empty())
        return;
    for (TopoGroup &g : t.groups)
        if (g.level == 0 && g.deviceType >= 0 && g.deviceType < static_cast<int>(remap.size()))
            g.deviceType = std::max(0, remap[g.deviceType]);
    t.deviceTypes = std::move(kept);
}

bool validLink(const LinkParams &l, std::string &why)
{
    if (!(l.bandwidth > 0)) {
        why = "bandwidth must be > 0";
        return false;
    }
    if (!(l.latency >= 0)) {
        why = "latency must be >= 0";
        return false;
    }
    if (!(l.oversubscription >= 1)) {
        why = "oversubscription must be >= 1";
        return false;
    }
    return true;
}

} // namespace

ClusterState makeClusterState(Topology topology, GroupUid &nextUid)
{
    ClusterState s;
    s.topology = std::move(topology);
    s.uids.reserve(s.topology.groups.size());
    for (size_t i = 0; i < s.topology.groups.size(); ++i)
        s.uids.push_back(nextUid++);
    return s;
}

int groupIndexOf(const ClusterState &s, GroupUid uid)
{
    const auto it = std::find(s.uids.begin(), s.uids.end(), uid);
    return it == s.uids.end() ? -1 : static_cast<int>(it - s.uids.begin());
}

int rowInParent(const Topology &t, int group)
{
    if (!validGroup(t, group))
        return -1;
    const int parent = t.groups[group].parent;
    if (parent < 0)
        return 0;
    const auto &siblings = t.groups[parent].children;
    const auto it = std::find(siblings.begin(), siblings.end(), group);
    return it == siblings.end() ? -1 : static_cast<int>(it - siblings.begin());
}

bool isWithin(const Topology &t, int group, int ancestor)
{
    for (int g = group; validGroup(t, g); g = t.groups[g].parent)
        if (g == ancestor)
            return true;
    return false;
}

std::string uniqueGroupName(const Topology &t, const std::string &prefix)
{
    std::set<std::string> taken;
    for (const TopoGroup &g : t.groups)
        taken.insert(g.name);
    for (int i = 1;; ++i) {
        std::string name = prefix + "-" + std::to_string(i);
        if (!taken.count(name))
            return name;
    }
}

Result<ClusterState> moveNode(const ClusterState &s, int node, int rack, int row)
{
    const Topology &t = s.topology;
    if (!validGroup(t, node) || t.groups[node].level != 0)
        return refuse("only nodes can be moved between racks");
    if (!validGroup(t, rack) || t.groups[rack].level != 1)
        return refuse("a node can only be dropped on a " + shownLevelName(t, 1));
    if (t.groups[node].parent == rack)
        return refuse("'" + t.groups[node].name + "' is already in '" + t.groups[rack].name + "'");
    ClusterState out = s;
    TopoGroup &from = out.topology.groups[t.groups[node].parent];
    from.children.erase(std::find(from.children.begin(), from.children.end(), node));
    if (from.children.empty())
        return refuse("moving '" + t.groups[node].name + "' would leave '" + from.name +
                      "' empty; remove the " + shownLevelName(t, 1) + " instead");
    auto &to = out.topology.groups[rack].children;
    const int at = row < 0 || row > static_cast<int>(to.size()) ? static_cast<int>(to.size()) : row;
    to.insert(to.begin() + at, node);
    out.topology.groups[node].parent = rack;
    return finish(std::move(out));
}

Result<ClusterState> addRack(const ClusterState &s, int parent, GroupUid &nextUid)
{
    const Topology &t = s.topology;
    if (!validGroup(t, parent) || t.groups[parent].level < 2)
        return refuse("a " + shownLevelName(t, 1) + " can only be added under a group of level 2 or "
                      "higher; this cluster has no level above its " + shownLevelName(t, 1) + "s");
    // Shape it like the parent's first rack, or any rack of the cluster.
    int model = -1;
    for (int c : t.groups[parent].children)
        if (t.groups[c].level == 1) {
            model = c;
            break;
        }
    for (int g = 0; model < 0 && g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].level == 1)
            model = g;
    if (t.groups[parent].level != 2)
        return refuse("select a " + shownLevelName(t, 2) + " to add a " + shownLevelName(t, 1) + " to");
    if (model < 0)
        return refuse("no " + shownLevelName(t, 1) + " to copy the shape from");
    ClusterState out = s;
    const int rack = appendCopy(out, t, model, parent, nextUid);
    out.topology.groups[rack].linkOverride.reset();
    out.topology.groups[parent].children.push_back(rack);
    renameUnique(out, rack);
    return finish(std::move(out));
}

Result<ClusterState> addNode(const ClusterState &s, int rack, int row, GroupUid &nextUid)
{
    const Topology &t = s.topology;
    if (!validGroup(t, rack) || t.groups[rack].level != 1)
        return refuse("select a " + shownLevelName(t, 1) + " or a node to add a node to");
    int model = t.groups[rack].children.empty() ? -1 : t.groups[rack].children.back();
    for (int g = 0; model < 0 && g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].level == 0)
            model = g;
    if (model < 0)
        return refuse("no node to copy the shape from");
    ClusterState out = s;
    const int node = appendCopy(out, t, model, rack, nextUid);
    out.topology.groups[node].linkOverride.reset();
    auto &children = out.topology.groups[rack].children;
    const int at = row < 0 || row > static_cast<int>(children.size()) ? static_cast<int>(children.size()) : row;
    children.insert(children.begin() + at, node);
    renameUnique(out, node);
    return finish(std::move(out));
}

Result<ClusterState> removeGroups(const ClusterState &s, const std::vector<int> &groups)
{
    const Topology &t = s.topology;
    if (groups.empty())
        return refuse("nothing selected to delete");
    std::set<int> doomed;
    for (int g : groups) {
        if (!validGroup(t, g))
            return refuse("no such group");
        if (g == t.root)
            return refuse("the cluster itself cannot be deleted");
        collectSubtree(t, g, doomed);
    }
    ClusterState out = s;
    // Unlink the top-most doomed groups from their surviving parents.
    for (int g : doomed) {
        const int parent = t.groups[g].parent;
        if (parent >= 0 && !doomed.count(parent)) {
            auto &children = out.topology.groups[parent].children;
            children.erase(std::find(children.begin(), children.end(), g));
            if (children.empty())
                return refuse("deleting this would leave '" + t.groups[parent].name +
                              "' empty; delete '" + t.groups[parent].name + "' instead");
        }
    }
    eraseGroups(out, doomed);
    return finish(std::move(out));
}

Result<ClusterState> duplicateGroup(const ClusterState &s, int group, GroupUid &nextUid)
{
    const Topology &t = s.topology;
    if (!validGroup(t, group))
        return refuse("nothing selected to duplicate");
    if (group == t.root)
        return refuse("the cluster itself cannot be duplicated; duplicate one of its groups");
    ClusterState out = s;
    const int parent = t.groups[group].parent;
    const int copy = appendCopy(out, t, group, parent, nextUid);
    auto &children = out.topology.groups[parent].children;
    children.insert(children.begin() + rowInParent(t, group) + 1, copy);
    renameUnique(out, copy);
    return finish(std::move(out));
}

Result<ClusterState> setClusterName(const ClusterState &s, const std::string &name)
{
    ClusterState out = s;
    out.topology.name = name;
    return finish(std::move(out));
}

Result<ClusterState> setLevelName(const ClusterState &s, int level, const std::string &name)
{
    if (level < 0 || level >= s.topology.levelCount())
        return refuse("no such level");
    if (name.empty())
        return refuse("a level needs a name");
    ClusterState out = s;
    out.topology.levels[level].name = name;
    return finish(std::move(out));
}

Result<ClusterState> setLevelLink(const ClusterState &s, int level, const LinkParams &link)
{
    if (level < 0 || level >= s.topology.levelCount())
        return refuse("no such level");
    std::string why;
    if (!validLink(link, why))
        return refuse(shownLevelName(s.topology, level) + " link: " + why);
    ClusterState out = s;
    out.topology.levels[level].link = link;
    return finish(std::move(out));
}

Result<ClusterState> setGroupName(const ClusterState &s, int group, const std::string &name)
{
    if (!validGroup(s.topology, group))
        return refuse("no such group");
    if (name.empty())
        return refuse("a group needs a name");
    ClusterState out = s;
    out.topology.groups[group].name = name;
    return finish(std::move(out));
}

Result<ClusterState> setGroupOverride(const ClusterState &s, int group,
                                      const std::optional<LinkParams> &link)
{
    if (!validGroup(s.topology, group))
        return refuse("no such group");
    std::string why;
    if (link && !validLink(*link, why))
        return refuse("'" + s.topology.groups[group].name + "' link: " + why);
    ClusterState out = s;
    out.topology.groups[group].linkOverride = link;
    return finish(std::move(out));
}

Result<ClusterState> setNodeDevices(const ClusterState &s, int node, int count,
                                    const DeviceSpec &type)
{
    const Topology &t = s.topology;
    if (!validGroup(t, node) || t.groups[node].level != 0)
        return refuse("devices belong to nodes; select a node");
    if (count < 1)
        return refuse("a node needs at least one device");
    if (count > 4096)
        return refuse("at most 4096 devices per node");
    ClusterState out = s;
    Topology &o = out.topology;
    auto it = std::find(o.deviceTypes.begin(), o.deviceTypes.end(), type);
    int typeIndex = static_cast<int>(it - o.deviceTypes.begin());
    if (it == o.deviceTypes.end())
        o.deviceTypes.push_back(type);
    TopoGroup &g = o.groups[node];
    g.deviceType = typeIndex;
    g.devices.resize(static_cast<size_t>(count), 0);
    return finish(std::move(out));
}

} // namespace nest
