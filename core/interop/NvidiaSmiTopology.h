#pragma once
// The matrix `nvidia-smi topo -m` prints:
//           GPU0    GPU1    ...  NIC0   CPU Affinity    NUMA Affinity   GPU NUMA ID
//   GPU0     X      NV18    ...  PIX    0-55,112-167    0               N/A
//   ...
//   Legend: ...
// Cells between GPUs are X (itself), NV# (a bonded set of # NVLinks), PIX, PXB, PHB, NODE or
// SYS (PCIe paths); NIC columns and rows, the affinity columns and the legend are read past.
// Terminal colour codes (nvidia-smi underlines the header on a terminal) are removed first.
// Errors name the file and line: no header, a GPU row missing or repeated, an unknown cell,
// a row with too few cells, NV counts that differ between (i, j) and (j, i).
#include "NodeDescription.h"
#include "Result.h"

#include <string>
#include <vector>

namespace nest {

struct NvidiaSmiMatrix {
    int gpuCount = 0;
    int headerLine = 0;
    std::vector<std::vector<int>> nvlinks;   // [i][j] links between GPU i and j (0: none or PCIe)
};

Result<NvidiaSmiMatrix> parseNvidiaSmiMatrix(const std::string &text, const std::string &origin);

// The node: GPU count and NVLinks per GPU. When every pair of GPUs shows the same NV# the
// GPUs sit on NVSwitches and # is each GPU's link count (DGX H100: NV18 everywhere, 18 links);
// otherwise the links are direct and a GPU's count is the sum of its row (the fewest of any
// GPU is taken). Direct links that leave several islands (NV12 between GPUs 0-1 and 2-3, SYS
// across) give NodeDescription::islandSizes; the matrix has no PCIe speed. The matrix names no GPU model, so the link speed (and the NVLink bandwidth)
// comes later from the device (ClusterImport).
Result<NodeDescription> parseNvidiaSmiTopology(const std::string &text, const std::string &origin);

} // namespace nest
