#include "ZeroTrafficBound.h"

#include "StageCostCache.h"

#include <algorithm>
#include <limits>

namespace nest {

double zeroTrafficBound(const PlanSpace &space, StageCostCache &cache)
{
    const OuterConfig &cfg = cache.config();
    const CostOptions &options = space.costOptions();
    const ZeroFloor f = zeroFloor(space.model(), options, cfg.dp);
    if (!(f.belowZero3 > f.atZero3))
        return 0.0;
    double params = 0;
    for (const LayerProfile &l : space.model().layers)
        params += replicaDenseParams(l);
    double capacity = 0;
    for (const DeviceSpec &d : space.topology().deviceTypes)
        capacity = std::max(capacity, usableMemory(d.memoryBytes, options));
    const double usable = space.usablePositions(cfg);
    // The capacity shaded up and the bound down, for the rounding of the sums they stand for.
    const double forced = (f.belowZero3 * params - usable * capacity * (1 + 1e-9)) / (f.belowZero3 - f.atZero3);
    if (!(forced > 0))
        return 0.0;
    if (forced > params)
        return kInf;
    const double perByte = cache.leastZero3PerByte();
    if (!(perByte < kInf))
        return kInf;
    return cfg.numMicroBatches * computeTimeFloor(options) * perByte * f.zero3Traffic * forced / usable * (1 - 1e-9);
}

} // namespace nest
