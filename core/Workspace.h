#pragma once
// A workspace: everything the GUI saves in one file (extension ".nestws.json") — the
// cluster, the model, the search settings and the pinned plans.
//
// {
//   "format": "nest-workspace", "version": 1,
//   "cluster": { ...cluster JSON as ClusterIO reads it... },
//   "model":   {"preset": "llama2-7b", "seq_length": 4096, "global_batch": 512}
//              or a model config / profile object as the model loaders accept,
//   "search":  {"micro_batches": [1, 2, 4, 8], "schedules": ["1f1b", "gpipe", "interleaved"],
//               "max_stages": 0, "allow_zero": true, "allow_recompute": true,
//               "allow_sp": true, "memory_headroom": 0.0},
//   "plans":   [ ...pinned plan objects, kept as they are... ]
// }
// Only "cluster" is required; the rest take the defaults below. See docs/gui.md.
#include "JsonUtil.h"
#include "Plan.h"
#include "Result.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

// The search settings the GUI exposes; defaults as SearchOptions' (Planner.h).
struct SearchSettings {
    std::vector<int> microBatches{1, 2, 4, 8};       // candidate micro-batch sizes
    std::vector<Schedule> schedules{Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved};
    int maxStages = 0;                               // 0 = no limit
    bool allowZero = true;
    bool allowRecompute = true;
    bool allowSequenceParallel = true;
    double memoryHeadroom = 0.0;                     // fraction of device memory kept free

    bool operator==(const SearchSettings &) const = default;
};

struct Workspace {
    Topology cluster;
    Json model = Json::object();   // {"preset": ...} or a model config / profile object
    SearchSettings search;
    std::vector<Json> plans;       // pinned plans, opaque here
};

inline constexpr const char *kWorkspaceExtension = ".nestws.json";

// Reads a workspace object; `origin` names the source in messages ("FILE: at PATH: REASON").
Result<Workspace> workspaceFromJson(const Json &j, const std::string &origin);
Json workspaceToJson(const Workspace &w);
Result<Workspace> loadWorkspace(const std::string &file);
// True when the JSON looks like a workspace (has "format": "nest-workspace" or a "cluster"
// key), as opposed to a bare cluster file.
bool looksLikeWorkspace(const Json &j);

Json searchSettingsToJson(const SearchSettings &s);
// Throws JsonError with the path on bad input.
SearchSettings searchSettingsFromJson(const Json &j, const std::string &path);

} // namespace nest
