#pragma once
// The plan space that NestPlanner searches and ExhaustivePlanner enumerates (definition and
// proofs in docs/planner.md). Both planners take every enumeration from here, so they
// search exactly the same set of plans.
//
// A plan of the space is: an outer point (micro-batch, schedule, dp, layout), a pipeline of
// S stages, each with a layer range (contiguous cuts), a width w_s = tp_s * cp_s, and an
// option (tp, cp, ep, sp, zero, recompute). Placement is contiguous in depth-first device
// order (ids 0..n-1), starting at device 0, with positions = floor(n / dp) positions per
// replica and Q_s = w_0 + ... + w_{s-1} (sum of widths must be <= positions):
//   ReplicasOutside: device(r, s, j) = dp * Q_s + r * w_s + j
//   ReplicasInside:  device(r, s, j) = r * positions + Q_s + j
// (r replica, j shard = cpRank * tp + tpRank). Interleaved schedules use a uniform
// sub-space: pp physical stages, one interleaving depth v from SearchOptions::virtualStages,
// the same width and option on every physical stage, and the layers cut into pp * v chunks
// as Megatron-LM (and buildUniformPlan) cut them: the pipeline units (SearchOptions::
// pipelineUnits: the blocks, and the embedding / head when counted) as evenly as possible,
// the first chunks one unit longer, the embedding with the first chunk and the head with
// the last.
//
// Option lists: tp from tpCandidates dividing the heads; cp from cpCandidates dividing the
// sequence, and for cp > 1 seqLength / cp >= cpMinTokensPerRank (unless that is 0);
// recompute from recomputeModes ({None} when allowRecompute is false).
#include "PlanBuilder.h"
#include "Planner.h"
#include "RangeClasses.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nest {

struct OuterConfig {
    int microBatch = 1;
    Schedule schedule = Schedule::OneFOneB;
    int dp = 1;
    Layout layout = Layout::ReplicasOutside;
    int numMicroBatches = 1;  // m = globalBatch / (microBatch * dp)
    int positions = 1;            // positions per replica = floor(n / dp)
};

// A stage of a plan of the space before placement: its layers and its choice.
struct StageChoice {
    int firstLayer = 0, endLayer = 0;
    StageConfig option;
};

// Interleaved candidates: pp physical stages of one width and one option, v chunks each.
struct InterleavedChoice {
    int pp = 2;
    int virtualStages = 2;  // v: chunks per device
    StageConfig option;
};

// One stage choice a search considers, the only place its fields are set: the widths, the
// ZeRO stage and the recompute mode given, and sequence parallelism where the search allows
// it and the stage has a tensor-parallel group (StageConfig::sequenceParallel). `etp`: the
// stored expert width (0 = tp). PlanSpace::stageOptions and the megatron planner's uniform
// layouts are built with it.
StageConfig searchedStage(const SearchOptions &o, int tp, int cp, int ep, int etp, int zero, Recompute recompute);

class PlanSpace {
public:
    PlanSpace(const Topology &topo, const ModelProfile &model, const SearchOptions &options);

    const Topology &topology() const { return *m_topo; }
    const ModelProfile &model() const { return *m_model; }
    const SearchOptions &options() const { return *m_options; }
    int globalBatch() const { return m_globalBatch; }
    int seqLength() const { return m_seqLength; }
    int layerCount() const { return m_model->layerCount(); }
    int maxStages() const { return m_maxStages; }
    // The devices of a replica that a pipeline of `cfg` can use at most: its positions, and
    // maxStages stages of the widest width (the point bounds divide device-seconds by it).
    double usablePositions(const OuterConfig &cfg) const
    {
        return std::min<double>(cfg.positions, double(m_maxStages) * double(m_widths.back()));
    }
    const CostOptions &costOptions() const { return m_cost; }  // searchCostOptions(options())
    // Empty when the options describe a searchable space, otherwise why not.
    const std::string &problem() const { return m_problem; }

    // Outer points in a fixed order: positions ascending (cheap searches first), then
    // micro-batch, schedule, layout.
    const std::vector<OuterConfig> &configs() const { return m_configs; }
    // Distinct widths tp * cp with at least one valid split, ascending.
    const std::vector<int> &widths() const { return m_widths; }
    // The candidate lists after the model's constraints, ascending: tp dividing the heads,
    // cp (see above), recompute modes, interleaving depths (>= 2).
    const std::vector<int> &tpDegrees() const { return m_tps; }
    const std::vector<int> &cpDegrees() const { return m_cps; }
    const std::vector<Recompute> &recomputeModes() const { return m_recomputes; }
    const std::vector<int> &interleavingDepths() const { return m_depths; }

    // Every option of a stage of `width` holding layers [first, end): (tp, cp) splits x ep x
    // zero x recompute, sp by StageConfig::sequenceParallel. Fixed order.
    std::vector<StageConfig> stageOptions(const OuterConfig &cfg, int width, int first,
                                          int end) const;
    bool hasMoe(int first, int end) const;

    // The rows of a stage at `position` with `width` shards per replica: replica r holds
    // [dp * position + r * width, ... + width) outside, [r * positions + position, ...
    // + width) inside (the layouts' one definition).
    EvenRows stageRows(const OuterConfig &cfg, int position, int width) const;
    // devices[r][j] of a stage at `position` with `width` shards per replica.
    std::vector<std::vector<int>> stageDevices(const OuterConfig &cfg, int position,
                                               int width) const;
    // The same into `out`, reusing its rows' storage (no allocation when the shape repeats).
    void stageDevicesInto(const OuterConfig &cfg, int position, int width,
                          std::vector<std::vector<int>> &out) const;
    StagePlan makeStage(const OuterConfig &cfg, int position, const StageChoice &c) const;
    // The plan of a 1F1B/GPipe point: stages placed at consecutive positions from 0.
    Plan makePlan(const OuterConfig &cfg, const std::vector<StageChoice> &stages) const;
    // Plan-wide scalars shared by makePlan and the planners' StageContexts.
    Plan planSkeleton(const OuterConfig &cfg) const;

    // Interleaved: all candidates of an interleaved point, in a fixed order (pp, then v,
    // then width, then option): m % pp == 0, pp * v <= pipeline units, pp <= maxStages,
    // pp * width <= positions.
    std::vector<InterleavedChoice> interleavedChoices(const OuterConfig &cfg) const;
    Plan makeInterleavedPlan(const OuterConfig &cfg, const InterleavedChoice &c) const;
    // Its pp * v chunks (layers and option; chunk k runs on the devices of position
    // (k mod pp) * width), as makeInterleavedPlan() places them; the layer cuts are
    // buildUniformPlan's (tested to be equal).
    std::vector<StageChoice> interleavedChunks(const InterleavedChoice &c) const;
    // `option` into every chunk of interleavedChunks(), without ep in a chunk that holds no
    // MoE layer (what interleavedChunks() gives for a choice with that option).
    void setInterleavedOption(std::vector<StageChoice> &chunks, const StageConfig &option) const;

private:
    const Topology *m_topo;
    const ModelProfile *m_model;
    const SearchOptions *m_options;
    int m_globalBatch = 1;
    int m_seqLength = 1;
    int m_maxStages = 1;
    CostOptions m_cost;
    std::string m_problem;
    std::vector<OuterConfig> m_configs;
    std::vector<int> m_widths;
    std::vector<int> m_tps, m_cps, m_depths;
    std::vector<Recompute> m_recomputes;
    PipelineSpan m_span;           // layers before / after the blocks; the blocks (all layers
                                   // when none is a block)
    int m_units = 0;               // pipeline units the interleaved chunks divide
    std::vector<int> m_moePrefix;  // m_moePrefix[j] = MoE layers in [0, j)
};

// --- helpers shared by the planners --------------------------------------------------------

// The cost options a search of `options` prices plans with: SearchOptions::cost, with its
// memory headroom when one is set (PlanSpace::costOptions(); evaluate() of a search's plan).
CostOptions searchCostOptions(const SearchOptions &options);

// The plan-wide scalars of a StageContext for an outer point (no stage, no links).
StageContext makeContext(const PlanSpace &space, const OuterConfig &cfg);

// Distinct boundary links of one search; id 0 means "no boundary".
class LinkTable {
public:
    int intern(const BoundaryLink &b);
    const BoundaryLink &link(int id) const { return m_links[id - 1]; }

private:
    std::vector<BoundaryLink> m_links;
};

// Placement classes: device matrices that stageCost() cannot tell apart (docs/planner.md,
// "symmetry"; the layer ranges' classes are RangeClasses'): two device matrices of the same
// shape whose devices have the same type and the same ancestor groups up to (level, device
// count, child count, effective link), and whose consecutive devices (in id order) meet at
// the same levels. Device ids below every group are contiguous, so these determine every
// pair's level, link, every group's member count and contention share.
//
// placementClassAt() and boundaryKey() give the same classes without building the device
// matrix (issue 24, "Width"): the matrix's signature is hashed from per-device prefix
// hashes, O(1) for a stage of the outside layout (one interval of ids) and O(dp) for the
// inside layout (dp intervals), instead of O(dp * width * levels) per stage. The hash is
// two independent 61-bit polynomial hashes of the signature's sequence (a false merge needs
// both to collide, about 2^-120 per pair of distinct signatures); the classes are those of
// placementClass() otherwise. Use one of the two for a search, not both.

class SearchClasses {
public:
    explicit SearchClasses(const PlanSpace &space);
    int placementClass(const std::vector<std::vector<int>> &devices);
    // The class of PlanSpace::stageDevices(cfg, position, width).
    int placementClassAt(const OuterConfig &cfg, int position, int width);
    // Equal for two boundaries (the stage of width wp ending at `position`, the one of
    // width w starting there) whose two device matrices have the same signature together
    // (the union of their devices in id order): boundaryLink() cannot tell them apart.
    std::pair<uint64_t, uint64_t> boundaryKey(const OuterConfig &cfg, int position, int wp, int w);
    // Inside layout: the replicas r whose devices [r * positions + first, ... + width) differ
    // (tokens and the levels between them) from every earlier replica's, ascending. Two
    // stages of a boundary lie in the same replica block, so the pairs boundaryLink()
    // compares in a replica omitted here repeat, in the same order, those of an earlier one.
    std::vector<int> distinctReplicas(const OuterConfig &cfg, int first, int width);
    // Outside layout, the boundary at `position` between a stage of width wp and one of w:
    // the replicas r whose pairs boundaryLink() compares can differ from every earlier
    // replica's, ascending. Replica r pairs devices of its row [a, a + wp) before with its
    // row [b, b + w) after (a = dp * (position - wp) + r * wp, b = dp * position + r * w),
    // and a pair (x, y), x < a + wp <= b <= y, meets at level max(level(x, a + wp - 1),
    // level(a + wp - 1, b), level(b, y)) (ids below a group are contiguous) in the group
    // above x at that level. So the tokens of the two rows (types, ancestor classes, the
    // levels inside each row) and the bridge level(a + wp - 1, b) fix every pair's level and
    // link in order: a replica with the same three as an earlier one repeats its pairs.
    std::vector<int> distinctOutsideReplicas(const OuterConfig &cfg, int position, int wp, int w);
    // Both are the first replica of each distinct key (as if every replica were hashed), but
    // without hashing every replica: a run of k replicas whose rows, taken together as id
    // intervals, repeat the k replicas just before them token for token (and, outside, whose
    // bridge levels cannot differ from theirs) repeats their keys, so it is skipped whole
    // (k doubling while runs repeat): O(log dp) per boundary on a uniform tree instead of
    // O(dp).
    // The inside layout's column hashes are a second encoding of the signature (one
    // signature may then have a class from each, costed twice): used from this many
    // replicas on, where the row-by-row hash (O(dp)) costs more than the duplicates. Tests
    // lower it to reach the column hashes on small trees.
    static constexpr int kColumnHashReplicas = 32;
    void setColumnHashReplicas(int replicas) { m_columnHashReplicas = replicas; }

private:
    struct Hash2 {
        uint64_t a = 0, b = 0;
    };
    void prepareDeviceHashes();
    // Appends `len` tokens whose hash is h to `acc`.
    Hash2 append(Hash2 acc, Hash2 h, size_t len) const;
    // The hash of devices [first, end) read as one matrix row: the first device's token
    // with level entry `firstLevel`, the others with the level to the device before them.
    Hash2 rowHash(int first, int end, int firstLevel) const;
    bool sameTokens(int firstA, int firstB, int len) const;
    // Calls visit(r) for the replicas r of 0..dp-1 that repeats(done, k) does not cover:
    // repeats(done, k) says replicas [done, done + k) have the keys of [done - k, done).
    template <typename Repeats, typename Visit>
    static void skipRepeats(int dp, Repeats repeats, Visit visit);
    // The signature hash of `dp` rows [start(r), start(r) + width), start ascending.
    template <typename Start>
    Hash2 matrixHash(int dp, int width, Start start) const;
    int classOfHash(Hash2 h);
    // The inside layout when every replica block's boundary is at least as high a level as
    // any step inside the blocks on either side (aligned blocks: the level between the
    // last device of a row and the first of the next is then the boundary's, whatever the
    // position and widths). Per column x of the blocks (x below m_columnReach): the hash
    // over the replicas of the tokens at r * positions + x (colPrefix: prefix hashes over
    // x), and of the first-column tokens (level entry -2, then the block boundary's).
    struct InsideColumns {
        bool aligned = false;
        std::vector<uint64_t> prefixA, prefixB;  // over x of the column hashes
        std::vector<Hash2> first;
    };
    const InsideColumns &insideColumns(int dp, int positions);
    std::optional<Hash2> insideHash(int dp, int positions, int first, int width);
    std::map<int, InsideColumns> m_inside;  // per dp
    int m_columnReach = 0;                   // maxStages * widest + widest
    std::vector<uint64_t> m_columnPowA, m_columnPowB;  // kColumnA^e, kColumnB^e, e <= m_columnReach
    int m_columnHashReplicas = kColumnHashReplicas;
    std::vector<int> m_deviceToken;       // per device: interned (type, ancestor classes)
    std::vector<int> m_stepLevel;         // per device x > 0: level(x - 1, x)
    std::vector<uint64_t> m_prefixA, m_prefixB, m_powA, m_powB;
    int m_tokenBase = 1;                  // tokens: deviceToken * m_tokenBase + level entry + 2
    bool m_hashesReady = false;
    std::map<std::pair<uint64_t, uint64_t>, int> m_hashedPlacements;

    const Topology *m_topo;
    std::vector<int> m_groupClass;
    std::map<std::vector<int>, int> m_placements;
    std::vector<int> m_sig;
};

// Compute lower bounds per layer for one micro-batch size (seconds per micro-batch): a
// layer's forward and backward, scaled by computeTimeFloor() (a negative calibrated step
// overhead makes a stage's time less than its compute).
struct LayerComputeBound {
    double deviceSeconds = 0;  // sum over layers of min over options of width * compute
    double slowestLayer = 0;   // max over layers of min over options of compute
    // The same over the suffix [j, L) (size L + 1; 0 at L).
    std::vector<double> suffixDeviceSeconds, suffixSlowest;
    // The smallest and the second smallest (with multiplicity) per-layer device-seconds
    // over the layers i >= j (+infinity where there are too few; 0 everywhere when there
    // is no bound). Every stage of a suffix [j, L) holds one of these layers, so a stage of
    // width w has t >= suffixLightest[j] / w, and of several stages at most one has t below
    // suffixSecondLightest[j] / w.
    std::vector<double> suffixLightest, suffixSecondLightest;
};
// It depends on cfg's micro-batch and the widths that fit its positions, and with MoE
// layers in the model on its dp (the expert-parallel widths dp allows).
LayerComputeBound layerComputeBound(const PlanSpace &space, const OuterConfig &cfg,
                                    SearchStats &stats);

// The closest miss when nothing fits in memory, for the "why" message.
struct MemoryObstacle {
    double ratio = std::numeric_limits<double>::infinity();
    double need = 0, capacity = 0;
    StagePlan stage;  // without devices
    void consider(const StageCost &c, const StagePlan &s);
    void consider(double memoryTotal, double memoryCapacity, const StagePlan &s);
    std::string message(const PlanSpace &space) const;
};

// "nothing fits in memory: ..., whatever the plan" when the fixed per-device memory exceeds a
// device, or the model's weights, gradients and optimizer state exceed the whole cluster's
// memory; "" otherwise. Cheap (no plan space): runSearch asks it before anything is allocated
// (issue 48: 25,000 layers took 4.4 GB of tables before saying so).
std::string wholeClusterMemoryProblem(const Topology &topo, const ModelProfile &model, const CostOptions &cost);

} // namespace nest
