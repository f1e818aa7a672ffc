// Cluster JSON in every form (compact, template, explicit): load, validate, write back and
// load again (the writer's output must be accepted and describe the same devices).
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::cluster(data, size);
}
