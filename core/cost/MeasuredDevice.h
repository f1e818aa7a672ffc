#pragma once
// The device a model profile's times were measured on, and the rules that read it against a
// cluster. A measured profile (a nest-profile's fwd_ms / bwd_ms, the NEST artifact's
// latencies) carries times of one device; the cost model uses them as they are, never
// rescaled to another device. So:
//  * measuredDeviceWarning(): when the cluster's devices are not the device the times were
//    measured on, the sentence the CLI prints on stderr and the window shows beside the plan;
//  * the model FLOPs of such a profile are known only where the file gives them: a profile
//    without FLOPs (the artifact gives none) has no model FLOPs per token and so no MFU,
//    which the views say ("not in the profile", "unknown") instead of showing 0.
#include "Evaluator.h"
#include "ModelProfile.h"
#include "Topology.h"

#include <string>

namespace nest {

// Whether any layer's time is measured (a nest-profile's fwd_ms, the artifact's latencies)
// rather than derived from FLOPs.
bool hasMeasuredTimes(const ModelProfile &model);

// Whether the profile gives model FLOPs (flopsPerToken() > 0): without them MFU is unknown.
bool modelFlopsKnown(const ModelProfile &model);
// Whether a report's MFU means something: its model FLOPs are known (a report of a profile
// without FLOPs has mfu 0, which is no measure of anything).
bool mfuKnown(const Report &report);

// Empty when the times are not measured, the profile does not name its device, or every
// device type of the cluster is that device. Otherwise, e.g.:
// "the model's times were measured on tpuv4-like, but the cluster's devices are
//  h100-sxm-80gb: the measured times are used as they are, not rescaled to h100-sxm-80gb"
std::string measuredDeviceWarning(const ModelProfile &model, const Topology &topology);

} // namespace nest
