#pragma once
// Pure edits of a cluster tree (Qt-free, in core). The GUI's WorkspaceDocument turns each successful edit into an undo
// command; a refused edit returns the reason, which the window shows in the status bar.
// Every function returns a complete new state (reindexed and validated): commands store
// the state before and after, so undo restores the tree exactly.
#include "Result.h"
#include "Topology.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nest {

using GroupUid = std::uint64_t;

// A topology plus one stable id per group (parallel to Topology::groups), so views can
// follow a group across edits that renumber the group vector.
struct ClusterState {
    Topology topology;
    std::vector<GroupUid> uids;

    bool operator==(const ClusterState &o) const { return topology == o.topology && uids == o.uids; }
};

// A state for a freshly loaded topology: uids firstUid, firstUid+1, ... (nextUid advances).
ClusterState makeClusterState(Topology topology, GroupUid &nextUid);

// Index of the group with this uid, -1 when none.
int groupIndexOf(const ClusterState &s, GroupUid uid);
// Position of a group among its parent's children (0 for the root).
int rowInParent(const Topology &t, int group);
// True when `group` is `ancestor` or lies below it.
bool isWithin(const Topology &t, int group, int ancestor);
// "rack-3" style name not used by any group: prefix + "-" + the smallest free number >= 1.
std::string uniqueGroupName(const Topology &t, const std::string &prefix);

// Moves a node (level 0 group) into another rack (level 1 group) at child position `row`
// (-1 = append). Refused for a non-node, a non-rack target, the node's own rack, or a
// move that leaves the topology invalid (e.g. an empty rack).
Result<ClusterState> moveNode(const ClusterState &s, int node, int rack, int row = -1);
// Adds a rack under `parent` (a group of level >= 2) shaped like a sibling rack (same node
// count, device counts and types). Refused when the cluster has no level above racks.
Result<ClusterState> addRack(const ClusterState &s, int parent, GroupUid &nextUid);
// Adds a node to `rack` at `row` (-1 = append) shaped like its last node.
Result<ClusterState> addNode(const ClusterState &s, int rack, int row, GroupUid &nextUid);
// Removes groups with everything below them. The root cannot be removed; an edit that
// would leave an empty parent or no devices is refused.
Result<ClusterState> removeGroups(const ClusterState &s, const std::vector<int> &groups);
// Copies a group's subtree next to it (names made unique).
Result<ClusterState> duplicateGroup(const ClusterState &s, int group, GroupUid &nextUid);

Result<ClusterState> setClusterName(const ClusterState &s, const std::string &name);
Result<ClusterState> setLevelName(const ClusterState &s, int level, const std::string &name);
Result<ClusterState> setLevelLink(const ClusterState &s, int level, const LinkParams &link);
Result<ClusterState> setGroupName(const ClusterState &s, int group, const std::string &name);
Result<ClusterState> setGroupOverride(const ClusterState &s, int group,
                                      const std::optional<LinkParams> &link);
// Sets a node's device count and type (the type is added to deviceTypes when new; types no
// node uses any more are dropped).
Result<ClusterState> setNodeDevices(const ClusterState &s, int node, int count,
                                    const DeviceSpec &type);

} // namespace nest
