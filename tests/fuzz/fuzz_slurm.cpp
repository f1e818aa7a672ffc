// Slurm topology.conf: a connected tree, every node and switch name a host name. (issue 48)
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::slurm(data, size);
}
