#pragma once
// The inside of one node as a node-level file describes it (an NCCL topology dump, an
// `nvidia-smi topo -m` matrix): how many GPUs, how many NVLinks each GPU has and how fast one
// link is, the NIC bandwidth per GPU and, when the file names it, the GPU model. Core units:
// bytes/s. ClusterImport turns it into a one-node cluster or the nodes of a Slurm tree.
#include "DeviceSpec.h"

#include <optional>
#include <string>

namespace nest {

struct NodeDescription {
    std::string origin;                  // the file, for messages
    int gpuCount = 0;
    int gpuCountLine = 0;                // the line that fixes the count (messages)
    int nvlinksPerGpu = 0;               // 0 = no NVLink (PCIe only)
    std::optional<int> smVersion;        // compute capability x 10 (90 = Hopper), when the file says
    std::optional<double> nvlinkBandwidth;     // bytes/s per GPU, one direction, when known
    std::optional<double> nicBandwidthPerGpu;  // bytes/s per GPU, one direction, when the file has NICs
    std::optional<DeviceSpec> device;    // when the file identifies the GPU model
    int deviceLine = 0;                  // where it does (messages)
};

} // namespace nest
