#pragma once
// A plan's shape in a few numbers, for tables that put plans side by side (nest-cli
// compare, reproduce, the window's comparison): the range of each per-stage width, the
// pipeline depth, dp, the set of ZeRO stages and recompute modes, the micro-batch and
// schedule. "tp 4-8" when stages differ, "tp 8" when they agree.
#include "Plan.h"

#include <string>

namespace nest {

struct PlanShape {
    // Field by field, the smallest and the largest of the stages' choices (tp, cp, ep,
    // zero; sp and recompute are summarised below).
    StageConfig least, most;
    int pp = 1;            // physical pipeline stages
    int virtualStages = 1; // chunks per device (interleaved)
    int dp = 1;
    std::string recompute;  // "none", "full", "none+selective"... (modes used, in enum order)
    int microBatch = 1;
    Schedule schedule = Schedule::OneFOneB;
    bool sequenceParallel = false;  // any stage with sp
};

PlanShape shapeOf(const Plan &plan);
// "tp 8, pp 4, dp 8, ep 1, cp 1" with ranges where stages differ.
std::string widthsText(const PlanShape &s);
// "4-8" or "8".
std::string rangeText(int lo, int hi);
// "interleaved x2" / "1f1b" / "gpipe".
std::string scheduleText(const PlanShape &s);

} // namespace nest
