#pragma once
// A workspace: everything the GUI saves in one file (extension ".nestws.json") — the
// cluster, the model, the search settings and the pinned plans.
//
// {
//   "format": "nest-workspace", "version": 1,
//   "cluster": { ...cluster JSON as ClusterIO reads it... },
//   "model":   {"preset": "llama2-7b", "seq_length": 4096, "global_batch": 512}
//              or a model config / profile object as the model loaders accept,
//   "search":  { ...search settings (SearchSettings.h)... },
//   "plans":   [ ...pinned plans (PinnedPlan.h)... ],
//   "calibration": "cal.json" (relative to the workspace's folder) or the nest-calibration
//              object itself (CalibrationIO.h; absent: uncalibrated)
// }
// Only "cluster" is required; the rest take the defaults below. See docs/gui.md.
#include "CalibrationIO.h"
#include "JsonUtil.h"
#include "ModelProfile.h"
#include "ModelSource.h"
#include "PinnedPlan.h"
#include "Plan.h"
#include "SearchSettings.h"
#include "Result.h"
#include "Topology.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

struct Workspace {
    Topology cluster;
    ModelSource model;             // {"preset": ...} or a model config / profile object, parsed
    SearchSettings search;
    std::vector<PinnedPlan> plans; // pinned plans (PinnedPlan.h)
    // The cost model's calibration to measured runs (none: uncalibrated), and the file it
    // was named by ("calibration": "FILE", saved back as that name; empty: saved inline).
    std::optional<Calibration> calibration;
    std::string calibrationFile;
};

inline constexpr const char *kWorkspaceExtension = ".nestws.json";

// Reads a workspace object; `origin` names the source in messages ("FILE: at PATH: REASON")
// and, when it is the workspace's file, the folder a relative "calibration" file is read from.
Result<Workspace> workspaceFromJson(const Json &j, const std::string &origin);
Json workspaceToJson(const Workspace &w);
Result<Workspace> loadWorkspace(const std::string &file);
// True when the JSON looks like a workspace (has "format": "nest-workspace" or a "cluster"
// key), as opposed to a bare cluster file.
bool looksLikeWorkspace(const Json &j);

// The workspace's model as a profile (ModelSource::profile; no JSON is read again);
// errors name `origin` and the path "model".
Result<ModelProfile> workspaceModel(const Workspace &w, const std::string &origin);

} // namespace nest
