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

// The rail whose uplinks carry `member`'s flow on a rail-optimised fabric, else -1.
int railOf(const Topology &topo, int member)
{
    return topo.railOptimized ? topo.devices[static_cast<size_t>(member)].indexInNode : -1;
}

// The share min(1, n_c / (o k_c)) of `child`'s uplinks, given k_c; on a rail (>= 0) n_c
// and k_c count only that rail's devices.
double contendedShare(const Topology &topo, int child, int rail, double o, int k)
{
    const int nBelow = rail >= 0 ? topo.railDeviceCountUnder(child, rail) : topo.deviceCountUnder(child);
    return std::min(1.0, nBelow / (o * std::max(k, 1)));
}

// Concurrent share of the uplinks of `child` (a level-(l-1) group below the crossed level)
// for the flow of group member `member` (its position j in the sorted ids):
// min(1, n_c / (o k_c)). On a rail-optimised fabric n_c and k_c count only the member's
// rail: the uplinks of a rail leaf carry that rail's devices and no others.
double concurrentShare(const Topology &topo, const int *ids, int n, int j, int level, int child, double o,
                       const int *concurrent, int concurrentCount)
{
    const int member = ids[j];
    const int rail = railOf(topo, member);
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
    return contendedShare(topo, child, rail, o, k);
}

// Under full load every child's share of an oversubscribed uplink is 1 / o.
double fullLoadShare(const LinkParams &link)
{
    return link.oversubscription > 1.0 ? std::min(1.0, 1.0 / link.oversubscription) : 1.0;
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
                const LinkParams link = topo.achievableLink(block);
                const double share = fullLoadShare(link);
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

namespace {

// groupShape()'s member-by-member loop over the levels (sorted distinct ids, n >= 2), with
// the Concurrent share of child switch `child` for member j at level l taken from
// concurrentShareOf(j, l, child, o).
template <typename ConcurrentShare>
GroupShape levelByLevelShape(const Topology &topo, const int *ids, int n, Contention mode, GroupShape g,
                             ConcurrentShare concurrentShareOf)
{
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
            const LinkParams link = topo.achievableLink(block);
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
                        childShare = concurrentShareOf(j, l, child, link.oversubscription);
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

GroupShape emptyShape()
{
    GroupShape g;
    g.fanIn.fill(1.0);
    g.bandwidth.fill(std::numeric_limits<double>::infinity());
    return g;
}

} // namespace

GroupShape groupShape(const Topology &topo, int *ids, int n, Contention mode, const int *concurrent,
                      int concurrentCount)
{
    GroupShape g = emptyShape();
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
    return levelByLevelShape(topo, ids, n, mode, g, [&](int j, int l, int child, double o) {
        return concurrentShare(topo, ids, n, j, l, child, o, concurrent, concurrentCount);
    });
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

namespace {

// P(j of the g groups a token picks lie among the m groups of one domain), G groups in all.
double hypergeometric(int total, int inside, int drawn, int j)
{
    auto logChoose = [](int n, int r) {
        return std::lgamma(n + 1.0) - std::lgamma(r + 1.0) - std::lgamma(n - r + 1.0);
    };
    if (j < 0 || j > inside || drawn - j < 0 || drawn - j > total - inside)
        return 0.0;
    return std::exp(logChoose(inside, j) + logChoose(total - inside, drawn - j) - logChoose(total, drawn));
}

// The chance that a given block of `blocks` (equal runs of the experts in rank order: the
// ranks, or the domains) receives none of a token's copies.
double untouchedBlock(int blocks, const ExpertRouting &r)
{
    const double k = std::max(r.topK, 1);
    const double b = blocks;
    if (r.groupLimited()) {
        const int groups = r.groups, picked = r.groupTopK;
        if (groups % blocks == 0) {
            const int inside = groups / blocks;
            double p0 = 0;
            for (int j = 0; j <= std::min(inside, picked); ++j)
                p0 += hypergeometric(groups, inside, picked, j) * std::pow(1.0 - static_cast<double>(j) / picked, k);
            return p0;
        }
        if (blocks % groups == 0) {
            const double chosen = static_cast<double>(picked) / groups;
            return 1.0 - chosen + chosen * std::pow(1.0 - groups / (b * picked), k);
        }
    }
    return std::pow(1.0 - 1.0 / b, k);
}

} // namespace

double remoteDomainsPerToken(double domains, const ExpertRouting &routing)
{
    const int d = static_cast<int>(std::lround(domains));
    if (d <= 1)
        return 0.0;
    return (d - 1) * (1.0 - untouchedBlock(d, routing));
}

double destinationRanksPerToken(int ranks, const ExpertRouting &routing)
{
    if (ranks <= 1)
        return 1.0;
    return ranks * (1.0 - untouchedBlock(ranks, routing));
}

LinearCost dispatchCost(const GroupShape &g, int domainLevel, const ExpertRouting &routing, bool hierarchical)
{
    if (!hierarchical || domainLevel < 0)
        return allToAllCost(g);
    const double k = std::max(routing.topK, 1);
    // One copy per destination rank, not per expert: the share of the flat exchange's copies.
    const double perRank = std::min(1.0, destinationRanksPerToken(g.size, routing) / k);
    if (g.topLevel <= domainLevel) {
        LinearCost c = allToAllCost(g);
        c.perByte *= perRank;
        return c;
    }
    const double domains = g.blocks[static_cast<size_t>(domainLevel)] > 0 ? g.blocks[static_cast<size_t>(domainLevel)] : 1.0;
    const double remote = 1.0 - 1.0 / domains;  // share of the copies bound for another domain
    const double ratio = remote > 0 ? remoteDomainsPerToken(domains, routing) / (k * remote) : 1.0;
    LinearCost c;
    double prevBlocks = g.size;
    int forwardLevel = -1;  // the highest level inside the domain the group crosses
    for (int l = 0; l <= g.topLevel; ++l) {
        if (g.fanIn[l] <= 1)
            continue;
        const double share = 1.0 / g.blocks[l] - 1.0 / prevBlocks;
        c.perByte += (l > domainLevel ? ratio : perRank) * share / g.bandwidth[l];
        c.fixed += g.latency[l];
        if (l <= domainLevel)
            forwardLevel = l;
        prevBlocks = g.blocks[l];
    }
    if (forwardLevel >= 0)
        c.perByte += perRank * remote / g.bandwidth[static_cast<size_t>(forwardLevel)];
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
    explicit IdBuffer(int capacity) : m_capacity(capacity)
    {
        if (capacity > kStack)
            m_heap.resize(static_cast<size_t>(capacity));
    }
    int *data() { return m_heap.empty() ? m_stack.data() : m_heap.data(); }
    void clear() { m_size = 0; }
    void push(int id) { data()[m_size++] = id; }
    int size() const { return m_size; }
    int capacity() const { return m_capacity; }

private:
    int m_capacity;
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
        const LinkParams link = topo.achievableLink(node);
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

// The dense gradient group of one tensor-parallel rank (shape g) into `out`: the worst cost
// per family, and the algorithm of the group that set it (replaced only on a strictly
// larger cost, so a group as slow as an earlier one changes nothing).
void takeDenseGradients(StageCollectives &out, const GroupShape &g)
{
    const double bucket = out.gradientBucketBytes;
    const CollectiveChoice ar = chooseAllReduce(g, bucket);
    const CollectiveChoice rs = chooseReduceScatter(g, bucket);
    const LinearCost arCost = bucketed(ar.cost, bucket), rsCost = bucketed(rs.cost, bucket);
    if (arCost.at(bucket) > out.denseAllReduce.at(bucket))
        out.denseAllReduceAlgorithm = ar.algorithm;
    if (rsCost.at(bucket) > out.denseReduceScatter.at(bucket))
        out.denseReduceScatterAlgorithm = rs.algorithm;
    takeWorst(out.denseAllReduce, arCost);
    takeWorst(out.denseReduceScatter, rsCost);
}

// An expert gradient group (shape g) into `out`.
void takeExpertGradients(StageCollectives &out, const GroupShape &g)
{
    const double bucket = out.gradientBucketBytes;
    takeWorst(out.expertAllReduce, bucketed(chooseAllReduce(g, bucket).cost, bucket));
    takeWorst(out.expertReduceScatter, bucketed(chooseReduceScatter(g, bucket).cost, bucket));
}

// The all-to-all cost of an expert-parallel group (shape g), recording g as out.epShape when
// it is the costliest per byte so far (dispatchCost() prices that shape).
LinearCost expertAllToAll(StageCollectives &out, const GroupShape &g)
{
    const LinearCost c = allToAllCost(g);
    if (c.perByte > out.ep.perByte || out.epShape.size == 0)
        out.epShape = g;
    return c;
}

// One stage's groups, family by family (stageCollectives()): the stage's device matrix,
// its widths and the scratch buffer every family fills in turn. Each family takes the worst
// (largest) cost over its groups into `out`.
class StageGroups {
public:
    StageGroups(const Topology &topo, const std::vector<std::vector<int>> &devices, const StageConfig &config,
                int dpIn)
        : m_topo(topo), m_devices(devices), m_config(config), m_tp(std::max(config.tp, 1)),
          m_cp(std::max(config.cp, 1)), m_ep(std::max(config.ep, 1)), m_dp(std::max(dpIn, 1)),
          m_width(m_tp * m_cp), m_nDevices(topo.deviceCount()), m_etp(std::max(config.expertTp(), 1)),
          // A grid that does not fold (a plan the checks refuse) has no expert groups to price.
          m_folds(StageConfig::expertGridFits(m_tp, m_cp, m_dp, m_etp, m_ep)),
          m_expertDp(m_folds ? config.expertDp(m_dp) : 1), m_expertGrid(m_etp * m_ep),
          m_stageIds(validDeviceCount(topo, devices)), m_group(std::max({m_stageIds.capacity(), m_dp * m_cp, 1}))
    {
        for (const auto &row : devices)
            for (int d : row)
                if (d >= 0 && d < m_nDevices)
                    m_stageIds.push(d);
        if (!std::is_sorted(m_stageIds.data(), m_stageIds.data() + m_stageIds.size()))
            std::sort(m_stageIds.data(), m_stageIds.data() + m_stageIds.size());
    }

    StageCollectives price(double gradientBucketBytes)
    {
        StageCollectives out;
        out.gradientBucketBytes = gradientBucketBytes;
        if (m_tp > 1)
            tensorGroups(out);
        if (m_cp > 1)
            contextGroups(out);
        out.domainLevel = std::max(m_topo.nvlinkDomainLevel(), 0);
        if (m_ep > 1 && m_folds)
            expertGroups(out);
        if (m_etp > 1 && m_config.etp > 0 && m_folds)
            expertTensorGroups(out);
        else if (m_etp > 1)
            out.etp = out.tp; // etp = tp: the tp groups, whose cost the tp family holds
        if (m_dp * m_cp > 1)
            denseGradientGroups(out);
        if (m_ep == 1 && m_etp == m_tp) {
            // The expert groups are the dense groups.
            out.expertAllReduce = out.denseAllReduce;
            out.expertReduceScatter = out.denseReduceScatter;
        } else if (m_expertDp > 1 && m_folds) {
            expertGradientGroups(out);
        }
        return out;
    }

private:
    static int validDeviceCount(const Topology &topo, const std::vector<std::vector<int>> &devices)
    {
        const int n = topo.deviceCount();
        int count = 0;
        for (const auto &row : devices)
            for (int d : row)
                if (d >= 0 && d < n)
                    ++count;
        return count;
    }

    // The experts' groups on the dense order x = r * width + j (Collectives.h).
    int at(long long x) const
    {
        return m_devices[static_cast<size_t>(x / m_width)][static_cast<size_t>(x % m_width)];
    }

    GroupShape concurrentShape()
    {
        return groupShape(m_topo, m_group.data(), m_group.size(), Contention::Concurrent, m_stageIds.data(),
                          m_stageIds.size());
    }

    // A group inside one node crosses level 0 only, where contention plays no part: its shape
    // is fixed by its size and the node's link. The tp, cp and ep costs are maxima, so a
    // group with the (size, link) of the last such group computed adds nothing: skipped
    // (every row of a wide stage, usually).
    void tensorGroups(StageCollectives &out)
    {
        SameNodeGroups sameNode;
        for (const auto &row : m_devices) {
            for (int cr = 0; cr < m_cp; ++cr) {
                m_group.clear();
                for (int t = 0; t < m_tp; ++t)
                    m_group.push(row[static_cast<size_t>(cr * m_tp + t)]);
                if (sameNode.repeats(m_topo, m_group.data(), m_group.size()))
                    continue;
                takeWorst(out.tp, allReduceCost(concurrentShape()));
            }
        }
    }

    void contextGroups(StageCollectives &out)
    {
        SameNodeGroups sameNode;
        for (const auto &row : m_devices) {
            for (int t = 0; t < m_tp; ++t) {
                m_group.clear();
                for (int cr = 0; cr < m_cp; ++cr)
                    m_group.push(row[static_cast<size_t>(cr * m_tp + t)]);
                if (sameNode.repeats(m_topo, m_group.data(), m_group.size()))
                    continue;
                takeWorst(out.cp, allGatherCost(concurrentShape()));
            }
        }
    }

    void expertGroups(StageCollectives &out)
    {
        for (int e = 0; e < m_expertDp; ++e) {
            for (int i = 0; i < m_etp; ++i) {
                m_group.clear();
                for (int q = 0; q < m_ep; ++q)
                    m_group.push(at(static_cast<long long>(e) * m_expertGrid + static_cast<long long>(q) * m_etp + i));
                takeWorst(out.ep, expertAllToAll(out, concurrentShape()));
            }
        }
    }

    // Experts narrower or wider than tp: their own tensor groups.
    void expertTensorGroups(StageCollectives &out)
    {
        SameNodeGroups sameNode;
        for (long long a = 0; a * m_etp < static_cast<long long>(m_dp) * m_width; ++a) {
            m_group.clear();
            for (int i = 0; i < m_etp; ++i)
                m_group.push(at(a * m_etp + i));
            if (sameNode.repeats(m_topo, m_group.data(), m_group.size()))
                continue;
            takeWorst(out.etp, allReduceCost(concurrentShape()));
        }
    }

    // A full-load shape reads its members only through their nodes (fullLoadShape()): a
    // column t whose members, in the same (r, cr) order, are strictly increasing like
    // column 0's and sit in column 0's nodes has column 0's sorted node sequence, so its
    // dense group has column 0's shapes and costs, and taking the worst again changes
    // nothing (the algorithms are replaced only on a strictly larger cost).
    bool sameNodesAsFirstColumn(int t) const
    {
        int prev = -1;
        for (int r = 0; r < m_dp; ++r) {
            const std::vector<int> &row = m_devices[static_cast<size_t>(r)];
            for (int cr = 0; cr < m_cp; ++cr) {
                const int d = row[static_cast<size_t>(cr * m_tp + t)];
                if (d <= prev || d >= m_nDevices ||
                    m_topo.ancestor(d, 0) != m_topo.ancestor(row[static_cast<size_t>(cr * m_tp)], 0))
                    return false;
                prev = d;
            }
        }
        return true;
    }

    // Gradients are reduced over every replica AND every context-parallel rank that holds
    // the same weight shard: the cp ranks of one tp rank hold identical weights and each
    // sees part of the sequence (Megatron-Core's data-parallel group includes cp). The
    // group of tp rank t is {devices[r][cr * tp + t] : r < dp, cr < cp}; ZeRO shards over it.
    // A stage whose tensor-parallel groups each lie in one node computes one gradient group
    // instead of tp (sameNodesAsFirstColumn()).
    void denseGradientGroups(StageCollectives &out)
    {
        bool firstColumnStrict = false;
        for (int t = 0; t < m_tp; ++t) {
            if (t > 0 && firstColumnStrict && sameNodesAsFirstColumn(t))
                continue;
            m_group.clear();
            for (int r = 0; r < m_dp; ++r)
                for (int cr = 0; cr < m_cp; ++cr)
                    m_group.push(m_devices[static_cast<size_t>(r)][static_cast<size_t>(cr * m_tp + t)]);
            if (t == 0) {
                const int *ids = m_group.data();
                firstColumnStrict = ids[0] >= 0 && ids[m_group.size() - 1] < m_nDevices &&
                                    std::adjacent_find(ids, ids + m_group.size(), std::greater_equal<int>()) ==
                                        ids + m_group.size();
            }
            takeDenseGradients(out, groupShape(m_topo, m_group.data(), m_group.size(), Contention::FullLoad));
        }
    }

    void expertGradientGroups(StageCollectives &out)
    {
        for (int q = 0; q < m_ep; ++q) {
            for (int i = 0; i < m_etp; ++i) {
                m_group.clear();
                for (int e = 0; e < m_expertDp; ++e)
                    m_group.push(at(static_cast<long long>(e) * m_expertGrid + static_cast<long long>(q) * m_etp + i));
                takeExpertGradients(out, groupShape(m_topo, m_group.data(), m_group.size(), Contention::FullLoad));
            }
        }
    }

    const Topology &m_topo;
    const std::vector<std::vector<int>> &m_devices;
    const StageConfig &m_config;
    const int m_tp, m_cp, m_ep, m_dp, m_width, m_nDevices, m_etp;
    const bool m_folds;
    const int m_expertDp, m_expertGrid;
    IdBuffer m_stageIds; // the stage's devices, sorted: the concurrent traffic of its groups
    IdBuffer m_group;
};

} // namespace

StageCollectives stageCollectives(const Topology &topo, const std::vector<std::vector<int>> &devices,
                                  const StageConfig &config, int dpIn, double gradientBucketBytes)
{
    return StageGroups(topo, devices, config, dpIn).price(gradientBucketBytes);
}

void deviceMatrixInto(const EvenRows &rows, std::vector<std::vector<int>> &d)
{
    d.resize(static_cast<size_t>(std::max(rows.rows, 0)));
    for (int r = 0; r < rows.rows; ++r) {
        std::vector<int> &row = d[static_cast<size_t>(r)];
        row.resize(static_cast<size_t>(rows.width));
        const int base = rows.first + r * rows.stride;
        for (int j = 0; j < rows.width; ++j)
            row[static_cast<size_t>(j)] = base + j;
    }
}

std::vector<std::vector<int>> deviceMatrix(const EvenRows &rows)
{
    std::vector<std::vector<int>> d;
    deviceMatrixInto(rows, d);
    return d;
}

namespace {

// The distinct values of x / size over the sorted ids x = base + i * a + j * b (i < ni,
// j < nj, (nj - 1) * b < a): the level blocks of that size they fall in. Steps below the
// size skip no block, so a run of them spans every block from its first id's to its last's.
long long progressionBlocks(long long base, long long a, long long ni, long long b, long long nj, long long size)
{
    auto line = [size](long long x0, long long step, long long count) {
        if (count <= 1 || step >= size)
            return count;
        return (x0 + (count - 1) * step) / size - x0 / size + 1;
    };
    if (nj == 1)
        return line(base, a, ni);
    if (ni == 1 || a == nj * b)
        return line(base, b, ni * nj);
    long long blocks = 0, prevLast = 0;
    for (long long i = 0; i < ni; ++i) {
        const long long first = base + i * a;
        blocks += line(first, b, nj);
        if (i > 0 && first / size == prevLast / size)
            --blocks;  // the row starts in the block the one before ended in
        prevLast = first + (nj - 1) * b;
    }
    return blocks;
}

// fullLoadShape() of n distinct ids on a regular tree whose distinct level-l blocks number
// blocksAt(l): there every group of a level has the level's link, so a level's worst link
// is that link as soon as one of its blocks holds two blocks of the level below.
template <typename Blocks>
GroupShape regularFullLoadShape(const Topology &topo, long long n, Blocks blocksAt)
{
    GroupShape g = emptyShape();
    g.size = static_cast<int>(n);
    if (n <= 1)
        return g;
    const int levels = std::min(topo.levelCount(), kMaxCostLevels);
    double prevBlocks = static_cast<double>(n);
    long long count = n;
    for (int l = 0; l < levels; ++l) {
        const long long blocks = blocksAt(l);
        double worstBw = std::numeric_limits<double>::infinity();
        double worstLat = 0;
        if (blocks < count) {
            const LinkParams link = topo.achievableLevelLink(l);
            const double share = fullLoadShare(link);
            worstBw = std::min(worstBw, link.bandwidth * share);
            worstLat = std::max(worstLat, link.latency);
        }
        recordLevel(g, l, static_cast<int>(blocks), prevBlocks, static_cast<int>(n), worstBw, worstLat);
        prevBlocks = static_cast<double>(blocks);
        if (blocks == 1)
            break;
        count = blocks;
    }
    return g;
}

// The Concurrent groups of evenly spaced rows on a regular tree, shaped once per class.
class EvenStage {
public:
    EvenStage(const Topology &topo, const std::vector<int> &sizes, const EvenRows &rows)
        : m_topo(topo), m_sizes(sizes), m_first(rows.first), m_stride(rows.stride), m_width(rows.width),
          m_rows(rows.rows), m_end(static_cast<long long>(rows.first) + static_cast<long long>(rows.rows - 1) * rows.stride + rows.width)
    {
    }

    // The worst cost(shape) over the groups {a + i * step : i < n}, a = each start that
    // forEachStart passes on (n >= 2).
    template <typename Starts, typename Cost>
    void worst(Starts forEachStart, int step, int n, LinearCost &acc, Cost cost)
    {
        m_found.clear();
        m_recent.fill(Found{});
        forEachStart([&](long long a) {
            const Key k = classOf(a, a + static_cast<long long>(n - 1) * step);
            Found &slot = m_recent[k.hash() & (m_recent.size() - 1)];
            if (slot.used && slot.key == k)
                return;
            slot = {k, a, true};
            m_found.push_back(slot);
        });
        std::sort(m_found.begin(), m_found.end(), [](const Found &x, const Found &y) { return x.key < y.key; });
        m_found.erase(std::unique(m_found.begin(), m_found.end(),
                                  [](const Found &x, const Found &y) { return x.key == y.key; }),
                      m_found.end());
        for (const Found &f : m_found)
            takeWorst(acc, cost(shape(f.start, step, n)));
    }

private:
    // Where a group closes (level `top`, its ids' lowest common level), its first id's
    // offset in that level-top block, and the ids of the block that hold the stage:
    // [low, high) of the block, those r * stride + [0, width) from `first` (phase = the
    // block's start - first, modulo the stride). Each group's shape is a function of these.
    struct Key {
        int top = 0;
        long long offset = 0, low = 0, high = 0, phase = 0;
        auto operator<=>(const Key &) const = default;
        uint64_t hash() const
        {
            uint64_t h = static_cast<uint64_t>(top);
            for (long long v : {offset, low, high, phase})
                h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(v);
            return h ^ (h >> 29);
        }
    };
    struct Found {
        Key key;
        long long start = 0;
        bool used = false;
    };

    Key classOf(long long a, long long last) const
    {
        Key k;
        while (a / m_sizes[static_cast<size_t>(k.top)] != last / m_sizes[static_cast<size_t>(k.top)])
            ++k.top;
        const long long size = m_sizes[static_cast<size_t>(k.top)];
        const long long z0 = a - a % size;
        k.offset = a - z0;
        if (k.top > 0) {  // level 0 alone: no contention share reads the stage
            k.low = std::clamp<long long>(m_first - z0, 0, size);
            k.high = std::clamp<long long>(m_end - z0, 0, size);
            k.phase = m_stride == m_width ? 0 : ((z0 - m_first) % m_stride + m_stride) % m_stride;
        }
        return k;
    }

    // |stage ∩ [0, x)|.
    long long coveredBelow(long long x) const
    {
        if (x <= m_first)
            return 0;
        const long long full =
            x - m_first - m_width < 0 ? 0 : std::min<long long>(m_rows, (x - m_first - m_width) / m_stride + 1);
        if (full >= m_rows)
            return static_cast<long long>(m_rows) * m_width;
        return full * m_width + std::clamp<long long>(x - (m_first + full * m_stride), 0, m_width);
    }
    // The stage's ids in [c0, c1) whose index in their node is `rail`.
    long long coveredOnRail(long long c0, long long c1, int rail) const
    {
        const long long m = m_sizes[0];
        auto onRail = [&](long long v) { return v <= rail ? 0 : (v - rail - 1) / m + 1; };  // in [0, v)
        const long long rLo = c0 - m_first - m_width < 0 ? 0 : (c0 - m_first - m_width) / m_stride + 1;
        const long long rHi = c1 - 1 - m_first < 0 ? -1 : std::min<long long>(m_rows - 1, (c1 - 1 - m_first) / m_stride);
        long long k = 0;
        for (long long r = rLo; r <= rHi; ++r) {
            const long long lo = std::max(m_first + r * m_stride, c0);
            const long long hi = std::min(m_first + r * m_stride + m_width, c1);
            if (lo < hi)
                k += onRail(hi) - onRail(lo);
        }
        return k;
    }

    GroupShape shape(long long start, int step, int n)
    {
        m_ids.resize(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i)
            m_ids[static_cast<size_t>(i)] = static_cast<int>(start + static_cast<long long>(i) * step);
        GroupShape g = emptyShape();
        g.size = n;
        const int *ids = m_ids.data();
        return levelByLevelShape(m_topo, ids, n, Contention::Concurrent, g, [&](int j, int l, int child, double o) {
            // countBelow() of the stage's sorted ids, counted instead of read: the child is
            // the level-(l - 1) block [c0, c0 + size) of member j.
            const int member = ids[j];
            const long long size = m_sizes[static_cast<size_t>(l - 1)];
            const long long c0 = member - member % size;
            const int rail = railOf(m_topo, member);
            const long long k = rail < 0 ? coveredBelow(c0 + size) - coveredBelow(c0) : coveredOnRail(c0, c0 + size, rail);
            return contendedShare(m_topo, child, rail, o, static_cast<int>(std::max<long long>(k, 1)));
        });
    }

    const Topology &m_topo;
    const std::vector<int> &m_sizes;
    const long long m_first, m_stride, m_width, m_rows, m_end;
    std::vector<Found> m_found;
    std::array<Found, 256> m_recent{};
    std::vector<int> m_ids;
};

} // namespace

namespace {

// The widths and the id progression of an evenly placed stage (evenStageCollectives()).
struct EvenLayout {
    int tp, cp, ep, dp, width, etp, grid;
    long long first, stride;
    bool inRow; // the experts' grid etp x ep tiles a row
};

// Where every row of replica 0 keeps its tp groups inside one level-0 block and the rows are
// whole level-0 blocks apart, every replica's groups have replica 0's keys (the same offsets
// in their blocks, closing at level 0, where the key reads nothing else): replica 0's groups
// are the distinct ones. The number of replicas whose tp groups must be priced.
int distinctTensorReplicas(const EvenLayout &e, const std::vector<int> &blockSizes)
{
    const long long node = blockSizes.empty() ? 0 : blockSizes.front();
    bool sameAsFirst = node > 0 && e.stride % node == 0;
    for (int cr = 0; cr < e.cp && sameAsFirst; ++cr) {
        const long long a = e.first + static_cast<long long>(cr) * e.tp;
        sameAsFirst = a / node == (a + e.tp - 1) / node;
    }
    return sameAsFirst ? 1 : e.dp;
}

void evenTensorAndContextGroups(EvenStage &stage, const EvenLayout &e, const std::vector<int> &blockSizes,
                                StageCollectives &out)
{
    if (e.tp > 1) {
        const int replicas = distinctTensorReplicas(e, blockSizes);
        stage.worst(
            [&](auto visit) {
                for (int r = 0; r < replicas; ++r)
                    for (int cr = 0; cr < e.cp; ++cr)
                        visit(e.first + r * e.stride + static_cast<long long>(cr) * e.tp);
            },
            1, e.tp, out.tp, [](const GroupShape &g) { return allReduceCost(g); });
    }
    if (e.cp > 1) {
        stage.worst(
            [&](auto visit) {
                for (int r = 0; r < e.dp; ++r)
                    for (int t = 0; t < e.tp; ++t)
                        visit(e.first + r * e.stride + t);
            },
            e.tp, e.cp, out.cp, [](const GroupShape &g) { return allGatherCost(g); });
    }
}

void evenExpertGroups(EvenStage &stage, const EvenLayout &e, const StageConfig &config, StageCollectives &out)
{
    if (e.ep > 1) {
        auto keep = [&out](const GroupShape &g) { return expertAllToAll(out, g); };
        if (e.inRow) {
            stage.worst(
                [&](auto visit) {
                    for (int r = 0; r < e.dp; ++r)
                        for (int blk = 0; blk < e.width; blk += e.grid)
                            for (int i = 0; i < e.etp; ++i)
                                visit(e.first + r * e.stride + blk + i);
                },
                e.etp, e.ep, out.ep, keep);
        } else {
            stage.worst(
                [&](auto visit) {
                    for (int blk = 0; blk + e.ep <= e.dp; blk += e.ep)
                        for (int j = 0; j < e.width; ++j)
                            visit(e.first + blk * e.stride + j);
                },
                e.stride, e.ep, out.ep, keep);
        }
    }
    if (e.etp > 1 && config.etp > 0) {
        // etp divides the width here (a row tiled, or etp = width): each row's blocks of etp.
        stage.worst(
            [&](auto visit) {
                for (int r = 0; r < e.dp; ++r)
                    for (int a = 0; a < e.width; a += e.etp)
                        visit(e.first + r * e.stride + a);
            },
            1, e.etp, out.etp, [](const GroupShape &g) { return allReduceCost(g); });
    } else if (e.etp > 1) {
        out.etp = out.tp;
    }
}

void evenGradientGroups(const Topology &topo, const std::vector<int> &blockSizes, const EvenLayout &e,
                        const StageConfig &config, StageCollectives &out)
{
    const int expertDp = config.expertDp(e.dp);
    if (e.dp * e.cp > 1) {
        for (int t = 0; t < e.tp; ++t)
            takeDenseGradients(out, regularFullLoadShape(topo, static_cast<long long>(e.dp) * e.cp, [&](int l) {
                return progressionBlocks(e.first + t, e.stride, e.dp, e.tp, e.cp, blockSizes[static_cast<size_t>(l)]);
            }));
    }
    if (e.ep == 1 && e.etp == e.tp) {
        out.expertAllReduce = out.denseAllReduce;
        out.expertReduceScatter = out.denseReduceScatter;
        return;
    }
    if (expertDp <= 1)
        return;
    for (int q = 0; q < e.ep; ++q) {
        for (int i = 0; i < e.etp; ++i) {
            // inRow: width / grid members per row, every row; etp = width: one member in
            // every ep-th row.
            takeExpertGradients(out, regularFullLoadShape(topo, expertDp, [&](int l) {
                const long long size = blockSizes[static_cast<size_t>(l)];
                return e.inRow ? progressionBlocks(e.first + q * e.etp + i, e.stride, e.dp, e.grid, e.width / e.grid, size)
                               : progressionBlocks(e.first + static_cast<long long>(q) * e.stride + i,
                                                   static_cast<long long>(e.ep) * e.stride, expertDp, 1, 1, size);
            }));
        }
    }
}

} // namespace

StageCollectives evenStageCollectives(const Topology &topo, const std::vector<int> &blockSizes,
                                      const EvenRows &rows, const StageConfig &config, double gradientBucketBytes)
{
    // The families and their order as in stageCollectives(), which this must equal.
    EvenLayout e{};
    e.tp = std::max(config.tp, 1);
    e.cp = std::max(config.cp, 1);
    e.ep = std::max(config.ep, 1);
    e.dp = std::max(rows.rows, 1);
    e.width = e.tp * e.cp;
    e.first = rows.first;
    e.stride = rows.stride;
    // The experts' groups are progressions of ids when their grid etp x ep tiles a row
    // (etp x ep divides the width) or etp is whole rows (etp = width). A grid that folds
    // otherwise, or not at all (a plan the checks refuse), is shaped from the device matrix:
    // stageCollectives(), whose numbers these equal.
    e.etp = std::max(config.expertTp(), 1);
    e.grid = e.etp * e.ep;
    e.inRow = e.width % e.grid == 0;
    if (!StageConfig::expertGridFits(e.tp, e.cp, e.dp, e.etp, e.ep) ||
        !(e.inRow || e.etp == e.width || (e.ep == 1 && e.etp == e.tp)))
        return stageCollectives(topo, deviceMatrix(rows), config, e.dp, gradientBucketBytes);
    StageCollectives out;
    out.gradientBucketBytes = gradientBucketBytes;
    EvenStage stage(topo, blockSizes, rows);
    evenTensorAndContextGroups(stage, e, blockSizes, out);
    out.domainLevel = std::max(topo.nvlinkDomainLevel(), 0);
    evenExpertGroups(stage, e, config, out);
    evenGradientGroups(topo, blockSizes, e, config, out);
    return out;
}

} // namespace nest
