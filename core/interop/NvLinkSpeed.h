#pragma once
// The data-sheet speed of one NVLink, per direction, by GPU generation (compute capability)
// and by device preset. An NVLink count from a topology file times this speed is a GPU's
// NVLink bandwidth (18 links x 25 GB/s = 450 GB/s per direction on an H100 SXM).
#include <optional>
#include <string>

namespace nest {

// Bytes/s of one link in one direction for compute capability `sm` (70 = V100, 80 = A100,
// 86 = GA10x, 90 = H100/H200, 100 = B200); nullopt for a generation without NVLink or unknown.
std::optional<double> nvlinkSpeedForSm(int sm);
// The compute capability of a device preset's GPU (v100-32gb -> 70, h100-sxm-80gb -> 90);
// nullopt for presets that are no NVIDIA GPU (tpuv4, mi300x) or unknown names.
std::optional<int> smOfDevicePreset(const std::string &preset);

} // namespace nest
