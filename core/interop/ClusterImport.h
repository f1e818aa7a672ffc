#pragma once
// Clusters from the outside world's descriptions (docs/formats.md, "Importing clusters"):
// a Slurm topology.conf (the switch tree), an NCCL topology dump or an `nvidia-smi topo -m`
// matrix (the inside of one node), an ASTRA-sim network YAML (uniform dimensions). The format
// is detected from the content unless given. Import runs in two steps: sketchCluster() reads
// what the files say (the tree, and per level the bandwidth and latency they give), then
// assembleCluster() fills what they lack from the options (device, GPUs per node, per-level
// bandwidth / latency / oversubscription) and returns a validated Topology. The GUI's import
// dialog shows the sketch and asks for the gaps; nest-cli import-cluster takes them as flags.
//
// Every message names the file and, where one applies, the line: "FILE:LINE: REASON".
#include "DeviceSpec.h"
#include "Result.h"
#include "Topology.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

enum class ClusterFormat { Slurm, NcclXml, NvidiaSmi, AstraSim };

// "slurm", "nccl-xml", "nvidia-smi", "astra-sim".
std::string clusterFormatName(ClusterFormat format);
std::optional<ClusterFormat> clusterFormatFromName(const std::string &name);
// "slurm, nccl-xml, nvidia-smi, astra-sim" (for messages and help).
std::string clusterFormatNames();
// From the content: XML with <system> (nccl-xml), a GPU0 ... X row (nvidia-smi), the YAML keys
// topology / npus_count (astra-sim), SwitchName= or BlockName= (slurm: the tree or the block
// plugin, SlurmBlocks.h); else an error asking for --format.
Result<ClusterFormat> detectClusterFormat(const std::string &text, const std::string &origin);

struct ClusterImportOptions {
    std::optional<ClusterFormat> format;      // nullopt: detected
    std::string nodeFile;                     // the inside of a node (nccl-xml or nvidia-smi); slurm only
    std::string device;                       // a device preset; "" = what the files say
    std::optional<int> gpusPerNode;
    // One value per level from the node outward (level 0 first). A list may also be one
    // shorter when level 0 comes from a node file: it then starts at level 1. Units as in
    // cluster files: GB/s (10^9 bytes/s), us, ratio >= 1.
    std::vector<double> bandwidthGBps;
    std::vector<double> latencyUs;
    std::vector<double> oversubscription;
    std::string name;                         // "" = the file name without its extension
};

// What the files say, before the options fill the gaps.
struct ClusterSketch {
    ClusterFormat format = ClusterFormat::Slurm;
    std::string origin;                       // the file
    std::string name;
    Topology skeleton;                        // levels named, groups and tree; nodes not yet filled
    std::vector<std::optional<double>> bandwidth;   // bytes/s per level, where the files give it
    std::vector<std::optional<double>> latency;     // seconds per level, where the files give it
    bool nodeFromFile = false;                // level 0 described by a node file (or is the file)
    // Levels above the node that belong to its NVLink domain and run at level 0's rate (a
    // Slurm topology/block file: 1, the block; Topology::nvlinkDomainLevel()).
    int nvlinkLevels = 0;
    int nvlinksPerGpu = 0;                    // from the node file (0: none known)
    std::optional<int> gpusPerNode;           // where the files fix it
    std::string gpusPerNodeWhere;             // "FILE:LINE" of that
    std::optional<DeviceSpec> device;         // where the files name the GPU model
    std::string deviceWhere;                  // "FILE:LINE" of that
    // NVLink islands inside a node (NodeDescription::islandSizes): then level 0 holds the
    // islands, level 1 the nodes (the PCIe/CPU fabric between islands). Empty: level 0 is
    // the node.
    std::vector<int> islandSizes;
    int nodeLevel = 0;                        // the level whose groups are the nodes
    std::string bandwidthNote;                // why a file cannot give level 0's bandwidth

    int levelCount() const { return skeleton.levelCount(); }
};

// Reads `file` (and options.nodeFile); uses options.format, else detects it.
Result<ClusterSketch> sketchCluster(const std::string &file, const ClusterImportOptions &options);
// Level `level`'s bandwidth as the files give it, given the device (an nvidia-smi matrix has
// link counts but no GPU generation: the device's NVLink speed completes it); bytes/s.
std::optional<double> sketchedBandwidth(const ClusterSketch &sketch, int level, const std::optional<DeviceSpec> &device);
// The cluster: the sketch with the options applied (flags override what the files say);
// refuses a GPU count or device that contradicts a file, a list of the wrong length, a level
// without bandwidth, values outside the documented ranges.
Result<Topology> assembleCluster(const ClusterSketch &sketch, const ClusterImportOptions &options);
// sketchCluster + assembleCluster.
Result<Topology> importCluster(const std::string &file, const ClusterImportOptions &options);

} // namespace nest
