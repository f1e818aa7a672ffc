#include "LayerKindSplit.h"

#include <algorithm>
#include <cmath>

namespace nest {

namespace {

using TimeTerm = double IterationSplit::*;
// The terms a layer kind has a part of; p2p and bubble belong to the stage.
constexpr TimeTerm kKindTimeTerms[] = {&IterationSplit::compute, &IterationSplit::recompute,  &IterationSplit::tp,
                                       &IterationSplit::ep,      &IterationSplit::cp,         &IterationSplit::gradientSync,
                                       &IterationSplit::zero,    &IterationSplit::optimizer};

struct MemoryTerm {
    double StageCost::*cost;
    double KindShare::*share;
};
constexpr MemoryTerm kKindMemoryTerms[] = {{&StageCost::weights, &KindShare::weights},
                                           {&StageCost::gradients, &KindShare::gradients},
                                           {&StageCost::optimizerState, &KindShare::optimizerState},
                                           {&StageCost::stash, &KindShare::stash}};

// A stage's cost as iterationSplit() counts it per iteration: the split of a report that
// holds only this stage, as a pipeline of depth 1 (nothing divided, its own bubble counted).
// Which terms scale with the number of micro-batches is iterationSplit()'s business.
IterationSplit stageTerms(const Plan &plan, const StageCost &cost, double bubble)
{
    Report one;
    StageReport stage;
    stage.cost = cost;
    stage.bubble = bubble;
    one.stages = {stage};
    return iterationSplit(plan, one);
}

// `whole` shared among `parts` in proportion to `weights` (finite, non-negative); false when
// the weights add up to nothing (the caller keeps `whole` apart).
bool share(double whole, const std::vector<double> &weights, std::vector<double> &parts)
{
    double sum = 0;
    for (double w : weights)
        sum += std::isfinite(w) ? std::max(w, 0.0) : 0.0;
    parts.assign(weights.size(), 0.0);
    if (!(sum > 0))
        return false;
    for (size_t k = 0; k < weights.size(); ++k)
        parts[k] = std::isfinite(weights[k]) ? whole * std::max(weights[k], 0.0) / sum : 0.0;
    return true;
}

// The stage's layers folded by kind: each kind's own layer sums, in layer order.
struct KindSums {
    std::vector<std::string> kinds;
    std::vector<StageLayerSums> sums;
};
KindSums kindSums(const StageContext &ctx, const StageGeometry &g)
{
    KindSums out;
    const StagePlan &st = *ctx.stage;
    const ModelProfile &model = *ctx.model;
    StageLayerFold fold(ctx, g.rates, rangeHoldsEmbedding(model, st.firstLayer, st.endLayer));
    for (int i = st.firstLayer; i < st.endLayer; ++i) {
        const std::string kind = layerLabel(model.layers[static_cast<size_t>(i)]);
        const auto it = std::find(out.kinds.begin(), out.kinds.end(), kind);
        const size_t k = static_cast<size_t>(it - out.kinds.begin());
        if (it == out.kinds.end()) {
            out.kinds.push_back(kind);
            out.sums.emplace_back();
        }
        fold.add(out.sums[k], i);
    }
    return out;
}

// One stage's terms (as the report gives them) shared among its kinds in proportion to what
// each kind's layers alone cost on the stage.
StageKindSplit splitStage(const Plan &plan, const StageContext &ctx, const StageReport &report)
{
    StageKindSplit out;
    out.stage = report.index;
    const StageGeometry g = stageGeometry(*ctx.topology, *ctx.stage, ctx.dp, ctx.options);
    const KindSums byKind = g.devices > 0 ? kindSums(ctx, g) : KindSums{};
    std::vector<StageCost> alone;
    std::vector<IterationSplit> aloneTerms;
    for (const StageLayerSums &s : byKind.sums) {
        StageCost c = stageCostBase(ctx, g, s);
        finishStageCost(c, ctx);
        alone.push_back(c);
        aloneTerms.push_back(stageTerms(plan, c, 0.0));
    }
    for (const std::string &kind : byKind.kinds)
        out.kinds.push_back(KindShare{kind, {}, 0, 0, 0, 0});

    const IterationSplit stage = stageTerms(plan, report.cost, report.bubble);
    out.rest.p2p = stage.p2p;
    out.rest.bubble = stage.bubble;
    std::vector<double> weights(alone.size()), parts;
    for (TimeTerm term : kKindTimeTerms) {
        for (size_t k = 0; k < alone.size(); ++k)
            weights[k] = aloneTerms[k].*term;
        if (!share(stage.*term, weights, parts)) {
            out.rest.*term += stage.*term;
            continue;
        }
        for (size_t k = 0; k < parts.size(); ++k)
            out.kinds[k].time.*term = parts[k];
    }
    out.activations = report.cost.activations;
    out.overhead = report.cost.overhead;
    out.restBytes = out.activations + out.overhead;
    for (const MemoryTerm &term : kKindMemoryTerms) {
        for (size_t k = 0; k < alone.size(); ++k)
            weights[k] = alone[k].*term.cost;
        if (!share(report.cost.*term.cost, weights, parts)) {
            out.restBytes += report.cost.*term.cost;
            continue;
        }
        for (size_t k = 0; k < parts.size(); ++k)
            out.kinds[k].*term.share = parts[k];
    }
    return out;
}

// The whole iteration's split shared among the kinds as their stages' parts are.
void shareIteration(const Plan &plan, const Report &report, PlanKindSplit &out)
{
    const IterationSplit whole = iterationSplit(plan, report);
    for (const std::string &kind : out.kinds)
        out.iteration.push_back(KindShare{kind, {}, 0, 0, 0, 0});
    out.iterationRest.p2p = whole.p2p;
    out.iterationRest.bubble = whole.bubble;
    std::vector<double> weights(out.kinds.size() + 1), parts;
    for (TimeTerm term : kKindTimeTerms) {
        std::fill(weights.begin(), weights.end(), 0.0);
        for (const StageKindSplit &s : out.stages) {
            for (const KindShare &k : s.kinds) {
                const auto it = std::find(out.kinds.begin(), out.kinds.end(), k.kind);
                weights[static_cast<size_t>(it - out.kinds.begin())] += k.time.*term;
            }
            weights.back() += s.rest.*term;
        }
        if (!share(whole.*term, weights, parts)) {
            out.iterationRest.*term += whole.*term;
            continue;
        }
        for (size_t k = 0; k < out.kinds.size(); ++k)
            out.iteration[k].time.*term = parts[k];
        out.iterationRest.*term += parts.back();
    }
}

} // namespace

PlanKindSplit layerKindSplit(const Plan &plan, const Topology &topo, const ModelProfile &model,
                             const CostOptions &options, const Report &report)
{
    PlanKindSplit out;
    if (report.stages.empty() || report.stages.size() != plan.stages.size())
        return out;
    for (size_t k = 0; k < plan.stages.size(); ++k) {
        const StagePlan &st = plan.stages[k];
        if (report.stages[k].firstLayer != st.firstLayer || report.stages[k].endLayer != st.endLayer ||
            st.firstLayer < 0 || st.endLayer > model.layerCount() || st.firstLayer > st.endLayer)
            return out;
    }
    const std::vector<StageContext> contexts = stageContexts(plan, topo, model, options);
    for (size_t k = 0; k < contexts.size(); ++k) {
        StageKindSplit s = splitStage(plan, contexts[k], report.stages[k]);
        for (const KindShare &kind : s.kinds)
            if (std::find(out.kinds.begin(), out.kinds.end(), kind.kind) == out.kinds.end())
                out.kinds.push_back(kind.kind);
        out.stages.push_back(std::move(s));
    }
    shareIteration(plan, report, out);
    return out;
}

} // namespace nest
