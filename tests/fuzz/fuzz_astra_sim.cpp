// ASTRA-sim network YAML: a network the cluster loader reads back, its YAML round trip. (issue 48)
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::astraSim(data, size);
}
