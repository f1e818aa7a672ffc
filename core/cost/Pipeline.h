#pragma once
// The pipeline formula and the Pareto front, defined once for the evaluator and every
// planner (docs/cost-model.md, docs/planner.md).
//
// An iteration of a pipeline of S stages with m micro-batches per replica takes
//     T = (m + S - 1) * t + e                 (1F1B, GPipe; Narayanan et al. SC'21, eq. 1)
//     T = (m + (S - 1) / v) * t + e           (interleaved, v model chunks per device, §2.2.2)
// where t is the slowest stage's (device's) time per micro-batch and e its per-iteration
// extra (gradient synchronisation, optimizer step, ZeRO gathers). Because T grows with both
// t and e, a stage choice dominated in (t, e) by another can never give a lower T: the
// planners keep only the Pareto front of each set of candidates.
#include <algorithm>
#include <limits>
#include <vector>

namespace nest {

// m + S - 1: how many per-micro-batch times an iteration of S stages (1F1B, GPipe) lasts.
inline double pipelineWeight(int microBatches, int stages) { return microBatches + stages - 1; }

// m + (S - 1) / v: the same with v model chunks per device (interleaved 1F1B).
inline double interleavedWeight(int microBatches, int stages, int chunks)
{
    return microBatches + static_cast<double>(stages - 1) / chunks;
}

// 2 (m + S - 1): the steps of DeepSpeed's TrainSchedule (runtime/pipe/schedule.py) for S
// stages and m micro-batches. Stage s runs the forward of micro-batch i in step 2i + s and
// its backward in step 2i + 2S - 1 - s, so in the steady state it alternates a forward step
// and a backward step; two steps take one forward + one backward (+ their blocking
// exchanges), and the iteration, 2 (m + S - 1) steps of half a micro-batch's time each, takes
// pipelineWeight(m, S) per-micro-batch times, as 1F1B (the simulator runs the steps).
inline int deepSpeedSteps(int microBatches, int stages) { return 2 * (microBatches + stages - 1); }

// T = weight * t + e.
inline double iterationSeconds(double weight, double t, double e) { return weight * t + e; }

// Sorts `candidates` by (t, e) and then by `tieLess` (a strict order on what t and e leave
// equal), and appends to `front` the candidates no other one dominates: each has a smaller e
// than every candidate sorted before it. Of candidates equal in (t, e) the first by `tieLess`
// is kept. P has members t and e.
template <typename P, typename TieLess>
void appendParetoFront(std::vector<P> &candidates, std::vector<P> &front, TieLess tieLess)
{
    std::sort(candidates.begin(), candidates.end(), [&](const P &x, const P &y) {
        if (x.t != y.t)
            return x.t < y.t;
        if (x.e != y.e)
            return x.e < y.e;
        return tieLess(x, y);
    });
    double bestE = std::numeric_limits<double>::infinity();
    for (const P &p : candidates) {
        if (p.e < bestE) {
            front.push_back(p);
            bestE = p.e;
        }
    }
}

} // namespace nest
