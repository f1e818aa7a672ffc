#include "FrameworkSearch.h"

#include "FrameworkModels.h"
#include "LaunchContext.h"
#include "RunnablePlan.h"
#include "StageConfig.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <set>

namespace nest {

namespace {

bool hasMoe(const ModelProfile &m)
{
    return m.numExperts > 1;
}

// Blocks in proportion to each stage's speed (the sum of its first replica's devices' peak
// FLOP/s), rounded by largest remainder; every stage at least one block where they suffice.
std::vector<int> speedSplit(const std::vector<double> &speed, int blocks)
{
    const double total = std::accumulate(speed.begin(), speed.end(), 0.0);
    const size_t n = speed.size();
    std::vector<int> out(n, 0);
    if (total <= 0 || n == 0)
        return out;
    std::vector<std::pair<double, size_t>> rest;
    int given = 0;
    for (size_t s = 0; s < n; ++s) {
        const double share = blocks * speed[s] / total;
        out[s] = static_cast<int>(std::floor(share));
        given += out[s];
        rest.push_back({share - out[s], s});
    }
    std::sort(rest.begin(), rest.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    for (size_t k = 0; given < blocks; ++k, ++given)
        ++out[rest[k % n].second];
    if (blocks >= static_cast<int>(n))
        for (size_t s = 0; s < n; ++s)
            while (out[s] == 0) {
                const auto big = std::max_element(out.begin(), out.end());
                --*big;
                ++out[s];
            }
    return out;
}

bool splitAllowed(const FrameworkRules &rules, const UniformLayout &u, const std::vector<int> &split)
{
    for (int b : split)
        if (b < 0)
            return false;
    return true;
    (void)rules;
    (void)u;
}

} // namespace

std::optional<ExportFormat> targetFromString(const std::string &name)
{
    const auto f = exportFormatFromString(name);
    if (!f || *f == ExportFormat::Nest)
        return std::nullopt;
    return f;
}

std::string targetNameList()
{
    return "megatron, nemo, deepspeed, torchtitan";
}

std::vector<std::vector<int>> frameworkSplits(const FrameworkRules &rules, const UniformLayout &u,
                                              const ModelProfile &model, const Topology &topo)
{
    using Split = FrameworkRules::Split;
    const PipelineSpan span = pipelineSpan(model);
    const int blocks = span.blocks;
    const bool interleaved = u.schedule == Schedule::Interleaved && u.virtualStages > 1;
    const int stages = u.pp * (interleaved ? u.virtualStages : 1);
    std::vector<std::vector<int>> out;
    if (stages < 1 || pipelineUnitCount(span, u.pipelineUnits) < stages)
        return out;
    Split rule = rules.split;
    if (rule == Split::Layout)
        rule = !interleaved && u.pipelineUnits == PipelineUnits::Layers ? Split::Any : Split::EvenInterior;
    if (rule != Split::Any && rule != Split::Balanced && interleaved)
        rule = Split::Even;
    if (rule == Split::Balanced) {
        if (u.pipelineUnits == PipelineUnits::Layers)
            out.push_back(deepSpeedBalancedSplit(blocks, stages));
        return out;
    }
    if (rule == Split::Even) {
        if (u.pipelineUnits != PipelineUnits::Layers) {
            const int units = pipelineUnitCount(span, u.pipelineUnits);
            if (units % stages == 0)
                out.push_back(balancedStageBlocks(span, stages, u.pipelineUnits));
        } else if (blocks % stages == 0) {
            out.push_back(std::vector<int>(static_cast<size_t>(stages), blocks / stages));
        }
        return out;
    }
    const std::vector<int> balanced = balancedStageBlocks(span, stages, u.pipelineUnits);
    if (rule == Split::EvenInterior) {
        // Interior stages equal; the first and last take what is left (>= 1 each).
        if (u.pipelineUnits != PipelineUnits::Layers) {
            const int units = pipelineUnitCount(span, u.pipelineUnits);
            if (units % stages == 0)
                out.push_back(balanced);
            return out;
        }
        if (stages <= 2) {
            for (int first = 1; first < blocks && stages == 2; ++first)
                out.push_back({first, blocks - first});
            if (stages == 1)
                out.push_back({blocks});
            return out;
        }
        for (int mid = 1; mid * (stages - 2) <= blocks - 2; ++mid) {
            const int ends = blocks - mid * (stages - 2);
            for (int first = 1; first < ends; ++first) {
                std::vector<int> s(static_cast<size_t>(stages), mid);
                s.front() = first;
                s.back() = ends - first;
                out.push_back(s);
            }
        }
        return out;
    }
    // Any split: the balanced one and the one in proportion to the stages' devices' speed.
    out.push_back(balanced);
    if (!interleaved && u.pipelineUnits == PipelineUnits::Layers) {
        std::vector<double> speed(static_cast<size_t>(stages), 0.0);
        const int perStage = u.tp * u.cp * u.dp;
        const int world = perStage * u.pp;
        for (int r = 0; r < world && r < topo.deviceCount(); ++r) {
            const int d = u.rankDevices.empty() ? r : u.rankDevices[static_cast<size_t>(r)];
            speed[static_cast<size_t>(r / perStage)] += topo.spec(d).peakFlops;
        }
        const std::vector<int> fast = speedSplit(speed, blocks);
        if (fast != balanced && std::accumulate(fast.begin(), fast.end(), 0) == blocks)
            out.push_back(fast);
    }
    for (auto it = out.begin(); it != out.end();)
        it = splitAllowed(rules, u, *it) ? it + 1 : out.erase(it);
    return out;
}

namespace {

// The per-layout values searchForFramework() tries, as the framework and the options allow.
struct LayoutCandidates {
    std::vector<int> tps, cps{1}, eps{1}, zeros;
    std::vector<Recompute> recomputes{Recompute::None};
    std::vector<std::pair<Schedule, int>> schedules;  // with the chunks per stage
};

LayoutCandidates layoutCandidates(const FrameworkRules &rules, const ModelProfile &model, const SearchOptions &options,
                                  int seqLength)
{
    LayoutCandidates c;
    for (int t : options.tpCandidates)
        if (StageConfig::tpDividesHeads(t, model.heads))
            c.tps.push_back(t);
    if (rules.contextParallel)
        for (int cp : options.cpCandidates)
            if (cp > 1 && StageConfig::cpDividesSequence(cp, seqLength) && seqLength / cp >= options.cpMinTokensPerRank)
                c.cps.push_back(cp);
    if (rules.expertParallel && hasMoe(model))
        for (int e : options.epCandidates)
            if (e > 1 && StageConfig::epDividesExperts(e, model.numExperts))
                c.eps.push_back(e);
    for (int z : rules.zeroStages)
        if (z == 0 || options.allowZero)
            c.zeros.push_back(z);
    if (options.allowRecompute)
        for (Recompute r : options.recomputeModes)
            if (r != Recompute::None)
                c.recomputes.push_back(r);
    for (Schedule s : options.schedules) {
        if (s == Schedule::GPipe && !rules.gpipe)
            continue;
        if (s == Schedule::Interleaved) {
            if (rules.interleaved)
                for (int v : options.virtualStages)
                    if (v > 1)
                        c.schedules.push_back({s, v});
            continue;
        }
        c.schedules.push_back({s, 1});
    }
    return c;
}

// The search of one precision: every uniform layout the framework runs, priced by the
// evaluator, the best kept; then its split refined block by block.
class LayoutSearch {
public:
    LayoutSearch(const Topology &topo, const ModelProfile &model, const FrameworkRules &rules,
                 const SearchOptions &options, const CancelToken &cancel)
        : m_topo(topo), m_model(model), m_rules(rules), m_options(options), m_cancel(cancel),
          m_span(pipelineSpan(model))
    {
        m_cost = options.cost;
        if (options.memoryHeadroom > 0)
            m_cost.memoryHeadroom = options.memoryHeadroom;
        m_globalBatch = options.globalBatch > 0 ? options.globalBatch : model.globalBatch;
        m_seqLength = options.seqLength > 0 ? options.seqLength : model.seqLength;
        // A lower bound on any layout's time needs the fastest device's peak: the linear
        // layers may run faster in a low precision.
        for (int d = 0; d < topo.deviceCount(); ++d)
            m_maxPeak = std::max({m_maxPeak, topo.spec(d).peakFlops, topo.spec(d).peakFor(m_cost.precision.format)});
    }

    TargetResult run(bool onePipelineStage)
    {
        const int blocks = m_span.blocks;
        const int maxStages =
            onePipelineStage ? 1 : std::min(blocks, m_options.maxStages > 0 ? m_options.maxStages : blocks);
        m_candidates = layoutCandidates(m_rules, m_model, m_options, m_seqLength);
        const int devices = m_topo.deviceCount();
        for (int tp : m_candidates.tps)
            for (int cp : m_candidates.cps)
                for (int ep : m_candidates.eps)
                    for (int pp = 1; pp <= maxStages; ++pp)
                        // Most devices first: the bound then rules out most of the smaller layouts.
                        for (int dp = static_cast<int>(devices / (1LL * tp * cp * pp)); dp >= 1; --dp) {
                            if (m_cancel.cancelled())
                                return m_best;
                            tryGrid(tp, cp, ep, pp, dp);
                        }
        improveSplit();
        if (!m_best.found)
            m_best.message =
                "no layout " + m_rules.title + " runs fits the cluster's memory within the search options";
        return m_best;
    }

private:
    const Topology &m_topo;
    const ModelProfile &m_model;
    const FrameworkRules &m_rules;
    const SearchOptions &m_options;
    const CancelToken &m_cancel;
    const PipelineSpan m_span;
    CostOptions m_cost;
    int m_globalBatch = 0, m_seqLength = 0;
    double m_maxPeak = 0;
    double m_modelFlops = 0;  // from the first report
    LayoutCandidates m_candidates;
    TargetResult m_best;

    // A lower bound on any layout's time on `world` devices: the model's FLOPs per iteration
    // (without recomputation) shared evenly at the fastest device's peak. No device computes
    // faster than its peak, and the busiest device does at least the mean.
    double bound(long long world) const
    {
        return m_modelFlops > 0 && m_maxPeak > 0 ? m_modelFlops / (static_cast<double>(world) * m_maxPeak) : 0.0;
    }

    // The layout's iteration time (+inf: it does not build or fit), kept when the best.
    double consider(const UniformLayout &u)
    {
        ++m_best.evaluated;
        auto plan = buildUniformPlan(u, m_topo, m_model);
        if (!plan)
            return INFINITY;
        plan->precision = m_cost.precision;
        const Report rep = evaluate(*plan, m_topo, m_model, m_cost);
        if (m_modelFlops <= 0 && rep.modelFlopsPerIteration > 0)
            m_modelFlops = rep.modelFlopsPerIteration;
        if (!rep.feasible)
            return INFINITY;
        if (!m_best.found || rep.iterationTime < m_best.report.iterationTime) {
            m_best.found = true;
            m_best.plan = std::move(plan).value();
            m_best.report = rep;
            m_best.layout = u;
        }
        return rep.iterationTime;
    }

    // One device grid (tp, cp, ep, pp, dp): every micro-batch, schedule and ZeRO stage on it.
    void tryGrid(int tp, int cp, int ep, int pp, int dp)
    {
        if (m_best.found && bound(1LL * tp * cp * pp * dp) >= m_best.report.iterationTime)
            return;
        const std::vector<int> &dps = m_options.dpCandidates;
        if (!dps.empty() && std::find(dps.begin(), dps.end(), dp) == dps.end())
            return;
        if (m_rules.expertFolding ? !StageConfig::expertGridFits(tp, cp, dp, tp, ep) : dp % ep != 0)
            return;
        for (int mb : m_options.microBatches) {
            if (mb < 1 || m_globalBatch % (mb * dp) != 0)
                continue;
            for (const auto &[schedule, v] : m_candidates.schedules) {
                if (pp == 1 && schedule != Schedule::OneFOneB)
                    continue;
                const int micro = m_globalBatch / (mb * dp);
                if (schedule == Schedule::Interleaved && micro % pp != 0)
                    continue;
                UniformLayout u;
                u.tp = tp;
                u.cp = cp;
                u.ep = ep;
                u.pp = pp;
                u.dp = dp;
                u.microBatch = mb;
                u.globalBatch = m_globalBatch;
                u.seqLength = m_seqLength;
                u.schedule = schedule;
                u.virtualStages = v;
                u.pipelineUnits =
                    m_rules.split == FrameworkRules::Split::Balanced ? PipelineUnits::Layers : m_options.pipelineUnits;
                u.order = m_rules.orders.front();
                tryMemorySettings(u);
            }
        }
    }

    // Every ZeRO stage and sequence parallelism the framework allows on layout `u`, each
    // split, with the least recomputation that fits (more only costs time).
    void tryMemorySettings(const UniformLayout &grid)
    {
        const int tp = grid.tp, cp = grid.cp, dp = grid.dp, pp = grid.pp;
        for (int zero : m_candidates.zeros) {
            if (zero > 1 && !m_rules.zeroAbove1WithPipeline && pp > 1)
                continue;
            if (zero > 0 && !StageConfig::zeroShards(dp, cp))
                continue;
            if (m_rules.mixedPrecisionNeedsSharding && (tp > 1 || pp > 1) && cp == 1 && !(zero >= 2 && dp > 1))
                continue;
            for (bool sp : {false, true}) {
                if (sp && (tp == 1 || !m_options.allowSp))
                    continue;
                if (!sp && tp > 1 && m_rules.sequenceParallelWithTp)
                    continue;
                UniformLayout u = grid;
                u.sp = sp;
                u.zero = zero;
                for (const std::vector<int> &split : frameworkSplits(m_rules, u, m_model, m_topo)) {
                    u.stageBlocks = split;
                    for (Recompute r : m_candidates.recomputes) {
                        u.recompute = r;
                        if (std::isfinite(consider(u)))
                            break;
                    }
                }
            }
        }
    }

    // Splits the framework takes as listed: move one block at a time between neighbouring
    // stages of the best layout while the iteration time falls.
    void improveSplit()
    {
        using Split = FrameworkRules::Split;
        const Split rule = m_rules.split == Split::Layout ? Split::Any : m_rules.split;
        if (!m_best.found || rule != Split::Any || m_best.layout.schedule == Schedule::Interleaved ||
            m_best.layout.pipelineUnits != PipelineUnits::Layers || m_best.layout.pp <= 1)
            return;
        bool improved = true;
        while (improved && !m_cancel.cancelled()) {
            improved = false;
            const UniformLayout base = m_best.layout;
            std::vector<int> split =
                base.stageBlocks.empty() ? balancedStageBlocks(m_span, base.pp, base.pipelineUnits) : base.stageBlocks;
            const double before = m_best.report.iterationTime;
            for (size_t s = 0; s + 1 < split.size() && !improved; ++s)
                for (int dir : {+1, -1}) {
                    std::vector<int> moved = split;
                    moved[s] += dir;
                    moved[s + 1] -= dir;
                    if (moved[s] < 1 || moved[s + 1] < 1)
                        continue;
                    UniformLayout u = base;
                    u.stageBlocks = moved;
                    consider(u);
                    if (m_best.report.iterationTime < before) {
                        improved = true;
                        break;
                    }
                }
        }
    }
};

// The precisions searched (issue 46): each one this framework trains in, the best kept.
TargetResult searchEachPrecision(const Topology &topo, const ModelProfile &model, ExportFormat format,
                                 const SearchOptions &options, const std::optional<ModelConfig> &config,
                                 const CancelToken &cancel, const FrameworkRules &rules)
{
    TargetResult best;
    std::string skipped;
    for (const Precision &p : options.precisions) {
        if (!rules.runsPrecision(p)) {
            skipped += (skipped.empty() ? "" : ", ") + precisionLabel(p);
            continue;
        }
        SearchOptions one = options;
        one.precisions.clear();
        one.cost.precision = p;
        TargetResult r = searchForFramework(topo, model, format, one, config, cancel);
        const long long evaluated = best.evaluated + r.evaluated;
        if (r.found && (!best.found || r.report.iterationTime < best.report.iterationTime))
            best = std::move(r);
        else if (!best.found && best.message.empty())
            best.message = r.message;
        best.evaluated = evaluated;
    }
    if (!best.found && best.message.empty())
        best.message = rules.title + " trains in none of the precisions searched (" + skipped + ")";
    return best;
}

} // namespace

TargetResult searchForFramework(const Topology &topo, const ModelProfile &model, ExportFormat format,
                                const SearchOptions &options, const std::optional<ModelConfig> &config,
                                const CancelToken &cancel)
{
    const FrameworkRules rules = frameworkRules(format);
    if (!options.precisions.empty())
        return searchEachPrecision(topo, model, format, options, config, cancel, rules);
    // The model as the framework would build it (FrameworkModels.h).
    ExportRequest shapeOf;
    shapeOf.model = model;
    shapeOf.config = config;
    shapeOf.plan.seqLength = options.seqLength > 0 ? options.seqLength : model.seqLength;
    if (shapeOf.config)
        shapeOf.config->seqLength = shapeOf.plan.seqLength;
    const ModelShape shape = modelShape(shapeOf);
    if (const std::string why = frameworkModelProblem(format, shape, 1); !why.empty()) {
        TargetResult refused;
        refused.message = rules.title + " cannot train this model: " + why;
        return refused;
    }
    // BERT under Megatron-DeepSpeed runs without pipelining (FrameworkModels.h).
    const bool onePipelineStage = !frameworkModelProblem(format, shape, 2).empty();
    return LayoutSearch(topo, model, rules, options, cancel).run(onePipelineStage);
}

} // namespace nest
