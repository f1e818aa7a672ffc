// nvidia-smi topo -m matrices: a node with GPUs and finite bandwidths. (issue 48)
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::nvidiaSmi(data, size);
}
