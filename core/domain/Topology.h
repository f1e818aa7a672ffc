#pragma once
// The cluster as an explicit tree: root → (pods/spines) → racks → nodes → devices.
// Levels are numbered from the inside out: level 0 is "inside one node" (NVLink), level 1
// the first switch tier (rack/leaf), ... levelCount()-1 is the root. A group at level L
// (L >= 1) has groups of level L-1 as children; a level-0 group (a node) holds devices.
// Non-uniform trees are legal (a rack of 3 nodes beside a rack of 4).
//
// level(a, b) of two devices is the level of their lowest common ancestor group: two GPUs
// of one node are at level 0, of one rack at level 1, and so on; level(a, a) == -1.
// Link parameters of level L describe traffic whose lowest common ancestor is at level L:
// bandwidth per device, one direction (bytes/s); latency (s); oversubscription (>= 1) of
// the uplinks into that level (a flow gets bandwidth/oversubscription when every device
// below the switch sends across it at once). A group may override its level's parameters.
#include "DeviceSpec.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

struct LinkParams {
    double bandwidth = 0;         // bytes/s per device, one direction
    double latency = 0;           // seconds
    double oversubscription = 1;  // >= 1
    bool operator==(const LinkParams &) const = default;
};

struct TopoLevel {
    std::string name;  // "node", "rack", "spine", "pod", "torus-1hop"...
    LinkParams link;
    bool operator==(const TopoLevel &) const = default;
};

struct TopoGroup {
    std::string name;
    int level = 0;
    int parent = -1;                       // -1 for the root
    std::vector<int> children;             // group indices, level-1 groups (level >= 1 only)
    std::vector<int> devices;              // device ids (level 0 only)
    int deviceType = 0;                    // index into Topology::deviceTypes (level 0 only)
    std::optional<LinkParams> linkOverride;
    bool operator==(const TopoGroup &) const = default;
};

struct Device {
    int id = 0;
    int node = 0;   // index of its level-0 group
    int type = 0;   // index into Topology::deviceTypes
    int indexInNode = 0;
    bool operator==(const Device &) const = default;
};

// The compact "uniform levels" form: innermost first; fanout = children per group at that
// level (devices per node for level 0).
struct UniformLevel {
    std::string name;
    int fanout = 1;
    LinkParams link;
};

class Topology {
public:
    // Limits enforced by validate() and the loaders.
    static constexpr int maxLevels = 16;
    static constexpr int maxDevices = 1 << 20;  // 1,048,576

    Topology() = default;

    // Expands the compact form into the tree.
    static Topology uniform(std::string name, DeviceSpec device, const std::vector<UniformLevel> &levels);

    std::string name;
    std::vector<DeviceSpec> deviceTypes;
    std::vector<TopoLevel> levels;   // levels[0] innermost
    std::vector<TopoGroup> groups;   // any order; parent/children by index
    std::vector<Device> devices;     // ids 0..n-1 in depth-first order of the tree
    int root = -1;
    // Rail-optimised fabric (NVIDIA DGX SuperPOD style): above the node level, GPU i of
    // every node is cabled to leaf ("rail") i, so a switch's uplinks are shared only by
    // the devices of one rail below it (Device::indexInNode). The cost model counts
    // uplink contention per rail (docs/cost-model.md §2, "Rail-optimised fabrics").
    bool railOptimized = false;

    int levelCount() const { return static_cast<int>(levels.size()); }
    int deviceCount() const { return static_cast<int>(devices.size()); }
    const DeviceSpec &spec(int device) const { return deviceTypes[devices[device].type]; }

    // Level of the lowest common ancestor of two devices (-1 when a == b).
    int level(int a, int b) const;
    // The group that is the lowest common ancestor of a and b (a's node when a == b).
    int lcaGroup(int a, int b) const;
    // Highest level() over all pairs of the set (-1 for fewer than two distinct devices).
    int spanLevel(const std::vector<int> &deviceIds) const;
    // Sorted distinct levels crossed by pairs of the set (e.g. {0, 1} for two nodes of a rack).
    std::vector<int> levelsSpanned(const std::vector<int> &deviceIds) const;
    // The ancestor of `device` at `level` (its node for level 0, root for the top level).
    int ancestor(int device, int level) const
    {
        return m_ancestors[static_cast<size_t>(device) * levels.size() + static_cast<size_t>(level)];
    }
    // Effective link of a group: its override, else its level's parameters.
    LinkParams link(int group) const;
    // Effective link between two distinct devices: link(lcaGroup(a, b)).
    LinkParams link(int a, int b) const;
    // Devices below a group, in id order.
    std::vector<int> devicesUnder(int group) const;
    int deviceCountUnder(int group) const;
    // Devices below a group whose index in their node is `rail` (the devices that share
    // the group's rail-`rail` uplinks on a rail-optimised fabric).
    int railDeviceCountUnder(int group, int rail) const;
    // Group indices at one level, in depth-first order (level 0: the nodes).
    std::vector<int> groupsAtLevel(int level) const;
    // The NVLink (scale-up) domain: the highest level L such that levels 0..L all run at the
    // innermost level's bandwidth per device (an NVL72 rack: trays of 4 and the rack's
    // NVLink switches both at 900 GB/s, so L = the rack level; a DGX node: L = 0). A group at
    // that level is one domain. -1 for a topology without levels.
    int nvlinkDomainLevel() const;
    // What the cost model moves over a group's link: link(group), with the bandwidth of the
    // scale-up levels (0 .. nvlinkDomainLevel()) times scaleUpEfficiency() and of the levels
    // above times scaleOutEfficiency(): the shares of the nominal NVLink and NIC rates the
    // collective library reaches (DeviceSpec): a node's by its own device type, a group above
    // by the lowest of the cluster's types. The editor shows link(); every cost reads this.
    LinkParams achievableLink(int group) const;
    // The same for a level's own link (no group override).
    LinkParams achievableLevelLink(int level) const;
    // The lowest DeviceSpec::scaleUpEfficiency / scaleOutEfficiency of the device types (1
    // without any).
    double scaleUpEfficiency() const;
    double scaleOutEfficiency() const;

    // Recomputes device ids (depth-first), Device::node/indexInNode, parent links and the
    // ancestor index after an edit of groups. Call after changing the tree by hand; the
    // queries above (level, ancestor, devicesUnder, ...) read the index it builds. A node's
    // device count is groups[node].devices.size() (the ids in it are rewritten). Safe on a
    // broken tree (dangling indices, cycles): what cannot be reached is left out and
    // validate() names the problem.
    void reindex();
    // Empty when the topology is consistent; otherwise one message naming the problem
    // (no devices, a node without devices, a level without a name, bandwidth <= 0, ...).
    std::string validate() const;

    bool operator==(const Topology &o) const
    {
        return name == o.name && deviceTypes == o.deviceTypes && levels == o.levels &&
               groups == o.groups && devices == o.devices && root == o.root &&
               railOptimized == o.railOptimized;
    }

private:
    // m_ancestors[d * levelCount() + L] = ancestor group of device d at level L.
    std::vector<int> m_ancestors;
    // Per group: first device id below it and how many (ids below a group are contiguous).
    std::vector<int> m_firstDevice;
    std::vector<int> m_deviceCount;
    // Groups in depth-first pre-order from the root (reachable ones only).
    std::vector<int> m_preorder;
};

// A regular tree: one device type, no link override, every group of a level with the same
// number of children (nodes: devices), each child one level down. Device ids being
// depth-first, the level-l group of device d is then the d / sizes[l]-th one, and
// translating ids by a multiple of sizes[l] maps every level-l subtree onto an identical
// one (links, counts, rails). Returns sizes[l] = devices below each level-l group, or
// empty when the tree is not regular. O(groups); computed on demand, never stale.
std::vector<int> regularBlockSizes(const Topology &topo);

} // namespace nest
