// Workspace JSON (cluster + model + search settings + pinned plans): load, resolve its
// model, write back and load again.
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::workspace(data, size);
}
