#include "PlanShape.h"

#include <algorithm>

namespace nest {

PlanShape shapeOf(const Plan &plan)
{
    PlanShape s;
    s.pp = plan.pipelineDepth();
    s.virtualStages = plan.virtualStages;
    s.dp = plan.dp;
    s.microBatch = plan.microBatch;
    s.schedule = plan.schedule;
    bool modes[3] = {false, false, false};
    bool first = true;
    for (const StagePlan &st : plan.stages) {
        if (first) {
            s.least = s.most = st.config();
            first = false;
        }
        s.least.tp = std::min(s.least.tp, st.tp);
        s.most.tp = std::max(s.most.tp, st.tp);
        s.least.cp = std::min(s.least.cp, st.cp);
        s.most.cp = std::max(s.most.cp, st.cp);
        s.least.ep = std::min(s.least.ep, st.ep);
        s.most.ep = std::max(s.most.ep, st.ep);
        s.least.zero = std::min(s.least.zero, st.zero);
        s.most.zero = std::max(s.most.zero, st.zero);
        s.least.sp = s.least.sp && st.sp;
        s.most.sp = s.most.sp || st.sp;
        s.least.recompute = std::min(s.least.recompute, st.recompute);
        s.most.recompute = std::max(s.most.recompute, st.recompute);
        modes[static_cast<int>(st.recompute)] = true;
        s.sequenceParallel = s.sequenceParallel || (st.sp && st.tp > 1);
    }
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
        if (modes[static_cast<int>(r)])
            s.recompute += (s.recompute.empty() ? "" : "+") + std::string(toString(r));
    if (s.recompute.empty())
        s.recompute = "none";
    return s;
}

std::string rangeText(int lo, int hi)
{
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

std::string widthsText(const PlanShape &s)
{
    return "tp " + rangeText(s.least.tp, s.most.tp) + ", pp " + std::to_string(s.pp) + ", dp " +
           std::to_string(s.dp) + ", ep " + rangeText(s.least.ep, s.most.ep) + ", cp " +
           rangeText(s.least.cp, s.most.cp);
}

std::string scheduleText(const PlanShape &s)
{
    std::string t = toString(s.schedule);
    if (s.schedule == Schedule::Interleaved)
        t += " x" + std::to_string(s.virtualStages);
    return t;
}

} // namespace nest
