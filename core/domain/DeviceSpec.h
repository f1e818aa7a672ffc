#pragma once
// An accelerator type: what one device can compute, hold and move. SI units throughout:
// FLOP/s, bytes, bytes/s. Presets come from vendor data sheets (see DeviceSpec.cpp).
#include "JsonUtil.h"
#include "Result.h"

#include <string>
#include <vector>

namespace nest {

struct DeviceSpec {
    std::string name;                 // preset key ("a100-80gb") or a user-chosen name
    double peakFlops = 0;             // dense BF16/FP16 tensor FLOP/s (no sparsity)
    double memoryBytes = 0;           // HBM capacity
    double memoryBandwidth = 0;       // HBM bytes/s
    // Achievable fraction of peakFlops for the large matrix multiplies of a transformer
    // layer. Documented default in docs/cost-model.md; overridable per device.
    double matmulEfficiency = 0.0;    // 0 = use the cost model's default
    std::string source;               // citation of the data sheet (presets only)

    bool operator==(const DeviceSpec &) const = default;
};

// Preset keys are lower case: v100-32gb, a100-40gb, a100-80gb, h100-sxm-80gb, h200, tpuv4,
// b200, mi300x (and a few aliases accepted by devicePreset()).
const std::vector<DeviceSpec> &devicePresets();
Result<DeviceSpec> devicePreset(const std::string &name);

// JSON: either a preset name string or an inline object
// {"name", "peak_tflops", "memory_GB", "memory_bandwidth_GBps", ["matmul_efficiency"]}.
// Throws JsonError with the path on bad input.
DeviceSpec deviceFromJson(const Json &j, const std::string &path);
// Writes a preset as its name when unchanged, otherwise the inline object.
Json deviceToJson(const DeviceSpec &d);

} // namespace nest
