#include "RunnablePlan.h"

#include "RankMapping.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <set>

namespace nest {

namespace {

bool isBlock(const LayerProfile &l)
{
    return isDecoderBlock(l.kind);
}

std::string joined(const std::vector<int> &values)
{
    std::string out;
    for (int v : values)
        out += (out.empty() ? "" : ", ") + std::to_string(v);
    return out;
}

int strength(Recompute r)
{
    return r == Recompute::Full ? 2 : r == Recompute::Selective ? 1 : 0;
}

// Per stage (every chunk of an interleaved plan), one field of its choice.
template <class F>
std::vector<int> perStage(const Plan &plan, F field)
{
    std::vector<int> out;
    for (const StagePlan &s : plan.stages)
        out.push_back(field(s));
    return out;
}

bool allEqual(const std::vector<int> &v)
{
    return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

std::vector<int> balancedSplit(int blocks, int stages)
{
    std::vector<int> split(static_cast<size_t>(stages), blocks / stages);
    for (int k = 0; k < blocks % stages; ++k)
        ++split[static_cast<size_t>(k)];
    return split;
}

// The plan's devices in the order of its coordinates (stage, replica, cp rank, tp rank),
// which is rank order "tp-cp-ep-dp-pp"; only for plans whose stages share one width.
std::vector<int> canonicalDevices(const Plan &plan)
{
    std::vector<int> out;
    const RankSizes s = rankSizesOf(plan);
    for (int p = 0; p < s.pp; ++p)
        for (int r = 0; r < s.dp; ++r)
            for (int c = 0; c < s.cp; ++c)
                for (int t = 0; t < s.tp; ++t)
                    out.push_back(deviceAt(plan, {p, r, c, t}));
    return out;
}

// The plan's devices, stage after stage, each once; then the cluster's others by id.
std::vector<int> devicesPlanFirst(const Plan &plan, const Topology &topo)
{
    std::vector<int> out;
    std::vector<char> seen(static_cast<size_t>(topo.deviceCount()), 0);
    for (const StagePlan &st : plan.stages)
        for (const auto &replica : st.devices)
            for (int d : replica)
                if (!seen[static_cast<size_t>(d)]++)
                    out.push_back(d);
    for (int d = 0; d < topo.deviceCount(); ++d)
        if (!seen[static_cast<size_t>(d)])
            out.push_back(d);
    return out;
}

// Ranks laid node by node: rank r on GPU r % G of the (r / G)-th node, nodes taken in the
// order the plan first uses them (then the cluster's others), each node's GPUs the plan
// used first. G: the most ranks the plan puts on one node, lowered until it divides the
// world and enough nodes have G GPUs. Empty when the cluster cannot hold the world.
std::vector<int> devicesNodeByNode(const Plan &plan, const Topology &topo, int world)
{
    const std::vector<int> order = devicesPlanFirst(plan, topo);
    std::vector<int> nodes;
    std::vector<std::vector<int>> byNode(topo.groups.size());
    std::vector<int> usedOnNode(topo.groups.size(), 0);
    const std::vector<int> planned = canonicalDevices(plan);
    const std::set<int> plannedSet(planned.begin(), planned.end());
    for (int d : order) {
        const int node = topo.devices[static_cast<size_t>(d)].node;
        if (byNode[static_cast<size_t>(node)].empty())
            nodes.push_back(node);
        byNode[static_cast<size_t>(node)].push_back(d);
        if (plannedSet.count(d))
            ++usedOnNode[static_cast<size_t>(node)];
    }
    int g = std::min(world, *std::max_element(usedOnNode.begin(), usedOnNode.end()));
    for (; g >= 1; --g) {
        if (world % g != 0)
            continue;
        std::vector<int> out;
        for (int node : nodes) {
            if (static_cast<int>(out.size()) == world)
                break;
            const auto &devs = byNode[static_cast<size_t>(node)];
            if (static_cast<int>(devs.size()) >= g)
                out.insert(out.end(), devs.begin(), devs.begin() + g);
        }
        if (static_cast<int>(out.size()) == world)
            return out;
    }
    return {};
}

} // namespace

std::vector<int> deepSpeedBalancedSplit(int blocks, int stages)
{
    // weights of [EmbeddingPipe, blocks x ParallelTransformerLayerPipe, LayerNorm, EmbeddingPipe]
    std::vector<double> w(static_cast<size_t>(blocks) + 3, 0.0);
    for (int b = 0; b < blocks; ++b)
        w[static_cast<size_t>(b) + 1] = 1.0;
    const int n = static_cast<int>(w.size()), m = std::max(1, stages);
    std::vector<int> bounds;
    if (n <= m) {
        // partition_uniform(n, m) for n <= m: parts[p] = min(p, n)
        for (int p = 0; p <= m; ++p)
            bounds.push_back(std::min(p, n));
    } else {
        const double inf = std::numeric_limits<double>::infinity();
        const auto at = [m](int i, int j) { return static_cast<size_t>(i) * static_cast<size_t>(m + 1) + static_cast<size_t>(j); };
        std::vector<double> dpMax(static_cast<size_t>(n + 1) * static_cast<size_t>(m + 1), inf), dpMin = dpMax, dpCost = dpMax;
        std::vector<int> position(dpMax.size(), 0);
        std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
        for (int i = 0; i < n; ++i)
            prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + w[static_cast<size_t>(i)];
        dpMax[at(0, 0)] = 0;
        dpCost[at(0, 0)] = 0;
        for (int i = 1; i <= n; ++i)
            for (int j = 1; j <= std::min(i, m); ++j)
                for (int k = 0; k < i; ++k) {
                    const double seg = prefix[static_cast<size_t>(i)] - prefix[static_cast<size_t>(k)];
                    const double maxSum = std::max(dpMax[at(k, j - 1)], seg);
                    const double minSum = std::min(dpMin[at(k, j - 1)], seg);
                    const double cost = maxSum - minSum;
                    if (dpCost[at(i, j)] >= cost) {
                        dpCost[at(i, j)] = cost;
                        dpMax[at(i, j)] = maxSum;
                        dpMin[at(i, j)] = minSum;
                        position[at(i, j)] = k;
                    }
                }
        bounds.push_back(n);
        for (int i = m; i >= 1; --i)
            bounds.push_back(position[at(bounds.back(), i)]);
        std::reverse(bounds.begin(), bounds.end());
    }
    std::vector<int> out;
    for (int s = 0; s < m; ++s) {
        int count = 0;
        for (int i = bounds[static_cast<size_t>(s)]; i < bounds[static_cast<size_t>(s) + 1]; ++i)
            count += (i >= 1 && i <= blocks) ? 1 : 0;
        out.push_back(count);
    }
    return out;
}

std::vector<int> blocksPerStage(const Plan &plan, const ModelProfile &model)
{
    std::vector<int> out;
    for (const StagePlan &st : plan.stages) {
        int n = 0;
        for (int l = st.firstLayer; l < st.endLayer && l < model.layerCount(); ++l)
            n += isBlock(model.layers[static_cast<size_t>(l)]) ? 1 : 0;
        out.push_back(n);
    }
    return out;
}

namespace {

// One width for every stage (and the replicas the cluster then holds).
// ... and the ZeRO stage to run when the framework lacks the plan's (-1: the next one up).
struct WidthChoice {
    int tp = 1, cp = 1, ep = 1, dp = 1;
    int zero = -1;
    bool operator<(const WidthChoice &o) const
    {
        return std::tie(tp, cp, ep, dp, zero) < std::tie(o.tp, o.cp, o.ep, o.dp, o.zero);
    }
};

Result<RunnablePlan> runnableWith(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                  const FrameworkRules &rules, const WidthChoice &choice)
{
    using R = Result<RunnablePlan>;
    RunnablePlan out;
    const std::string &fw = rules.title;
    UniformLayout u;
    u.microBatch = plan.microBatch;
    u.globalBatch = plan.globalBatch;
    u.seqLength = plan.seqLength;
    u.schedule = plan.schedule;
    u.virtualStages = plan.schedule == Schedule::Interleaved ? plan.virtualStages : 1;
    u.dp = plan.dp;
    u.pp = plan.pipelineDepth();

    // One width for every stage: the widest when the cluster holds it, else the narrowest.
    const auto tps = perStage(plan, [](const StagePlan &s) { return s.tp; });
    const auto cps = perStage(plan, [](const StagePlan &s) { return s.cp; });
    const auto eps = perStage(plan, [](const StagePlan &s) { return s.ep; });
    const bool uniformWidths = allEqual(tps) && allEqual(cps) && allEqual(eps);
    u.tp = tps.front();
    u.cp = cps.front();
    u.ep = eps.front();
    if (!uniformWidths) {
        u.tp = choice.tp;
        u.cp = choice.cp;
        u.ep = choice.ep;
        u.dp = choice.dp;
        std::vector<std::string> what;
        if (!allEqual(tps))
            what.push_back("tensor widths (tp " + joined(tps) + ")");
        if (!allEqual(cps))
            what.push_back("context widths (cp " + joined(cps) + ")");
        if (!allEqual(eps))
            what.push_back("expert widths (ep " + joined(eps) + ")");
        std::string list;
        for (size_t i = 0; i < what.size(); ++i)
            list += (i == 0 ? "" : i + 1 == what.size() ? " and " : ", ") + what[i];
        out.changes.push_back(fw + " cannot run per-stage " + list + "; exported tp " + std::to_string(u.tp) +
                              ", cp " + std::to_string(u.cp) + ", ep " + std::to_string(u.ep) + " everywhere" +
                              (u.dp != plan.dp ? " with dp " + std::to_string(u.dp) + " (was " +
                                                     std::to_string(plan.dp) + ": the cluster holds no more)"
                                               : "") +
                              " (the fastest of the stages' own widths)");
    }

    // One memory setting for every stage: the most memory-saving one any stage uses.
    const auto zeros = perStage(plan, [](const StagePlan &s) { return s.zero; });
    const auto recomputes = perStage(plan, [](const StagePlan &s) { return strength(s.recompute); });
    const auto sps = perStage(plan, [](const StagePlan &s) { return s.sp ? 1 : 0; });
    u.zero = *std::max_element(zeros.begin(), zeros.end());
    const int rec = *std::max_element(recomputes.begin(), recomputes.end());
    u.recompute = rec == 2 ? Recompute::Full : rec == 1 ? Recompute::Selective : Recompute::None;
    u.sp = *std::max_element(sps.begin(), sps.end()) == 1;
    if (!allEqual(zeros))
        out.changes.push_back(fw + " cannot run per-stage ZeRO stages (" + joined(zeros) + "); exported ZeRO-" +
                              std::to_string(u.zero) + " everywhere");
    if (!allEqual(recomputes)) {
        std::string modes;
        for (const StagePlan &s : plan.stages)
            modes += (modes.empty() ? "" : ", ") + std::string(toString(s.recompute));
        out.changes.push_back(fw + " cannot recompute per stage (" + modes + "); exported recompute " +
                              toString(u.recompute) + " everywhere");
    }
    if (!allEqual(sps) && u.tp > 1)
        out.changes.push_back(fw + " cannot switch sequence parallelism per stage; exported it on everywhere");

    // What the framework lacks.
    if (u.cp > 1 && !rules.contextParallel) {
        const int cp = u.cp;
        u.cp = 1;
        if (u.globalBatch % (1LL * u.microBatch * u.dp * cp) == 0 && u.dp * cp <= topo.deviceCount()) {
            u.dp *= cp;
            out.changes.push_back(fw + " has no context parallelism; exported cp 1 with dp " + std::to_string(u.dp) +
                                  " (the cp " + std::to_string(cp) + " ranks become data-parallel replicas)");
        } else if (StageConfig::tpDividesHeads(u.tp * cp, model.heads)) {
            u.tp *= cp;
            out.changes.push_back(fw + " has no context parallelism; exported cp 1 with tp " + std::to_string(u.tp) +
                                  " (the cp " + std::to_string(cp) + " ranks join the tensor-parallel group)");
        } else {
            out.changes.push_back(fw + " has no context parallelism; exported cp 1 on fewer devices");
        }
    }
    if (u.ep > 1 && !rules.expertParallel) {
        out.changes.push_back(fw + " has no expert parallelism here; exported ep 1 (every replica holds all experts)");
        u.ep = 1;
    }
    u.etp = 0;  // the experts' width of the stages that set one (stages without experts do not)
    for (const StagePlan &s : plan.stages)
        if (s.etp > 0) {
            u.etp = StageConfig::etpField(s.etp, u.tp);
            break;
        }
    if (u.etp > 0 && !rules.expertTensorWidth) {
        out.changes.push_back(fw + " sets no expert tensor width of its own; exported etp = tp " + std::to_string(u.tp) +
                              " (was " + std::to_string(u.etp) + ")");
        u.etp = 0;
    }
    if (u.ep > 1 && !rules.expertFolding && u.dp % u.ep != 0) {
        int ep = u.ep;
        while (ep > 1 && (u.dp % ep != 0 || !StageConfig::epDividesExperts(ep, model.numExperts)))
            --ep;
        out.changes.push_back(fw + " shards experts over data-parallel replicas only; exported ep " + std::to_string(ep) +
                              " (was " + std::to_string(u.ep) + ", which does not divide dp " + std::to_string(u.dp) + ")");
        u.ep = ep;
    }
    if (!StageConfig::expertGridFits(u.tp, u.cp, u.dp, u.expertTp(), u.ep)) {
        out.changes.push_back(fw + ": etp x ep does not divide the exported tp x cp x dp; exported ep 1 and etp = tp");
        u.ep = 1;
        u.etp = 0;
    }
    if (u.schedule == Schedule::GPipe && !rules.gpipe) {
        u.schedule = Schedule::OneFOneB;
        out.changes.push_back(fw + " has no GPipe schedule; exported 1F1B");
    }
    if (u.schedule == Schedule::Interleaved && !rules.interleaved) {
        out.changes.push_back(fw + " has no interleaved schedule; exported 1F1B with one chunk per stage (was " +
                              std::to_string(u.virtualStages) + ")");
        u.schedule = Schedule::OneFOneB;
        u.virtualStages = 1;
    }
    {
        std::vector<int> allowed;
        for (int z : rules.zeroStages)
            if (z <= 1 || rules.zeroAbove1WithPipeline || u.pp == 1)
                allowed.push_back(z);
        if (std::find(allowed.begin(), allowed.end(), u.zero) == allowed.end()) {
            // The stage the candidate names when allowed, else the next one up, else the
            // highest offered.
            int pick = -1;
            if (std::find(allowed.begin(), allowed.end(), choice.zero) != allowed.end())
                pick = choice.zero;
            for (int z : allowed)
                if (pick < 0 && z > u.zero)
                    pick = z;
            if (pick < 0)
                pick = *std::max_element(allowed.begin(), allowed.end());
            const bool pipelineRule = !rules.zeroAbove1WithPipeline && u.pp > 1 && u.zero > 1;
            out.changes.push_back(fw + (pipelineRule ? " runs ZeRO-2/3 only without pipeline parallelism" :
                                                       " has no ZeRO-" + std::to_string(u.zero)) +
                                  "; exported ZeRO-" + std::to_string(pick) + " (was ZeRO-" + std::to_string(u.zero) + ")");
            u.zero = pick;
        }
    }
    if (rules.mixedPrecisionNeedsSharding && (u.tp > 1 || u.pp > 1) && u.cp == 1 && !(u.zero >= 2 && u.dp > 1)) {
        // torchtitan turns mixed precision off with tp or pp unless FSDP (or cp) is on
        // (torchtitan/distributed/utils.py maybe_enable_amp): that run would be FP32.
        if (u.dp <= 1)
            return R::failure(fw + " trains tensor- or pipeline-parallel layouts in BF16 only under FSDP or context "
                                   "parallelism, and this layout has no data-parallel replicas to shard over (it would "
                                   "run in FP32, not the BF16 the plan was priced with)");
        out.changes.push_back(fw + " trains tensor- or pipeline-parallel layouts in BF16 only under FSDP; exported "
                                   "ZeRO-2 (FSDP, reshard never) (was ZeRO-" + std::to_string(u.zero) + ")");
        u.zero = 2;
    }
    if (rules.sequenceParallelWithTp && u.tp > 1 && !u.sp) {
        u.sp = true;
        out.changes.push_back(fw + " always shards the sequence across the tensor-parallel group; exported with "
                              "sequence parallelism");
    }
    u.sp = StageConfig::sequenceParallel(u.sp, u.tp);

    // The layer split.
    const PipelineSpan span = pipelineSpan(model);
    const int blocks = span.blocks;
    u.pipelineUnits = plan.pipelineUnits;
    auto stagesOf = [&] { return u.pp * (u.schedule == Schedule::Interleaved ? u.virtualStages : 1); };
    std::vector<int> split = blocksPerStage(plan, model);
    if (static_cast<int>(split.size()) != stagesOf())
        split = balancedStageBlocks(span, std::max(1, std::min(stagesOf(), pipelineUnitCount(span, u.pipelineUnits))),
                                    u.pipelineUnits);
    const bool anyEmpty = std::find(split.begin(), split.end(), 0) != split.end();
    using Split = FrameworkRules::Split;
    const Split rule = rules.split != Split::Layout ? rules.split
                       : u.schedule != Schedule::Interleaved && u.pipelineUnits == PipelineUnits::Layers
                           ? Split::Any
                           : Split::EvenInterior;
    const auto evenly = rule == Split::Any                     ? Split::Any
                        : u.schedule == Schedule::Interleaved ? Split::Even
                                                              : rule;
    if (rules.split == FrameworkRules::Split::Balanced) {
        if (u.pipelineUnits != PipelineUnits::Layers) {
            out.changes.push_back(fw + " weighs the transformer blocks only (partition_method='type:transformer'); "
                                       "exported with the embedding and the loss outside the pipeline units (was " +
                                  std::string(toString(u.pipelineUnits)) + ")");
            u.pipelineUnits = PipelineUnits::Layers;
        }
        const std::vector<int> want = deepSpeedBalancedSplit(blocks, stagesOf());
        if (split != want) {
            out.changes.push_back(fw + " (Megatron-DeepSpeed's GPTModelPipe) splits the blocks by partition_balanced "
                                       "over partition_method='type:transformer'; exported " + joined(want) +
                                  " blocks per stage (was " + joined(split) + ")");
            split = want;
        }
    } else if (u.pipelineUnits != PipelineUnits::Layers && evenly != FrameworkRules::Split::Any) {
        // Megatron-Core counts the embedding (and the loss) as one layer each only in its even
        // split (account_for_*_in_pipeline_split; the first/last stage sizes are a different
        // mechanism that ignores them): every stage (chunk) the same number of units.
        const int units = pipelineUnitCount(span, u.pipelineUnits);
        std::vector<int> unitSplit = split;
        if (countsEmbedding(u.pipelineUnits) && span.lead > 0)
            ++unitSplit.front();
        if (countsLoss(u.pipelineUnits) && span.tail > 0)
            ++unitSplit.back();
        if (!allEqual(unitSplit) || std::find(unitSplit.begin(), unitSplit.end(), 0) != unitSplit.end()) {
            const std::vector<int> was = unitSplit;
            const int pp0 = u.pp, v0 = u.virtualStages;
            while (u.virtualStages > 1 && units % stagesOf() != 0)
                --u.virtualStages;
            if (u.virtualStages == 1 && u.schedule == Schedule::Interleaved)
                u.schedule = Schedule::OneFOneB;
            while (u.pp > 1 && units % stagesOf() != 0)
                --u.pp;
            split = balancedStageBlocks(span, stagesOf(), u.pipelineUnits);
            out.changes.push_back(fw + " gives every stage the same number of pipeline units (" +
                                  toString(u.pipelineUnits) + ": " + std::to_string(units) + " units); exported " +
                                  (u.pp != pp0 || u.virtualStages != v0
                                       ? "pp " + std::to_string(u.pp) +
                                             (u.schedule == Schedule::Interleaved
                                                  ? " with " + std::to_string(u.virtualStages) + " chunks"
                                                  : std::string()) +
                                             " (was pp " + std::to_string(pp0) +
                                             (v0 > 1 ? " with " + std::to_string(v0) + " chunks" : std::string()) + "), "
                                       : std::string()) +
                                  std::to_string(units / stagesOf()) + " units per stage (was " + joined(was) + ")");
        }
    } else if (evenly == FrameworkRules::Split::EvenInterior && split.size() > 2) {
        const std::vector<int> interior(split.begin() + 1, split.end() - 1);
        if (!allEqual(interior) || anyEmpty) {
            const int s = static_cast<int>(split.size());
            const int mid = blocks / s, rem = blocks % s;
            const std::vector<int> was = split;
            split.assign(static_cast<size_t>(s), mid);
            split.front() += (rem + 1) / 2;
            split.back() += rem / 2;
            out.changes.push_back(fw + " gives every stage but the first and the last the same number of blocks; "
                                  "exported " + joined(split) + " blocks per stage (was " + joined(was) + ")");
        }
    } else if (evenly == FrameworkRules::Split::EvenInterior && anyEmpty) {
        const std::vector<int> was = split;
        split = balancedSplit(blocks, static_cast<int>(split.size()));
        out.changes.push_back(fw + " needs at least one block per stage; exported " + joined(split) +
                              " blocks per stage (was " + joined(was) + ")");
    } else if (evenly == FrameworkRules::Split::Even && (!allEqual(split) || anyEmpty)) {
        const std::vector<int> was = split;
        if (blocks % stagesOf() != 0) {
            // Fewer chunks, then fewer stages, until the blocks divide.
            const int pp0 = u.pp, v0 = u.virtualStages;
            while (u.virtualStages > 1 && blocks % stagesOf() != 0)
                --u.virtualStages;
            if (u.virtualStages == 1)
                u.schedule = u.schedule == Schedule::Interleaved ? Schedule::OneFOneB : u.schedule;
            while (u.pp > 1 && blocks % stagesOf() != 0)
                --u.pp;
            out.changes.push_back(fw + " splits the blocks evenly and " + std::to_string(blocks) +
                                  " blocks do not divide into " + std::to_string(pp0 * v0) + " stages; exported pp " +
                                  std::to_string(u.pp) +
                                  (u.schedule == Schedule::Interleaved ? " with " + std::to_string(u.virtualStages) + " chunks" : "") +
                                  " (was pp " + std::to_string(pp0) + (v0 > 1 ? " with " + std::to_string(v0) + " chunks" : "") + ")");
        } else {
            out.changes.push_back(fw + " splits the blocks evenly; exported " + std::to_string(blocks / stagesOf()) +
                                  " blocks per stage (was " + joined(was) + ")");
        }
        split.assign(static_cast<size_t>(stagesOf()), blocks / stagesOf());
    }
    u.stageBlocks = split;

    // Devices: the plan's own, in its coordinate order, when the shape kept its size.
    const RankSizes planSizes = rankSizesOf(plan);
    const bool sameGrid = uniformWidths && planSizes.tp == u.tp && planSizes.cp == u.cp && planSizes.dp == u.dp &&
                          planSizes.pp == u.pp;
    const long long world = 1LL * u.tp * u.cp * u.dp * u.pp;
    if (world > topo.deviceCount())
        return R::failure("the nearest layout " + fw + " can run needs " + std::to_string(world) +
                          " devices, the cluster has " + std::to_string(topo.deviceCount()));
    std::vector<int> list = sameGrid ? canonicalDevices(plan) : devicesPlanFirst(plan, topo);
    list.resize(static_cast<size_t>(world));
    u.order = "tp-cp-ep-dp-pp";
    u.rankDevices = list;
    auto built = buildUniformPlan(u, topo, model);
    if (!built)
        return R::failure("no plan " + fw + " can run keeps this job: " + built.error());
    if (out.changes.empty() && !(*built == plan))
        out.changes.push_back(fw + " derives each stage's layers from its number of blocks; exported the stages " +
                              joined(split) + " blocks long with the embedding first and the head last");

    // The launcher: G consecutive ranks per node, in one of the framework's rank orders.
    Result<RankMapping> mapping = Result<RankMapping>::failure("");
    std::string firstError;
    for (size_t i = 0; rules.launcher && i < rules.orders.size(); ++i) {
        if (i > 0 && u.ep > 1)
            break;
        mapping = mapRanks(*built, topo, rules.orders[i]);
        if (mapping) {
            out.orderIndex = i;
            break;
        }
        if (i == 0)
            firstError = mapping.error();
    }
    if (!rules.launcher) {
        mapping = RankMapping{};
    } else if (!mapping) {
        const std::vector<int> nodeList = devicesNodeByNode(*built, topo, static_cast<int>(world));
        if (nodeList.empty())
            return R::failure("no launch order of " + fw + " places this plan: " + firstError);
        u.order = rules.orders.front();
        u.rankDevices = nodeList;
        auto relaid = buildUniformPlan(u, topo, model);
        if (!relaid)
            return R::failure("no plan " + fw + " can run keeps this job: " + relaid.error());
        out.changes.push_back(fw + " starts consecutive ranks (in its order " + rules.orders.front() +
                              ") on one node, and " + firstError +
                              "; exported the same layout with the ranks laid node by node over the plan's nodes");
        built = std::move(relaid);
        mapping = mapRanks(*built, topo, rules.orders.front());
        if (!mapping)
            return R::failure(mapping.error());
        out.orderIndex = 0;
    }
    out.ranks = std::move(mapping).value();
    out.plan = std::move(built).value();
    out.layout = u;
    out.stageBlocks = split;
    // The precision: the plan's where the framework trains in it, else BF16 (issue 46).
    out.plan.precision = plan.precision;
    if (!rules.runsPrecision(plan.precision)) {
        out.plan.precision = Precision{};
        out.changes.push_back("precision " + precisionLabel(plan.precision) + " -> bf16: " + fw +
                              " does not train in " + precisionLabel(plan.precision));
    }

    std::set<int> types;
    for (int d : canonicalDevices(out.plan))
        types.insert(topo.devices[static_cast<size_t>(d)].type);
    if (types.size() > 1) {
        std::string names;
        for (int t : types)
            names += (names.empty() ? "" : ", ") + topo.deviceTypes[static_cast<size_t>(t)].name;
        out.notes.push_back("the plan mixes device types (" + names + "); " + fw +
                            " runs the same program on every GPU, so each stage keeps the layers and widths above "
                            "whatever its devices");
    }
    return out;
}

} // namespace

Result<RunnablePlan> nearestRunnablePlan(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                         const FrameworkRules &rules, const CostOptions &cost)
{
    using R = Result<RunnablePlan>;
    if (plan.stages.empty())
        return R::failure("the plan has no stages");
    // The candidate widths: each stage's own, and the widest of each.
    std::set<WidthChoice> candidates;
    int maxTp = 1, maxCp = 1, maxEp = 1;
    for (const StagePlan &s : plan.stages) {
        candidates.insert({s.tp, s.cp, s.ep, plan.dp});
        maxTp = std::max(maxTp, s.tp);
        maxCp = std::max(maxCp, s.cp);
        maxEp = std::max(maxEp, s.ep);
    }
    candidates.insert({maxTp, maxCp, maxEp, plan.dp});
    // A ZeRO stage the framework lacks becomes the next one up it offers (the pipeline rule
    // of DeepSpeed, ZeRO-2/3 only without pipelining, the highest below): runnableWith picks
    // it (docs/interop.md, the ZeRO row of "Fallback rules").
    const std::set<WidthChoice> &withZero = candidates;
    std::vector<WidthChoice> fitting;
    for (WidthChoice c : withZero) {
        // Fewer replicas when the cluster does not hold this width at the plan's dp.
        while (c.dp >= 1 && (1LL * c.tp * c.cp * c.dp * plan.pipelineDepth() > topo.deviceCount() ||
                             plan.globalBatch % (1LL * plan.microBatch * c.dp) != 0 ||
                             !StageConfig::expertGridFits(c.tp, c.cp, c.dp, plan.stages.front().expertTp(), c.ep)))
            --c.dp;
        if (c.dp >= 1)
            fitting.push_back(c);
    }
    if (fitting.empty())
        return R::failure("no single width of the plan's stages fits the cluster");
    std::optional<RunnablePlan> best;
    bool bestFits = false;
    double bestTime = 0;
    std::string firstError;
    for (const WidthChoice &c : fitting) {
        auto r = runnableWith(plan, topo, model, rules, c);
        if (!r) {
            if (firstError.empty())
                firstError = r.error();
            continue;
        }
        if (fitting.size() == 1)
            return r;
        const Report rep = evaluate(r->plan, topo, model, cost);
        if (!best || (rep.feasible && !bestFits) || (rep.feasible == bestFits && rep.iterationTime < bestTime)) {
            bestFits = rep.feasible;
            bestTime = rep.iterationTime;
            best = std::move(r).value();
        }
    }
    if (!best)
        return R::failure(firstError);
    return std::move(*best);
}

} // namespace nest
