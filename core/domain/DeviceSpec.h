#pragma once
// An accelerator type: what one device can compute, hold and move. SI units throughout:
// FLOP/s, bytes, bytes/s. Presets come from vendor data sheets (see DeviceSpec.cpp).
#include "JsonUtil.h"
#include "Precision.h"
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
    // Dense tensor FLOP/s of the low-precision formats (docs/cost-model.md, "Precision");
    // 0 = the device has no such tensor cores (the precision is refused on it).
    double peakFp8Flops = 0;          // FP8 E4M3/E5M2 with per-tensor or block scales
    double peakMxfp8Flops = 0;        // MXFP8 (hardware microscaling: Blackwell, CDNA 4)
    double peakNvfp4Flops = 0;        // NVFP4 (Blackwell)
    // The share of its scale-up links' nominal bandwidth (NVLink per direction) that the
    // collective library reaches: NCCL's own model of a GPU's NVLink, per link, over the link's
    // rate (docs/cost-model.md, "Collectives"). 1 = the links run at their nominal rate (no
    // source for the device: AMD, TPU, user-defined devices unless they say).
    double scaleUpEfficiency = 1.0;
    // The same for the links above the scale-up domain (the NICs): NCCL's fastest channel
    // speed over a NIC's rate.
    double scaleOutEfficiency = 1.0;

    // The dense peak of the linear GEMMs in `format` (peakFlops for bf16), 0 when absent.
    double peakFor(NumberFormat format) const;
    bool supports(NumberFormat format) const { return peakFor(format) > 0; }
    // Every format it supports, bf16 first.
    std::vector<NumberFormat> formats() const;
    bool operator==(const DeviceSpec &) const = default;
};

// Preset keys are lower case: v100-32gb, a100-40gb, a100-80gb, h100-sxm-80gb, h800, h200,
// tpuv4, b200, b300, gb200, gb300, mi300x, mi355x (and a few aliases accepted by
// devicePreset()).
const std::vector<DeviceSpec> &devicePresets();
Result<DeviceSpec> devicePreset(const std::string &name);

// JSON: either a preset name string or an inline object
// {"name", "peak_tflops", "memory_GB", "memory_bandwidth_GBps", ["matmul_efficiency"],
//  ["peak_fp8_tflops"], ["peak_mxfp8_tflops"], ["peak_nvfp4_tflops"], ["scale_up_efficiency"],
//  ["scale_out_efficiency"]}.
// Throws JsonError with the path on bad input.
DeviceSpec deviceFromJson(const Json &j, const std::string &path);
// Writes a preset as its name when unchanged, otherwise the inline object.
Json deviceToJson(const DeviceSpec &d);

} // namespace nest
