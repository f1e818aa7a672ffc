#pragma once
// The best plan a framework runs as it is (issue 47, `--target`): a search over what that
// framework version expresses (FrameworkRules): one tp, cp and ep for the model, one ZeRO
// stage, recomputation and sequence-parallel setting, its schedules, its rank order, and the
// stage splits it can be given (even, first/last, listed, or DeepSpeed's partition_balanced).
// Every candidate is priced by the evaluator; the result needs no fallback when exported
// (nearestRunnablePlan() leaves it as it is).
#include "Evaluator.h"
#include "FrameworkExport.h"
#include "ModelConfig.h"
#include "ModelProfile.h"
#include "Plan.h"
#include "PlanBuilder.h"
#include "Planner.h"
#include "Result.h"
#include "Topology.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

// "megatron", "nemo", "deepspeed", "torchtitan" (the launchers; not "nest").
std::optional<ExportFormat> targetFromString(const std::string &name);
std::string targetNameList();  // "megatron, nemo, deepspeed, torchtitan"

struct TargetResult {
    bool found = false;
    std::string message;          // why nothing was found
    Plan plan;
    Report report;
    UniformLayout layout;
    long long evaluated = 0;      // candidates priced by the evaluator
};

// The candidate stage splits (transformer blocks per stage) `rules` can be given for
// `stages` stages of `blocks` blocks, for `layout` (its schedule and units). For splits the
// framework takes as listed (Megatron-LM's layout, torchtitan's module lists) the balanced
// split and the one in proportion to each stage's devices' speed; searchForFramework
// refines those by moving one block at a time while the time falls.
std::vector<std::vector<int>> frameworkSplits(const FrameworkRules &rules, const UniformLayout &layout,
                                              const ModelProfile &model, const Topology &topo);

// The fastest plan (fitting in memory) that `format`'s framework runs as it is, within
// `options` (widths, micro-batches, schedules, ZeRO / recompute / sp allowances, max stages,
// dp candidates), on the cluster's devices in id order.
// `config`: the model's hyperparameters where it has them; a model the framework cannot build
// (FrameworkModels.h; a measured profile for torchtitan) has no plan for it.
TargetResult searchForFramework(const Topology &topo, const ModelProfile &model, ExportFormat format,
                                const SearchOptions &options, const std::optional<ModelConfig> &config,
                                const CancelToken &cancel = CancelToken{});

} // namespace nest
