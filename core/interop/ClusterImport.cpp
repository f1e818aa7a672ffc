#include "ClusterImport.h"

#include "AstraSimNetwork.h"
#include "FileGuard.h"
#include "ImportError.h"
#include "Limits.h"
#include "NcclTopology.h"
#include "NvLinkSpeed.h"
#include "NvidiaSmiTopology.h"
#include "SlurmBlocks.h"
#include "SlurmTopology.h"
#include "TextCase.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

namespace nest {

namespace {

constexpr double kImportGBps = 1e9;        // as cluster files: bandwidth_GBps
constexpr double kImportMicrosecond = 1e-6;

using SketchResult = Result<ClusterSketch>;

std::string where(const std::string &origin, int line)
{
    return line > 0 ? origin + ":" + std::to_string(line) : origin;
}

// Names of the levels of a switch tree of `levels` levels: node, leaf, spine, core, tier4...
std::vector<std::string> treeLevelNames(int levels)
{
    static const char *names[] = {"node", "leaf", "spine", "core"};
    std::vector<std::string> out;
    for (int l = 0; l < levels; ++l)
        out.push_back(l < 4 ? names[l] : "tier" + std::to_string(l));
    return out;
}

// The Slurm switch tree as groups: a switch at level = its height, nodes at level 0 below
// their leaf switch; a child switch lower than one level below its parent is reached
// through pass-through groups ("<switch>-up<level>") so every branch crosses every level.
Topology slurmSkeleton(const SlurmTopology &slurm)
{
    Topology t;
    const int levels = slurm.height() + 1;
    for (const std::string &name : treeLevelNames(levels))
        t.levels.push_back({name, {}});
    auto add = [&t](std::string name, int level, int parent) {
        TopoGroup g;
        g.name = std::move(name);
        g.level = level;
        g.parent = parent;
        t.groups.push_back(std::move(g));
        const int index = static_cast<int>(t.groups.size()) - 1;
        if (parent >= 0)
            t.groups[parent].children.push_back(index);
        return index;
    };
    // Depth-first in file order, with an explicit stack: (switch, the group it hangs below).
    std::vector<std::pair<int, int>> stack{{slurm.root, -1}};
    while (!stack.empty()) {
        const auto [s, parentGroup] = stack.back();
        stack.pop_back();
        const SlurmSwitch &sw = slurm.switches[s];
        int parent = parentGroup;
        const int parentLevel = parent >= 0 ? t.groups[parent].level : sw.height + 1;
        for (int level = parentLevel - 1; level > sw.height; --level)
            parent = add(sw.name + "-up" + std::to_string(level), level, parent);
        const int group = add(sw.name, sw.height, parent);
        for (const std::string &node : sw.nodes)
            add(node, 0, group);
        for (auto it = sw.children.rbegin(); it != sw.children.rend(); ++it)
            stack.push_back({*it, group});
    }
    t.root = 0;
    return t;
}

// One node with `gpus` devices (0 = not yet known) at level 0, the only level.
Topology oneNodeSkeleton()
{
    Topology t;
    t.levels.push_back({"node", {}});
    TopoGroup node;
    node.name = "node0";
    t.groups.push_back(node);
    t.root = 0;
    return t;
}

// Splits every node of the skeleton (its level-0 groups) into NVLink islands: a new level 0
// ("nvlink") of groups NODE-nvlI below each node, which moves to level 1; the devices are
// assigned later (assembleCluster), island by island.
void splitIntoIslands(ClusterSketch &sketch, const std::vector<int> &islandSizes)
{
    Topology &t = sketch.skeleton;
    t.levels.insert(t.levels.begin(), TopoLevel{"nvlink", {}});
    const size_t groups = t.groups.size();
    for (size_t g = 0; g < groups; ++g)
        ++t.groups[g].level;
    for (size_t g = 0; g < groups; ++g) {
        if (t.groups[g].level != 1)
            continue;
        for (size_t i = 0; i < islandSizes.size(); ++i) {
            TopoGroup island;
            island.name = t.groups[g].name + "-nvl" + std::to_string(i);
            island.level = 0;
            island.parent = static_cast<int>(g);
            t.groups.push_back(island);
            t.groups[g].children.push_back(static_cast<int>(t.groups.size()) - 1);
        }
    }
    sketch.bandwidth.insert(sketch.bandwidth.begin(), std::nullopt);
    sketch.latency.insert(sketch.latency.begin(), std::nullopt);
    sketch.islandSizes = islandSizes;
    sketch.nodeLevel = 1;
}

// Adds a node description to the sketch: level 0's bandwidth (when known), the GPU count
// and model, and the NIC bandwidth per GPU for every level above the node. A node of NVLink
// islands first becomes two levels (the islands, then the PCIe/CPU level between them).
void applyNode(ClusterSketch &sketch, const NodeDescription &node)
{
    if (!node.islandSizes.empty())
        splitIntoIslands(sketch, node.islandSizes);
    sketch.bandwidthNote = node.nvlinkUnknownWhy;
    if (node.pcieBandwidth && sketch.nodeLevel == 1)
        sketch.bandwidth[1] = node.pcieBandwidth;
    sketch.nodeFromFile = true;
    sketch.nvlinksPerGpu = node.nvlinksPerGpu;
    sketch.gpusPerNode = node.gpuCount;
    sketch.gpusPerNodeWhere = where(node.origin, node.gpuCountLine);
    if (node.device) {
        sketch.device = node.device;
        sketch.deviceWhere = where(node.origin, node.deviceLine);
    }
    if (node.nvlinkBandwidth)
        sketch.bandwidth[0] = node.nvlinkBandwidth;
    if (node.nicBandwidthPerGpu)  // the levels past the node and its NVLink domain
        for (int l = sketch.nodeLevel + 1 + sketch.nvlinkLevels; l < sketch.levelCount(); ++l)
            sketch.bandwidth[l] = node.nicBandwidthPerGpu;
}

// The text of an import file without a UTF-8 byte-order mark (Windows editors write one; it
// made the first key of a Slurm file unknown and an XML file not well-formed, issue 49).
std::string withoutByteOrderMark(std::string text)
{
    if (text.rfind("\xEF\xBB\xBF", 0) == 0)
        text.erase(0, 3);
    return text;
}

Result<NodeDescription> readNode(const std::string &text, const std::string &origin, ClusterFormat format)
{
    if (format == ClusterFormat::NcclXml)
        return parseNcclTopology(text, origin);
    return parseNvidiaSmiTopology(text, origin);
}

Result<std::vector<std::optional<double>>> levelList(const std::vector<double> &values, const char *flag,
                                                     const ClusterSketch &sketch, double unit, const Range &range)
{
    using R = Result<std::vector<std::optional<double>>>;
    const int levels = sketch.levelCount();
    std::vector<std::optional<double>> out(levels);
    if (values.empty())
        return out;
    const int n = static_cast<int>(values.size());
    int first = 0;
    if (n == levels - 1 && sketch.nodeFromFile && n > 0)
        first = 1;
    else if (n == levels - 2 && sketch.nodeFromFile && sketch.nodeLevel == 1 && n > 0)
        first = 2;  // the levels above a node of NVLink islands
    else if (n != levels) {
        std::string names;
        for (const TopoLevel &l : sketch.skeleton.levels)
            names += (names.empty() ? "" : ", ") + l.name;
        return R::failure(importError(sketch.origin, 0,
                                      std::string(flag) + " has " + std::to_string(n) + " value" + (n == 1 ? "" : "s") +
                                          "; the cluster has " + std::to_string(levels) + " level" +
                                          (levels == 1 ? "" : "s") + " (" + names + "): give " + std::to_string(levels) +
                                          ", from the node outward" +
                                          (sketch.nodeFromFile && levels > 1 + sketch.nodeLevel
                                               ? ", or " + std::to_string(levels - 1 - sketch.nodeLevel) +
                                                     " for the levels above the node"
                                               : std::string())));
    }
    for (int i = 0; i < n; ++i) {
        if (auto why = checkRange(values[i], range, std::string(flag) + " value " + std::to_string(i + 1)))
            return R::failure(importError(sketch.origin, 0, *why));
        out[first + i] = values[i] * unit;
    }
    return out;
}

} // namespace

std::string clusterFormatName(ClusterFormat format)
{
    switch (format) {
    case ClusterFormat::Slurm: return "slurm";
    case ClusterFormat::NcclXml: return "nccl-xml";
    case ClusterFormat::NvidiaSmi: return "nvidia-smi";
    case ClusterFormat::AstraSim: return "astra-sim";
    }
    return "slurm";
}

std::optional<ClusterFormat> clusterFormatFromName(const std::string &name)
{
    for (ClusterFormat f : {ClusterFormat::Slurm, ClusterFormat::NcclXml, ClusterFormat::NvidiaSmi, ClusterFormat::AstraSim})
        if (clusterFormatName(f) == name)
            return f;
    return std::nullopt;
}

std::string clusterFormatNames() { return "slurm, nccl-xml, nvidia-smi, astra-sim"; }

Result<ClusterFormat> detectClusterFormat(const std::string &text, const std::string &origin)
{
    const auto start = text.find_first_not_of(" \t\r\n");
    if (start != std::string::npos && text.compare(start, 1, "<") == 0) {
        if (text.find("<system") != std::string::npos)
            return ClusterFormat::NcclXml;
        return Result<ClusterFormat>::failure(importError(origin, 0, "XML without a <system> element: not an NCCL topology dump"));
    }
    std::stringstream in(text);
    std::string line;
    bool yamlTopology = false, yamlNpus = false, slurm = false;
    while (std::getline(in, line)) {
        // nvidia-smi underlines its header on a terminal; the row "GPU0 X ..." is plain.
        std::stringstream words(line);
        std::string first, second;
        words >> first >> second;
        if (first == "GPU0" && second == "X")
            return ClusterFormat::NvidiaSmi;
        yamlTopology = yamlTopology || line.rfind("topology:", 0) == 0;
        yamlNpus = yamlNpus || line.rfind("npus_count:", 0) == 0;
        const std::string code = asciiLower(line.substr(0, line.find('#')));
        slurm = slurm || code.find("switchname=") != std::string::npos || code.find("blockname=") != std::string::npos;
    }
    if (yamlTopology || yamlNpus)
        return ClusterFormat::AstraSim;
    if (slurm)
        return ClusterFormat::Slurm;
    return Result<ClusterFormat>::failure(importError(
        origin, 0, "cannot tell the format (not an NCCL topology XML, an nvidia-smi topo -m matrix, an ASTRA-sim "
                   "network YAML or a Slurm topology.conf): give --format " + clusterFormatNames()));
}

Result<ClusterSketch> sketchCluster(const std::string &file, const ClusterImportOptions &options)
{
    auto read = readFileText(file);
    if (!read)
        return SketchResult::failure(read.error());
    const std::optional<std::string> text = withoutByteOrderMark(std::move(*read));
    ClusterFormat format;
    if (options.format) {
        format = *options.format;
    } else {
        auto detected = detectClusterFormat(*text, file);
        if (!detected)
            return SketchResult::failure(detected.error());
        format = *detected;
    }
    ClusterSketch sketch;
    sketch.format = format;
    sketch.origin = file;
    sketch.name = options.name.empty() ? std::filesystem::path(file).stem().string() : options.name;
    if (!options.nodeFile.empty() && format != ClusterFormat::Slurm)
        return SketchResult::failure(importError(file, 0, "--node describes the nodes of a Slurm tree; this file is " +
                                                              clusterFormatName(format)));
    switch (format) {
    case ClusterFormat::Slurm: {
        // The block plugin (GB200 / GB300 NVL72 racks as blocks) or the tree plugin.
        const bool blocks = looksLikeSlurmBlocks(*text);
        auto slurm = blocks ? parseSlurmBlocks(*text, file) : parseSlurmTopology(*text, file);
        if (!slurm)
            return SketchResult::failure(slurm.error());
        if (slurm->height() + 1 > Topology::maxLevels)
            return SketchResult::failure(importError(file, slurm->switches[slurm->root].line,
                                                     "the switch tree is " + std::to_string(slurm->height()) +
                                                         " switches deep; a cluster has at most " +
                                                         std::to_string(Topology::maxLevels) + " levels"));
        sketch.skeleton = slurmSkeleton(*slurm);
        if (blocks) {
            // Each block is one NVLink domain: it runs at the node's NVLink rate; the
            // scale-out fabric between blocks is the level above.
            sketch.nvlinkLevels = 1;
            sketch.skeleton.levels[1].name = "nvlink-block";
            if (sketch.levelCount() > 2)
                sketch.skeleton.levels[2].name = "scale-out";
        }
        sketch.bandwidth.assign(sketch.levelCount(), std::nullopt);
        sketch.latency.assign(sketch.levelCount(), std::nullopt);
        if (!options.nodeFile.empty()) {
            auto nodeRead = readFileText(options.nodeFile);
            if (!nodeRead)
                return SketchResult::failure(nodeRead.error());
            const std::optional<std::string> nodeText = withoutByteOrderMark(std::move(*nodeRead));
            auto nodeFormat = detectClusterFormat(*nodeText, options.nodeFile);
            if (!nodeFormat)
                return SketchResult::failure(nodeFormat.error());
            if (*nodeFormat != ClusterFormat::NcclXml && *nodeFormat != ClusterFormat::NvidiaSmi)
                return SketchResult::failure(importError(options.nodeFile, 0, "--node takes an NCCL topology XML or an "
                                                                              "nvidia-smi topo -m matrix; this is " +
                                                                                  clusterFormatName(*nodeFormat)));
            auto node = readNode(*nodeText, options.nodeFile, *nodeFormat);
            if (!node)
                return SketchResult::failure(node.error());
            applyNode(sketch, *node);
        }
        break;
    }
    case ClusterFormat::NcclXml:
    case ClusterFormat::NvidiaSmi: {
        auto node = readNode(*text, file, format);
        if (!node)
            return SketchResult::failure(node.error());
        sketch.skeleton = oneNodeSkeleton();
        sketch.bandwidth.assign(1, std::nullopt);
        sketch.latency.assign(1, std::nullopt);
        applyNode(sketch, *node);
        break;
    }
    case ClusterFormat::AstraSim: {
        auto net = parseAstraSimNetwork(*text, file);
        if (!net)
            return SketchResult::failure(net.error());
        sketch.skeleton = topologyFromAstraSim(*net, DeviceSpec{}, sketch.name);
        for (const TopoLevel &l : sketch.skeleton.levels) {
            sketch.bandwidth.push_back(l.link.bandwidth);
            sketch.latency.push_back(l.link.latency);
        }
        sketch.gpusPerNode = net->dimensions.front().npus;
        sketch.gpusPerNodeWhere = where(file, net->dimensions.front().line);
        break;
    }
    }
    return sketch;
}

std::optional<double> sketchedBandwidth(const ClusterSketch &sketch, int level, const std::optional<DeviceSpec> &device)
{
    if (level < 0 || level >= sketch.levelCount())
        return std::nullopt;
    if (sketch.bandwidth[level])
        return sketch.bandwidth[level];
    if (level == 0 && sketch.nvlinksPerGpu > 0 && device)
        if (const std::optional<int> sm = smOfDevicePreset(device->name))
            if (const std::optional<double> perLink = nvlinkSpeedForSm(*sm))
                return sketch.nvlinksPerGpu * *perLink;
    return std::nullopt;
}

namespace {

// The device: the flag, which must agree with a file that names the GPU model.
Result<DeviceSpec> importedDevice(const ClusterSketch &sketch, const ClusterImportOptions &options)
{
    using R = Result<DeviceSpec>;
    std::optional<DeviceSpec> device = sketch.device;
    if (!options.device.empty()) {
        auto preset = devicePreset(options.device);
        if (!preset)
            return R::failure(importError(sketch.origin, 0, "--device: " + preset.error()));
        if (sketch.device && !(*sketch.device == *preset))
            return R::failure(sketch.deviceWhere + ": the file's GPUs are " + sketch.device->name + ", --device says " +
                              preset->name);
        device = *preset;
    }
    if (!device)
        return R::failure(importError(sketch.origin, 0, "the file does not name the GPU model: give --device PRESET "
                                                        "(nest-cli presets lists them)"));
    return *device;
}

// GPUs per node: the flag, which must agree with a file that fixes the count.
Result<int> importedGpusPerNode(const ClusterSketch &sketch, const ClusterImportOptions &options)
{
    using R = Result<int>;
    std::optional<int> gpus = sketch.gpusPerNode;
    if (options.gpusPerNode) {
        if (sketch.gpusPerNode && *sketch.gpusPerNode != *options.gpusPerNode)
            return R::failure(sketch.gpusPerNodeWhere + ": the file has " + std::to_string(*sketch.gpusPerNode) +
                              " GPUs per node, --gpus-per-node says " + std::to_string(*options.gpusPerNode));
        if (auto why = checkRange(*options.gpusPerNode, limits::devices, "--gpus-per-node"))
            return R::failure(importError(sketch.origin, 0, *why));
        gpus = options.gpusPerNode;
    }
    if (!gpus)
        return R::failure(importError(sketch.origin, 0, "the file does not say how many GPUs a node has: give --node FILE "
                                                        "(an NCCL topology XML or nvidia-smi topo -m matrix) or "
                                                        "--gpus-per-node N"));
    return *gpus;
}

} // namespace

Result<Topology> assembleCluster(const ClusterSketch &sketch, const ClusterImportOptions &options)
{
    using R = Result<Topology>;
    const auto imported = importedDevice(sketch, options);
    if (!imported)
        return R::failure(imported.error());
    const std::optional<DeviceSpec> device = *imported;
    auto gpus = importedGpusPerNode(sketch, options);
    if (!gpus)
        return R::failure(gpus.error());
    auto bandwidth = levelList(options.bandwidthGBps, "--bandwidth", sketch, kImportGBps, limits::bandwidthGBps);
    if (!bandwidth)
        return R::failure(bandwidth.error());
    auto latency = levelList(options.latencyUs, "--latency", sketch, kImportMicrosecond, limits::latencyUs);
    if (!latency)
        return R::failure(latency.error());
    auto oversubscription = levelList(options.oversubscription, "--oversubscription", sketch, 1, limits::oversubscription);
    if (!oversubscription)
        return R::failure(oversubscription.error());

    // Devices counted before any is made (issue 48: --gpus-per-node 1048576 on 10,000 nodes
    // filled 4 GB before the old check after the loop).
    long long nodes = 0;
    for (const TopoGroup &g : sketch.skeleton.groups)
        nodes += g.level == sketch.nodeLevel ? 1 : 0;
    if (nodes * static_cast<long long>(*gpus) > Topology::maxDevices)
        return R::failure(importError(sketch.origin, 0, std::to_string(nodes) + " nodes x " + std::to_string(*gpus) +
                                                            " GPUs = " + std::to_string(nodes * *gpus) +
                                                            " devices, more than the " +
                                                            std::to_string(Topology::maxDevices) + " a cluster may have"));
    Topology t = sketch.skeleton;
    t.name = sketch.name;
    t.deviceTypes = {*device};
    for (int l = 0; l < t.levelCount(); ++l) {
        LinkParams &link = t.levels[l].link;
        // A level inside the NVLink domain (a Slurm block) runs at the node's rate.
        const bool nvlinkLevel = l > sketch.nodeLevel && l <= sketch.nodeLevel + sketch.nvlinkLevels;
        const std::optional<double> bw = (*bandwidth)[l]  ? (*bandwidth)[l]
                                         : nvlinkLevel    ? std::optional<double>(t.levels[0].link.bandwidth)
                                                          : sketchedBandwidth(sketch, l, device);
        if (!bw)
            return R::failure(importError(sketch.origin, 0, "level " + std::to_string(l) + " (" + t.levels[l].name +
                                                                ") has no bandwidth: the files do not give it" +
                                                                (l == 0 && !sketch.bandwidthNote.empty()
                                                                     ? " (" + sketch.bandwidthNote + ")"
                                                                     : std::string()) +
                                                                "; give --bandwidth, one value in GB/s per level from "
                                                                "the node outward"));
        link.bandwidth = *bw;
        link.latency = (*latency)[l].value_or(sketch.latency[l].value_or(nvlinkLevel ? t.levels[0].link.latency : 0));
        link.oversubscription = (*oversubscription)[l].value_or(1);
        // What import-cluster writes, --cluster must read (issue 48): the loader's ranges on
        // the values the files gave (the flags were checked above), e.g. an NCCL NIC speed
        // that makes a per-GPU bandwidth above 10 PB/s.
        const std::string level = "level " + std::to_string(l) + " (" + t.levels[l].name + "): ";
        if (const auto why = rangeProblem(link.bandwidth / kImportGBps, limits::bandwidthGBps))
            return R::failure(importError(sketch.origin, 0, level + "bandwidth from the file" +
                                                                (sketch.nodeFromFile && l > 0 ? "s (the NICs per GPU)" : "") +
                                                                ": " + *why + "; give --bandwidth"));
        if (const auto why = rangeProblem(link.latency / kImportMicrosecond, limits::latencyUs))
            return R::failure(importError(sketch.origin, 0, level + "latency from the file: " + *why + "; give --latency"));
    }
    for (TopoGroup &g : t.groups)
        if (g.level == sketch.nodeLevel && sketch.nodeLevel == 1) {
            // A node of NVLink islands: its level-0 children in island order.
            for (size_t i = 0; i < g.children.size() && i < sketch.islandSizes.size(); ++i) {
                TopoGroup &island = t.groups[static_cast<size_t>(g.children[i])];
                island.devices.assign(static_cast<size_t>(sketch.islandSizes[i]), 0);
                island.deviceType = 0;
            }
        } else if (g.level == 0 && sketch.nodeLevel == 0) {
            g.devices.assign(static_cast<size_t>(*gpus), 0);
            g.deviceType = 0;
        }
    long long total = 0;
    for (const TopoGroup &g : t.groups)
        total += g.level == sketch.nodeLevel ? *gpus : 0;
    if (total > Topology::maxDevices)
        return R::failure(importError(sketch.origin, 0, std::to_string(total) + " devices, more than the " +
                                                            std::to_string(Topology::maxDevices) + " a cluster may have"));
    t.reindex();
    if (const std::string why = t.validate(); !why.empty())
        return R::failure(importError(sketch.origin, 0, why));
    return t;
}

Result<Topology> importCluster(const std::string &file, const ClusterImportOptions &options)
{
    auto sketch = sketchCluster(file, options);
    if (!sketch)
        return Result<Topology>::failure(sketch.error());
    return assembleCluster(*sketch, options);
}

} // namespace nest
