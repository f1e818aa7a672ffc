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
    // NVLink islands: GPUs linked directly in pairs or cliques that reach the other GPUs only
    // over PCIe (Azure NCv4: NVLink bridges between GPUs 0-1 and 2-3). Empty when every GPU
    // is in one NVLink domain (NVSwitches, or direct links that connect them all) or there is
    // no NVLink. Otherwise the node is two levels: the islands (nvlinkBandwidth, the links of a
    // GPU added) and the PCIe/CPU fabric between them (pcieBandwidth). GPUs per island, in
    // the order of each island's first GPU; the cluster numbers its devices island by island.
    std::vector<int> islandSizes;
    std::optional<double> pcieBandwidth;  // bytes/s per GPU through its PCIe link, when the file says
    // Why the file cannot give the NVLink bandwidth, for the message that asks for --bandwidth
    // ("" = it can, or there is no NVLink).
    std::string nvlinkUnknownWhy;
};

} // namespace nest
