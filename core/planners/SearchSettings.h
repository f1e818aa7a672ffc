#pragma once
// The search settings a workspace stores and the window's search panel edits, and the one
// conversion from them to the planner's SearchOptions (used by the GUI and by
// `nest-cli plan --workspace`, so that both plan exactly the same space).
//
// JSON (the workspace's "search" object; every key optional, defaults below):
//   {"planner": "nest", "micro_batches": [1, 2, 4, 8],
//    "schedules": ["1f1b", "gpipe", "interleaved"], "virtual_stages": [2, 3, 4],
//    "max_stages": 0, "memory_headroom": 0.0, "framework": "megatron-core",
//    "allow_tp": true, "allow_pp": true, "allow_dp": true, "allow_ep": true,
//    "allow_cp": true, "allow_sp": true, "allow_zero": true, "allow_recompute": true,
//    "recompute_modes": ["none", "selective", "full"],
//    "tp_candidates": [1, 2, 4, 8], "ep_candidates": [1, 2, 4, 8],
//    "cp_candidates": [1, 2, 4, 8, 16], "cp_min_tokens_per_rank": 4096,
//    "layouts": ["outside", "inside"], "pipeline_units": "layers",
//    "mcmc_budget": 0, "seed": 1, "top_k": 1,
//    "precisions": ["bf16", "fp8"], "fp8_recipe": "delayed"}
// "stack": "defaults" | "tuned" (FrameworkProfile.h; written only when it is not the default).
// "fp8_attention": true prices Transformer Engine's FP8 attention on the fp8 and mxfp8
// candidates (CostOptions::fp8Attention; written only when true).
// "recompute_modules": ["layernorm", "moe_act"] what selective recomputation reruns
// (CostOptions::recomputeModules, Megatron-Core's names; written only when not the default,
// ["core_attn"]).
// MoE cost options (CostOptions; docs/cost-model.md, "MoE parallelism"), each written only when
// not the default: "moe_imbalance" (1 to 64, default 1.1), "capacity_factor" (0 to 64, 0 =
// dropless), "moe_dispatcher": "alltoall" | "deepep", "moe_a2a_overlap": true.
// "precisions" (absent = every precision the cluster's devices and the framework support)
// and "fp8_recipe" (absent = delayed, or the framework's own when it lacks delayed) are
// written only when set (PrecisionSearch.h).
// "mcmc_budget" is the mcmc planner's plan evaluations (0 = its default, 2000), "seed" its
// random seed (nest-cli's --budget and --seed, which override them). "top_k": the nest
// planner keeps the best K distinct plans (1..100; nest-cli plan --top overrides it).
// "virtual_stages" also accepts one whole number (files written before it was a list).
#include "JsonUtil.h"
#include "Plan.h"
#include "Planner.h"
#include "PlannerRegistry.h"
#include "RecomputeModules.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nest {

struct ModelProfile;
class Topology;

// Interleaving depths (chunks per device, each 2..64): a vector that one whole number also
// converts to, so that code written when the setting was a single depth keeps its meaning
// (`s.virtualStages = 3` is {3}).
struct DepthList : std::vector<int> {
    using std::vector<int>::vector;
    DepthList(int depth) : std::vector<int>{depth} {}  // implicit on purpose
};

// The names SearchSettings::target accepts (besides ""): "megatron", "nemo", "deepspeed", "torchtitan".
const std::vector<std::string> &searchTargetNames();

struct SearchSettings {
    std::string planner = "nest";                    // a name in plannerNames()
    std::vector<int> microBatches{1, 2, 4, 8};       // candidate micro-batch sizes
    std::vector<Schedule> schedules{Schedule::OneFOneB, Schedule::GPipe, Schedule::Interleaved};
    DepthList virtualStages{2, 3, 4};                // interleaving depths searched
    int maxStages = 0;                               // 0 = no limit
    PipelineUnits pipelineUnits = PipelineUnits::Layers;  // what the split counts (Plan.h)
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
    // Recompute modes searched when allowRecompute (off = none only, the list kept).
    std::vector<Recompute> recomputeModes{Recompute::None, Recompute::Selective, Recompute::Full};
    std::vector<int> tpCandidates{1, 2, 4, 8};
    std::vector<int> epCandidates{1, 2, 4, 8, 16, 32, 64};
    // The experts' tensor widths searched on MoE stages; 0 = the stage's tp (SearchOptions).
    std::vector<int> etpCandidates{0, 1};
    std::vector<int> cpCandidates{1, 2, 4, 8, 16};
    // A cp > 1 is searched only when sequence / cp >= this many tokens; 0 = the list as
    // given (an explicit list from the user, `nest-cli plan --cp`, sets 0).
    int cpMinTokensPerRank = 4096;
    std::vector<Layout> layouts{Layout::ReplicasOutside, Layout::ReplicasInside};
    double memoryHeadroom = 0.0;                     // fraction of device memory kept free
    Framework framework = Framework::MegatronCore;   // what the cost model overlaps (FrameworkProfile.h)
    Stack stack = CostOptions{}.stack;               // as its tuned recipes or its defaults run it
    int mcmcBudget = 0;                              // mcmc plan evaluations; 0 = the planner's default
    long long seed = 1;                              // mcmc seed
    int topK = 1;                                    // nest: keep the best K distinct plans
    // The linear layers' formats searched; empty = every one the devices and the framework
    // support (searchPrecisions()). The FP8 recipe when set, else the default.
    std::vector<NumberFormat> precisions;
    std::optional<Fp8Recipe> fp8Recipe;
    bool fp8Attention = false;  // FP8 attention on the fp8 / mxfp8 candidates (CostOptions)
    RecomputeModules recomputeModules;  // what selective recomputation reruns (CostOptions)
    // MoE pricing (CostOptions): routing imbalance, capacity factor (0 = dropless), DeepEP's
    // hierarchical dispatcher, Megatron-Core's expert-parallel overlap.
    double moeImbalance = CostOptions{}.moeImbalance;
    double capacityFactor = 0;
    bool moeHierarchicalDispatch = false;
    bool moeA2aOverlap = false;
    // The framework the plan must run on as it is ("" none; "megatron", "nemo", "deepspeed",
    // "torchtitan"): the search is restricted to what it runs (core/interop/FrameworkSearch.h).
    std::string target;

    bool operator==(const SearchSettings &) const = default;
};

// The planner's options for `model` (its global batch and sequence length) under `s`; the
// precisions follow from the cluster (searchPrecisionsFor).
SearchOptions searchOptionsFrom(const SearchSettings &s, const ModelProfile &model);
// The cost options `s` sets (memory headroom, framework, stack, FP8 attention, recompute
// modules, the MoE options), the rest at
// their defaults: what searchOptionsFrom() prices with and what a one-plan command starts
// from before its flags, so that the two cannot drift apart.
CostOptions settingsCostOptions(const SearchSettings &s);
// The precisions `s` searches on `topo` under `framework` (searchPrecisions()): what a
// caller puts in SearchOptions::precisions. Fails naming the device or framework that lacks
// a listed precision.
Result<std::vector<Precision>> searchPrecisionsFor(const SearchSettings &s, const Topology &topo, Framework framework);

bool layoutFromString(const std::string &text, Layout &out);  // "outside", "inside"

Json searchSettingsToJson(const SearchSettings &s);
// Throws JsonError with the path on bad input (unknown keys included).
SearchSettings searchSettingsFromJson(const Json &j, const std::string &path);

} // namespace nest
