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

TargetResult searchForFramework(const Topology &topo, const ModelProfile &model, ExportFormat format,
                                const SearchOptions &options, const std::optional<ModelConfig> &config,
                                const CancelToken &cancel)
{
    using Split = FrameworkRules::Split;
    const FrameworkRules rules = frameworkRules(format);
    // The precisions searched (issue 46): each one this framework trains in, the best kept.
    if (!options.precisions.empty()) {
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
    TargetResult best;
    // The model as the framework would build it (FrameworkModels.h).
    ExportRequest shapeOf;
    shapeOf.model = model;
    shapeOf.config = config;
    shapeOf.plan.seqLength = options.seqLength > 0 ? options.seqLength : model.seqLength;
    if (shapeOf.config)
        shapeOf.config->seqLength = shapeOf.plan.seqLength;
    const ModelShape shape = modelShape(shapeOf);
    if (const std::string why = frameworkModelProblem(format, shape, 1); !why.empty()) {
        best.message = rules.title + " cannot train this model: " + why;
        return best;
    }
    // BERT under Megatron-DeepSpeed runs without pipelining (FrameworkModels.h).
    const bool onePipelineStage = !frameworkModelProblem(format, shape, 2).empty();
    CostOptions cost = options.cost;
    if (options.memoryHeadroom > 0)
        cost.memoryHeadroom = options.memoryHeadroom;
    const PipelineSpan span = pipelineSpan(model);
    const int blocks = span.blocks;
    const int devices = topo.deviceCount();
    const int globalBatch = options.globalBatch > 0 ? options.globalBatch : model.globalBatch;
    const int seqLength = options.seqLength > 0 ? options.seqLength : model.seqLength;
    const int maxStages =
        onePipelineStage ? 1 : std::min(blocks, options.maxStages > 0 ? options.maxStages : blocks);

    std::vector<int> tps, cps{1}, eps{1};
    for (int t : options.tpCandidates)
        if (StageConfig::tpDividesHeads(t, model.heads))
            tps.push_back(t);
    if (rules.contextParallel)
        for (int c : options.cpCandidates)
            if (c > 1 && StageConfig::cpDividesSequence(c, seqLength) && seqLength / c >= options.cpMinTokensPerRank)
                cps.push_back(c);
    if (rules.expertParallel && hasMoe(model))
        for (int e : options.epCandidates)
            if (e > 1 && StageConfig::epDividesExperts(e, model.numExperts))
                eps.push_back(e);
    std::vector<int> zeros;
    for (int z : rules.zeroStages)
        if (z == 0 || options.allowZero)
            zeros.push_back(z);
    std::vector<Recompute> recomputes{Recompute::None};
    if (options.allowRecompute)
        for (Recompute r : options.recomputeModes)
            if (r != Recompute::None)
                recomputes.push_back(r);
    std::vector<std::pair<Schedule, int>> schedules;
    for (Schedule s : options.schedules) {
        if (s == Schedule::GPipe && !rules.gpipe)
            continue;
        if (s == Schedule::Interleaved) {
            if (rules.interleaved)
                for (int v : options.virtualStages)
                    if (v > 1)
                        schedules.push_back({s, v});
            continue;
        }
        schedules.push_back({s, 1});
    }

    // A lower bound on any layout's time on `world` devices: the model's FLOPs per iteration
    // (without recomputation) shared evenly at the fastest device's peak. No device computes
    // faster than its peak, and the busiest device does at least the mean.
    double maxPeak = 0;
    for (int d = 0; d < devices; ++d)  // the linear layers may run faster in a low precision
        maxPeak = std::max({maxPeak, topo.spec(d).peakFlops, topo.spec(d).peakFor(cost.precision.format)});
    double modelFlops = 0;  // from the first report
    auto bound = [&](long long world) {
        return modelFlops > 0 && maxPeak > 0 ? modelFlops / (static_cast<double>(world) * maxPeak) : 0.0;
    };
    auto consider = [&](const UniformLayout &u) -> double {
        ++best.evaluated;
        auto plan = buildUniformPlan(u, topo, model);
        if (!plan)
            return INFINITY;
        plan->precision = cost.precision;
        const Report rep = evaluate(*plan, topo, model, cost);
        if (modelFlops <= 0 && rep.modelFlopsPerIteration > 0)
            modelFlops = rep.modelFlopsPerIteration;
        if (!rep.feasible)
            return INFINITY;
        if (!best.found || rep.iterationTime < best.report.iterationTime) {
            best.found = true;
            best.plan = std::move(plan).value();
            best.report = rep;
            best.layout = u;
        }
        return rep.iterationTime;
    };

    for (int tp : tps)
        for (int cp : cps)
            for (int ep : eps)
                for (int pp = 1; pp <= maxStages; ++pp)
                    // Most devices first: the bound then rules out most of the smaller layouts.
                    for (int dp = static_cast<int>(devices / (1LL * tp * cp * pp)); dp >= 1; --dp) {
                        if (cancel.cancelled())
                            return best;
                        if (best.found && bound(1LL * tp * cp * pp * dp) >= best.report.iterationTime)
                            continue;
                        if (!options.dpCandidates.empty() &&
                            std::find(options.dpCandidates.begin(), options.dpCandidates.end(), dp) ==
                                options.dpCandidates.end())
                            continue;
                        if (rules.expertFolding ? !StageConfig::expertGridFits(tp, cp, dp, tp, ep) : dp % ep != 0)
                            continue;
                        for (int mb : options.microBatches) {
                            if (mb < 1 || globalBatch % (mb * dp) != 0)
                                continue;
                            for (const auto &[schedule, v] : schedules) {
                                if (pp == 1 && schedule != Schedule::OneFOneB)
                                    continue;
                                const int micro = globalBatch / (mb * dp);
                                if (schedule == Schedule::Interleaved && micro % pp != 0)
                                    continue;
                                for (int zero : zeros) {
                                    if (zero > 1 && !rules.zeroAbove1WithPipeline && pp > 1)
                                        continue;
                                    if (zero > 0 && !StageConfig::zeroShards(dp, cp))
                                        continue;
                                    if (rules.mixedPrecisionNeedsSharding && (tp > 1 || pp > 1) && cp == 1 &&
                                        !(zero >= 2 && dp > 1))
                                        continue;
                                    for (bool sp : {false, true}) {
                                        if (sp && (tp == 1 || !options.allowSp))
                                            continue;
                                        if (!sp && tp > 1 && rules.sequenceParallelWithTp)
                                            continue;
                                        UniformLayout u;
                                        u.tp = tp;
                                        u.cp = cp;
                                        u.ep = ep;
                                        u.sp = sp;
                                        u.zero = zero;
                                        u.pp = pp;
                                        u.dp = dp;
                                        u.microBatch = mb;
                                        u.globalBatch = globalBatch;
                                        u.seqLength = seqLength;
                                        u.schedule = schedule;
                                        u.virtualStages = v;
                                        u.pipelineUnits = rules.split == Split::Balanced ? PipelineUnits::Layers
                                                                                         : options.pipelineUnits;
                                        u.order = rules.orders.front();
                                        for (const std::vector<int> &split : frameworkSplits(rules, u, model, topo)) {
                                            u.stageBlocks = split;
                                            // The least recomputation that fits: more only costs time.
                                            for (Recompute r : recomputes) {
                                                u.recompute = r;
                                                const double t = consider(u);
                                                if (std::isfinite(t))
                                                    break;
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
    // Splits the framework takes as listed: move one block at a time between neighbouring
    // stages of the best layout while the iteration time falls.
    const Split rule = rules.split == Split::Layout ? Split::Any : rules.split;
    if (best.found && rule == Split::Any && best.layout.schedule != Schedule::Interleaved &&
        best.layout.pipelineUnits == PipelineUnits::Layers && best.layout.pp > 1) {
        bool improved = true;
        while (improved && !cancel.cancelled()) {
            improved = false;
            const UniformLayout base = best.layout;
            std::vector<int> split = base.stageBlocks.empty() ? balancedStageBlocks(span, base.pp, base.pipelineUnits)
                                                              : base.stageBlocks;
            const double before = best.report.iterationTime;
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
                    if (best.report.iterationTime < before) {
                        improved = true;
                        break;
                    }
                }
        }
    }
    if (!best.found)
        best.message = "no layout " + rules.title + " runs fits the cluster's memory within the search options";
    return best;
}

} // namespace nest
