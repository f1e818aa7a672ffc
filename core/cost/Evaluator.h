#pragma once
// The single source of truth for what a plan costs. Every planner, chart and comparison
// goes through evaluate(); planners that search stage by stage call stageCost() (or its
// parts, below) and iterationTime() so that the value they optimise equals evaluate()'s
// iteration time.
//
// Decomposition contract (planners rely on it, keep it):
//  * stageCost() depends only on the stage itself (layers, widths, zero, recompute, its own
//    device ids), the plan-wide scalars (microBatch, seqLength, number of micro-batches,
//    number of stages, the stage's position, schedule, dp) and the effective links of its
//    two pipeline boundaries (BoundaryLink), never on other stages' device ids.
//  * It is computed in parts, and stageCost(ctx) is exactly
//      g = stageGeometry(topology, stage, dp, options)        the device ids only
//      s = stageLayerSums(ctx, g.rates)                        the layers, no device ids
//      c = stageCostBase(ctx, g, s); finishStageCost(c, ctx)
//    stageGeometry() reads the device matrix, (tp, cp, ep), dp and the efficiency option;
//    stageLayerSums() reads the layer range, (tp, cp, ep, sp, recompute), the micro-batch,
//    the options and the devices' speed (g.rates) — not zero, not the position;
//    stageCostBase() adds zero and the plan scalars but not the pipeline position or links;
//    finishStageCost() adds what depends on the position (stash: numStages - stageIndex,
//    schedule), on the pipeline's depth and schedule (whether the expert-parallel overlap
//    pairs micro-batches: expertOverlapSchedule()) and the two BoundaryLinks (p2p), and the
//    totals. A planner may cache each part under any key that determines its inputs and gets
//    bit-identical results.
//  * A boundary's link is that of the worst (highest-level, then slowest) pair of devices
//    across it: see boundaryLink().
//  * iterationTime() combines per-stage costs with the schedule's closed form; for 1F1B
//    and GPipe: T = (m + S - 1) * max_s perMicroBatch_s + max_s iterationExtra_s. An
//    interleaved plan's chunks first go through queueInterleavedSyncs(), which reads
//    only the chunks of each device (the plan-wide step of its decomposition).
#include "Collectives.h"
#include "ComputeModel.h"
#include "FrameworkProfile.h"
#include "ModelProfile.h"
#include "RecomputeModules.h"
#include "Plan.h"
#include "Topology.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nest {

// The time of what cannot run or was not found: what the costs return for an impossible
// stage and what the planners start their incumbents and bounds from.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The gradient accumulation dtype (CostOptions::gradAccumDtype, CLI --grad-accum-dtype).
enum class GradAccumDtype { Framework, Fp32, Half };

struct CostOptions {
    // Defaults are documented with their sources in docs/cost-model.md.
    double matmulEfficiency = 0.0;    // large-GEMM efficiency; 0 = per device (DeviceSpec or
                                      // its class, ComputeModel.cpp)
    // What overlaps what, gradient dtype, fragmentation (FrameworkProfile.h).
    Framework framework = Framework::MegatronCore;
    // The stack the framework runs as (FrameworkProfile.h): its tuned recipes or its
    // defaults. frameworkProfile(framework, stack) is the profile every cost reads.
    Stack stack = Stack::Defaults;
    double dpOverlap = 0.0;           // fraction of gradient sync hidden behind backward when
                                      // the framework does not overlap it itself
    // The gradient reduction of a pipelined plan (more than one stage): -1 = as the framework
    // runs it (FrameworkProfile::pipelineGradReduceOverlap; DeepSpeed's pipeline engine
    // reduces after the flush), 0 = after the last backward (exposed), 1 = overlapped as
    // without a pipeline (when the framework overlaps it at all).
    int pipelineGradOverlap = -1;
    // The gradient reduction itself: -1 = as the framework runs it
    // (FrameworkProfile::gradReduceOverlap), 0 = after the backward (exposed but for
    // dpOverlap), 1 = per bucket behind the last micro-batch's backward, as PyTorch DDP and
    // Megatron's --overlap-grad-reduce do. For a run whose configuration says which it used
    // (Megatron-LM 2021's --DDP-impl torch vs local).
    int gradReduceOverlap = -1;
    // Bytes per call of the data-parallel gradient collectives and parameter gathers, which
    // frameworks issue in buckets and each pays the algorithm's latency (docs/cost-model.md
    // §2b): 0 = kGradientBucketBytes (50 MiB, NeMo's bucket_cap_mb of the DGX Cloud recipes).
    // For a run whose configuration says otherwise (NeMo / Apex bucket_cap_mb, Megatron-Core
    // --ddp-bucket-size x the gradient bytes, PyTorch DDP bucket_cap_mb).
    double gradientBucketBytes = 0;
    double gradientBucket() const { return gradientBucketBytes > 0 ? gradientBucketBytes : kGradientBucketBytes; }
    // Fraction of the layer compute behind which ZeRO-2/3 per-micro-batch traffic
    // (parameter prefetch all-gathers, gradient reduce-scatters) can hide:
    // exposed = max(0, traffic - zeroOverlap * compute). 1 = prefetching as in DeepSpeed
    // ZeRO-3 and PyTorch FSDP; 0 = fully exposed.
    double zeroOverlap = 1.0;
    double runtimeOverheadBytes = 1e9;  // fixed per-device memory (CUDA context, NCCL, allocator)
    double memoryHeadroom = 0.0;      // fraction of capacity kept free
    // Mixed-precision Adam, bytes per parameter: gradients (4 = fp32 main-grad
    // accumulation, Megatron's bf16 default; 2 = bf16/fp16 gradients, DeepSpeed, FSDP) and
    // optimizer state (fp32 master weights + Adam m + v = 12). Weights use
    // ModelProfile::bytesPerParam.
    double gradBytesPerParam = 0;     // 0 = the framework's (FrameworkProfile)
    // The dtype gradients accumulate in across micro-batches, as the run's config says it
    // (DeepSpeed's data_types.grad_accum_dtype, Megatron's --accumulate-allreduce-grads-in-fp32):
    // Framework = the framework profile's; Fp32 = 4 B; Half = the training dtype, 2 B (bf16 or
    // fp16). On DeepSpeed at ZeRO 0/1, Half is DeepSpeedZeroOptimizer / FP16_Optimizer, not
    // the BF16_Optimizer (docs/cost-model.md, "DeepSpeed's gradient buffers").
    GradAccumDtype gradAccumDtype = GradAccumDtype::Framework;
    double optimizerBytesPerParam = 12;
    // HBM bytes moved per local parameter by one fused Adam step (memory-bound).
    double optimizerStepBytesPerParam = 30;
    // Add memory-bound element-wise time (saved-activation bytes / HBM bandwidth) to the
    // FLOP-derived layer times; off = pure FLOP model.
    bool elementwiseTraffic = true;
    // Calibration (issue 23, docs/validation.md "Calibration"): the large-GEMM efficiency of
    // a device type by its DeviceSpec name, over matmulEfficiency and the class default ...
    std::vector<std::pair<std::string, double>> deviceGemmEfficiency;
    // ... and the fraction of every micro-batch's compute and communication time a software
    // stack loses to its own overhead (kernel launches, host synchronisation, allocator):
    // StageCost::frameworkOverhead = stepOverhead x the micro-batch's other terms. 0: none.
    double stepOverhead = 0;
    // The NEST artifact's memory accounting (nest-cli --match-artifact, docs/formats.md): a
    // stage holds every layer's activations for one micro-batch plus, per further micro-batch
    // in flight, its input (recomputation) or all its activations again; no fragmentation.
    bool artifactMemory = false;
    // The linear layers' number format (Precision.h) the search prices; evaluating a plan
    // uses the plan's own (Plan::precision).
    Precision precision;
    // MoE (docs/cost-model.md, "MoE parallelism"). The most loaded expert-parallel rank's
    // routed tokens over the mean in dropless training: its experts' GEMMs and its share of
    // the dispatch take that many times the mean (an assumption, not fitted; --moe-imbalance).
    double moeImbalance = 1.1;
    // Token dropping: an expert takes at most capacityFactor x its mean share (Megatron-Core
    // --moe-expert-capacity-factor, GShard); 0 = dropless.
    double moeCapacityFactor = 0;
    // The dispatcher: a flat all-to-all (Megatron-Core's alltoall) or the hierarchical one
    // of DeepEP / HybridEP (dispatchCost(), Collectives.h; --moe-dispatcher deepep).
    bool moeHierarchicalDispatch = false;
    // Megatron-Core's expert-parallel communication overlap (--overlap-moe-expert-parallel-comm
    // with --delay-wgrad-compute; Megatron-Bridge's moe_a2a_overlap): the forward of one
    // micro-batch and the backward of another run layer by layer together, so each one's
    // dispatch and combine hide behind the other's compute (docs/cost-model.md §1c). The first
    // forward and the last backward of an iteration have no partner. Megatron-Core only
    // (FrameworkProfile::epA2aOverlap).
    bool moeA2aOverlap = false;
    // Transformer Engine's FP8 dot-product attention (recipe fp8_dpa; Megatron-LM
    // --fp8-dot-product-attention): with an FP8 or MXFP8 plan the core attention takes its Q,
    // K, V in FP8 and keeps them and its output in FP8 for the backward, half their BF16
    // stash (LayerProfile::attentionQkvoStashBytes). Its time stays the BF16 kernel's
    // (docs/cost-model.md, "Precision"). No effect on BF16 or NVFP4 plans.
    bool fp8Attention = false;
    // What a stage with selective recomputation reruns (RecomputeModules.h; Megatron-Core's
    // --recompute-modules, default core_attn): the saved tensors each module discards and
    // the forward work it repeats (docs/cost-model.md, "Recomputation by module").
    RecomputeModules recomputeModules;
    bool fp8AttentionApplies() const
    {
        return fp8Attention && allowsFp8Attention(precision);
    }
    // The load of the most loaded rank over the mean: min(imbalance, capacity factor).
    double moeLoad() const
    {
        return moeCapacityFactor > 0 ? std::min(moeImbalance, moeCapacityFactor) : moeImbalance;
    }
    // The framework profile every cost reads: the framework as the stack runs it.
    const FrameworkProfile &profile() const { return frameworkProfile(framework, stack); }
    // The large-GEMM efficiency override for `device`: its calibrated value, else
    // matmulEfficiency (0 = the device class's default).
    double gemmEfficiencyFor(const DeviceSpec &device) const;
    bool operator==(const CostOptions &) const = default;
};

// The large-GEMM fraction of peak FLOP/s on `device`: DeviceSpec::matmulEfficiency when
// set, else its class's calibrated value (ComputeModel.cpp, docs/cost-model.md).
double defaultMatmulEfficiency(const DeviceSpec &device);

// Adam's state precision (CLI --optimizer-dtype): fp32 master weights + m + v (12 B per
// parameter, 30 B moved per parameter by the step) or all three in bf16 (6 B; 30 - 3 x 2 x 2 =
// 18 B moved: each state read and written at half the width). bf16 is NeMo's
// distributed_fused_adam with `optim.dtype: bf16` (Apex DistributedFusedAdam `dtype`).
// Bf16Moments keeps fp32 master weights and stores m and v in bf16 (4 + 2 + 2 = 8 B; the step
// reads 4 + 4 + 2 + 2 and writes 4 + 2 + 2 plus the 2 B copy = 22 B): Megatron-Core's
// precision-aware optimizer with `exp_avg_dtype` and `exp_avg_sq_dtype` bf16, as
// Megatron-Bridge's DeepSeek-V3 recipe sets it (recipes/deepseek/deepseek_v3.py).
enum class OptimizerDtype { Fp32, Bf16, Bf16Moments };
void setOptimizerDtype(CostOptions &o, OptimizerDtype d);

// The effective link of a pipeline boundary (absent for the first/last stage).
struct BoundaryLink {
    int level = -1;
    LinkParams link;
};

struct StageCost {
    // Seconds per micro-batch on this stage.
    double forward = 0, backward = 0, recompute = 0;
    // The recompute pass's compute alone (recompute less the collectives it repeats, which
    // overlap with it): like forward and backward a sum over the layers, so it only grows as
    // a stage takes more (a search's compute floors read it).
    double recomputeCompute = 0;
    double tpComm = 0, epComm = 0, cpComm = 0, p2p = 0, zeroComm = 0;
    // Seconds per iteration: the all-to-all the expert-parallel overlap hides per micro-batch
    // (CostOptions::moeA2aOverlap), exposed once for the unpaired first forward and last
    // backward.
    double epUnpaired = 0;
    double frameworkOverhead = 0; // CostOptions::stepOverhead x the terms above (calibrated)
    double perMicroBatch = 0;     // the pipeline's t_stage
    // Splits used by the simulator and the charts (all included in the terms above):
    double zeroForward = 0;       // part of zeroComm spent in the forward pass
    double p2pForward = 0;        // the exchange with the next stage: sending the activation
                                  // (and, with blocking p2p, receiving its gradient after it)
    double p2pBackward = 0;       // the exchange with the previous stage: sending the input
                                  // gradient (with blocking p2p, after receiving the activation)
    // Seconds per iteration after the last micro-batch.
    double dpSync = 0;            // exposed gradient sync
    double dpSyncAfterFlush = 0;  // the same when it runs after the last backward (pipelined
                                  // plans of a framework that does not overlap it there)
    double zeroGather = 0;        // ZeRO-1/2 parameter all-gather after the optimizer step
    double optimizer = 0;
    double iterationExtra = 0;    // dpSync + optimizer + epUnpaired (+ ZeRO gathers that cannot overlap)
    // What queueInterleavedSyncs() re-times on an interleaved plan (seconds, before any
    // overlap; 0 where the framework does not overlap them). The gradient reduction of a
    // framework that launches it per bucket behind the backward (gradReduceOverlap, ZeRO
    // 0/1) and the backward (and recompute) of one micro-batch it hides behind; the
    // distributed optimizer's parameter all-gather behind the next forward
    // (paramGatherOverlap, ZeRO 1/2) and the forward of one micro-batch; the profile's
    // contention. dpSync and zeroGather are what stays exposed behind this stage's own window.
    double gradSyncSerial = 0, gradSyncWindow = 0;
    double paramGatherSerial = 0, paramGatherWindow = 0;
    double syncContention = 0;
    // Bytes per device (the worst device of the stage).
    double weights = 0, gradients = 0, optimizerState = 0, activations = 0, stash = 0,
           overhead = 0;
    // DeepSpeed's contiguous-gradient reduce buffers (ZeRO 1/2 under DeepSpeedZeroOptimizer):
    // bytes of one buffer and how many the backward holds (2 with overlap_comm) when the plan
    // is not pipelined; with a pipeline one is made after the flush (reduceBucketAtPeak() in
    // Evaluator.cpp). The part at the peak is added to `gradients` by finishStageCost().
    double reduceBucket = 0;
    int reduceBuckets = 0;
    bool fitsMemory = true;  // memoryTotal <= memoryCapacity (beside the int: no padding)
    double memoryTotal = 0;
    double memoryCapacity = 0;
    // Bookkeeping for reports.
    double stashedMicroBatches = 0;  // micro-batches whose activations are held
    double stashPerMicroBatch = 0;   // stash bytes per held micro-batch
    double paramsPerDevice = 0;      // parameters held per device before ZeRO sharding
    // Set by stageCostBase() for finishStageCost(): the dispatch and combine all-to-all per
    // micro-batch that the expert-parallel overlap pairs where the schedule runs it (0 where
    // the stage may not run it: the option off, a framework without it, full recomputation),
    // and the expert tensor group's gathers (part of epComm either way).
    double epPairable = 0, epGather = 0;
};

struct StageContext {
    const Topology *topology = nullptr;
    const ModelProfile *model = nullptr;
    CostOptions options;
    const StagePlan *stage = nullptr;
    int stageIndex = 0;        // position in the pipeline (0 = first); interleaved: the
                               // virtual stage index k (runs on physical position k % numStages)
    int numStages = 1;         // pipeline depth (physical stages)
    int microBatch = 1;
    int numMicroBatches = 1;
    int seqLength = 2048;
    int dp = 1;
    Schedule schedule = Schedule::OneFOneB;
    int virtualStages = 1;
    std::optional<BoundaryLink> prev;  // link to the previous stage
    std::optional<BoundaryLink> next;  // link to the next stage
};

StageCost stageCost(const StageContext &ctx);

// The names of CostOptions::moeHierarchicalDispatch, as --moe-dispatcher, the workspace's
// "moe_dispatcher" and the Search dock spell them: "alltoall" (flat) and "deepep"
// (hierarchical). moeDispatcherIsHierarchical(): which one `name` is; nullopt for any other.
const char *moeDispatcherName(bool hierarchical);
std::optional<bool> moeDispatcherIsHierarchical(std::string_view name);

// Whether a pipeline of `numStages` physical stages under `schedule` with `virtualStages`
// chunks per device runs Megatron-Core's expert-parallel overlap (CostOptions::moeA2aOverlap):
// one stage, or virtual stages (TransformerConfig asserts a virtual pipeline when pp > 1).
// The evaluator prices it and the Megatron export writes its flags by this one rule.
bool expertOverlapSchedule(int numStages, Schedule schedule, int virtualStages);

// Interleaved 1F1B (Megatron-LM order, p = depth, v = chunks, m micro-batches): the
// chunk-micro-batches whose activations the device at `position` holds at its peak, just
// before its first backward: min(m v, 2 (p - position - 1) + (v - 1) p + 1) ...
int interleavedInFlight(int depth, int chunks, int microBatches, int position);
// ... and how many of them belong to its chunk `chunk` (virtual stage chunk * p + position).
// The counts of the v chunks add up to interleavedInFlight().
int interleavedChunkInFlight(int depth, int chunks, int microBatches, int position, int chunk);

// --- stageCost() in parts (see the contract at the top) -------------------------------------
// What the stage's devices contribute: slowest compute, smallest memory, slowest HBM, and
// the collectives of its groups.
struct StageGeometry {
    int devices = 0;       // valid device ids in the stage; 0 = empty stage (does not fit)
    ComputeRates rates;    // the slowest device's (lowest large-GEMM FLOP/s, then HBM)
    double capacity = 0;   // smallest device memory (bytes)
    StageCollectives comm;
};
StageGeometry stageGeometry(const Topology &topo, const StagePlan &stage, int dp, const CostOptions &options);
// The same for the stage deviceMatrix(rows) with dp = rows.rows on a regular tree
// (blockSizes = regularBlockSizes(topo), not empty; evenStageCollectives()), without the
// matrix: what the planner costs its placements with.
StageGeometry stageGeometry(const Topology &topo, const std::vector<int> &blockSizes, const EvenRows &rows,
                            const StageConfig &config, const CostOptions &options);
// The compute rates of one device under `options` (its GEMM efficiency, the framework's
// kernels): a stage computes at those of its slowest device (stageGeometry).
ComputeRates deviceRates(const DeviceSpec &device, const CostOptions &options);

// Sums and maxima over the stage's layers (O(layers)).
struct StageLayerSums {
    double forward = 0, backward = 0, recompute = 0;  // seconds per micro-batch
    double gemmForward = 0;       // forward GEMM seconds (the window TP overlap hides behind)
    double attentionForward = 0;  // forward core-attention seconds (the CP overlap window)
    double sharedExpertForward = 0;  // forward shared-expert GEMM seconds (the dispatch's overlap window)
    double tpBytes = 0, tpBytesRec = 0, epBytes = 0, epBytesRec = 0, cpBytes = 0, cpBytesRec = 0;
    int tpOps = 0, tpOpsRec = 0, epOps = 0, epOpsRec = 0, cpOps = 0, cpOpsRec = 0;
    double etpBytes = 0, etpBytesRec = 0;  // the experts' tensor-group gathers (etp > 1)
    int etpOps = 0, etpOpsRec = 0;
    double denseParams = 0, expertParams = 0, maxLayerParams = 0;  // per device, before ZeRO
    // The parts of them that are linear weights in a low precision (0 in bf16): what keeps
    // low-precision copies and, with the framework's low-precision gathers, no BF16 copy.
    double linearDense = 0, linearExpert = 0;
    double stashPerMicroBatch = 0, maxWorking = 0, maxLayerStash = 0;  // bytes per device
};
StageLayerSums stageLayerSums(const StageContext &ctx, const ComputeRates &rates);
// stageLayerSums() a layer at a time, in the same order: starting from an empty
// StageLayerSums, add(s, i) for i = firstLayer .. endLayer - 1 gives stageLayerSums(ctx,
// rates) bit for bit, so the sums of [first, e) followed by add(s, e) are those of
// [first, e + 1) whenever both ranges agree on holdsEmbedding (a planner extends a range
// by one layer instead of summing it again: docs/planner.md, "Layer sums by extension").
// Reads ctx's stage config and firstLayer, not its endLayer.
class StageLayerFold {
public:
    StageLayerFold(const StageContext &ctx, const ComputeRates &rates, bool holdsEmbedding);
    void add(StageLayerSums &s, int layer);

private:
    // What the stage's recomputation and measurements make of one layer.
    struct LayerRole {
        bool rec = false, selective = false, opSelective = false;
        const WidthMeasurement *measured = nullptr;  // measured at this stage's tp
        double fullStash = 0;  // bytes it saves per micro-batch without recomputation
    };
    LayerRole roleOf(const LayerProfile &l) const;
    void timeLayer(const LayerProfile &l, const LayerRole &r);  // into m_times
    void addTimes(StageLayerSums &s, const LayerProfile &l, const LayerRole &r);
    void addCollectives(StageLayerSums &s, const LayerProfile &l, const LayerRole &r) const;
    void addParams(StageLayerSums &s, const LayerProfile &l, const WidthMeasurement *measured) const;
    void addMemory(StageLayerSums &s, const LayerProfile &l, int layer, const LayerRole &r) const;
    // Selective recomputation by module (CostOptions::recomputeModules): the forward seconds
    // a micro-batch reruns, and the bytes per micro-batch the modules discard.
    double selectiveRecompute(const LayerTimes &times) const;
    double selectiveDropped(const LayerProfile &l) const;

    const ModelProfile &m_model;
    const StagePlan &m_stage;
    const StageContext &m_ctx;
    ComputeRates m_rates;
    bool m_holdsEmbedding;
    int m_tp, m_cp, m_ep, m_etp, m_width;
    double m_b, m_spDiv, m_moeLoad;
    double m_inputStash;  // bytes of a saved linear input per BF16 byte (1 in BF16)
    bool m_fusedLoss, m_opPolicy;
    bool m_keepsCombine;  // the MoE experts' outputs are kept for the combine (!moeProbsInActivation)
    bool m_fp8Attention;  // the core attention's Q, K, V, O kept in FP8 (CostOptions::fp8AttentionApplies)
    RecomputeModules m_modules;  // what selective recomputation reruns (CostOptions::recomputeModules)
    const LayerProfile *m_timed = nullptr;  // consecutive identical layers share their times
    LayerTimes m_times;
};
// Whether [first, end) holds an embedding layer (stageLayerSums() counts tied parameters
// on the other stages).
bool rangeHoldsEmbedding(const ModelProfile &model, int first, int end);

// Everything except the p2p terms, perMicroBatch, the stash and the memory total, which
// finishStageCost() fills in from ctx's position and links. Needs g.devices > 0.
StageCost stageCostBase(const StageContext &ctx, const StageGeometry &g, const StageLayerSums &s);
void finishStageCost(StageCost &c, const StageContext &ctx);
// The memory part of finishStageCost(), its one definition: the bytes a stage with base
// cost `base` holds at ctx's position (its stash), which finishStageCost() stores in
// memoryTotal. It reads only the schedule, depth, position and micro-batches of ctx, not
// its links, so a search can ask how many stages a stage fits with without the rest.
double stageMemoryTotal(const StageCost &base, const StageContext &ctx);
// Its stash alone (what finishStageCost() stores in StageCost::stash).
double stageStashBytes(const StageCost &base, const StageContext &ctx);
// stageCost() with a precomputed geometry.
StageCost stageCost(const StageContext &ctx, const StageGeometry &g);
// The bytes a device with `deviceBytes` of memory may fill: all but CostOptions::memoryHeadroom
// (a stage's memoryCapacity, a device report's capacity).
double usableMemory(double deviceBytes, const CostOptions &options);
// Optimizer-state bytes per parameter: the model file's (artifact optimizerAlgorithm) when it
// names one, else the options'.
double optimizerBytesPerParam(const ModelProfile &model, const CostOptions &options);
// The least weight bytes any parameter costs per device under `options` (its precision's
// copies, the framework's low-precision gathers): ModelProfile::bytesPerParam in bf16. A
// bound on memory from the parameter count uses it.
double weightBytesFloor(const ModelProfile &model, const CostOptions &options);
// The least a stage's per-micro-batch time can be as a fraction of the compute in it
// (forward, backward, recompute): finishStageCost() makes it (1 + stepOverhead) x its work,
// the compute plus communication terms (non-negative), so the fraction is 1 without a
// calibration or with a positive step overhead, and 1 + stepOverhead (a little less, for
// rounding) with a negative one (a calibration that found the model pessimistic, down to
// -0.5). A search's lower bounds on a stage's time from its compute are scaled by it.
double computeTimeFloor(const CostOptions &options);

// What memory forces on ZeRO-3, per dense parameter (a floor from setMemory() and
// addDataParallel(), for a search's bound on an outer point: docs/planner.md, "ZeRO-3 that
// memory forces").
struct ZeroFloor {
    // Training-state bytes (weights, gradients, optimizer state) one data-parallel replica
    // keeps per dense parameter of its stages, summed over the replica's devices: below
    // ZeRO-3 (the least of stages 0, 1 and 2: every replica holds the weights whole) and at
    // ZeRO-3 (all three sharded over the dp replicas). Without activations, stash, buffers.
    double belowZero3 = 0, atZero3 = 0;
    // Bytes per dense parameter of a ZeRO-3 stage's device that its per-micro-batch time
    // moves through its dense ZeRO group at least, exposed whatever it overlaps: a weight
    // gather before the forward and one before the backward (their exposed parts and the
    // forward / backward each cover one: overlapped() hides at most its window), and the
    // gradients' reduce-scatter. Priced with the group's denseReduceScatter (the gathers'
    // cost too).
    double zero3Traffic = 0;
};
ZeroFloor zeroFloor(const ModelProfile &model, const CostOptions &options, int dp);
// The fewest bytes per parameter that weights, gradients and optimizer state take summed over
// every device, whatever the plan: one copy of each (ZeRO-3 shards all three over the
// replicas; below it every replica keeps the weights whole), the gradient buffer and the
// optimizer bytes as setMemory() counts them for this framework, model and options. The
// whole-cluster memory bound (wholeClusterMemoryProblem) is totalParams() times this.
double trainingStateBytesPerParam(const ModelProfile &model, const CostOptions &options);
// The dense parameters of layer `l` that the devices of one replica of a stage holding it
// keep together at least, at any width: its dense parameters (tensor parallelism divides
// the tpParams part and replicates the rest, context parallelism replicates all), or for a
// layer measured per width the least tp x its measured parameters per device. Tied copies
// not counted.
double replicaDenseParams(const LayerProfile &l);

// The link of the worst pair (highest level, then lowest full-load bandwidth) among the
// pairs that exchange activations: shard j of replica r on `a` with shard j mod width(b)
// of replica r on `b` (and the reverse mapping when b is wider).
BoundaryLink boundaryLink(const Topology &topo, const StagePlan &a, const StagePlan &b);
double iterationTime(const std::vector<StageCost> &stages, const Plan &plan);
// Interleaved 1F1B with the data-parallel collectives overlapped (Megatron-Core's
// forward_backward_pipelining_with_interleaving, megatron/core/pipeline_parallel/
// schedules.py, with the training loop's grad_sync_func / param_sync_func under
// align_grad_reduce / align_param_gather, their defaults): a device runs its v chunks' last
// group of S = min(pipeline depth, micro-batches) micro-batches chunk by chunk, and the
// chunks' collectives queue on the one data-parallel communicator.
//  * Gradients: the backward takes the chunks in reverse, so chunk v-1 finishes first and
//    chunk 0 last; each chunk's reduction launches after its last backward. With t = 0 at
//    the device's last backward, chunk c launches at -S * sum_{j<c} gradSyncWindow_j, starts
//    when the one before it ends, and what of it runs after t = 0 is exposed.
//  * Parameters: chunks 0 and 1 gather at the iteration's start, chunk c >= 2 when chunk c-1
//    starts its forwards; a chunk's first forward ends no earlier than its gather (it takes
//    the buckets as they arrive), and every wait is exposed.
// The rest is hidden, slowing the compute by syncContention per second hidden. Rewrites
// dpSync and zeroGather (exposed + contention x hidden, per chunk) and iterationExtra of the
// chunks that carry a serial time, so that a device's extras add up to its queues. A no-op
// for other schedules. stageCosts() (evaluate(), the simulator) and the interleaved search
// apply it before iterationTime().
void queueInterleavedSyncs(std::vector<StageCost> &stages, const Plan &plan);

// The per-stage contexts evaluate() uses (boundary links filled in). The plan must be
// well formed (planErrors() empty); the contexts point into plan, topo and model.
std::vector<StageContext> stageContexts(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                        const CostOptions &options = {});
// stageCost() of every stage of a well-formed plan.
std::vector<StageCost> stageCosts(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                  const CostOptions &options = {});

struct StageReport {
    int index = 0;
    int firstLayer = 0, endLayer = 0;
    StageCost cost;
    double bubble = 0;  // seconds per iteration idle on this stage
};

struct DeviceReport {
    int device = 0;
    int stage = -1;      // -1 when unused
    int replica = -1;
    int shard = -1;
    double weights = 0, gradients = 0, optimizerState = 0, activations = 0, stash = 0,
           overhead = 0, total = 0, capacity = 0;
};

struct Report {
    bool feasible = false;
    std::vector<std::string> reasons;   // why not feasible (memory, invalid plan, ...)
    double iterationTime = 0;           // seconds
    double samplesPerSecond = 0;
    double tokensPerSecond = 0;
    double mfu = 0;                     // model FLOPs utilisation
    double peakMemoryBytes = 0;
    double modelFlopsPerIteration = 0;  // forward + backward, without recomputation
    int devicesUsed = 0;
    std::vector<StageReport> stages;
    std::vector<DeviceReport> devices;
};

// The memory of a device at pipeline position p of a plan `depth` positions deep whose
// stage (chunk) costs are `costs`: every chunk it holds (k = p, p + depth, ...), the
// transient terms once. evaluate() reports it per device and calls the plan infeasible where
// its total exceeds a device's capacity; the planner asks the same before evaluate().
DeviceReport positionMemory(const std::vector<StageCost> &costs, int p, int depth);

Report evaluate(const Plan &plan, const Topology &topo, const ModelProfile &model,
                const CostOptions &options = {});

} // namespace nest
