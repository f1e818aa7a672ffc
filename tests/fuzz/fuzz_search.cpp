// A search as `plan --workspace` and `compare` run it: cluster, model, search settings and
// planners; the estimate must refuse what it cannot afford (FuzzTargets.h, search()).
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::search(data, size);
}
