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
            s.tpMin = s.tpMax = st.tp;
            s.cpMin = s.cpMax = st.cp;
            s.epMin = s.epMax = st.ep;
            s.zeroMin = s.zeroMax = st.zero;
            first = false;
        }
        s.tpMin = std::min(s.tpMin, st.tp);
        s.tpMax = std::max(s.tpMax, st.tp);
        s.cpMin = std::min(s.cpMin, st.cp);
        s.cpMax = std::max(s.cpMax, st.cp);
        s.epMin = std::min(s.epMin, st.ep);
        s.epMax = std::max(s.epMax, st.ep);
        s.zeroMin = std::min(s.zeroMin, st.zero);
        s.zeroMax = std::max(s.zeroMax, st.zero);
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
    return "tp " + rangeText(s.tpMin, s.tpMax) + ", pp " + std::to_string(s.pp) + ", dp " +
           std::to_string(s.dp) + ", ep " + rangeText(s.epMin, s.epMax) + ", cp " +
           rangeText(s.cpMin, s.cpMax);
}

std::string scheduleText(const PlanShape &s)
{
    std::string t = toString(s.schedule);
    if (s.schedule == Schedule::Interleaved)
        t += " x" + std::to_string(s.virtualStages);
    return t;
}

} // namespace nest
