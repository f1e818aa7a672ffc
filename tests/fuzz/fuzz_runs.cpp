// Measured runs (nest-runs): accepted step times in range. (issue 48)
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::runs(data, size);
}
