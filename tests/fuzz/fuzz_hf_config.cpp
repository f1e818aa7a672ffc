// Hugging Face config.json: import the hyperparameters, then build the profile.
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::hfConfig(data, size);
}
