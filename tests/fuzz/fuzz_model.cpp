// Model JSON (our hyperparameter format; also what file detection routes to the Hugging
// Face, profile and artifact readers): load and build the layer profile.
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::model(data, size);
}
