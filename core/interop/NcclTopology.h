#pragma once
// The system topology NCCL writes with NCCL_TOPO_DUMP_FILE:
//   <system version="1"><cpu numaid="0" ...><pci busid=... device="0x2330" ...>
//     <gpu dev="0" sm="90" rank="0" gdr="1"><nvlink target="0000:05:00.0" count="5" tclass="0x068000"/>...</gpu>
//   </pci>...<nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic></cpu></system>
// It describes one node: the GPUs (their count, compute capability and NVLinks: the counts of
// a GPU's <nvlink> elements add up to its links), and the NICs (speed in Mbit/s). Attributes
// this reader does not use are ignored (they vary between NCCL versions); a missing or
// malformed one it needs is an error naming the file and line.
#include "NodeDescription.h"
#include "Result.h"

#include <string>

namespace nest {

// NVLink bandwidth = the fewest links any GPU has x the per-link speed of its generation
// (NvLinkSpeed.h); NIC bandwidth per GPU = the sum of the <net> speeds / the GPU count. The
// GPU model comes from the PCI device id of the GPU's <pci> parent where it is a known one.
// Direct GPU-to-GPU links that leave several islands (no NVSwitch) give islandSizes and the
// PCIe bandwidth between them (NCCL's reckoning of the GPUs' link_speed x link_width). A
// static NCCL_TOPO_FILE input (no <gpu>; GPUs as <pci class="0x03..">) gives the GPU count
// and says that NVLink is unknown. A file cut short names the element it ends inside.
Result<NodeDescription> parseNcclTopology(const std::string &text, const std::string &origin);

} // namespace nest
