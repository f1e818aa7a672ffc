#include "PlanningSession.h"

#include "Evaluator.h"
#include "LayerSumsStore.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace nest {

namespace {

bool hasStageOption(const std::vector<StageConfig> &options, const StageConfig &c)
{
    return std::find(options.begin(), options.end(), c) != options.end();
}

// The plan of `space` at `cfg` with the previous plan's stages, or nullopt when they are not
// a plan of that point.
std::optional<Plan> rebuild(const PlanSpace &space, const OuterConfig &cfg, const Plan &previous)
{
    if (previous.schedule == Schedule::Interleaved) {
        const int pp = previous.pipelineDepth();
        if (previous.stages.empty())
            return std::nullopt;
        const StageConfig option = previous.stages.front().config();
        for (const InterleavedChoice &c : space.interleavedChoices(cfg))
            if (c.pp == pp && c.virtualStages == previous.virtualStages && c.option == option)
                return space.makeInterleavedPlan(cfg, c);
        return std::nullopt;
    }
    if (static_cast<int>(previous.stages.size()) > space.maxStages())
        return std::nullopt;
    std::vector<StageChoice> stages;
    int used = 0, next = 0;
    for (const StagePlan &s : previous.stages) {
        if (s.firstLayer != next || s.endLayer <= s.firstLayer)
            return std::nullopt;
        if (!hasStageOption(space.stageOptions(cfg, s.width(), s.firstLayer, s.endLayer), s.config()))
            return std::nullopt;
        used += s.width();
        next = s.endLayer;
        stages.push_back({s.firstLayer, s.endLayer, s.config()});
    }
    if (next != space.layerCount() || used > cfg.positions)
        return std::nullopt;
    return space.makePlan(cfg, stages);
}

} // namespace

std::optional<double> valueInSpace(const Plan &previous, const Topology &topo, const ModelProfile &model,
                                   const SearchOptions &options)
{
    const PlanSpace space(topo, model, options);
    if (!space.problem().empty())
        return std::nullopt;
    std::optional<double> best;
    for (const OuterConfig &cfg : space.configs()) {
        if (cfg.microBatch != previous.microBatch || cfg.schedule != previous.schedule || cfg.dp != previous.dp)
            continue;
        const std::optional<Plan> plan = rebuild(space, cfg, previous);
        if (!plan)
            continue;
        const Report r = evaluate(*plan, topo, model, space.costOptions());
        if (r.feasible && (!best || r.iterationTime < *best))
            best = r.iterationTime;
    }
    return best;
}

PlanningSession::PlanningSession() = default;
PlanningSession::~PlanningSession() = default;

void PlanningSession::reset()
{
    m_inputs.reset();
    m_result = PlanResult();
    m_reuse = Reuse();
    m_sums.reset();
}

PlanResult PlanningSession::replan(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                                   const ProgressFn &progress, const CancelToken &cancel)
{
    const auto start = std::chrono::steady_clock::now();
    m_reuse = Reuse();
    // The search replaces a store that does not serve its inputs (NestPlanner::planWithBound).
    const LayerSumsStore *const keptSums = m_sums.get();
    const long long keptSearches = m_sums ? m_sums->searches() : 0;
    auto finish = [&](PlanResult r) {
        m_reuse.keptLayerSums = keptSums && m_sums.get() == keptSums && m_sums->searches() > keptSearches;
        if (m_sums && m_sums->bytes() > kKeptSumsBytes)
            m_sums.reset();
        m_reuse.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!r.cancelled) {
            m_inputs = Inputs{topo, model, options};
            m_result = r;
        }
        return r;
    };
    if (m_inputs && m_inputs->topo == topo && m_inputs->model == model && m_inputs->options == options) {
        m_reuse.sameInputs = true;
        return finish(m_result);
    }
    const NestPlanner nest;
    if (m_inputs && m_result.found && options.topK <= 1) {
        if (const std::optional<double> bound = valueInSpace(m_result.plan, topo, model, options)) {
            PlanResult r = nest.planWithBound(topo, model, options, *bound, progress, cancel, &m_sums);
            if (r.found || r.cancelled) {
                m_reuse.boundedByPrevious = true;
                m_reuse.bound = *bound;
                return finish(r);
            }
        }
    }
    return finish(nest.planWithBound(topo, model, options, std::numeric_limits<double>::infinity(), progress,
                                     cancel, &m_sums));
}

} // namespace nest
