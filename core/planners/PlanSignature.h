#pragma once
// What makes two plans distinct for `nest-cli plan --top K` (issue 24, point 4): their
// shape -- schedule and interleaving depth, micro-batch, dp, pipeline depth, and per stage
// tp, cp, ep, sp, ZeRO stage and recompute mode -- or the tier (link level) that a stage
// boundary crosses. Layer cuts and which of several identical racks a stage sits on do not
// count: two plans with equal signatures are the same layout for a user choosing between
// the best few.
#include "Plan.h"
#include "Topology.h"

#include <vector>

namespace nest {

// The signature as integers: equal exactly when the two plans are not distinct.
std::vector<int> planSignature(const Plan &plan, const Topology &topo);

} // namespace nest
