#include "InterleavedSearch.h"

#include "Evaluator.h"
#include "Pipeline.h"

namespace nest {

// After setupConfig(cfg).
void InterleavedSearch::run(const OuterConfig &cfg)
{
    const std::vector<InterleavedChoice> choices = m_s.space.interleavedChoices(cfg);
    // The choices come by (pp, v), then width and option: the chunk cuts depend on (pp, v)
    // only, so they are made once per pair and the option set into them.
    std::vector<StageChoice> chunks;
    int chunksPp = 0, chunksV = 0;
    for (size_t ci = 0; ci < choices.size(); ++ci) {
        const InterleavedChoice &c = choices[ci];
        if ((ci & 15) == 0)
            m_s.report(double(ci) / double(choices.size()));
        m_s.poll();
        ++m_s.stats.states;
        // Compute bound with the interleaved bubble: T >= (m + (pp-1)/v) * max(device
        // seconds / devices, slowest layer) (docs/planner.md, "bounds").
        const double bubble =
            interleavedWeight(cfg.numMicroBatches, c.pp, c.virtualStages) / double(cfg.numMicroBatches);
        if (bubble * m_bounds.lowerBound(cfg, double(c.pp) * c.option.width()) >= m_s.incumbent.best) {
            ++m_s.stats.pruned;
            continue;
        }
        if (c.pp != chunksPp || c.virtualStages != chunksV) {
            chunks = m_s.space.interleavedChunks(c);
            chunksPp = c.pp;
            chunksV = c.virtualStages;
        } else {
            m_s.space.setInterleavedOption(chunks, c.option);
        }
        // +inf also when a pipeline position does not fit in memory (most fast candidates
        // of a deep model do not): evaluate() would find the plan infeasible, so it is
        // skipped without building and evaluating it.
        const double t = m_s.cache.interleavedTime(c, chunks, m_s.incumbent.best);
        m_s.stats.stageCostCalls += static_cast<long long>(chunks.size());
        ++m_s.stats.transitions;
        if (t >= m_s.incumbent.best) {
            ++m_s.stats.pruned;
            continue;
        }
        const Plan plan = m_s.space.makeInterleavedPlan(cfg, c);
        const Report r = evaluate(plan, m_s.topo, m_s.model, m_s.space.costOptions());
        if (!r.feasible) {
            ++m_s.stats.pruned;
            continue;
        }
        if (r.iterationTime < m_s.incumbent.best)
            m_s.incumbent.offer(r.iterationTime, plan);
    }
}

} // namespace nest
