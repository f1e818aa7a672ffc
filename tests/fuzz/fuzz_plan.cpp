// Plan JSON: load, write back, load again (same plan).
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::plan(data, size);
}
