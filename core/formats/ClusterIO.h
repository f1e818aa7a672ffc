#pragma once
// Cluster files: the compact "uniform levels" form, a template reference and the explicit
// tree (docs/formats.md (Cluster files)). Every bad input gives one message
// "FILE: at JSON.PATH: REASON"; nothing throws out of these functions.
#include "JsonUtil.h"
#include "Result.h"
#include "Topology.h"

#include <optional>
#include <string>

namespace nest {

// Any of the three forms; `origin` names the source (a file name) in messages.
Result<Topology> clusterFromJson(const Json &j, const std::string &origin);
// The explicit form (what the editor saves). clusterFromJson(clusterToJson(t)) == t for every
// valid t whose deviceTypes are in first-use order (depth-first), which is the order the
// loader and the templates produce.
Json clusterToJson(const Topology &t);
// The compact form when t is uniform (one device type, equal fanout per level, no link
// overrides, group names as Topology::uniform gives them); nullopt otherwise.
std::optional<Json> clusterToCompactJson(const Topology &t);

Result<Topology> loadCluster(const std::string &file);
// Refuses an invalid topology (the message says why); writes through writeJsonFile.
Result<bool> saveCluster(const std::string &file, const Topology &t);
// An existing file, else a preset name (clusterPresets()), else a template key with its
// defaults, else an error listing the known presets.
Result<Topology> resolveCluster(const std::string &fileOrPreset);

} // namespace nest
