#include "MeasuredDevice.h"

#include <algorithm>

namespace nest {

bool hasMeasuredTimes(const ModelProfile &model)
{
    return std::any_of(model.layers.begin(), model.layers.end(), [](const LayerProfile &l) {
        return l.measuredFwdTime >= 0 || l.measuredBwdTime >= 0 || !l.byWidth.empty();
    });
}

bool modelFlopsKnown(const ModelProfile &model)
{
    return model.flopsPerToken() > 0;
}

bool mfuKnown(const Report &report)
{
    return report.modelFlopsPerIteration > 0;
}

std::string measuredDeviceWarning(const ModelProfile &model, const Topology &topology)
{
    if (model.measuredOn.empty() || !hasMeasuredTimes(model))
        return {};
    std::string others;
    for (const DeviceSpec &d : topology.deviceTypes) {
        if (d.name == model.measuredOn)
            continue;
        others += (others.empty() ? "" : ", ") + d.name;
    }
    if (others.empty())
        return {};
    return "the model's times were measured on " + model.measuredOn + ", but the cluster's devices are " + others +
           ": the measured times are used as they are, not rescaled to " + others;
}

} // namespace nest
