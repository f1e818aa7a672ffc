#include "DeviceSpec.h"

#include "TextCase.h"

#include <algorithm>

namespace nest {

namespace {
constexpr double TFLOPS = 1e12;
constexpr double GB = 1e9;
constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
constexpr double MiB = 1024.0 * 1024.0;

// NCCL's bandwidth of one NVLink per direction (NVIDIA/nccl src/graph/topo.h: SM70_NVLINK_BW
// and SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 GB/s; ncclTopoConnectNodes
// gives a GPU links x that toward its NVSwitch, and the ring and tree searches fill channels up
// to it) over the link's nominal rate per direction (NVLink 2, 3 and 4: 25 GB/s; NVLink 5:
// 50 GB/s): what NCCL's collectives reach of the scale-up bandwidth the data sheets state.
constexpr double kNvlink2 = 20.0 / 25.0;  // V100
constexpr double kNvlink3 = 20.0 / 25.0;  // A100
constexpr double kNvlink4 = 20.6 / 25.0;  // H100, H800, H200
constexpr double kNvlink5 = 40.1 / 50.0;  // B200, B300, GB200, GB300 (compute capability 10.x)

// NCCL's inter-node channel speeds (src/graph/search.cc speedArrayInter, sm90SpeedArrayInter,
// sm100SpeedArrayInter: 12, 24, 48 and, on Blackwell, 96 GB/s the fastest below a 100, 200,
// 400 and 800 Gb/s NIC's 12.5, 25, 50 and 100 GB/s; ncclTopoAddNet takes a NIC's reported
// speed as its bandwidth): 96 % of the NIC rate at every standard speed.
constexpr double kNcclNet = 0.96;

// An NVIDIA GPU: its NVLink at NCCL's per-link rate (`nvlink`), its NICs at NCCL's channel
// speed.
DeviceSpec withNcclRates(DeviceSpec d, double nvlink)
{
    d.scaleUpEfficiency = nvlink;
    d.scaleOutEfficiency = kNcclNet;
    return d;
}

// A preset: BF16 dense peak, memory, bandwidth, the data sheet, then the dense peaks of
// FP8, MXFP8 and NVFP4 (0 = none).
// Memory is what the device reports to the frameworks (nvidia-smi's total, in MiB; ROCm's
// VRAM total, in bytes), not the data sheet's decimal figure: the sheets' "GB" of HBM are
// near-binary (a B200 "180 GB" reports 183,359 MiB = 192.3e9 bytes). Where no report was
// found, the sheet's figure read in GiB, as the full-GPU MIG profile names give it
// (B200 7g.180gb against 179.1 GiB reported). What a framework cannot use (CUDA context,
// allocator) is CostOptions' per-device overhead, not taken off here.
DeviceSpec preset(const char *name, double bf16, double memory, double bandwidth, const char *source,
                  double fp8 = 0, double mxfp8 = 0, double nvfp4 = 0)
{
    DeviceSpec d;
    d.name = name;
    d.peakFlops = bf16;
    d.memoryBytes = memory;
    d.memoryBandwidth = bandwidth;
    d.source = source;
    d.peakFp8Flops = fp8;
    d.peakMxfp8Flops = mxfp8;
    d.peakNvfp4Flops = nvfp4;
    return d;
}

// Dense (no sparsity) tensor peaks from each data sheet; where a sheet gives the sparse
// figure only, half of it (NVIDIA's sheets mark sparse figures; dense = sparse / 2).
std::vector<DeviceSpec> makeDevicePresets()
{
    const double T = TFLOPS;
    return {
        withNcclRates(preset("v100-32gb", 125 * T, 32 * GiB, 900 * GB,
               "NVIDIA Tesla V100 data sheet (SXM2): 125 TFLOPS FP16 tensor, 32 GB HBM2, 900 GB/s"), kNvlink2),
        withNcclRates(preset("a100-40gb", 312 * T, 40 * GiB, 1555 * GB,
               "NVIDIA A100 data sheet (SXM4 40GB): 312 TFLOPS BF16 dense, 40 GB HBM2, 1555 GB/s"), kNvlink3),
        withNcclRates(preset("a100-80gb", 312 * T, 80 * GiB, 2039 * GB,
               "NVIDIA A100 data sheet (SXM4 80GB): 312 TFLOPS BF16 dense, 80 GB HBM2e, 2039 GB/s"), kNvlink3),
        // 80 GiB: nvidia-smi reports 81,559 MiB, 0.4 % less (A100 80GB: 81,920 MiB, exactly).
        withNcclRates(preset("h100-sxm-80gb", 989 * T, 80 * GiB, 3350 * GB,
               "NVIDIA H100 data sheet (SXM5): 989 TFLOPS BF16 / 1979 TFLOPS FP8 dense, 80 GB HBM3, 3.35 TB/s",
               1979 * T), kNvlink4),
        withNcclRates(preset("h800", 989 * T, 80 * GiB, 3350 * GB,
               "NVIDIA H800 SXM5 product brief: 989 TFLOPS BF16 / 1979 TFLOPS FP8 dense, 80 GB HBM3, 3.35 TB/s, "
               "NVLink 400 GB/s",
               1979 * T), kNvlink4),
        withNcclRates(preset("h200", 989 * T, 143771 * MiB, 4800 * GB,
               "NVIDIA H200 data sheet (SXM): 989 TFLOPS BF16 / 1979 TFLOPS FP8 dense, 141 GB HBM3e, 4.8 TB/s; "
               "nvidia-smi reports 143,771 MiB",
               1979 * T), kNvlink4),
        preset("tpuv4", 275 * T, 32 * GiB, 1200 * GB,
               "Google Cloud TPU v4 documentation: 275 TFLOPS BF16, 32 GiB HBM2, 1200 GB/s"),
        withNcclRates(preset("b200", 2250 * T, 183359 * MiB, 7700 * GB,
               "NVIDIA HGX B200 data sheet: 2.25 PFLOPS BF16, 4.5 PFLOPS FP8/MXFP8, 9 PFLOPS FP4 dense per GPU, "
               "180 GB HBM3e, 7.7 TB/s; nvidia-smi reports 183,359 MiB (NVIDIA/TensorRT-LLM issue 10278)",
               4500 * T, 4500 * T, 9000 * T), kNvlink5),
        withNcclRates(preset("b300", 2250 * T, 269 * GiB, 8000 * GB,
               "NVIDIA HGX B300 data sheet: 36 / 72 / 108 PFLOPS BF16 / FP8 / FP4 dense per 8 GPUs, 2.3 TB HBM3e "
               "per 8 GPUs (288 GB), 8 TB/s; usable 269 GiB, the full-GPU MIG profile 7g.269gb (NVIDIA GPU "
               "Operator 25.3 profiles for B300)",
               4500 * T, 4500 * T, 13500 * T), kNvlink5),
        withNcclRates(preset("gb200", 2500 * T, 189471 * MiB, 8000 * GB,
               "NVIDIA GB200 NVL72 data sheet: 180 / 360 / 720 PFLOPS BF16 / FP8 / FP4 dense per 72 GPUs, "
               "13.4 TB HBM3e (186 GB per GPU), 576 TB/s (8 TB/s per GPU); nvidia-smi reports 189,471 MiB",
               5000 * T, 5000 * T, 10000 * T), kNvlink5),
        withNcclRates(preset("gb300", 2500 * T, 278 * GiB, 8000 * GB,
               "NVIDIA GB300 NVL72 data sheet: 180 / 360 / 1080 PFLOPS BF16 / FP8 / FP4 dense per 72 GPUs, "
               "576 TB/s (8 TB/s per GPU); its Blackwell Ultra GPUs carry 288 GB HBM3e each (eight 12-high "
               "stacks, as the B300), of which 278 GiB usable: the full-GPU MIG profile 7g.278gb",
               5000 * T, 5000 * T, 15000 * T), kNvlink5),
        preset("mi300x", 1307.4 * T, 205822885888.0, 5300 * GB,
               "AMD Instinct MI300X data sheet: 1307.4 TFLOPS BF16 / 2614.9 TFLOPS FP8 dense, 192 GB HBM3, 5.3 TB/s; "
               "rocm-smi reports a VRAM total of 205,822,885,888 bytes",
               2614.9 * T),
        preset("mi355x", 2516.6 * T, 288 * GB, 8000 * GB,
               "AMD Instinct MI355X data sheet: 2.5 PFLOPS BF16, 5.0 PFLOPS FP8/MXFP8 dense, 288 GB HBM3E, 8 TB/s "
               "(MXFP4, not NVFP4); no reported total found, the sheet's decimal 288 GB kept",
               5033.2 * T, 5033.2 * T),
    };
}

} // namespace

double DeviceSpec::peakFor(NumberFormat format) const
{
    switch (format) {
    case NumberFormat::Bf16: return peakFlops;
    case NumberFormat::Fp8: return peakFp8Flops;
    case NumberFormat::Mxfp8: return peakMxfp8Flops;
    case NumberFormat::Nvfp4: return peakNvfp4Flops;
    }
    return 0;
}

std::vector<NumberFormat> DeviceSpec::formats() const
{
    std::vector<NumberFormat> out;
    for (NumberFormat f : {NumberFormat::Bf16, NumberFormat::Fp8, NumberFormat::Mxfp8, NumberFormat::Nvfp4})
        if (supports(f))
            out.push_back(f);
    return out;
}

const std::vector<DeviceSpec> &devicePresets()
{
    static const std::vector<DeviceSpec> presets = makeDevicePresets();  // immutable after init
    return presets;
}

Result<DeviceSpec> devicePreset(const std::string &name)
{
    std::string key = presetKey(name);
    if (key == "v100")
        key = "v100-32gb";
    else if (key == "a100")
        key = "a100-80gb";
    else if (key == "h100" || key == "h100-80gb" || key == "h100-sxm")
        key = "h100-sxm-80gb";
    else if (key == "tpu-v4")
        key = "tpuv4";
    else if (key == "h800-sxm" || key == "h800-80gb")
        key = "h800";
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
    // Optional low-precision peaks (absent = the device has no such tensor cores).
    const auto optionalPeak = [&j, &path](const char *key) {
        if (!j.contains(key))
            return 0.0;
        const double x = getPositive(j, key, path);
        requireInRange(x, limits::peakTflops, childPath(path, key));
        return x * TFLOPS;
    };
    d.peakFp8Flops = optionalPeak("peak_fp8_tflops");
    d.peakMxfp8Flops = optionalPeak("peak_mxfp8_tflops");
    d.peakNvfp4Flops = optionalPeak("peak_nvfp4_tflops");
    const auto optionalShare = [&j, &path](const char *key) {
        if (!j.contains(key))
            return 1.0;
        const double x = getPositive(j, key, path);
        requireInRange(x, limits::efficiency, childPath(path, key));
        return x;
    };
    d.scaleUpEfficiency = optionalShare("scale_up_efficiency");
    d.scaleOutEfficiency = optionalShare("scale_out_efficiency");
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
    if (d.peakFp8Flops > 0)
        j["peak_fp8_tflops"] = d.peakFp8Flops / TFLOPS;
    if (d.peakMxfp8Flops > 0)
        j["peak_mxfp8_tflops"] = d.peakMxfp8Flops / TFLOPS;
    if (d.peakNvfp4Flops > 0)
        j["peak_nvfp4_tflops"] = d.peakNvfp4Flops / TFLOPS;
    if (d.scaleUpEfficiency != 1.0)
        j["scale_up_efficiency"] = d.scaleUpEfficiency;
    if (d.scaleOutEfficiency != 1.0)
        j["scale_out_efficiency"] = d.scaleOutEfficiency;
    return j;
}

} // namespace nest
