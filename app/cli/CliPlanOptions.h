#pragma once
// Option parsing shared by `nest-cli evaluate`, `simulate` and `plan`: loads the cluster
// and the model (from --cluster and --model, or from --workspace FILE), the plan from
// --plan FILE or from the uniform-layout options (--tp --pp --dp --ep --cp --sp
// --microbatch --batch --seq --schedule --zero --recompute --order), and the search
// settings of `plan`. Bad input throws UsageError (exit 2).
#include "Calibration.h"
#include "CliArgs.h"

#include "Evaluator.h"
#include "ModelIO.h"
#include "ModelProfile.h"
#include "ModelSource.h"
#include "Plan.h"
#include "SearchSettings.h"
#include "Topology.h"
#include "Workspace.h"

#include <optional>
#include <set>
#include <string>

namespace nest::cli {

// Value options and flags the plan-taking commands accept (add your own to these sets).
std::set<std::string> planValueOptions();
std::set<std::string> planFlagOptions();
// What `nest-cli plan` accepts on top of the cluster, model, batch, sequence and cost
// options of planValueOptions(): the search settings (searchSettingsFrom), --out, --json.
std::set<std::string> planSearchValueOptions();
std::set<std::string> planSearchFlagOptions();
// The options of a search command (`plan`, `compare`): the cluster / model / batch /
// sequence / cost options of evaluate, less those that describe one layout, plus the
// search settings.
void searchCommandOptions(std::set<std::string> &values, std::set<std::string> &flags);

// --seq N and --batch N (whole numbers >= 1), each unset when absent.
ModelOptions modelSizeOptions(const CliArgs &args);
// --cluster FILE|PRESET (required).
Topology loadClusterOption(const CliArgs &args);
// --model FILE|PRESET (required), with optional sequence length / global batch overrides.
ModelProfile loadModelOption(const CliArgs &args, std::optional<int> seqLength, std::optional<int> globalBatch);
// --efficiency F (large-GEMM efficiency), --dp-overlap F, --framework NAME, on top of
// `base` (a workspace's cost options, or the defaults).
CostOptions costOptionsFrom(const CliArgs &args, CostOptions base = {});

// --workspace FILE: the workspace, or nullopt when the option is absent. Refuses
// --cluster or --model beside it; a missing or malformed file is a UsageError whose
// message is "FILE: at PATH: REASON".
std::optional<Workspace> loadWorkspaceOption(const CliArgs &args);

// The cluster, the model and (from a workspace) the search settings.
struct ClusterAndModel {
    Topology topology;
    ModelProfile model;
    std::optional<SearchSettings> search;  // set with --workspace
    std::optional<ModelSource> modelSource;  // the workspace's model, as it names it (--workspace)
    std::optional<Calibration> calibration;  // --calibration FILE, else the workspace's
};
// From --workspace FILE, or from --cluster and --model; the model built with the given
// sequence length / global batch when set (else the file's or preset's own).
ClusterAndModel loadClusterAndModel(const CliArgs &args, std::optional<int> seqLength,
                                    std::optional<int> globalBatch);

struct PlanInputs {
    Topology topology;
    ModelProfile model;
    Plan plan;
    std::optional<SearchSettings> search;  // set with --workspace
    std::optional<ModelSource> modelSource;  // set with --workspace
    std::optional<Calibration> calibration;  // --calibration FILE, else the workspace's
};
// Cluster, model and plan; with --plan FILE the model is built with the plan's sequence
// length and global batch.
PlanInputs loadPlanInputs(const CliArgs &args);
// "38.8 %", or "unknown (the model gives no FLOPs)" where the report's MFU means nothing
// (mfuKnown, MeasuredDevice.h: a measured profile without FLOPs, such as the NEST artifact's).
std::string mfuValueText(const Report &report);

// --calibration FILE, else the workspace's "calibration" (none: uncalibrated).
std::optional<Calibration> calibrationOption(const CliArgs &args, std::optional<Calibration> workspace);

// --match-artifact (docs/interop.md, "The NEST artifact's inputs"): the artifact's memory
// accounting (CostOptions::artifactMemory, gradients as BF16, no runtime overhead, no headroom)
// and its search space: 1F1B only, the file's tensor widths, micro-batch and recomputation,
// no ZeRO, no sequence or context parallelism. A UsageError unless `model` came from an artifact input.
CostOptions artifactCostOptions(CostOptions o, const ModelProfile &model);
SearchSettings artifactSearchSettings(SearchSettings s, const ModelProfile &model);
// costOptionsFrom(args) over the workspace's memory headroom and framework (when there is a
// workspace), so that `evaluate --workspace` costs a plan as `plan --workspace` did.
CostOptions costOptionsFor(const CliArgs &args, const PlanInputs &in);

// The search settings of `nest-cli plan`: the workspace's (or the defaults), then every
// explicit flag on top: --planner, --microbatch, --max-stages, --memory-headroom,
// --no-zero, --no-recompute, and the candidate lists --cp 1,2,4 (taken as given: no
// minimum tokens per rank), --vpp 1,2,3 (1 = the non-interleaved schedules, >= 2 the
// interleaving depths; without 1, interleaved only) and --recompute none,selective,full.
// An unknown planner is a UsageError listing plannerNames(); a bad list item is one
// naming the option and the item.
SearchSettings searchSettingsFrom(const CliArgs &args, const std::optional<SearchSettings> &base);
// --precision P [--fp8-recipe R] of a command that takes one plan (evaluate, simulate,
// export): the precision, checked against the cluster's devices and the framework of
// `cost`; unset when absent.
std::optional<Precision> precisionOption(const CliArgs &args, const Topology &topo, const CostOptions &cost);

// Everything a search needs, from the options of `plan` and `compare`: the inputs, the
// settings (workspace, then flags) and the planner's options with the cost flags, --seed
// and --budget applied. Checks --cp against the sequence length.
struct SearchJob {
    Topology topology;
    ModelProfile model;
    SearchSettings settings;
    SearchOptions options;
    std::optional<Calibration> calibration;  // applied to options.cost
    std::optional<ModelConfig> config;       // the model's hyperparameters where it has them
};
SearchJob loadSearchJob(const CliArgs &args);

// The model's hyperparameters (a preset, a model file, the workspace's model), if it has them
// (a measured profile has not): what the framework exports and targets check the model by.
std::optional<ModelConfig> modelConfigFor(const CliArgs &args, const std::optional<ModelSource> &workspaceModel);

} // namespace nest::cli
