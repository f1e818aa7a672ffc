#include "NvLinkSpeed.h"

namespace nest {

namespace {
constexpr double kNvLinkGBps = 1e9;
} // namespace

// Data-sheet rates of one link, one direction: NVLink 1 (P100) 20 GB/s; NVLink 2 (V100),
// 3 (A100) and 4 (H100) 25 GB/s (V100 6 links = 150, A100 12 = 300, H100 18 = 450 GB/s per
// direction); the NVLink 3 bridge of GA10x boards 14.0625 GB/s; NVLink 5 (B200) 50 GB/s
// (18 links = 900 GB/s). These are the nominal rates that the cluster files and templates use
// (docs/formats.md, superpod: 18 x 25 = 450).
//
// NCCL's own constants are lower, because they are what its tuner expects to achieve, not
// the link rate: src/graph/topo.h (NVIDIA/nccl, 2016-2026) defines SM60_NVLINK_BW 18.0,
// SM70_NVLINK_BW 20.0, SM80_NVLINK_BW 20.0, SM86_NVLINK_BW 12.0, SM90_NVLINK_BW 20.6,
// SM100_NVLINK_BW 40.1 (GB/s per link; releases before 2.12 had 22.0 for SM70 and SM80),
// chosen by ncclTopoNVLinkBw(cudaCompCap). We keep the nominal rate here so an imported node
// reads like the presets; a user who wants NCCL's figure passes --bandwidth.
std::optional<double> nvlinkSpeedForSm(int sm)
{
    if (sm >= 100)
        return 50 * kNvLinkGBps;
    if (sm >= 90)
        return 25 * kNvLinkGBps;
    if (sm == 86 || sm == 87)
        return 14.0625 * kNvLinkGBps;
    if (sm >= 70)
        return 25 * kNvLinkGBps;
    if (sm >= 60)
        return 20 * kNvLinkGBps;
    return std::nullopt;
}

std::optional<int> smOfDevicePreset(const std::string &preset)
{
    if (preset == "v100-32gb")
        return 70;
    if (preset == "a100-40gb" || preset == "a100-80gb")
        return 80;
    if (preset == "h100-sxm-80gb" || preset == "h200")
        return 90;
    if (preset == "b200")
        return 100;
    return std::nullopt;
}

} // namespace nest
