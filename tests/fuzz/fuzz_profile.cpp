// Measured profiles: ours ("nest-profile") and the NEST artifact's solver input; the first
// byte picks which reader (and the artifact's file-name hints), the rest is the JSON.
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::profile(data, size);
}
