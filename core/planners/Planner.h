#pragma once
// The interface every planner implements (BRIEF §4): topology + profile + search options in,
// the best plan, its evaluator report and search statistics out. Planners are pure
// functions of their inputs: same inputs, same plan, bit for bit. They run on a worker
// thread; progress is reported through a callback and a CancelToken is polled often
// enough that plan() returns within 100 ms of cancel().
//
// The plan space the planners search is defined in PlanSpace.h and docs/planner.md.
#include "Evaluator.h"
#include "Plan.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace nest {

// How the data-parallel replicas of a pipeline are laid out on the device order.
enum class Layout {
    ReplicasOutside,  // stage-major: each stage's dp replicas side by side
    ReplicasInside,   // pipeline-major: each replica a whole pipeline in its own block
};
const char *toString(Layout l);  // "outside", "inside"

struct SearchOptions {
    int globalBatch = 0;                       // 0 = the model's default
    int seqLength = 0;                         // 0 = the model's default
    std::vector<int> microBatches = {1, 2, 4, 8};
    std::vector<Schedule> schedules = {Schedule::OneFOneB, Schedule::GPipe,
                                       Schedule::Interleaved};
    // Interleaving depths (model chunks per device) of the interleaved schedule; values < 2
    // are ignored (the non-interleaved schedules are chosen in `schedules`).
    std::vector<int> virtualStages = {2, 3, 4};
    int maxStages = 0;                         // pipeline depth limit; 0 = number of layers
    // What the interleaved chunks' split counts (Plan.h; docs/planner.md "Pipeline units");
    // recorded in every plan. The 1F1B / GPipe stages cut the layer chain freely whatever it is.
    PipelineUnits pipelineUnits = PipelineUnits::Layers;
    bool allowZero = true;                     // ZeRO 1-3 (0 is always allowed)
    // Activation recomputation modes a stage may use; allowRecompute = false means
    // {None} whatever the list says.
    std::vector<Recompute> recomputeModes = {Recompute::None, Recompute::Selective, Recompute::Full};
    bool allowRecompute = true;
    bool allowSp = true;                       // sequence parallelism with tp > 1
    std::vector<int> tpCandidates = {1, 2, 4, 8};
    std::vector<int> epCandidates = {1, 2, 4, 8, 16, 32, 64};  // used on stages holding MoE layers
    // The experts' tensor widths (StageConfig::etp) on stages holding MoE layers; 0 = the
    // stage's tp (Megatron-Core's default), so the default searches etp = tp and etp = 1.
    std::vector<int> etpCandidates = {0, 1};
    // Context-parallel degrees; every cp must divide the sequence length. A cp > 1 is
    // offered only when seqLength / cp >= cpMinTokensPerRank (context parallelism pays only
    // for long sequences); 0 takes the list as given (what an explicit user list sets).
    std::vector<int> cpCandidates = {1, 2, 4, 8, 16};
    int cpMinTokensPerRank = 4096;
    std::vector<int> dpCandidates;             // empty = every dp that divides the batch
    // The NEST artifact's batch rule (nest-cli --match-artifact): a dp that does not divide
    // the batch is searched too, each replica running ceil(batch / (micro-batch x dp))
    // micro-batches, and its plan's batch is rounded up to that (docs/interop.md).
    bool padBatch = false;
    std::vector<Layout> layouts = {Layout::ReplicasOutside, Layout::ReplicasInside};
    double memoryHeadroom = 0.0;               // fraction of capacity kept free
    CostOptions cost;                          // memoryHeadroom above overrides cost's
    // The linear layers' precisions searched (planPrecisions(), PrecisionSearch.h): the best
    // plan over them all. Empty = cost.precision alone (what Planner::plan() itself prices).
    std::vector<Precision> precisions;
    // Randomised planners (mcmc): the seed (same seed, same plan) and the number of plan
    // evaluations they may spend (0 = the planner's default).
    unsigned long long seed = 1;
    int evaluationBudget = 0;
    // Limits before work (SearchEstimate.h): a search whose estimate is above these is
    // refused with PlanResult.message instead of allocating. 0 = the defaults (half the
    // machine's RAM; kDefaultMaxStates).
    double memoryBudgetBytes = 0;
    double maxStates = 0;
    // The K best distinct plans (PlanSignature.h; NestPlanner only, issue 24): PlanResult::top
    // holds them, best first. 1 = the best plan only, at no extra cost.
    int topK = 1;
    // Searches that share the outer points (NestPlanner, topK = 1; docs/planner.md, "Outer
    // points in parallel"): the same plan as one, sooner on a machine with the cores for it.
    // 1 = the calling thread only.
    int threads = 1;
    bool operator==(const SearchOptions &) const = default;
};

struct SearchStats {
    long long states = 0;        // DP cells (or complete plans for exhaustive) created
    long long transitions = 0;   // stage choices combined with a sub-solution
    long long pruned = 0;        // infeasible (memory) options + choices cut by the bound
    long long stageCostCalls = 0;
    long long configs = 0;       // outer points (micro-batch, schedule, dp, layout) searched
    long long configsSkipped = 0;// outer points skipped by their lower bound
    double wallSeconds = 0;
};

// One of the K best distinct plans (SearchOptions::topK).
struct RankedPlan {
    Plan plan;
    Report report;
    double objective = 0;        // the iteration time the planner optimised (seconds)
    bool verified = false;       // as PlanResult::verified
};

struct PlanResult {
    bool found = false;
    bool cancelled = false;
    Plan plan;
    Report report;
    double objective = 0;        // the iteration time the planner optimised (seconds)
    bool verified = false;       // |report.iterationTime - objective| <= 1e-9 * objective
    SearchStats stats;
    std::string message;         // why nothing was found (memory obstacle, bad options...)
    // topK > 1: the best distinct plans, best first (top[0] is `plan`), at most topK; empty
    // with topK = 1.
    std::vector<RankedPlan> top;
};

// fraction in [0, 1], monotone; bestSoFar = best iteration time so far (0 = none yet).
using ProgressFn = std::function<void(double fraction, double bestSoFar)>;

// Cooperative cancellation: one token per job, shared with the worker.
class CancelToken {
public:
    void cancel() { m_flag.store(true, std::memory_order_relaxed); }
    bool cancelled() const { return m_flag.load(std::memory_order_relaxed); }
    void reset() { m_flag.store(false, std::memory_order_relaxed); }

private:
    std::atomic<bool> m_flag{false};
};

class Planner {
public:
    virtual ~Planner() = default;
    virtual PlanResult plan(const Topology &topo, const ModelProfile &model,
                            const SearchOptions &options, const ProgressFn &progress,
                            const CancelToken &cancel) const = 0;
    virtual std::string name() const = 0;

    // Convenience: no progress, never cancelled.
    PlanResult plan(const Topology &topo, const ModelProfile &model,
                    const SearchOptions &options) const;
};

// Evaluates the plan and fills result.report, .verified (against result.objective) and
// .found. Shared by the planners' last step.
void finishResult(PlanResult &result, const Topology &topo, const ModelProfile &model,
                  const SearchOptions &options);

} // namespace nest
