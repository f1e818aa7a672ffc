#pragma once
// Costs of collectives (all-reduce, reduce-scatter, all-gather, all-to-all) and of
// point-to-point transfers on the ACTUAL device set of a plan. Formulas and sources are in
// docs/cost-model.md ("Collectives").
//
// Algorithm: hierarchical (NCCL-style 2D / Horovod hierarchical all-reduce). For a group
// that spans tree levels l0 < l1 < ..., the collective runs inside the innermost blocks
// first, then across blocks one level up on the shard each device already holds, and so
// on. Per crossed level l with fan-in g_l (blocks of level l-1 per block of level l) and a
// per-device share f_l of the buffer entering that level (f_l = 1 / devices per level-(l-1)
// block of the group), with S the buffer size:
//   reduce-scatter / all-gather: sum_l (g_l-1)/g_l * S * f_l / B_l + (g_l-1) * a_l
//   all-reduce: twice that (reduce-scatter then all-gather)
//   all-to-all: sum_l S * (1/c_l - 1/c_{l-1}) / B_l + a_l  (c_l = distinct level-l blocks)
//   send/receive: a + S / B
// B_l is the level's per-device bandwidth times the contention share (below), a_l its
// latency. A group's bandwidth at a level is the worst of its blocks at that level.
//
// Contention share at a crossed level with oversubscription o, from a child switch c
// (the level-(l-1) group whose uplink the traffic uses) with n_c devices below it of
// which k_c send across at the same moment: min(1, n_c / (o * k_c)).
//   * FullLoad: k_c = n_c (every device below the switch sends), share = 1 / o. Used for
//     data-parallel gradient sync (every stage syncs at once) and pipeline p2p.
//   * Concurrent: k_c = the devices of a given sorted set (the stage) below c; used for
//     TP / EP / CP collectives, which every replica of a stage runs at the same moment.
// All functions are allocation-free for groups of up to kStackGroup devices.
#include "ExpertRouting.h"
#include "StageConfig.h"
#include "Topology.h"

#include <array>
#include <vector>

namespace nest {

enum class Contention { FullLoad, Concurrent };

constexpr int kMaxCostLevels = Topology::maxLevels;

// Linear cost model of one collective on one group: time(S) = perByte * S + fixed.
struct LinearCost {
    double perByte = 0;  // seconds per byte of the buffer S
    double fixed = 0;    // seconds (latency terms)
    double at(double bytes) const { return bytes > 0 ? perByte * bytes + fixed : 0.0; }
};

// The shape of one device group on the tree, with contention already applied.
struct GroupShape {
    int size = 0;
    int topLevel = -1;  // highest crossed level, -1 for a single device
    // Per level: fan-in g_l (1 = level not crossed), fraction of the buffer held per device
    // when entering the level, distinct blocks at that level, effective bandwidth (bytes/s,
    // after contention) and latency (s).
    std::array<double, kMaxCostLevels> fanIn{};
    std::array<double, kMaxCostLevels> fraction{};
    std::array<double, kMaxCostLevels> blocks{};
    std::array<double, kMaxCostLevels> bandwidth{};
    std::array<double, kMaxCostLevels> latency{};
};

// Builds the shape of `ids[0..n)` (sorted in place; duplicates are ignored by the level
// counts). `concurrent` (sorted ascending, may be null) lists the devices that communicate
// at the same moment for Contention::Concurrent; null means only the group itself.
GroupShape groupShape(const Topology &topo, int *ids, int n, Contention mode,
                      const int *concurrent = nullptr, int concurrentCount = 0);

// Linear cost models of the hierarchical algorithms on a shape.
LinearCost allReduceCost(const GroupShape &g);
LinearCost reduceScatterCost(const GroupShape &g);  // S = full (unsharded) buffer
LinearCost allGatherCost(const GroupShape &g);      // S = full (gathered) buffer
LinearCost allToAllCost(const GroupShape &g);       // S = bytes each device holds

// The MoE token dispatch / combine on the all-to-all group `g` (S = the routed copies'
// bytes each device sends: k per token). Flat (Megatron-Core's alltoall dispatcher):
// allToAllCost(g), one copy per expert. Hierarchical (DeepEP's kernels, HybridEP; DeepEP's
// dispatch takes is_token_in_rank, one flag per token and rank): a token goes once to each
// rank that holds any of its experts, destinationRanksPerToken(n) of the group's n instead
// of k, and a token bound for several ranks of one remote NVLink domain crosses the
// scale-out fabric once, to the GPU of its rail there, which forwards it over NVLink to
// those ranks. The levels inside the domain carry destinationRanksPerToken(n) / k of the flat
// traffic, the levels above it remoteDomainsPerToken(D) / (k (1 - 1/D)), and the forward of
// the remote share is paid once more at the domain's NVLink.
LinearCost dispatchCost(const GroupShape &g, int domainLevel, const ExpertRouting &routing, bool hierarchical);

// The blocks (the group's NVLink domains, or its ranks) one token's k expert copies reach,
// with the experts laid in rank order over the expert group (block b: the b-th B-th of the
// experts) and each copy's expert uniform over the experts the token may use (random router
// scores, as the forced-balance benchmarks run; with replacement). With P0 the chance that a
// given block receives no copy (by symmetry the same for each):
//   unlimited routing            P0 = (1 - 1/B)^k;
//   group-limited, G groups of which the token picks g (Megatron-Core's group-limited top-k:
//   the g groups, then the k experts inside them):
//     G a multiple of B (G/B whole groups per block; DeepSeek-V3's node-limited routing
//     with one group per node): P0 = sum_j H(j) (1 - j/g)^k, H the hypergeometric law of
//     the j picked groups inside the block (G groups, G/B of them there, g drawn);
//     B a multiple of G (each group spans B/G blocks):
//     P0 = 1 - g/G + (g/G) (1 - G/(B g))^k;
//     otherwise (groups straddle blocks) priced as unlimited.
// remoteDomainsPerToken: (D - 1)(1 - P0), the domains other than the token's own.
// destinationRanksPerToken: n (1 - P0), the ranks holding one of its experts (its own too).
// The flat all-to-all's traffic does not change: each copy still leaves with probability
// 1 - 1/B.
double remoteDomainsPerToken(double domains, const ExpertRouting &routing);
double destinationRanksPerToken(int ranks, const ExpertRouting &routing);

// The algorithms NCCL chooses between for large groups (docs/cost-model.md §2b; NCCL
// src/graph/tuning.cc). With c_l the group's distinct level-l blocks (c_{-1} = n),
// f_l = c_{l-1} / n and B_l, a_l the crossed levels' bandwidth and latency:
//   Ring (one pipelined ring through every member, NCCL's rings: as many channels cross
//        a block boundary as the block has members, so the slowest level bounds it):
//        reduce-scatter  (n-1)/n * S * max_l f_l / B_l  +  sum_l (c_{l-1} - c_l) a_l
//        all-reduce      twice that (2 (n-1) steps, each paid at the level it crosses)
//   Hierarchical (inside the innermost blocks, then across, level by level; the
//        functions above): reduce-scatter sum_l (g_l-1)/g_l S f_l / B_l + (g_l-1) a_l
//   Tree (NCCL's double binary tree, all-reduce only: a chain inside the node, binary
//        trees across blocks; bandwidth kTreeBandwidthEfficiency of the ring's bus
//        bandwidth without its (n-1)/n saving):
//        all-reduce      2 S * max_l f_l / B_l / kTreeBandwidthEfficiency
//                        + 2 [ (g_0 - 1) a_0 + sum_{l>=1} ceil(log2 g_l) a_l ]
// For a group inside one level the ring and the hierarchical algorithm coincide.
enum class CollectiveAlgorithm { Ring, Tree, Hierarchical };
const char *collectiveAlgorithmName(CollectiveAlgorithm a);

// NCCL's tuning model gives the tree 0.9 of the ring's bus bandwidth (tuning.cc:
// "busBw * .9" for NCCL_ALGO_TREE) and half of it as algorithm bandwidth.
constexpr double kTreeBandwidthEfficiency = 0.9;

LinearCost ringAllReduceCost(const GroupShape &g);
LinearCost ringReduceScatterCost(const GroupShape &g);  // = ring all-gather
LinearCost treeAllReduceCost(const GroupShape &g);

struct CollectiveChoice {
    LinearCost cost;
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
};
// The cheapest algorithm for one call of `messageBytes` (NCCL's tuner picks the algorithm
// with the least predicted time per call): all-reduce among ring, tree and hierarchical,
// reduce-scatter / all-gather among ring and hierarchical (NCCL has no tree for them).
// Ties keep the earlier of Ring, Tree, Hierarchical.
CollectiveChoice chooseAllReduce(const GroupShape &g, double messageBytes);
CollectiveChoice chooseReduceScatter(const GroupShape &g, double messageBytes);

// Data-parallel gradients and ZeRO gathers are issued in buckets, one collective call per
// bucket, each paying the algorithm's latency: the cost of S bytes in buckets of
// `bucketBytes` is perByte S + fixed (S / bucketBytes + 1) (an upper bound of
// ceil(S / bucketBytes) calls), i.e. perByte + fixed / bucketBytes per byte.
// kGradientBucketBytes: NeMo's distributed optimizer bucket (bucket_cap_mb 50, MiB, in the
// NVIDIA DGX Cloud recipes' configs); Megatron-Core's own DDP default, 40M elements of
// bf16, is of the same order. The default of CostOptions::gradientBucketBytes (CLI
// --grad-bucket-mb), which a run whose configuration says otherwise sets.
constexpr double kGradientBucketBytes = 50.0 * 1024 * 1024;
LinearCost bucketed(const LinearCost &perCall, double bucketBytes = kGradientBucketBytes);

// Convenience wrappers: the time of one collective of `bytes` on the group `ids`.
double allReduceTime(const Topology &topo, std::vector<int> ids, double bytes,
                     Contention mode = Contention::FullLoad);
double reduceScatterTime(const Topology &topo, std::vector<int> ids, double bytes,
                         Contention mode = Contention::FullLoad);
double allGatherTime(const Topology &topo, std::vector<int> ids, double bytes,
                     Contention mode = Contention::FullLoad);
double allToAllTime(const Topology &topo, std::vector<int> ids, double bytes,
                    Contention mode = Contention::FullLoad);
// One point-to-point transfer over an effective link (inline: every stage cost reads two).
inline double sendRecvTime(const LinkParams &link, double bytes, bool fullLoad = true)
{
    if (bytes <= 0)
        return 0.0;
    const double share = fullLoad && link.oversubscription > 1 ? 1.0 / link.oversubscription : 1.0;
    return link.latency + bytes / (link.bandwidth * share);
}

// The collectives of one pipeline stage (devices[r][j]: replica r, shard j = cpRank * tp +
// tpRank), each the worst (per-byte and fixed parts separately) over the stage's groups:
//   tp: all-reduce on devices[r][c*tp .. c*tp+tp) (Concurrent: the stage's devices)
//   cp: all-gather on devices[r][c*tp + t], c = 0..cp-1 (Concurrent)
//   dense*: all-reduce / reduce-scatter on devices[0..dp)[j] (FullLoad)
// The experts re-slice the same devices (Megatron-Core's "parallel folding", the rank
// generator of its expert groups, order tp-ep-dp): with the stage's ranks in the dense
// order x = r * tp * cp + j and E = etp (StageConfig::expertTp()),
//   etp: all-reduce (the dispatch's all-gather + the combine's reduce-scatter) on
//        x = a * E + [0, E) (Concurrent)
//   ep: all-to-all on x = e * E * ep + q * E + i, q = 0..ep-1 (Concurrent)
//   expert*: the gradient groups on x = e * E * ep + q * E + i, e = 0..expertDp-1 (FullLoad)
// With etp = tp and cp = 1 these are Megatron-LM's expert groups over the dp replicas. A
// family whose width is 1 costs nothing. They depend only on the device matrix, the
// choice's widths and dp: the evaluator computes them once per stage and a planner once per
// placement.
//   The dense* and expert* families use the cheapest algorithm per bucket call
//   (chooseAllReduce / chooseReduceScatter at gradientBucketBytes), bucketed().
struct StageCollectives {
    LinearCost tp, cp, ep, etp;
    // The all-to-all group with the largest per-byte cost, for the dispatchers that do more
    // than a flat all-to-all (dispatchCost()), and the topology's NVLink-domain level.
    GroupShape epShape{};
    int domainLevel = 0;
    LinearCost denseAllReduce, denseReduceScatter;
    LinearCost expertAllReduce, expertReduceScatter;
    // The algorithm of the slowest dense group (reported; Ring when there is no sync).
    CollectiveAlgorithm denseAllReduceAlgorithm = CollectiveAlgorithm::Ring;
    CollectiveAlgorithm denseReduceScatterAlgorithm = CollectiveAlgorithm::Ring;
    // The bucket the data-parallel families are chosen and charged per (an input: the
    // gradientBucketBytes the two functions below were given).
    double gradientBucketBytes = kGradientBucketBytes;
};
StageCollectives stageCollectives(const Topology &topo, const std::vector<std::vector<int>> &devices,
                                  const StageConfig &config, int dp,
                                  double gradientBucketBytes = kGradientBucketBytes);

// A device matrix of evenly spaced rows: row r holds the ids [first + r * stride, first +
// r * stride + width), stride >= width (the planner's two layouts, PlanSpace::stageRows).
struct EvenRows {
    int first = 0;
    int stride = 1;
    int width = 1;
    int rows = 1;
};
// The device matrix of `rows`, row by row; the Into form reuses `out`'s rows' storage.
std::vector<std::vector<int>> deviceMatrix(const EvenRows &rows);
void deviceMatrixInto(const EvenRows &rows, std::vector<std::vector<int>> &out);
// stageCollectives() of deviceMatrix(rows) with dp = rows.rows on a regular tree
// (blockSizes = regularBlockSizes(topo), not empty), the same numbers bit for bit, in
// O(rows * (tp + cp)) instead of O(rows * width) reads of the tree: a group's shape is
// fixed by the level T where it closes, its offset in that level-T block, and which ids
// of the block belong to the stage (translating by a multiple of blockSizes[T] maps the
// block onto an identical one), so each such class is shaped once; a gradient group is
// a progression of ids whose blocks are counted level by level.
StageCollectives evenStageCollectives(const Topology &topo, const std::vector<int> &blockSizes,
                                      const EvenRows &rows, const StageConfig &config,
                                      double gradientBucketBytes = kGradientBucketBytes);

} // namespace nest
