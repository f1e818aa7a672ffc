#include "ClusterTemplates.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace nest {

namespace {

std::string fmt(double x)
{
    std::ostringstream ss;
    ss.precision(12);
    ss << x;
    return ss.str();
}

// The validated parameter values of one template instance. fail() throws JsonError whose
// path names the parameter under `path`.
class Params {
public:
    Params(const ClusterTemplate &tmpl, const std::map<std::string, double> &given, std::string path)
        : m_path(std::move(path))
    {
        for (const auto &entry : given) {
            const std::string &key = entry.first;
            const auto it = std::find_if(tmpl.params.begin(), tmpl.params.end(),
                                         [&key](const TemplateParam &p) { return p.key == key; });
            if (it == tmpl.params.end()) {
                std::string known;
                for (const auto &p : tmpl.params)
                    known += (known.empty() ? "" : ", ") + p.key;
                fail(key, "unknown parameter of template '" + tmpl.key + "' (known: " + known + ")");
            }
        }
        for (const auto &p : tmpl.params) {
            const auto it = given.find(p.key);
            const double v = it == given.end() ? p.value : it->second;
            if (!std::isfinite(v))
                fail(p.key, "must be a finite number");
            if (p.integer && std::floor(v) != v)
                fail(p.key, "must be a whole number, found " + fmt(v));
            if (v < p.min || v > p.max)
                fail(p.key, "must be between " + fmt(p.min) + " and " + fmt(p.max) + ", found " + fmt(v));
            m_values[p.key] = v;
        }
    }

    double operator[](const std::string &key) const { return m_values.at(key); }
    int integer(const std::string &key) const { return static_cast<int>(m_values.at(key)); }
    [[noreturn]] void fail(const std::string &key, const std::string &reason) const
    {
        throw JsonError(key.empty() ? m_path : childPath(m_path, key), reason);
    }

private:
    std::string m_path;
    std::map<std::string, double> m_values;
};

using Builder = std::function<std::vector<UniformLevel>(const Params &)>;

UniformLevel level(const std::string &name, int fanout, double gbps, double us, double oversubscription = 1)
{
    return {name, fanout, linkFromUnits(gbps, us, oversubscription)};
}

TemplateParam countParam(std::string key, std::string label, double value, double max)
{
    return {std::move(key), std::move(label), value, 1, max, true};
}
TemplateParam bandwidth(std::string key, std::string label, double value)
{
    return {std::move(key), std::move(label), value, 0.001, 1e6, false};
}
TemplateParam latency(std::string key, std::string label, double value)
{
    return {std::move(key), std::move(label), value, 0, 1e6, false};
}
TemplateParam ratio(std::string key, std::string label, double value)
{
    return {std::move(key), std::move(label), value, 1, 1000, false};
}

// --- torus: hop-distance classes as levels ------------------------------------------------
// A class is a sub-block of extent[d] chips per dimension inside a torus of dims[d]. Its
// per-device bandwidth is the uniform-traffic bound: every chip injects on the links that stay
// inside the block, every byte occupies one link per hop, so
//     bandwidth = link_bandwidth * links_per_chip / mean_hops
// with links_per_chip = sum over dimensions of 2(s-1)/s for a segment of s < D chips, 2 for a
// whole ring (1 when D == 2), and mean_hops the mean torus (Manhattan, wrap-around) distance
// over ordered pairs of distinct chips of the block. Latency = diameter (in hops) * per-hop
// latency.
struct TorusClass {
    double bandwidthGBps = 0;
    double latencyUs = 0;
};

TorusClass torusClass(const std::vector<int> &extent, const std::vector<int> &dims, double linkGBps, double hopUs)
{
    double n = 1;
    for (int s : extent)
        n *= s;
    if (n < 2)
        return {linkGBps, hopUs};  // a single chip: no traffic stays inside; any value will do
    double links = 0, pairHops = 0;
    int diameter = 0;
    for (size_t d = 0; d < extent.size(); ++d) {
        const int s = extent[d], dim = dims[d];
        const bool ring = s == dim;
        if (s > 1)
            links += ring ? (dim == 2 ? 1.0 : 2.0) : 2.0 * (s - 1) / s;
        double sum = 0;  // over ordered pairs of positions along this dimension
        for (int i = 0; i < s; ++i)
            for (int j = 0; j < s; ++j) {
                const int k = std::abs(i - j);
                sum += ring ? std::min(k, dim - k) : k;
            }
        const double others = n / s;  // every combination of the other coordinates
        pairHops += sum * others * others;
        diameter += ring ? dim / 2 : s - 1;
    }
    const double meanHops = pairHops / (n * (n - 1));
    return {linkGBps * links / meanHops, diameter * hopUs};
}

std::vector<UniformLevel> torus(const Params &p, int nd)
{
    static const char *axes[] = {"x", "y", "z"};
    std::vector<int> dims, tile, block;
    int tileSize = 1, tilesInBlock = 1, blockCount = 1;
    for (int d = 0; d < nd; ++d) {
        const std::string a = axes[d];
        const int dim = p.integer(a), t = p.integer("tile_" + a), b = p.integer("block_" + a);
        if (b % t != 0)
            p.fail("block_" + a, "must be a multiple of tile_" + a + " (" + std::to_string(t) + "), found " +
                                     std::to_string(b));
        if (dim % b != 0)
            p.fail("block_" + a, "must divide " + a + " (" + std::to_string(dim) + "), found " + std::to_string(b));
        dims.push_back(dim);
        tile.push_back(t);
        block.push_back(b);
        tileSize *= t;
        tilesInBlock *= b / t;
        blockCount *= dim / b;
    }
    const double linkGBps = p["link_bandwidth_GBps"], hopUs = p["hop_latency_us"];
    const TorusClass tileClass = torusClass(tile, dims, linkGBps, hopUs);
    const TorusClass blockClass = torusClass(block, dims, linkGBps, hopUs);
    const TorusClass torusAll = torusClass(dims, dims, linkGBps, hopUs);
    return {level("tile", tileSize, tileClass.bandwidthGBps, tileClass.latencyUs),
            level("block", tilesInBlock, blockClass.bandwidthGBps, blockClass.latencyUs),
            level("torus", blockCount, torusAll.bandwidthGBps, torusAll.latencyUs)};
}

std::vector<TemplateParam> torusParams(int nd)
{
    static const char *axes[] = {"x", "y", "z"};
    const double side = nd == 2 ? 8 : 4, maxSide = nd == 2 ? 256 : 64;
    std::vector<TemplateParam> out;
    for (int d = 0; d < nd; ++d)
        out.push_back(countParam(axes[d], std::string("Chips along ") + axes[d], side, maxSide));
    for (int d = 0; d < nd; ++d)
        out.push_back(countParam(std::string("tile_") + axes[d], std::string("Tile extent along ") + axes[d],
                            d < 2 ? 2 : 1, maxSide));
    for (int d = 0; d < nd; ++d)
        out.push_back(countParam(std::string("block_") + axes[d], std::string("Block extent along ") + axes[d],
                            d < 2 ? 4 : 1, maxSide));
    out.push_back(bandwidth("link_bandwidth_GBps", "ICI link bandwidth per direction (GB/s)", 50));
    out.push_back(latency("hop_latency_us", "Latency per hop (us)", 1));
    return out;
}

// --- the paper's clusters -----------------------------------------------------------------
int multipleOf(const Params &p, const std::string &key, int unit)
{
    const int n = p.integer(key);
    if (n % unit != 0)
        p.fail(key, "must be a multiple of " + std::to_string(unit) + ", found " + std::to_string(n));
    return n;
}

// The NEST artifact's TPUv4-like accelerator: 275 TFLOPS (TPU v4 BF16 peak) and
// maxMemoryPerDevice = 68719476736 bytes (64 GiB) as in every input file of
// /work/shared/nest-artifact/inputs; HBM bandwidth 1200 GB/s from the TPU v4 documentation.
DeviceSpec tpuv4Like()
{
    return {"tpuv4-like", 275 * 1e12, 68.719476736 * 1e9, 1200 * 1e9, 0.0,
            "NEST artifact inputs: TPUv4-like, 275 TFLOPS, maxMemoryPerDevice 68719476736 B; TPU v4 HBM 1200 GB/s"};
}

struct TemplateDef {
    ClusterTemplate info;
    Builder build;
    bool railOptimized = false;  // Topology::railOptimized of what it builds
};

TemplateDef fatTreeTemplate()
{
    return {{"fat-tree", "Fat-tree (node / rack / spine)",
             "A non-blocking three-tier tree: devices on an intra-node fabric, nodes under a rack (leaf) "
             "switch, racks under a spine.",
             {countParam("devices_per_node", "Devices per node", 8, 64),
              countParam("nodes_per_rack", "Nodes per rack", 4, 1024),
              countParam("racks", "Racks", 4, 4096),
              bandwidth("node_bandwidth_GBps", "Intra-node bandwidth per device (GB/s)", 450),
              bandwidth("rack_bandwidth_GBps", "Rack bandwidth per device (GB/s)", 50),
              bandwidth("spine_bandwidth_GBps", "Spine bandwidth per device (GB/s)", 50),
              latency("node_latency_us", "Intra-node latency (us)", 1),
              latency("rack_latency_us", "Rack latency (us)", 2),
              latency("spine_latency_us", "Spine latency (us)", 4)},
             "h100-sxm-80gb"},
            [](const Params &p) {
                return std::vector<UniformLevel>{
                    level("node", p.integer("devices_per_node"), p["node_bandwidth_GBps"], p["node_latency_us"]),
                    level("rack", p.integer("nodes_per_rack"), p["rack_bandwidth_GBps"], p["rack_latency_us"]),
                    level("spine", p.integer("racks"), p["spine_bandwidth_GBps"], p["spine_latency_us"])};
            }};
}

// Defaults = the a100-512 example of docs/formats.md (Cluster files).
TemplateDef spineLeafTemplate()
{
    return {{"spine-leaf", "Spine-leaf with oversubscription",
             "Nodes under leaf (top-of-rack) switches, leaves under an oversubscribed spine: a flow "
             "crossing the spine gets bandwidth / oversubscription when every device sends at once.",
             {countParam("devices_per_node", "Devices per node", 8, 64),
              countParam("nodes_per_leaf", "Nodes per leaf", 4, 1024),
              countParam("leaves", "Leaves", 16, 4096),
              bandwidth("node_bandwidth_GBps", "Intra-node bandwidth per device (GB/s)", 300),
              bandwidth("leaf_bandwidth_GBps", "Leaf bandwidth per device (GB/s)", 25),
              bandwidth("spine_bandwidth_GBps", "Spine bandwidth per device (GB/s)", 25),
              ratio("leaf_oversubscription", "Leaf oversubscription", 1),
              ratio("spine_oversubscription", "Spine oversubscription", 2),
              latency("node_latency_us", "Intra-node latency (us)", 1),
              latency("leaf_latency_us", "Leaf latency (us)", 5),
              latency("spine_latency_us", "Spine latency (us)", 8)},
             "a100-80gb"},
            [](const Params &p) {
                return std::vector<UniformLevel>{
                    level("node", p.integer("devices_per_node"), p["node_bandwidth_GBps"], p["node_latency_us"]),
                    level("rack", p.integer("nodes_per_leaf"), p["leaf_bandwidth_GBps"], p["leaf_latency_us"],
                          p["leaf_oversubscription"]),
                    level("spine", p.integer("leaves"), p["spine_bandwidth_GBps"], p["spine_latency_us"],
                          p["spine_oversubscription"])};
            }};
}

// NVIDIA DGX SuperPOD (DGX H100) reference architecture: 8 H100 per DGX on NVLink 4
// (18 links x 25 GB/s = 450 GB/s per direction per GPU), one ConnectX-7 400 Gb/s NDR
// InfiniBand port per GPU (50 GB/s per direction) on a rail-optimised, non-blocking
// compute fabric, 32 DGX per scalable unit (SU), SUs joined by spine (core) switches;
// the full SuperPOD is 4 SUs. Latencies are typical values, not from the RA.
TemplateDef superpodTemplate()
{
    return {{"superpod", "DGX-SuperPOD-like (H100)",
             "8 GPUs per DGX node on NVLink, 32 nodes per scalable unit on NDR InfiniBand leaves, SUs under "
             "a non-blocking core (NVIDIA DGX SuperPOD reference architecture).",
             {countParam("sus", "Scalable units", 4, 64),
              countParam("nodes_per_su", "Nodes per scalable unit", 32, 64),
              countParam("gpus_per_node", "GPUs per node", 8, 16),
              bandwidth("nvlink_bandwidth_GBps", "NVLink bandwidth per GPU per direction (GB/s)", 450),
              bandwidth("su_bandwidth_GBps", "InfiniBand bandwidth per GPU in an SU (GB/s)", 50),
              bandwidth("core_bandwidth_GBps", "InfiniBand bandwidth per GPU across SUs (GB/s)", 50),
              ratio("core_oversubscription", "Core oversubscription", 1),
              latency("nvlink_latency_us", "NVLink latency (us)", 1),
              latency("su_latency_us", "SU latency (us)", 2),
              latency("core_latency_us", "Core latency (us)", 4)},
             "h100-sxm-80gb"},
            [](const Params &p) {
                return std::vector<UniformLevel>{
                    level("node", p.integer("gpus_per_node"), p["nvlink_bandwidth_GBps"], p["nvlink_latency_us"]),
                    level("su", p.integer("nodes_per_su"), p["su_bandwidth_GBps"], p["su_latency_us"]),
                    level("core", p.integer("sus"), p["core_bandwidth_GBps"], p["core_latency_us"],
                          p["core_oversubscription"])};
            }};
}

// Rail-optimised DGX H100 SuperPOD compute fabric (NVIDIA DGX SuperPOD reference
// architecture, DGX H100: "rail-optimized" fat tree): GPU i of each of the SU's 32 DGX is
// cabled to leaf i of the SU (one NDR 400 Gb/s port per GPU = 50 GB/s), leaves join SUs
// through spine switches; the leaves' uplinks serve one rail each
// (Topology::railOptimized). Same defaults as `superpod`; the spine oversubscription is a
// parameter (1 in the reference architecture). Latencies are typical values, not from
// the RA.
// A rail-optimised DGX SuperPOD compute fabric: the layout `rail-optimized` and
// `dgx-b200-superpod` share (only the key, the words, the NVLink rate and the device differ).
TemplateDef railOptimizedFabric(const char *key, const char *title, const char *description, double nvlinkGBps,
                                const char *device)
{
    TemplateDef def{{key, title, description,
                     {countParam("sus", "Scalable units", 4, 64),
                      countParam("nodes_per_su", "Nodes per scalable unit", 32, 64),
                      countParam("gpus_per_node", "GPUs (rails) per node", 8, 16),
                      bandwidth("nvlink_bandwidth_GBps", "NVLink bandwidth per GPU per direction (GB/s)", nvlinkGBps),
                      bandwidth("rail_bandwidth_GBps", "Rail (leaf) bandwidth per GPU (GB/s)", 50),
                      bandwidth("spine_bandwidth_GBps", "Spine bandwidth per GPU across SUs (GB/s)", 50),
                      ratio("spine_oversubscription", "Spine (leaf uplink) oversubscription", 1),
                      latency("nvlink_latency_us", "NVLink latency (us)", 1),
                      latency("rail_latency_us", "Rail leaf latency (us)", 2),
                      latency("spine_latency_us", "Spine latency (us)", 4)},
                     device},
                    [](const Params &p) {
                        return std::vector<UniformLevel>{
                            level("node", p.integer("gpus_per_node"), p["nvlink_bandwidth_GBps"],
                                  p["nvlink_latency_us"]),
                            level("su", p.integer("nodes_per_su"), p["rail_bandwidth_GBps"], p["rail_latency_us"]),
                            level("spine", p.integer("sus"), p["spine_bandwidth_GBps"], p["spine_latency_us"],
                                  p["spine_oversubscription"])};
                    }};
    def.railOptimized = true;
    return def;
}

TemplateDef railOptimizedTemplate()
{
    return railOptimizedFabric("rail-optimized", "Rail-optimised fat tree (DGX H100 SuperPOD-like)",
                               "8 GPUs per DGX node on NVLink; in each scalable unit GPU i of every node is cabled to "
                               "leaf (rail) i; rail leaves join the SUs through spines whose uplinks serve one rail each "
                               "(NVIDIA DGX SuperPOD reference architecture).",
                               450, "h100-sxm-80gb");
}

// GB200 / GB300 NVL72 (NVIDIA GB200 NVL72 and GB300 NVL72 data sheets; DGX GB200 SuperPOD
// reference architecture): 18 compute trays of 4 GPUs in one rack, every GPU on the rack's
// NVLink 5 switches at 1.8 TB/s (900 GB/s per direction), so the tray and the rack levels
// run at the same NVLink rate and the rack is one NVLink domain (Topology::nvlinkDomainLevel).
// Racks join a scale-out fabric through one NIC per GPU (ConnectX-7 400 Gb/s = 50 GB/s on
// GB200; ConnectX-8 800 Gb/s = 100 GB/s on GB300): scalable units of `racks_per_su` racks
// on leaf switches, SUs under spines at an oversubscription; `rail_optimized` 1 cables GPU i
// of every tray to rail i (Topology::railOptimized). Latencies are typical values.
TemplateDef nvl72Template()
{
    return {{"nvl72", "GB200 / GB300 NVL72 racks",
             "72 GPUs per rack in one NVLink domain (18 trays of 4, NVLink 5 at 900 GB/s per direction), racks "
             "in scalable units on a scale-out fabric at the NIC rate, SUs under an oversubscribed spine "
             "(NVIDIA GB200 NVL72 data sheet, DGX GB200 SuperPOD reference architecture).",
             {countParam("sus", "Scalable units", 1, 1024),
              countParam("racks_per_su", "NVL72 racks per scalable unit", 8, 64),
              countParam("trays_per_rack", "Compute trays per rack", 18, 18),
              countParam("gpus_per_tray", "GPUs per tray", 4, 4),
              bandwidth("nvlink_bandwidth_GBps", "NVLink bandwidth per GPU per direction (GB/s)", 900),
              bandwidth("nic_bandwidth_GBps", "Scale-out NIC bandwidth per GPU (GB/s)", 50),
              bandwidth("spine_bandwidth_GBps", "Spine bandwidth per GPU across SUs (GB/s)", 50),
              ratio("spine_oversubscription", "Spine oversubscription", 1),
              {"rail_optimized", "Rail-optimised scale-out (0 or 1)", 1, 0, 1, true},
              latency("nvlink_latency_us", "NVLink latency (us)", 1),
              latency("su_latency_us", "Scale-out leaf latency (us)", 2),
              latency("spine_latency_us", "Spine latency (us)", 4)},
             "gb200"},
            [](const Params &p) {
                return std::vector<UniformLevel>{
                    level("tray", p.integer("gpus_per_tray"), p["nvlink_bandwidth_GBps"], p["nvlink_latency_us"]),
                    level("nvl72", p.integer("trays_per_rack"), p["nvlink_bandwidth_GBps"], p["nvlink_latency_us"]),
                    level("su", p.integer("racks_per_su"), p["nic_bandwidth_GBps"], p["su_latency_us"]),
                    level("spine", p.integer("sus"), p["spine_bandwidth_GBps"], p["spine_latency_us"],
                          p["spine_oversubscription"])};
            }};
}

// DGX B200 SuperPOD (NVIDIA DGX SuperPOD reference architecture, DGX B200): 8 B200 per node on
// NVLink 5 (900 GB/s per direction), 32 nodes per scalable unit on a rail-optimised
// ConnectX-7 400 Gb/s (50 GB/s per GPU) fabric, SUs under spines.
TemplateDef dgxB200Template()
{
    return railOptimizedFabric("dgx-b200-superpod", "DGX B200 SuperPOD (rail-optimised)",
                               "8 B200 per DGX node on NVLink 5; in each scalable unit of 32 nodes GPU i of every node "
                               "is cabled to rail i at 400 Gb/s; SUs under spines (NVIDIA DGX SuperPOD reference "
                               "architecture, DGX B200).",
                               900, "b200");
}

TemplateDef torus2dTemplate()
{
    return {{"torus2d", "2D torus (hop-distance classes)",
             "An X x Y torus of chips, grouped into tiles and blocks: level 0 = same tile, level 1 = same "
             "block, level 2 = anywhere. Per-class bandwidth = link bandwidth x links per chip inside the "
             "class / mean hop count; latency = class diameter x per-hop latency.",
             torusParams(2), "tpuv4"},
            [](const Params &p) { return torus(p, 2); }};
}

TemplateDef torus3dTemplate()
{
    return {{"torus3d", "3D torus (hop-distance classes)",
             "An X x Y x Z torus (TPU v4: 4x4x4 cube, 2x2x1 chips per tray) grouped into tiles and blocks "
             "as for torus2d.",
             torusParams(3), "tpuv4"},
            [](const Params &p) { return torus(p, 3); }};
}

// NEST paper §5.2 / the artifact's inputs: 8 per node at 900 GB/s, 4 nodes per level-1
// switch at 100 GB/s, level-2 aggregate 400 GB/s, 0.1 / 0.2 / 0.3 ms per level.
TemplateDef paperFatTreeTemplate()
{
    return {{"paper-fattree", "NEST paper fat-tree (TPUv4-like)",
             "The fat-tree of the NEST paper's evaluation: 8 accelerators per node (900 GB/s), 4 nodes per "
             "level-1 switch (100 GB/s), level-2 aggregate 400 GB/s; 0.1/0.2/0.3 ms per level.",
             {countParam("devices", "Accelerators (multiple of 32)", 64, 16384),
              bandwidth("node_bandwidth_GBps", "Level-0 bandwidth (GB/s)", 900),
              bandwidth("rack_bandwidth_GBps", "Level-1 bandwidth (GB/s)", 100),
              bandwidth("spine_bandwidth_GBps", "Level-2 bandwidth (GB/s)", 400),
              latency("node_latency_us", "Level-0 latency (us)", 100),
              latency("rack_latency_us", "Level-1 latency (us)", 200),
              latency("spine_latency_us", "Level-2 latency (us)", 300)},
             "tpuv4-like"},
            [](const Params &p) {
                const int n = multipleOf(p, "devices", 32);
                return std::vector<UniformLevel>{
                    level("node", 8, p["node_bandwidth_GBps"], p["node_latency_us"]),
                    level("rack", 4, p["rack_bandwidth_GBps"], p["rack_latency_us"]),
                    level("spine", n / 32, p["spine_bandwidth_GBps"], p["spine_latency_us"])};
            }};
}

// NEST paper §5.3: 8 H100 per node on NVLink 900 GB/s, level-1 switches at 12.5 GB/s
// connecting 4 nodes to two spine switches, "a 2:2 oversubscribed topology" (read here as
// oversubscription 2 on the spine uplinks; see docs/formats.md (Cluster files)). Latencies are
// not given by the paper; typical values.
TemplateDef paperSpineLeafTemplate()
{
    return {{"paper-spineleaf", "NEST paper spine-leaf (H100)",
             "The spine-leaf cluster of the NEST paper: 8 H100 per node (NVLink 900 GB/s), 4 nodes per leaf "
             "at 12.5 GB/s, leaves to two spines with 2:1 oversubscription.",
             {countParam("devices", "GPUs (multiple of 32)", 1024, 16384),
              bandwidth("node_bandwidth_GBps", "NVLink bandwidth (GB/s)", 900),
              bandwidth("leaf_bandwidth_GBps", "Leaf bandwidth per GPU (GB/s)", 12.5),
              bandwidth("spine_bandwidth_GBps", "Spine bandwidth per GPU (GB/s)", 12.5),
              ratio("spine_oversubscription", "Spine oversubscription", 2),
              latency("node_latency_us", "NVLink latency (us)", 1),
              latency("leaf_latency_us", "Leaf latency (us)", 5),
              latency("spine_latency_us", "Spine latency (us)", 10)},
             "h100-sxm-80gb"},
            [](const Params &p) {
                const int n = multipleOf(p, "devices", 32);
                return std::vector<UniformLevel>{
                    level("node", 8, p["node_bandwidth_GBps"], p["node_latency_us"]),
                    level("rack", 4, p["leaf_bandwidth_GBps"], p["leaf_latency_us"]),
                    level("spine", n / 32, p["spine_bandwidth_GBps"], p["spine_latency_us"],
                          p["spine_oversubscription"])};
            }};
}

// NEST paper §5.4: 8 or 16 V100, 2 per node on NVLink 300 GB/s, nodes on one 12.5 GB/s
// switch. Latencies typical values.
TemplateDef paperV100Template()
{
    return {{"paper-v100", "NEST paper V100 cluster",
             "The small real cluster of the NEST paper: 2 V100 per node on NVLink 300 GB/s, all nodes on one "
             "12.5 GB/s switch.",
             {countParam("devices", "GPUs (even)", 16, 1024),
              bandwidth("node_bandwidth_GBps", "NVLink bandwidth (GB/s)", 300),
              bandwidth("switch_bandwidth_GBps", "Switch bandwidth per GPU (GB/s)", 12.5),
              latency("node_latency_us", "NVLink latency (us)", 1),
              latency("switch_latency_us", "Switch latency (us)", 5)},
             "v100-32gb"},
            [](const Params &p) {
                const int n = multipleOf(p, "devices", 2);
                return std::vector<UniformLevel>{
                    level("node", 2, p["node_bandwidth_GBps"], p["node_latency_us"]),
                    level("switch", n / 2, p["switch_bandwidth_GBps"], p["switch_latency_us"])};
            }};
}

std::vector<TemplateDef> makeTemplates()
{
    return {fatTreeTemplate(),      spineLeafTemplate(),      superpodTemplate(),
            railOptimizedTemplate(), nvl72Template(),         dgxB200Template(),
            torus2dTemplate(),      torus3dTemplate(),        paperFatTreeTemplate(),
            paperSpineLeafTemplate(), paperV100Template()};
}

const std::vector<TemplateDef> &templateDefs()
{
    static const std::vector<TemplateDef> defs = makeTemplates();  // immutable after init
    return defs;
}

const TemplateDef *findDef(const std::string &key)
{
    for (const auto &d : templateDefs())
        if (d.info.key == key)
            return &d;
    return nullptr;
}

std::string knownTemplates()
{
    std::string known;
    for (const auto &d : templateDefs())
        known += (known.empty() ? "" : ", ") + d.info.key;
    return known;
}

std::vector<ClusterPreset> makeClusterPresets()
{
    std::vector<ClusterPreset> p;
    for (int n : {64, 128, 256, 512, 1024})
        p.push_back({"paper-fattree-" + std::to_string(n),
                     "NEST paper fat-tree, " + std::to_string(n) + " TPUv4-like accelerators", "paper-fattree", "",
                     {{"devices", n}}});
    for (int n : {64, 1024})
        p.push_back({"paper-spineleaf-" + std::to_string(n),
                     "NEST paper spine-leaf, " + std::to_string(n) + " H100-80GB (2:1 spine oversubscription)",
                     "paper-spineleaf", "", {{"devices", n}}});
    for (int n : {8, 16})
        p.push_back({"paper-v100-" + std::to_string(n),
                     "NEST paper real cluster, " + std::to_string(n) + " V100 (2 per node, 12.5 GB/s switch)",
                     "paper-v100", "", {{"devices", n}}});
    p.push_back({"superpod-h100-256", "DGX SuperPOD-like, 1 scalable unit: 32 DGX H100 = 256 GPUs", "superpod", "",
                 {{"sus", 1}}});
    p.push_back({"superpod-h100-1024", "DGX SuperPOD-like, 4 scalable units: 128 DGX H100 = 1024 GPUs", "superpod",
                 "", {{"sus", 4}}});
    p.push_back({"gb200-nvl72-576", "GB200 NVL72, 8 racks = 576 GPUs in one scalable unit (DGX GB200 SuperPOD SU)",
                 "nvl72", "gb200", {{"sus", 1}, {"racks_per_su", 8}}});
    p.push_back({"gb200-nvl72-9216", "GB200 NVL72, 128 racks = 9,216 GPUs: 16 scalable units of 8 racks", "nvl72",
                 "gb200", {{"sus", 16}, {"racks_per_su", 8}}});
    p.push_back({"a100-512", "512 A100-80GB: 8 per node, 4 nodes per rack, 16 racks, 2:1 oversubscribed spine",
                 "spine-leaf", "", {}});
    p.push_back({"torus2d-tpuv4-64", "8x8 2D torus of TPU v4 chips (2x2 tiles, 4x4 blocks)", "torus2d", "", {}});
    p.push_back({"torus3d-tpuv4-64", "4x4x4 3D torus of TPU v4 chips (one cube; 2x2x1 trays, 4x4x1 planes)",
                 "torus3d", "", {}});
    return p;
}

} // namespace

const std::vector<ClusterTemplate> &clusterTemplates()
{
    static const std::vector<ClusterTemplate> list = [] {
        std::vector<ClusterTemplate> out;
        for (const auto &d : templateDefs())
            out.push_back(d.info);
        return out;
    }();
    return list;
}

const ClusterTemplate *findClusterTemplate(const std::string &key)
{
    for (const auto &t : clusterTemplates())
        if (t.key == key)
            return &t;
    return nullptr;
}

DeviceSpec templateDefaultDevice(const ClusterTemplate &tmpl)
{
    if (tmpl.defaultDevice == "tpuv4-like")
        return tpuv4Like();
    if (auto d = devicePreset(tmpl.defaultDevice))
        return *d;
    return tpuv4Like();  // unreachable for the built-in templates
}

Topology buildCluster(const ClusterTemplate &tmpl, const std::map<std::string, double> &params,
                      const DeviceSpec &device, const std::string &paramsPath)
{
    const TemplateDef *def = findDef(tmpl.key);
    if (!def)
        throw JsonError("", "unknown cluster template '" + tmpl.key + "' (known: " + knownTemplates() + ")");
    const Params p(def->info, params, paramsPath);
    const std::vector<UniformLevel> levels = def->build(p);
    long long devices = 1;
    for (const auto &l : levels)
        devices *= l.fanout;
    if (devices > Topology::maxDevices)
        p.fail("", "the parameters give " + std::to_string(devices) + " devices; at most " +
                       std::to_string(Topology::maxDevices) + " are supported");
    Topology topo = Topology::uniform(tmpl.key + "-" + std::to_string(devices), device, levels);
    topo.railOptimized = def->railOptimized;
    for (const TemplateParam &param : def->info.params)  // a template where it is a choice (nvl72)
        if (param.key == "rail_optimized")
            topo.railOptimized = p["rail_optimized"] > 0;
    return topo;
}

Result<Topology> makeCluster(const std::string &templateKey, const std::map<std::string, double> &params,
                             const std::string &device)
{
    const ClusterTemplate *tmpl = findClusterTemplate(templateKey);
    if (!tmpl)
        return Result<Topology>::failure("unknown cluster template '" + templateKey + "' (known: " +
                                         knownTemplates() + ")");
    DeviceSpec spec;
    if (device.empty() || device == tmpl->defaultDevice) {
        spec = templateDefaultDevice(*tmpl);
    } else {
        auto preset = devicePreset(device);
        if (!preset)
            return Result<Topology>::failure("cluster template '" + templateKey + "': " + preset.error());
        spec = *preset;
    }
    try {
        return buildCluster(*tmpl, params, spec, "");
    } catch (const JsonError &e) {
        const std::string where = e.path().empty() ? "" : "parameter '" + e.path() + "' ";
        return Result<Topology>::failure("cluster template '" + templateKey + "': " + where + e.reason());
    }
}

const std::vector<ClusterPreset> &clusterPresets()
{
    static const std::vector<ClusterPreset> presets = makeClusterPresets();  // immutable after init
    return presets;
}

Result<Topology> clusterPreset(const std::string &key)
{
    for (const auto &p : clusterPresets()) {
        if (p.key != key)
            continue;
        auto topo = makeCluster(p.templateKey, p.params, p.device);
        if (!topo)
            return topo;
        topo->name = p.key;
        return topo;
    }
    std::string known;
    for (const auto &p : clusterPresets())
        known += (known.empty() ? "" : ", ") + p.key;
    return Result<Topology>::failure("unknown cluster preset '" + key + "' (known: " + known + ")");
}

} // namespace nest
