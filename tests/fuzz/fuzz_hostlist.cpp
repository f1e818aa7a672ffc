// Slurm hostlist expressions: every expanded name a host name, the budget held. (issue 48)
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::hostlist(data, size);
}
