// End to end: a small fuzzed cluster and model ({"cluster": ..., "model": ...}, capped at
// 64 devices and 24 layers so one input stays well under a second), then a uniform plan
// evaluated and simulated, and the NEST planner with a small budget. Checks the contract:
// no crash, a feasible report has finite positive times, a found plan is verified.
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::pipeline(data, size);
}
