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

std::string joinedValues(const std::vector<int> &values)
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

// Each stage's choice (every chunk of an interleaved plan): what the rules below read.
std::vector<StageConfig> stageConfigs(const Plan &plan)
{
    std::vector<StageConfig> out;
    for (const StagePlan &s : plan.stages)
        out.push_back(s.config());
    return out;
}

// Per stage, one field of its choice.
template <class F>
std::vector<int> perStage(const std::vector<StageConfig> &configs, F field)
{
    std::vector<int> out;
    for (const StageConfig &c : configs)
        out.push_back(field(c));
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

// The nearest plan one framework runs at one candidate width: the rules of docs/interop.md's
// "Fallback rules", one step each, in the order they apply; each step changes only what the
// framework cannot express and says the change in a sentence.
class RunnableFit {
public:
    RunnableFit(const Plan &plan, const Topology &topo, const ModelProfile &model, const FrameworkRules &rules)
        : m_plan(plan), m_topo(topo), m_model(model), m_rules(rules), m_fw(rules.title), m_configs(stageConfigs(plan))
    {
    }

    Result<RunnablePlan> run(const WidthChoice &choice)
    {
        using R = Result<RunnablePlan>;
        startFromPlan();
        uniteWidths(choice);
        uniteMemory();
        fitContextParallel();
        fitExperts();
        fitSchedule();
        fitZero(choice.zero);
        if (auto failed = fitMixedPrecision())
            return R::failure(*failed);
        fitSequenceParallel();
        fitSplit();
        Result<Plan> built = placeDevices();
        if (!built)
            return R::failure(built.error());
        if (auto failed = placeRanks(built))
            return R::failure(*failed);
        m_out.plan = std::move(built).value();
        m_out.layout = m_u;
        m_out.stageBlocks = m_split;
        keepPrecision();
        noteDeviceTypes();
        return std::move(m_out);
    }

private:
    const Plan &m_plan;
    const Topology &m_topo;
    const ModelProfile &m_model;
    const FrameworkRules &m_rules;
    const std::string &m_fw;
    const std::vector<StageConfig> m_configs;
    UniformLayout m_u;
    RunnablePlan m_out;
    bool m_uniformWidths = true;
    std::vector<int> m_split;  // transformer blocks per stage
    long long m_world = 0;

    void change(std::string sentence) { m_out.changes.push_back(std::move(sentence)); }
    int stages() const { return m_u.pp * (m_u.schedule == Schedule::Interleaved ? m_u.virtualStages : 1); }

    // The plan's job and pipeline, before any rule.
    void startFromPlan()
    {
        m_u.microBatch = m_plan.microBatch;
        m_u.globalBatch = m_plan.globalBatch;
        m_u.seqLength = m_plan.seqLength;
        m_u.schedule = m_plan.schedule;
        m_u.virtualStages = m_plan.schedule == Schedule::Interleaved ? m_plan.virtualStages : 1;
        m_u.dp = m_plan.dp;
        m_u.pp = m_plan.pipelineDepth();
    }

    // One width for every stage: the candidate's when the stages differ.
    void uniteWidths(const WidthChoice &choice)
    {
        const auto tps = perStage(m_configs, [](const StageConfig &c) { return c.tp; });
        const auto cps = perStage(m_configs, [](const StageConfig &c) { return c.cp; });
        const auto eps = perStage(m_configs, [](const StageConfig &c) { return c.ep; });
        m_uniformWidths = allEqual(tps) && allEqual(cps) && allEqual(eps);
        m_u.tp = tps.front();
        m_u.cp = cps.front();
        m_u.ep = eps.front();
        if (m_uniformWidths)
            return;
        m_u.tp = choice.tp;
        m_u.cp = choice.cp;
        m_u.ep = choice.ep;
        m_u.dp = choice.dp;
        std::vector<std::string> what;
        if (!allEqual(tps))
            what.push_back("tensor widths (tp " + joinedValues(tps) + ")");
        if (!allEqual(cps))
            what.push_back("context widths (cp " + joinedValues(cps) + ")");
        if (!allEqual(eps))
            what.push_back("expert widths (ep " + joinedValues(eps) + ")");
        std::string list;
        for (size_t i = 0; i < what.size(); ++i)
            list += (i == 0 ? "" : i + 1 == what.size() ? " and " : ", ") + what[i];
        change(m_fw + " cannot run per-stage " + list + "; exported tp " + std::to_string(m_u.tp) + ", cp " +
               std::to_string(m_u.cp) + ", ep " + std::to_string(m_u.ep) + " everywhere" +
               (m_u.dp != m_plan.dp ? " with dp " + std::to_string(m_u.dp) + " (was " + std::to_string(m_plan.dp) +
                                          ": the cluster holds no more)"
                                    : "") +
               " (the fastest of the stages' own widths)");
    }

    // One memory setting for every stage: the most memory-saving one any stage uses.
    void uniteMemory()
    {
        const auto zeros = perStage(m_configs, [](const StageConfig &c) { return c.zero; });
        const auto recomputes = perStage(m_configs, [](const StageConfig &c) { return strength(c.recompute); });
        const auto sps = perStage(m_configs, [](const StageConfig &c) { return c.sp ? 1 : 0; });
        m_u.zero = *std::max_element(zeros.begin(), zeros.end());
        const int rec = *std::max_element(recomputes.begin(), recomputes.end());
        m_u.recompute = rec == 2 ? Recompute::Full : rec == 1 ? Recompute::Selective : Recompute::None;
        m_u.sp = *std::max_element(sps.begin(), sps.end()) == 1;
        if (!allEqual(zeros))
            change(m_fw + " cannot run per-stage ZeRO stages (" + joinedValues(zeros) + "); exported ZeRO-" +
                   std::to_string(m_u.zero) + " everywhere");
        if (!allEqual(recomputes)) {
            std::string modes;
            for (const StageConfig &c : m_configs)
                modes += (modes.empty() ? "" : ", ") + std::string(toString(c.recompute));
            change(m_fw + " cannot recompute per stage (" + modes + "); exported recompute " +
                   toString(m_u.recompute) + " everywhere");
        }
        if (!allEqual(sps) && m_u.tp > 1)
            change(m_fw + " cannot switch sequence parallelism per stage; exported it on everywhere");
    }

    // No context parallelism: its ranks become replicas, else join the tensor-parallel group.
    void fitContextParallel()
    {
        if (m_u.cp <= 1 || m_rules.contextParallel)
            return;
        const int cp = m_u.cp;
        m_u.cp = 1;
        if (m_u.globalBatch % (1LL * m_u.microBatch * m_u.dp * cp) == 0 && m_u.dp * cp <= m_topo.deviceCount()) {
            m_u.dp *= cp;
            change(m_fw + " has no context parallelism; exported cp 1 with dp " + std::to_string(m_u.dp) +
                   " (the cp " + std::to_string(cp) + " ranks become data-parallel replicas)");
        } else if (StageConfig::tpDividesHeads(m_u.tp * cp, m_model.heads)) {
            m_u.tp *= cp;
            change(m_fw + " has no context parallelism; exported cp 1 with tp " + std::to_string(m_u.tp) +
                   " (the cp " + std::to_string(cp) + " ranks join the tensor-parallel group)");
        } else {
            change(m_fw + " has no context parallelism; exported cp 1 on fewer devices");
        }
    }

    // Expert parallelism, the experts' own tensor width and how ep may fold over the stage.
    void fitExperts()
    {
        if (m_u.ep > 1 && !m_rules.expertParallel) {
            change(m_fw + " has no expert parallelism here; exported ep 1 (every replica holds all experts)");
            m_u.ep = 1;
        }
        m_u.etp = 0;  // the experts' width of the stages that set one (stages without experts do not)
        for (const StageConfig &c : m_configs)
            if (c.etp > 0) {
                m_u.etp = StageConfig::etpField(c.etp, m_u.tp);
                break;
            }
        if (m_u.etp > 0 && !m_rules.expertTensorWidth) {
            change(m_fw + " sets no expert tensor width of its own; exported etp = tp " + std::to_string(m_u.tp) +
                   " (was " + std::to_string(m_u.etp) + ")");
            m_u.etp = 0;
        }
        if (m_u.ep > 1 && !m_rules.expertFolding && m_u.dp % m_u.ep != 0) {
            int ep = m_u.ep;
            while (ep > 1 && (m_u.dp % ep != 0 || !StageConfig::epDividesExperts(ep, m_model.numExperts)))
                --ep;
            change(m_fw + " shards experts over data-parallel replicas only; exported ep " + std::to_string(ep) +
                   " (was " + std::to_string(m_u.ep) + ", which does not divide dp " + std::to_string(m_u.dp) + ")");
            m_u.ep = ep;
        }
        if (!StageConfig::expertGridFits(m_u.tp, m_u.cp, m_u.dp, m_u.expertTp(), m_u.ep)) {
            change(m_fw + ": etp x ep does not divide the exported tp x cp x dp; exported ep 1 and etp = tp");
            m_u.ep = 1;
            m_u.etp = 0;
        }
    }

    void fitSchedule()
    {
        if (m_u.schedule == Schedule::GPipe && !m_rules.gpipe) {
            m_u.schedule = Schedule::OneFOneB;
            change(m_fw + " has no GPipe schedule; exported 1F1B");
        }
        if (m_u.schedule == Schedule::Interleaved && !m_rules.interleaved) {
            change(m_fw + " has no interleaved schedule; exported 1F1B with one chunk per stage (was " +
                   std::to_string(m_u.virtualStages) + ")");
            m_u.schedule = Schedule::OneFOneB;
            m_u.virtualStages = 1;
        }
    }

    // A ZeRO stage the framework lacks: the candidate's when allowed, else the next one up,
    // else the highest offered.
    void fitZero(int candidateZero)
    {
        std::vector<int> allowed;
        for (int z : m_rules.zeroStages)
            if (z <= 1 || m_rules.zeroAbove1WithPipeline || m_u.pp == 1)
                allowed.push_back(z);
        if (std::find(allowed.begin(), allowed.end(), m_u.zero) != allowed.end())
            return;
        int pick = -1;
        if (std::find(allowed.begin(), allowed.end(), candidateZero) != allowed.end())
            pick = candidateZero;
        for (int z : allowed)
            if (pick < 0 && z > m_u.zero)
                pick = z;
        if (pick < 0)
            pick = *std::max_element(allowed.begin(), allowed.end());
        const bool pipelineRule = !m_rules.zeroAbove1WithPipeline && m_u.pp > 1 && m_u.zero > 1;
        change(m_fw + (pipelineRule ? " runs ZeRO-2/3 only without pipeline parallelism" :
                                      " has no ZeRO-" + std::to_string(m_u.zero)) +
               "; exported ZeRO-" + std::to_string(pick) + " (was ZeRO-" + std::to_string(m_u.zero) + ")");
        m_u.zero = pick;
    }

    // torchtitan turns mixed precision off with tp or pp unless FSDP (or cp) is on
    // (torchtitan/distributed/utils.py maybe_enable_amp): that run would be FP32.
    std::optional<std::string> fitMixedPrecision()
    {
        if (!m_rules.mixedPrecisionNeedsSharding || !(m_u.tp > 1 || m_u.pp > 1) || m_u.cp != 1 ||
            (m_u.zero >= 2 && m_u.dp > 1))
            return std::nullopt;
        if (m_u.dp <= 1)
            return m_fw + " trains tensor- or pipeline-parallel layouts in BF16 only under FSDP or context "
                          "parallelism, and this layout has no data-parallel replicas to shard over (it would "
                          "run in FP32, not the BF16 the plan was priced with)";
        change(m_fw + " trains tensor- or pipeline-parallel layouts in BF16 only under FSDP; exported "
                      "ZeRO-2 (FSDP, reshard never) (was ZeRO-" + std::to_string(m_u.zero) + ")");
        m_u.zero = 2;
        return std::nullopt;
    }

    void fitSequenceParallel()
    {
        if (m_rules.sequenceParallelWithTp && m_u.tp > 1 && !m_u.sp) {
            m_u.sp = true;
            change(m_fw + " always shards the sequence across the tensor-parallel group; exported with "
                          "sequence parallelism");
        }
        m_u.sp = StageConfig::sequenceParallel(m_u.sp, m_u.tp);
    }

    // The layer split: the plan's blocks per stage, changed to the framework's rule.
    void fitSplit()
    {
        const PipelineSpan span = pipelineSpan(m_model);
        m_u.pipelineUnits = m_plan.pipelineUnits;
        m_split = blocksPerStage(m_plan, m_model);
        if (static_cast<int>(m_split.size()) != stages())
            m_split = balancedStageBlocks(
                span, std::max(1, std::min(stages(), pipelineUnitCount(span, m_u.pipelineUnits))), m_u.pipelineUnits);
        const bool anyEmpty = std::find(m_split.begin(), m_split.end(), 0) != m_split.end();
        using Split = FrameworkRules::Split;
        const Split rule = m_rules.split != Split::Layout ? m_rules.split
                           : m_u.schedule != Schedule::Interleaved && m_u.pipelineUnits == PipelineUnits::Layers
                               ? Split::Any
                               : Split::EvenInterior;
        const auto evenly = rule == Split::Any                       ? Split::Any
                            : m_u.schedule == Schedule::Interleaved ? Split::Even
                                                                    : rule;
        if (m_rules.split == Split::Balanced)
            splitBalanced(span.blocks);
        else if (m_u.pipelineUnits != PipelineUnits::Layers && evenly != Split::Any)
            splitEvenUnits(span);
        else if (evenly == Split::EvenInterior && m_split.size() > 2)
            splitEvenInterior(span.blocks, anyEmpty);
        else if (evenly == Split::EvenInterior && anyEmpty)
            splitNoEmptyStage(span.blocks);
        else if (evenly == Split::Even && (!allEqual(m_split) || anyEmpty))
            splitEven(span.blocks);
        m_u.stageBlocks = m_split;
    }

    // DeepSpeed: partition_balanced over the transformer blocks alone.
    void splitBalanced(int blocks)
    {
        if (m_u.pipelineUnits != PipelineUnits::Layers) {
            change(m_fw + " weighs the transformer blocks only (partition_method='type:transformer'); "
                          "exported with the embedding and the loss outside the pipeline units (was " +
                   std::string(toString(m_u.pipelineUnits)) + ")");
            m_u.pipelineUnits = PipelineUnits::Layers;
        }
        const std::vector<int> want = deepSpeedBalancedSplit(blocks, stages());
        if (m_split != want) {
            change(m_fw + " (Megatron-DeepSpeed's GPTModelPipe) splits the blocks by partition_balanced "
                          "over partition_method='type:transformer'; exported " + joinedValues(want) +
                   " blocks per stage (was " + joinedValues(m_split) + ")");
            m_split = want;
        }
    }

    // Megatron-Core counts the embedding (and the loss) as one layer each only in its even
    // split (account_for_*_in_pipeline_split; the first/last stage sizes are a different
    // mechanism that ignores them): every stage (chunk) the same number of units.
    void splitEvenUnits(const PipelineSpan &span)
    {
        const int units = pipelineUnitCount(span, m_u.pipelineUnits);
        std::vector<int> unitSplit = m_split;
        if (countsEmbedding(m_u.pipelineUnits) && span.lead > 0)
            ++unitSplit.front();
        if (countsLoss(m_u.pipelineUnits) && span.tail > 0)
            ++unitSplit.back();
        if (allEqual(unitSplit) && std::find(unitSplit.begin(), unitSplit.end(), 0) == unitSplit.end())
            return;
        const int pp0 = m_u.pp, v0 = m_u.virtualStages;
        while (m_u.virtualStages > 1 && units % stages() != 0)
            --m_u.virtualStages;
        if (m_u.virtualStages == 1 && m_u.schedule == Schedule::Interleaved)
            m_u.schedule = Schedule::OneFOneB;
        while (m_u.pp > 1 && units % stages() != 0)
            --m_u.pp;
        m_split = balancedStageBlocks(span, stages(), m_u.pipelineUnits);
        change(m_fw + " gives every stage the same number of pipeline units (" + toString(m_u.pipelineUnits) + ": " +
               std::to_string(units) + " units); exported " +
               (m_u.pp != pp0 || m_u.virtualStages != v0 ? depthChange(pp0, v0) + ", " : std::string()) +
               std::to_string(units / stages()) + " units per stage (was " + joinedValues(unitSplit) + ")");
    }

    // "pp P with V chunks (was pp P0 with V0 chunks)"
    std::string depthChange(int pp0, int v0) const
    {
        return "pp " + std::to_string(m_u.pp) +
               (m_u.schedule == Schedule::Interleaved ? " with " + std::to_string(m_u.virtualStages) + " chunks"
                                                      : std::string()) +
               " (was pp " + std::to_string(pp0) + (v0 > 1 ? " with " + std::to_string(v0) + " chunks" : std::string()) +
               ")";
    }

    // Every stage but the first and the last the same number of blocks.
    void splitEvenInterior(int blocks, bool anyEmpty)
    {
        const std::vector<int> interior(m_split.begin() + 1, m_split.end() - 1);
        if (allEqual(interior) && !anyEmpty)
            return;
        const int s = static_cast<int>(m_split.size());
        const int mid = blocks / s, rem = blocks % s;
        const std::vector<int> was = m_split;
        m_split.assign(static_cast<size_t>(s), mid);
        m_split.front() += (rem + 1) / 2;
        m_split.back() += rem / 2;
        change(m_fw + " gives every stage but the first and the last the same number of blocks; "
                      "exported " + joinedValues(m_split) + " blocks per stage (was " + joinedValues(was) + ")");
    }

    void splitNoEmptyStage(int blocks)
    {
        const std::vector<int> was = m_split;
        m_split = balancedSplit(blocks, static_cast<int>(m_split.size()));
        change(m_fw + " needs at least one block per stage; exported " + joinedValues(m_split) +
               " blocks per stage (was " + joinedValues(was) + ")");
    }

    // Every stage the same number of blocks: fewer chunks, then fewer stages, until they divide.
    void splitEven(int blocks)
    {
        const std::vector<int> was = m_split;
        if (blocks % stages() != 0) {
            const int pp0 = m_u.pp, v0 = m_u.virtualStages;
            while (m_u.virtualStages > 1 && blocks % stages() != 0)
                --m_u.virtualStages;
            if (m_u.virtualStages == 1)
                m_u.schedule = m_u.schedule == Schedule::Interleaved ? Schedule::OneFOneB : m_u.schedule;
            while (m_u.pp > 1 && blocks % stages() != 0)
                --m_u.pp;
            change(m_fw + " splits the blocks evenly and " + std::to_string(blocks) + " blocks do not divide into " +
                   std::to_string(pp0 * v0) + " stages; exported " + depthChange(pp0, v0));
        } else {
            change(m_fw + " splits the blocks evenly; exported " + std::to_string(blocks / stages()) +
                   " blocks per stage (was " + joinedValues(was) + ")");
        }
        m_split.assign(static_cast<size_t>(stages()), blocks / stages());
    }

    // Devices: the plan's own, in its coordinate order, when the shape kept its size.
    Result<Plan> placeDevices()
    {
        const RankSizes planSizes = rankSizesOf(m_plan);
        const bool sameGrid = m_uniformWidths && planSizes.tp == m_u.tp && planSizes.cp == m_u.cp &&
                              planSizes.dp == m_u.dp && planSizes.pp == m_u.pp;
        m_world = 1LL * m_u.tp * m_u.cp * m_u.dp * m_u.pp;
        if (m_world > m_topo.deviceCount())
            return Result<Plan>::failure("the nearest layout " + m_fw + " can run needs " + std::to_string(m_world) +
                                         " devices, the cluster has " + std::to_string(m_topo.deviceCount()));
        std::vector<int> list = sameGrid ? canonicalDevices(m_plan) : devicesPlanFirst(m_plan, m_topo);
        list.resize(static_cast<size_t>(m_world));
        m_u.order = "tp-cp-ep-dp-pp";
        m_u.rankDevices = list;
        auto built = buildUniformPlan(m_u, m_topo, m_model);
        if (!built)
            return Result<Plan>::failure("no plan " + m_fw + " can run keeps this job: " + built.error());
        if (m_out.changes.empty() && !(*built == m_plan))
            change(m_fw + " derives each stage's layers from its number of blocks; exported the stages " +
                   joinedValues(m_split) + " blocks long with the embedding first and the head last");
        return built;
    }

    // The launcher: G consecutive ranks per node, in one of the framework's rank orders;
    // else the same layout with the ranks laid node by node (`built` replaced).
    std::optional<std::string> placeRanks(Result<Plan> &built)
    {
        if (!m_rules.launcher) {
            m_out.ranks = RankMapping{};
            return std::nullopt;
        }
        std::string firstError;
        for (size_t i = 0; i < m_rules.orders.size(); ++i) {
            if (i > 0 && m_u.ep > 1)
                break;
            Result<RankMapping> mapping = mapRanks(*built, m_topo, m_rules.orders[i]);
            if (mapping) {
                m_out.orderIndex = i;
                m_out.ranks = std::move(mapping).value();
                return std::nullopt;
            }
            if (i == 0)
                firstError = mapping.error();
        }
        const std::vector<int> nodeList = devicesNodeByNode(*built, m_topo, static_cast<int>(m_world));
        if (nodeList.empty())
            return "no launch order of " + m_fw + " places this plan: " + firstError;
        m_u.order = m_rules.orders.front();
        m_u.rankDevices = nodeList;
        auto relaid = buildUniformPlan(m_u, m_topo, m_model);
        if (!relaid)
            return "no plan " + m_fw + " can run keeps this job: " + relaid.error();
        change(m_fw + " starts consecutive ranks (in its order " + m_rules.orders.front() + ") on one node, and " +
               firstError + "; exported the same layout with the ranks laid node by node over the plan's nodes");
        built = std::move(relaid);
        Result<RankMapping> mapping = mapRanks(*built, m_topo, m_rules.orders.front());
        if (!mapping)
            return mapping.error();
        m_out.orderIndex = 0;
        m_out.ranks = std::move(mapping).value();
        return std::nullopt;
    }

    // The precision: the plan's where the framework trains in it, else BF16 (issue 46).
    void keepPrecision()
    {
        m_out.plan.precision = m_plan.precision;
        if (!m_rules.runsPrecision(m_plan.precision)) {
            m_out.plan.precision = Precision{};
            change("precision " + precisionLabel(m_plan.precision) + " -> bf16: " + m_fw + " does not train in " +
                   precisionLabel(m_plan.precision));
        }
    }

    void noteDeviceTypes()
    {
        std::set<int> types;
        for (int d : canonicalDevices(m_out.plan))
            types.insert(m_topo.devices[static_cast<size_t>(d)].type);
        if (types.size() <= 1)
            return;
        std::string names;
        for (int t : types)
            names += (names.empty() ? "" : ", ") + m_topo.deviceTypes[static_cast<size_t>(t)].name;
        m_out.notes.push_back("the plan mixes device types (" + names + "); " + m_fw +
                              " runs the same program on every GPU, so each stage keeps the layers and widths above "
                              "whatever its devices");
    }
};

// The candidate widths: each stage's own and the widest of each, with fewer replicas where
// the cluster does not hold a width at the plan's dp; those that fit.
std::vector<WidthChoice> fittingWidths(const Plan &plan, const Topology &topo)
{
    std::set<WidthChoice> candidates;
    StageConfig widest;
    for (const StageConfig &c : stageConfigs(plan)) {
        candidates.insert({c.tp, c.cp, c.ep, plan.dp});
        widest.tp = std::max(widest.tp, c.tp);
        widest.cp = std::max(widest.cp, c.cp);
        widest.ep = std::max(widest.ep, c.ep);
    }
    candidates.insert({widest.tp, widest.cp, widest.ep, plan.dp});
    // A ZeRO stage the framework lacks becomes the next one up it offers (the pipeline rule
    // of DeepSpeed, ZeRO-2/3 only without pipelining, the highest below): RunnableFit picks
    // it (docs/interop.md, the ZeRO row of "Fallback rules").
    const int expertTp = plan.stages.front().config().expertTp();
    std::vector<WidthChoice> fitting;
    for (WidthChoice c : candidates) {
        while (c.dp >= 1 && (1LL * c.tp * c.cp * c.dp * plan.pipelineDepth() > topo.deviceCount() ||
                             plan.globalBatch % (1LL * plan.microBatch * c.dp) != 0 ||
                             !StageConfig::expertGridFits(c.tp, c.cp, c.dp, expertTp, c.ep)))
            --c.dp;
        if (c.dp >= 1)
            fitting.push_back(c);
    }
    return fitting;
}

} // namespace

Result<RunnablePlan> nearestRunnablePlan(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                         const FrameworkRules &rules, const CostOptions &cost)
{
    using R = Result<RunnablePlan>;
    if (plan.stages.empty())
        return R::failure("the plan has no stages");
    const std::vector<WidthChoice> fitting = fittingWidths(plan, topo);
    if (fitting.empty())
        return R::failure("no single width of the plan's stages fits the cluster");
    std::optional<RunnablePlan> best;
    bool bestFits = false;
    double bestTime = 0;
    std::string firstError;
    for (const WidthChoice &c : fitting) {
        auto r = RunnableFit(plan, topo, model, rules).run(c);
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
