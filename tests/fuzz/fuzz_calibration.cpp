// Calibrations (nest-calibration): a finite error band. (issue 48)
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nest::fuzz::calibration(data, size);
}
