#pragma once
// The search settings a workspace stores and the window's search panel edits, and the one
// conversion from them to the planner's SearchOptions (used by the GUI and by
// `nest-cli plan --workspace`, so that both plan exactly the same space).
//
// JSON (the workspace's "search" object; every key optional, defaults below):
//   {"planner": "nest", "micro_batches": [1, 2, 4, 8],
//    "schedules": ["1f1b", "gpipe", "interleaved"], "virtual_stages": 2,
//    "max_stages": 0, "memory_headroom": 0.0,
//    "allow_tp": true, "allow_pp": true, "allow_dp": true, "allow_ep": true,
//    "allow_cp": true, "allow_sp": true, "allow_zero": true, "allow_recompute": true,
//    "tp_candidates": [1, 2, 4, 8], "ep_candidates": [1, 2, 4, 8], "cp_candidates": [1],
//    "layouts": ["outside", "inside"]}
#include "JsonUtil.h"
#include "Plan.h"
#include "Planner.h"

#include <memory>
#include <string>
#include <vector>

namespace nest {

struct ModelProfile;

struct SearchSettings {
    std::string planner = "nest";                    // "nest" or "exhaustive"
    std::vector<int> microBatches{1, 2, 4, 8};       // candidate micro-batch sizes
    std::vector<Schedule> schedules{Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved};
    int virtualStages = 2;                           // interleaving depth (chunks per device)
    int maxStages = 0;                               // 0 = no limit
    // Strategies on/off. Off keeps the candidate lists (switching back restores them):
    // tp/ep/cp off = width 1 only, pp off = one stage, dp off = one replica.
    bool allowTp = true;
    bool allowPp = true;
    bool allowDp = true;
    bool allowEp = true;
    bool allowCp = true;
    bool allowZero = true;
    bool allowRecompute = true;
    bool allowSequenceParallel = true;
    std::vector<int> tpCandidates{1, 2, 4, 8};
    std::vector<int> epCandidates{1, 2, 4, 8};
    std::vector<int> cpCandidates{1};
    std::vector<Layout> layouts{Layout::ReplicasOutside, Layout::ReplicasInside};
    double memoryHeadroom = 0.0;                     // fraction of device memory kept free

    bool operator==(const SearchSettings &) const = default;
};

// The planner's options for `model` (its global batch and sequence length) under `s`.
SearchOptions searchOptionsFrom(const SearchSettings &s, const ModelProfile &model);

// The planner names SearchSettings::planner accepts.
const std::vector<std::string> &plannerNames();
// The planner named `name` ("nest", "exhaustive"); null for an unknown name.
std::unique_ptr<Planner> makePlanner(const std::string &name);

bool layoutFromString(const std::string &text, Layout &out);  // "outside", "inside"

Json searchSettingsToJson(const SearchSettings &s);
// Throws JsonError with the path on bad input (unknown keys included).
SearchSettings searchSettingsFromJson(const Json &j, const std::string &path);

} // namespace nest
