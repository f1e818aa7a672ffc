#pragma once
// Why a plan on a large cluster has a low MFU when the global batch is the cause (issue 25:
// 16,384 devices at batch 512 gave MFU 11 % with no hint why). A plan is held back by its
// batch when the batch cannot keep the devices busy:
//   - it leaves devices idle (no shape with more replicas or wider stages fits the batch), or
//   - its pipeline bubble is at least 20 % of the iteration with fewer than 4 micro-batches
//     per stage (1F1B's bubble is (pp - 1) / (m + pp - 1) for m micro-batches per replica),
// and the batch is small for the cluster: fewer samples than devices.
// The hint names the batch, the devices and the effect, and says a larger global batch
// would raise MFU. Empty when none of this holds (or the plan is infeasible).
#include "Evaluator.h"
#include "Plan.h"

#include <string>

namespace nest {

std::string batchSizeHint(const Plan &plan, const Report &report, int clusterDevices);

} // namespace nest
