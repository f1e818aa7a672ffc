#include "Collectives.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>

namespace nest {

namespace {

// Devices of the sorted array `set` whose ancestor at `level` is `group`, found around the
// position of `member` (a device below `group`). Ids below a group are contiguous.
// With rail >= 0 only the devices of that rail (index in their node) count.
int countBelow(const Topology &topo, const int *set, int count, int member, int level, int group, int rail = -1)
{
    const int *pos = std::lower_bound(set, set + count, member);
    auto counts = [&](int d) { return rail < 0 || topo.devices[static_cast<size_t>(d)].indexInNode == rail; };
    int k = 0;
    for (const int *p = pos; p < set + count && topo.ancestor(*p, level) == group; ++p)
        k += counts(*p) ? 1 : 0;
    for (const int *p = pos; p > set && topo.ancestor(*(p - 1), level) == group; --p)
        k += counts(*(p - 1)) ? 1 : 0;
    return std::max(k, 1);
}

// Concurrent share of the uplinks of `child` (a level-(l-1) group below the crossed level)
// for the flow of group member `member` (its position j in the sorted ids):
// min(1, n_c / (o k_c)). On a rail-optimised fabric n_c and k_c count only the member's
// rail: the uplinks of a rail leaf carry that rail's devices and no others.
double concurrentShare(const Topology &topo, const int *ids, int n, int j, int level, int child, double o,
                       const int *concurrent, int concurrentCount)
{
    const int member = ids[j];
    const int rail = topo.railOptimized ? topo.devices[static_cast<size_t>(member)].indexInNode : -1;
    const int nBelow = rail >= 0 ? topo.railDeviceCountUnder(child, rail) : topo.deviceCountUnder(child);
    int k = 0;
    if (concurrent && concurrentCount > 0) {
        k = countBelow(topo, concurrent, concurrentCount, member, level - 1, child, rail);
    } else {
        // Only the group itself: its members below the child (on the rail).
        int first = j;
        while (first > 0 && topo.ancestor(ids[first - 1], level - 1) == child)
            --first;
        for (int q = first; q < n && topo.ancestor(ids[q], level - 1) == child; ++q)
            if (rail < 0 || topo.devices[static_cast<size_t>(ids[q])].indexInNode == rail)
                ++k;
    }
    return std::min(1.0, nBelow / (o * std::max(k, 1)));
}

// Level l of a group's shape: `blocks` blocks of its n members there, `prevBlocks` below;
// where they merge, the fan-in, the fraction of the buffer entering and the worst link.
void recordLevel(GroupShape &g, int l, int blocks, double prevBlocks, int n, double worstBw, double worstLat)
{
    g.blocks[l] = blocks;
    if (blocks < prevBlocks) {
        g.fanIn[l] = std::ceil(prevBlocks / blocks - 1e-12);
        g.fraction[l] = prevBlocks / n;
        g.bandwidth[l] = worstBw;
        g.latency[l] = worstLat;
        g.topLevel = l;
    }
}

} // namespace

namespace {

// groupShape() under Contention::FullLoad, level by level over the blocks of the level below
// instead of over the members (a gradient group of a wide stage has one member per node, so
// the member-by-member loop read every member's ancestors at every level). Under full load
// every child's share of an oversubscribed block is 1 / o, so a block's share needs no
// member; its children are the blocks of the level below inside it (ids sorted, distinct,
// contiguous below every group). The same numbers as the loop in groupShape(): the same
// blocks and children per level, and the same min / max of the same products.
GroupShape fullLoadShape(const Topology &topo, const int *ids, int n, GroupShape g)
{
    const int levels = std::min(topo.levelCount(), kMaxCostLevels);
    // One member of each block of the level below (the members themselves at level 0),
    // compacted in place level by level; on the stack for the usual sizes.
    constexpr int kStack = 1024;
    std::array<int, kStack> stack;
    std::vector<int> heap;
    int *below = stack.data();
    if (n > kStack) {
        heap.resize(static_cast<size_t>(n));
        below = heap.data();
    }
    std::copy(ids, ids + n, below);
    int count = n;
    double prevBlocks = n;
    for (int l = 0; l < levels; ++l) {
        double worstBw = std::numeric_limits<double>::infinity();
        double worstLat = 0;
        int blocks = 0;
        int i = 0;
        while (i < count) {
            const int member = below[i];
            const int block = topo.ancestor(member, l);
            int j = i + 1;
            while (j < count && topo.ancestor(below[j], l) == block)
                ++j;
            if (j - i > 1) {  // children: the blocks of the level below inside this one
                // Only a block with several children is crossed: the link of the others
                // (a gradient group's many single-member nodes) is never read.
                const LinkParams link = topo.link(block);
                const double share = link.oversubscription > 1.0 ? std::min(1.0, 1.0 / link.oversubscription) : 1.0;
                worstBw = std::min(worstBw, link.bandwidth * share);
                worstLat = std::max(worstLat, link.latency);
            }
            below[blocks++] = member;  // blocks <= i: nothing unread is overwritten
            i = j;
        }
        recordLevel(g, l, blocks, prevBlocks, n, worstBw, worstLat);
        prevBlocks = blocks;
        if (blocks == 1)
            break;
        count = blocks;
    }
    return g;
}

} // namespace

GroupShape groupShape(const Topology &topo, int *ids, int n, Contention mode, const int *concurrent,
                      int concurrentCount)
{
    GroupShape g;
    g.fanIn.fill(1.0);
    g.bandwidth.fill(std::numeric_limits<double>::infinity());
    // Stages and groups are mostly listed in id order already (both layouts): skip the sort
    // then (the sorted array, hence every number below, is the same).
    if (!std::is_sorted(ids, ids + n))
        std::sort(ids, ids + n);
    n = static_cast<int>(std::unique(ids, ids + n) - ids);
    g.size = n;
    if (n <= 1)
        return g;
    if (mode == Contention::FullLoad)
        return fullLoadShape(topo, ids, n, g);
    const int levels = std::min(topo.levelCount(), kMaxCostLevels);
    double prevBlocks = n;
    for (int l = 0; l < levels; ++l) {
        // One pass over the sorted ids: runs of equal level-l ancestor are the blocks.
        int blocks = 0;
        double worstBw = std::numeric_limits<double>::infinity();
        double worstLat = 0;
        int i = 0;
        while (i < n) {
            const int block = topo.ancestor(ids[i], l);
            int j = i;
            int children = 0;
            int lastChild = -2;
            double share = 1.0;
            const LinkParams link = topo.link(block);
            while (j < n && topo.ancestor(ids[j], l) == block) {
                const int child = l == 0 ? ids[j] : topo.ancestor(ids[j], l - 1);
                const bool newChild = child != lastChild;
                if (newChild) {
                    ++children;
                    lastChild = child;
                }
                // Every member on a rail-optimised fabric (its rail decides its uplinks),
                // else once per child switch.
                if (link.oversubscription > 1.0 && (newChild || (topo.railOptimized && l > 0))) {
                    double childShare = 1.0 / link.oversubscription;
                    if (mode == Contention::Concurrent && l > 0)
                        childShare = concurrentShare(topo, ids, n, j, l, child, link.oversubscription, concurrent,
                                                     concurrentCount);
                    share = std::min(share, childShare);
                }
                ++j;
            }
            ++blocks;
            if (children > 1) {
                worstBw = std::min(worstBw, link.bandwidth * share);
                worstLat = std::max(worstLat, link.latency);
            }
            i = j;
        }
        recordLevel(g, l, blocks, prevBlocks, n, worstBw, worstLat);
        prevBlocks = blocks;
        if (blocks == 1)
            break;
    }
    return g;
}

LinearCost reduceScatterCost(const GroupShape &g)
{
    LinearCost c;
    for (int l = 0; l <= g.topLevel; ++l) {
        const double fan = g.fanIn[l];
        if (fan <= 1)
            continue;
        c.perByte += (fan - 1) / fan * g.fraction[l] / g.bandwidth[l];
        c.fixed += (fan - 1) * g.latency[l];
    }
    return c;
}

LinearCost allGatherCost(const GroupShape &g)
{
    return reduceScatterCost(g);  // the same traffic in the opposite direction
}

LinearCost allReduceCost(const GroupShape &g)
{
    const LinearCost half = reduceScatterCost(g);
    return {2 * half.perByte, 2 * half.fixed};
}

LinearCost allToAllCost(const GroupShape &g)
{
    LinearCost c;
    double prevBlocks = g.size;
    for (int l = 0; l <= g.topLevel; ++l) {
        if (g.fanIn[l] <= 1)
            continue;
        // Fraction of each device's buffer whose destination is first reached at level l.
        const double share = 1.0 / g.blocks[l] - 1.0 / prevBlocks;
        c.perByte += share / g.bandwidth[l];
        c.fixed += g.latency[l];
        prevBlocks = g.blocks[l];
    }
    return c;
}

const char *collectiveAlgorithmName(CollectiveAlgorithm a)
{
    switch (a) {
    case CollectiveAlgorithm::Ring:
        return "ring";
    case CollectiveAlgorithm::Tree:
        return "tree";
    case CollectiveAlgorithm::Hierarchical:
        return "hierarchical";
    }
    return "ring";
}

namespace {

// max_l f_l / B_l over the crossed levels: the per-byte time of the slowest level of a
// pipelined ring or tree (every level carries the data at once).
double bottleneck(const GroupShape &g)
{
    double worst = 0;
    for (int l = 0; l <= g.topLevel; ++l)
        if (g.fanIn[l] > 1)
            worst = std::max(worst, g.fraction[l] / g.bandwidth[l]);
    return worst;
}

} // namespace

LinearCost ringReduceScatterCost(const GroupShape &g)
{
    LinearCost c;
    if (g.size <= 1)
        return c;
    const double n = g.size;
    c.perByte = (n - 1) / n * bottleneck(g);
    // n - 1 steps: c_{l-1} - c_l of them between blocks of level l-1 inside a level-l block.
    double prevBlocks = n;
    for (int l = 0; l <= g.topLevel; ++l) {
        if (g.fanIn[l] > 1)
            c.fixed += (prevBlocks - g.blocks[l]) * g.latency[l];
        prevBlocks = g.blocks[l];
    }
    return c;
}

LinearCost ringAllReduceCost(const GroupShape &g)
{
    const LinearCost half = ringReduceScatterCost(g);
    return {2 * half.perByte, 2 * half.fixed};
}

LinearCost treeAllReduceCost(const GroupShape &g)
{
    LinearCost c;
    if (g.size <= 1)
        return c;
    c.perByte = 2 * bottleneck(g) / kTreeBandwidthEfficiency;
    for (int l = 0; l <= g.topLevel; ++l) {
        if (g.fanIn[l] <= 1)
            continue;
        // A chain through the node's members, binary trees across switch levels.
        const double hops = l == 0 ? g.fanIn[l] - 1 : std::ceil(std::log2(g.fanIn[l]) - 1e-12);
        c.fixed += 2 * hops * g.latency[l];
    }
    return c;
}

namespace {
CollectiveChoice cheapest(std::initializer_list<CollectiveChoice> options, double messageBytes)
{
    CollectiveChoice best = *options.begin();
    const double m = std::max(messageBytes, 1.0);
    for (const CollectiveChoice &o : options)
        if (o.cost.at(m) < best.cost.at(m))
            best = o;
    return best;
}
} // namespace

CollectiveChoice chooseAllReduce(const GroupShape &g, double messageBytes)
{
    return cheapest({{ringAllReduceCost(g), CollectiveAlgorithm::Ring},
                     {treeAllReduceCost(g), CollectiveAlgorithm::Tree},
                     {allReduceCost(g), CollectiveAlgorithm::Hierarchical}},
                    messageBytes);
}

CollectiveChoice chooseReduceScatter(const GroupShape &g, double messageBytes)
{
    return cheapest({{ringReduceScatterCost(g), CollectiveAlgorithm::Ring},
                     {reduceScatterCost(g), CollectiveAlgorithm::Hierarchical}},
                    messageBytes);
}

LinearCost bucketed(const LinearCost &perCall, double bucketBytes)
{
    if (!(bucketBytes > 0))
        return perCall;
    return {perCall.perByte + perCall.fixed / bucketBytes, perCall.fixed};
}

namespace {
template <typename CostFn>
double timeOf(const Topology &topo, std::vector<int> ids, double bytes, Contention mode, CostFn fn)
{
    const GroupShape g = groupShape(topo, ids.data(), static_cast<int>(ids.size()), mode);
    return fn(g).at(bytes);
}
} // namespace

double allReduceTime(const Topology &topo, std::vector<int> ids, double bytes, Contention mode)
{
    return timeOf(topo, std::move(ids), bytes, mode, allReduceCost);
}

double reduceScatterTime(const Topology &topo, std::vector<int> ids, double bytes, Contention mode)
{
    return timeOf(topo, std::move(ids), bytes, mode, reduceScatterCost);
}

double allGatherTime(const Topology &topo, std::vector<int> ids, double bytes, Contention mode)
{
    return timeOf(topo, std::move(ids), bytes, mode, allGatherCost);
}

double allToAllTime(const Topology &topo, std::vector<int> ids, double bytes, Contention mode)
{
    return timeOf(topo, std::move(ids), bytes, mode, allToAllCost);
}

namespace {

// A scratch list of device ids on the stack (heap only beyond kStack ids), so that
// stageCollectives() does not allocate for realistic stages.
class IdBuffer {
public:
    static constexpr int kStack = 4096;
    explicit IdBuffer(int capacity)
    {
        if (capacity > kStack)
            m_heap.resize(static_cast<size_t>(capacity));
    }
    int *data() { return m_heap.empty() ? m_stack.data() : m_heap.data(); }
    void clear() { m_size = 0; }
    void push(int id) { data()[m_size++] = id; }
    int size() const { return m_size; }

private:
    std::array<int, kStack> m_stack;
    std::vector<int> m_heap;
    int m_size = 0;
};

// Groups that lie inside one node, in increasing id order and distinct (a stage's tp and cp
// groups): repeats() is true when the group has the size and node link of the last such
// group it saw, so that groupShape() would give it the same shape (only level 0 is crossed,
// and contention applies above it).
class SameNodeGroups {
public:
    bool repeats(const Topology &topo, const int *ids, int n)
    {
        if (n < 2 || !std::is_sorted(ids, ids + n) || std::adjacent_find(ids, ids + n) != ids + n)
            return false;
        const int node = topo.ancestor(ids[0], 0);
        if (topo.ancestor(ids[n - 1], 0) != node)
            return false;
        const LinkParams link = topo.link(node);
        const bool same = m_size == n && m_link == link;
        m_size = n;
        m_link = link;
        return same;
    }

private:
    int m_size = 0;
    LinkParams m_link;
};

// Worst (largest) linear cost over several groups: per-byte and fixed parts separately,
// exact when the groups are symmetric, an upper bound otherwise.
void takeWorst(LinearCost &acc, const LinearCost &c)
{
    acc.perByte = std::max(acc.perByte, c.perByte);
    acc.fixed = std::max(acc.fixed, c.fixed);
}

} // namespace

StageCollectives stageCollectives(const Topology &topo, const std::vector<std::vector<int>> &devices,
                                  const StageConfig &config, int dpIn)
{
    StageCollectives out;
    const int tp = std::max(config.tp, 1);
    const int cp = std::max(config.cp, 1);
    const int ep = std::max(config.ep, 1);
    const int dp = std::max(dpIn, 1);
    const int width = tp * cp;
    const int nDevices = topo.deviceCount();
    int stageDevices = 0;
    for (const auto &row : devices)
        for (int d : row)
            if (d >= 0 && d < nDevices)
                ++stageDevices;
    IdBuffer stageIds(stageDevices);
    IdBuffer group(std::max({stageDevices, dp * cp, 1}));
    for (const auto &row : devices)
        for (int d : row)
            if (d >= 0 && d < nDevices)
                stageIds.push(d);
    if (!std::is_sorted(stageIds.data(), stageIds.data() + stageIds.size()))
        std::sort(stageIds.data(), stageIds.data() + stageIds.size());
    const int *concurrent = stageIds.data();
    const int concurrentCount = stageIds.size();

    // A group inside one node crosses level 0 only, where contention plays no part: its shape
    // is fixed by its size and the node's link. The tp, cp and ep costs are maxima, so a
    // group with the (size, link) of the last such group computed adds nothing: skipped
    // (every row of a wide stage, usually).
    SameNodeGroups sameNode;
    if (tp > 1) {
        for (const auto &row : devices) {
            for (int cr = 0; cr < cp; ++cr) {
                group.clear();
                for (int t = 0; t < tp; ++t)
                    group.push(row[static_cast<size_t>(cr * tp + t)]);
                if (sameNode.repeats(topo, group.data(), group.size()))
                    continue;
                const GroupShape g = groupShape(topo, group.data(), group.size(), Contention::Concurrent,
                                                concurrent, concurrentCount);
                takeWorst(out.tp, allReduceCost(g));
            }
        }
    }
    if (cp > 1) {
        sameNode = {};
        for (const auto &row : devices) {
            for (int t = 0; t < tp; ++t) {
                group.clear();
                for (int cr = 0; cr < cp; ++cr)
                    group.push(row[static_cast<size_t>(cr * tp + t)]);
                if (sameNode.repeats(topo, group.data(), group.size()))
                    continue;
                const GroupShape g = groupShape(topo, group.data(), group.size(), Contention::Concurrent,
                                                concurrent, concurrentCount);
                takeWorst(out.cp, allGatherCost(g));
            }
        }
    }
    if (ep > 1) {
        for (int blk = 0; blk + ep <= dp; blk += ep) {
            for (int j = 0; j < width; ++j) {
                group.clear();
                for (int q = 0; q < ep; ++q)
                    group.push(devices[static_cast<size_t>(blk + q)][static_cast<size_t>(j)]);
                const GroupShape g = groupShape(topo, group.data(), group.size(), Contention::Concurrent,
                                                concurrent, concurrentCount);
                takeWorst(out.ep, allToAllCost(g));
            }
        }
    }
    // Gradients are reduced over every replica AND every context-parallel rank that holds
    // the same weight shard: the cp ranks of one tp rank hold identical weights and each
    // sees part of the sequence (Megatron-Core's data-parallel group includes cp). The
    // group of tp rank t is {devices[r][cr * tp + t] : r < dp, cr < cp}; ZeRO shards over it.
    const int expertDp = dp / ep;  // replicas sharing one expert shard
    if (dp * cp > 1) {
        // A full-load shape reads its members only through their nodes (fullLoadShape()): a
        // column t whose members, in the same (r, cr) order, are strictly increasing like
        // column 0's and sit in column 0's nodes has column 0's sorted node sequence, so its
        // dense and expert groups have column 0's shapes and costs, and taking the worst
        // again changes nothing (the algorithms are replaced only on a strictly larger
        // cost). Skipped: a stage whose tensor-parallel groups each lie in one node computes
        // one gradient group instead of tp.
        bool firstColumnStrict = false;
        auto sameNodesAsFirstColumn = [&](int t) {
            int prev = -1;
            for (int r = 0; r < dp; ++r) {
                const std::vector<int> &row = devices[static_cast<size_t>(r)];
                for (int cr = 0; cr < cp; ++cr) {
                    const int d = row[static_cast<size_t>(cr * tp + t)];
                    if (d <= prev || d >= nDevices || topo.ancestor(d, 0) != topo.ancestor(row[static_cast<size_t>(cr * tp)], 0))
                        return false;
                    prev = d;
                }
            }
            return true;
        };
        for (int t = 0; t < tp; ++t) {
            if (t > 0 && firstColumnStrict && sameNodesAsFirstColumn(t))
                continue;
            group.clear();
            for (int r = 0; r < dp; ++r)
                for (int cr = 0; cr < cp; ++cr)
                    group.push(devices[static_cast<size_t>(r)][static_cast<size_t>(cr * tp + t)]);
            if (t == 0) {
                const int *ids = group.data();
                firstColumnStrict = ids[0] >= 0 && ids[group.size() - 1] < nDevices &&
                                    std::adjacent_find(ids, ids + group.size(), std::greater_equal<int>()) ==
                                        ids + group.size();
            }
            const GroupShape g = groupShape(topo, group.data(), group.size(), Contention::FullLoad);
            const CollectiveChoice ar = chooseAllReduce(g, kGradientBucketBytes);
            const CollectiveChoice rs = chooseReduceScatter(g, kGradientBucketBytes);
            const LinearCost arCost = bucketed(ar.cost), rsCost = bucketed(rs.cost);
            if (arCost.at(kGradientBucketBytes) > out.denseAllReduce.at(kGradientBucketBytes))
                out.denseAllReduceAlgorithm = ar.algorithm;
            if (rsCost.at(kGradientBucketBytes) > out.denseReduceScatter.at(kGradientBucketBytes))
                out.denseReduceScatterAlgorithm = rs.algorithm;
            takeWorst(out.denseAllReduce, arCost);
            takeWorst(out.denseReduceScatter, rsCost);
            if (expertDp * cp > 1 && ep > 1) {
                for (int q = 0; q < ep; ++q) {
                    group.clear();
                    for (int e = 0; e < expertDp; ++e)
                        for (int cr = 0; cr < cp; ++cr)
                            group.push(devices[static_cast<size_t>(e * ep + q)][static_cast<size_t>(cr * tp + t)]);
                    const GroupShape ge = groupShape(topo, group.data(), group.size(), Contention::FullLoad);
                    takeWorst(out.expertAllReduce, bucketed(chooseAllReduce(ge, kGradientBucketBytes).cost));
                    takeWorst(out.expertReduceScatter, bucketed(chooseReduceScatter(ge, kGradientBucketBytes).cost));
                }
            }
        }
        if (ep == 1) {
            // The expert groups are the dense groups.
            out.expertAllReduce = out.denseAllReduce;
            out.expertReduceScatter = out.denseReduceScatter;
        }
    }
    return out;
}

double sendRecvTime(const LinkParams &link, double bytes, bool fullLoad)
{
    if (bytes <= 0)
        return 0.0;
    const double share = fullLoad && link.oversubscription > 1 ? 1.0 / link.oversubscription : 1.0;
    return link.latency + bytes / (link.bandwidth * share);
}

} // namespace nest
