#include "DeviceSpec.h"

#include <algorithm>
#include <cctype>

namespace nest {

namespace {
constexpr double TFLOPS = 1e12;
constexpr double GB = 1e9;
constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

std::vector<DeviceSpec> makePresets()
{
    return {
        // NVIDIA Tesla V100 data sheet (SXM2 32 GB): 125 TFLOPS tensor (FP16), 32 GB HBM2,
        // 900 GB/s.
        {"v100-32gb", 125 * TFLOPS, 32 * GiB, 900 * GB, 0.0,
         "NVIDIA Tesla V100 GPU Accelerator data sheet (SXM2): 125 TFLOPS FP16 tensor, 32 GB HBM2, 900 GB/s"},
        // NVIDIA A100 Tensor Core GPU data sheet: 312 TFLOPS BF16 dense, 40 GB HBM2 1555 GB/s
        // (SXM 40GB), 80 GB HBM2e 2039 GB/s (SXM 80GB).
        {"a100-40gb", 312 * TFLOPS, 40 * GiB, 1555 * GB, 0.0,
         "NVIDIA A100 data sheet (SXM4 40GB): 312 TFLOPS BF16 dense, 40 GB HBM2, 1555 GB/s"},
        {"a100-80gb", 312 * TFLOPS, 80 * GiB, 2039 * GB, 0.0,
         "NVIDIA A100 data sheet (SXM4 80GB): 312 TFLOPS BF16 dense, 80 GB HBM2e, 2039 GB/s"},
        // NVIDIA H100 Tensor Core GPU data sheet (SXM5): 989 TFLOPS BF16 dense (1979 with
        // sparsity), 80 GB HBM3, 3.35 TB/s.
        {"h100-sxm-80gb", 989 * TFLOPS, 80 * GiB, 3350 * GB, 0.0,
         "NVIDIA H100 data sheet (SXM5): 989 TFLOPS BF16 dense, 80 GB HBM3, 3.35 TB/s"},
        // NVIDIA H200 Tensor Core GPU data sheet (SXM): 989 TFLOPS BF16 dense, 141 GB HBM3e,
        // 4.8 TB/s.
        {"h200", 989 * TFLOPS, 141 * GB, 4800 * GB, 0.0,
         "NVIDIA H200 data sheet (SXM): 989 TFLOPS BF16 dense, 141 GB HBM3e, 4.8 TB/s"},
        // Google Cloud TPU v4 system architecture page: 275 TFLOPS peak BF16, 32 GiB HBM2,
        // 1200 GB/s per chip.
        {"tpuv4", 275 * TFLOPS, 32 * GiB, 1200 * GB, 0.0,
         "Google Cloud TPU v4 documentation: 275 TFLOPS BF16, 32 GiB HBM2, 1200 GB/s"},
        // NVIDIA HGX B200 data sheet: 2.25 PFLOPS FP16/BF16 dense per GPU (4.5 with
        // sparsity), 180 GB HBM3e (1440 GB per 8-GPU board), 7.7 TB/s.
        {"b200", 2250 * TFLOPS, 180 * GB, 7700 * GB, 0.0,
         "NVIDIA HGX B200 data sheet: 2.25 PFLOPS BF16 dense per GPU, 180 GB HBM3e, 7.7 TB/s"},
        // AMD Instinct MI300X data sheet: 1307.4 TFLOPS peak FP16/BF16 dense, 192 GB HBM3,
        // 5.3 TB/s.
        {"mi300x", 1307.4 * TFLOPS, 192 * GB, 5300 * GB, 0.0,
         "AMD Instinct MI300X data sheet: 1307.4 TFLOPS BF16 dense, 192 GB HBM3, 5.3 TB/s"},
    };
}

std::string normalise(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
        return c == '_' || c == ' ' ? '-' : static_cast<char>(std::tolower(c));
    });
    return s;
}
} // namespace

const std::vector<DeviceSpec> &devicePresets()
{
    static const std::vector<DeviceSpec> presets = makePresets();  // immutable after init
    return presets;
}

Result<DeviceSpec> devicePreset(const std::string &name)
{
    std::string key = normalise(name);
    if (key == "v100")
        key = "v100-32gb";
    else if (key == "a100")
        key = "a100-80gb";
    else if (key == "h100" || key == "h100-80gb" || key == "h100-sxm")
        key = "h100-sxm-80gb";
    else if (key == "tpu-v4")
        key = "tpuv4";
    for (const auto &d : devicePresets())
        if (d.name == key)
            return d;
    std::string known;
    for (const auto &d : devicePresets())
        known += (known.empty() ? "" : ", ") + d.name;
    return Result<DeviceSpec>::failure("unknown device preset '" + name + "' (known: " + known + ")");
}

DeviceSpec deviceFromJson(const Json &j, const std::string &path)
{
    if (j.is_string()) {
        auto preset = devicePreset(j.get<std::string>());
        if (!preset)
            throw JsonError(path, preset.error());
        return *preset;
    }
    if (!j.is_object())
        throw JsonError(path, std::string("expected a device preset name or an object, found ") + j.type_name());
    DeviceSpec d;
    d.name = getString(j, "name", path);
    if (d.name.empty())
        throw JsonError(childPath(path, "name"), "must not be empty");
    // Positive first (the plain message), then the documented range (Limits.h).
    const auto physical = [&j, &path](const char *key, const Range &range) {
        const double x = getPositive(j, key, path);
        requireInRange(x, range, childPath(path, key));
        return x;
    };
    d.peakFlops = physical("peak_tflops", limits::peakTflops) * TFLOPS;
    d.memoryBytes = physical("memory_GB", limits::memoryGB) * GB;
    d.memoryBandwidth = physical("memory_bandwidth_GBps", limits::memoryBandwidthGBps) * GB;
    d.matmulEfficiency = getNonNegative(j, "matmul_efficiency", path, 0.0);
    if (d.matmulEfficiency > 1)
        throw JsonError(childPath(path, "matmul_efficiency"), "must be a fraction between 0 and 1");
    if (d.matmulEfficiency > 0)  // 0 = the cost model's default; else a usable fraction
        requireInRange(d.matmulEfficiency, limits::efficiency, childPath(path, "matmul_efficiency"));
    d.source = getString(j, "source", path, "");
    return d;
}

Json deviceToJson(const DeviceSpec &d)
{
    if (auto preset = devicePreset(d.name); preset && *preset == d)
        return d.name;
    Json j = {{"name", d.name},
              {"peak_tflops", d.peakFlops / TFLOPS},
              {"memory_GB", d.memoryBytes / GB},
              {"memory_bandwidth_GBps", d.memoryBandwidth / GB}};
    if (d.matmulEfficiency > 0)
        j["matmul_efficiency"] = d.matmulEfficiency;
    if (!d.source.empty())
        j["source"] = d.source;
    return j;
}

} // namespace nest
