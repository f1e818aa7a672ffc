#pragma once
// What a training framework can express of a plan, and the nearest plan it can run
// (issue 21, docs/interop.md "Fallback rules"). NEST's plans may give every stage its own
// widths, ZeRO stage and recomputation, split the layers unevenly, and put ranks on any
// device; the frameworks take one value per knob, split layers by their own rule and
// number ranks in a fixed order. nearestRunnablePlan() changes only what the framework
// cannot express, one rule at a time, and says each change in a sentence.
#include "Evaluator.h"
#include "ModelProfile.h"
#include "Plan.h"
#include "PlanBuilder.h"
#include "RankMapping.h"
#include "Result.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

struct FrameworkRules {
    std::string title;                      // "Megatron-LM"
    // The launcher's rank orders, fastest first, as parseRankOrder() reads them: the default
    // first, then those a flag selects (Megatron-LM's --use-tp-pp-dp-mapping), tried in turn
    // (the alternatives only for plans without expert parallelism).
    std::vector<std::string> orders = {"tp-cp-ep-dp-pp"};
    bool contextParallel = true;
    bool expertParallel = true;
    // Megatron-Core's parallel folding: ep may span any factor of tp x cp x dp (false: ep
    // divides dp, experts sharded over replicas) ...
    bool expertFolding = true;
    // ... and the experts' own tensor width (--expert-tensor-parallel-size; false: etp = tp).
    bool expertTensorWidth = false;
    bool gpipe = false;
    bool interleaved = true;
    std::vector<int> zeroStages = {0, 1};   // ZeRO stages it offers
    bool zeroAbove1WithPipeline = true;     // DeepSpeed: ZeRO-2/3 only without pipelining
    // How it splits the transformer blocks over the stages: Even (every stage the same
    // number), EvenInterior (the first and the last stage set apart, the others equal;
    // Megatron-LM's --decoder-first/last-pipeline-num-layers) or Any (explicit boundaries).
    // Balanced: DeepSpeed's partition_balanced over the blocks alone (Megatron-DeepSpeed's
    // GPTModelPipe hard-codes partition_method='type:transformer'; deepSpeedBalancedSplit()).
    // Layout: any boundaries with one chunk per stage (Megatron-LM's
    // --pipeline-model-parallel-layout), EvenInterior with interleaving or pipeline units.
    enum class Split { Even, EvenInterior, Any, Balanced, Layout };
    Split split = Split::Even;
    // Starts processes through a launcher (false: the plan's devices are listed as they are,
    // the NEST artifact's output, and no rank order applies).
    bool launcher = true;
    // Tensor parallelism always with sequence parallelism (torchtitan's TP plan).
    bool sequenceParallelWithTp = false;
    // Mixed precision only where the parameters are sharded (torchtitan: with tensor or
    // pipeline parallelism, BF16 needs FSDP or context parallelism, else it trains in FP32).
    bool mixedPrecisionNeedsSharding = false;
    // The precisions this framework version trains in (precisionBit() set, issue 46): a plan
    // in another one falls back to BF16, priced and said (FrameworkPrecision.h).
    unsigned precisions = precisionBit({});
    bool runsPrecision(const Precision &p) const { return (precisions & precisionBit(p)) != 0; }
};

// The blocks per stage DeepSpeed builds for Megatron-DeepSpeed's GPTModelPipe: its layer list
// [embedding, `blocks` transformer layers, final norm, head] weighted 1 per transformer layer
// (partition_method='type:transformer') and cut by deepspeed/runtime/utils.py
// partition_balanced(weights, stages) of v0.15 (the same dynamic programme, ties included).
std::vector<int> deepSpeedBalancedSplit(int blocks, int stages);

struct RunnablePlan {
    Plan plan;              // what the framework will run
    UniformLayout layout;   // its shape; rankDevices in layout.order place the ranks
    RankMapping ranks;      // where the framework's launcher starts each rank
    size_t orderIndex = 0;  // which of FrameworkRules::orders it uses
    std::vector<int> stageBlocks;        // transformer blocks per stage
    std::vector<std::string> changes;    // one sentence per change; empty: the plan as it is
    std::vector<std::string> notes;      // remarks that change nothing (mixed device types)
};

// The blocks (transformer / MoE layers) of each stage of a plan.
std::vector<int> blocksPerStage(const Plan &plan, const ModelProfile &model);

// The nearest plan `rules` can run, with its ranks placed for the framework's launcher
// (rankDevices in rules.order: rank r on layout.rankDevices[r]). Fails only when no plan of
// the same job fits the cluster (the reason says why).
// Per-stage widths become one width: each stage's own and the widest are tried (with
// fewer replicas where the cluster holds no more), and the fastest that fits in memory,
// under `cost`, is kept.
Result<RunnablePlan> nearestRunnablePlan(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                         const FrameworkRules &rules, const CostOptions &cost);

} // namespace nest
