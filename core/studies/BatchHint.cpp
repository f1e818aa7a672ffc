#include "BatchHint.h"

#include "PlanComparison.h"

#include <cstdio>

namespace nest {

std::string batchSizeHint(const Plan &plan, const Report &report, int clusterDevices)
{
    if (!report.feasible || clusterDevices <= 0 || report.iterationTime <= 0 || plan.globalBatch <= 0)
        return {};
    if (plan.globalBatch >= clusterDevices)
        return {};
    const int idle = clusterDevices - report.devicesUsed;
    const double bubble = iterationSplit(plan, report).bubble / report.iterationTime;
    const int depth = plan.pipelineDepth();
    const int micro = plan.numMicroBatches();
    const bool starved = micro < 4 * depth && bubble >= 0.20;
    if (idle <= 0 && !starved)
        return {};
    char text[512];
    const double perDevice = static_cast<double>(plan.globalBatch) / clusterDevices;
    if (idle > 0)
        std::snprintf(text, sizeof text,
                      "the global batch (%d samples, %.3g per device) is small for %d devices: the plan leaves %d "
                      "of them idle and its pipeline bubble is %.0f %% of the iteration; a larger global batch "
                      "would raise MFU",
                      plan.globalBatch, perDevice, clusterDevices, idle, 100 * bubble);
    else
        std::snprintf(text, sizeof text,
                      "the global batch (%d samples, %.3g per device) is small for %d devices: each replica has "
                      "%d micro-batch%s for %d pipeline stages, so the bubble is %.0f %% of the iteration; a "
                      "larger global batch would raise MFU",
                      plan.globalBatch, perDevice, clusterDevices, micro, micro == 1 ? "" : "es", depth, 100 * bubble);
    return text;
}

} // namespace nest
