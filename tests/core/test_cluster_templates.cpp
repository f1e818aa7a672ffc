// Cluster templates and presets: sizes, link numbers against their published sources or a
// hand derivation (written next to each expectation), and every parameter error.
#include "ClusterTemplates.h"
#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

using namespace nest;

namespace {

using coretest::rowName;

bool near(double a, double b)
{
    return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

std::vector<int> fanouts(const Topology &t)
{
    // Walk the first child at each level: the templates are uniform.
    std::vector<int> out(t.levelCount());
    int g = t.root;
    for (int l = t.levelCount() - 1; l >= 0; --l) {
        const TopoGroup &grp = t.groups[g];
        out[l] = static_cast<int>(l == 0 ? grp.devices.size() : grp.children.size());
        if (l > 0)
            g = grp.children.front();
    }
    return out;
}

} // namespace

TEST(ClusterTemplates, templateListIsSane)
{
    ASSERT_TRUE(clusterTemplates().size() >= 8);
    for (const char *key : {"fat-tree", "spine-leaf", "superpod", "rail-optimized", "torus2d", "torus3d",
                            "paper-fattree", "paper-spineleaf", "paper-v100"})
        ASSERT_TRUE(findClusterTemplate(key) != nullptr) << key;
    ASSERT_TRUE(findClusterTemplate("mesh") == nullptr);
    for (const auto &t : clusterTemplates()) {
        ASSERT_TRUE(!t.title.empty() && !t.description.empty());
        for (const auto &p : t.params) {
            ASSERT_TRUE(p.min <= p.value && p.value <= p.max) << (t.key + "." + p.key).c_str();
            ASSERT_TRUE(!p.label.empty());
        }
        // Every template builds with its defaults and default device.
        const auto topo = makeCluster(t.key, {});
        ASSERT_TRUE(topo.ok()) << topo.error().c_str();
        ASSERT_EQ(topo->validate(), std::string());
    }
}

TEST(ClusterTemplates, fatTreeCounts)
{
    // 8 devices x 4 nodes x 4 racks = 128.
    const auto t = makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 4}, {"racks", 4}});
    ASSERT_TRUE(t.ok()) << t.error().c_str();
    ASSERT_EQ(t->deviceCount(), 128);
    ASSERT_EQ(fanouts(*t), (std::vector<int>{8, 4, 4}));
    ASSERT_EQ(t->groupsAtLevel(0).size(), size_t(16));
    ASSERT_EQ(t->name, std::string("fat-tree-128"));
    // 2 x 3 x 5 = 30 with a custom device.
    const auto small = makeCluster("fat-tree", {{"devices_per_node", 2}, {"nodes_per_rack", 3}, {"racks", 5}},
                                   "a100-80gb");
    ASSERT_TRUE(small.ok());
    ASSERT_EQ(small->deviceCount(), 30);
    ASSERT_EQ(small->spec(29).name, std::string("a100-80gb"));
    // rack0 = nodes {0,1} {2,3} {4,5}; rack1 starts with node {6,7}.
    ASSERT_EQ(small->level(3, 4), 1);
    ASSERT_EQ(small->level(5, 6), 2);
    ASSERT_EQ(small->level(6, 7), 0);
}

TEST(ClusterTemplates, spineLeafOversubscription)
{
    const auto t = makeCluster("spine-leaf", {{"spine_oversubscription", 4}, {"leaves", 2}});
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->deviceCount(), 8 * 4 * 2);
    ASSERT_QFUZZY_EQ(t->levels[2].link.oversubscription, 4.0);
    ASSERT_QFUZZY_EQ(t->levels[1].link.oversubscription, 1.0);
    ASSERT_QFUZZY_EQ(t->link(0, 63).oversubscription, 4.0);
}

// Issue 23, point 2: the rail-optimised SuperPOD-like fabric. Same shape and numbers as
// `superpod`, the rails explicit (Topology::railOptimized), the spine's oversubscription a
// parameter; the superpod template itself stays without rails.
TEST(ClusterTemplates, railOptimizedDefaults)
{
    const auto t = makeCluster("rail-optimized", {});
    ASSERT_TRUE(t.ok()) << t.error();
    ASSERT_TRUE(t->railOptimized);
    ASSERT_EQ(t->deviceCount(), 4 * 32 * 8);
    ASSERT_EQ(t->levelCount(), 3);
    ASSERT_QFUZZY_EQ(t->levels[0].link.bandwidth, 450e9);
    ASSERT_QFUZZY_EQ(t->levels[1].link.bandwidth, 50e9);  // one NDR 400 Gb/s port per GPU (rail)
    ASSERT_QFUZZY_EQ(t->levels[2].link.bandwidth, 50e9);
    ASSERT_QFUZZY_EQ(t->levels[2].link.oversubscription, 1.0);
    // GPU i of node n sits on rail i: device 8 n + i has index i in its node.
    ASSERT_EQ(t->devices[8 * 5 + 3].indexInNode, 3);
    // Every SU has 32 GPUs per rail.
    ASSERT_EQ(t->railDeviceCountUnder(t->ancestor(0, 1), 0), 32);
    const auto tapered = makeCluster("rail-optimized", {{"spine_oversubscription", 2}, {"sus", 2}});
    ASSERT_TRUE(tapered.ok());
    ASSERT_QFUZZY_EQ(tapered->levels[2].link.oversubscription, 2.0);
    ASSERT_EQ(tapered->deviceCount(), 2 * 32 * 8);
    ASSERT_FALSE(makeCluster("superpod", {})->railOptimized);
}

TEST(ClusterTemplates, superpodCounts)
{
    // DGX SuperPOD RA: 8 GPUs per DGX, 32 DGX per SU.
    const auto four = makeCluster("superpod", {{"sus", 4}});
    ASSERT_TRUE(four.ok());
    ASSERT_EQ(four->deviceCount(), 4 * 32 * 8);
    const auto one = clusterPreset("superpod-h100-256");
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->deviceCount(), 1 * 32 * 8);
    // NVLink 4: 18 links x 25 GB/s = 450 GB/s per direction; NDR 400 Gb/s = 50 GB/s.
    ASSERT_QFUZZY_EQ(four->levels[0].link.bandwidth, 450e9);
    ASSERT_QFUZZY_EQ(four->levels[1].link.bandwidth, 400e9 / 8);
    ASSERT_EQ(four->spec(0).name, std::string("h100-sxm-80gb"));
    ASSERT_EQ(four->level(255, 256), 2);  // last GPU of SU 0 / first of SU 1
    ASSERT_EQ(four->level(7, 8), 1);
}

namespace {

class ClusterTemplatesPaperFatTree : public ::testing::TestWithParam<int> {};

} // namespace

TEST_P(ClusterTemplatesPaperFatTree, paperFatTree)
{
    // Source: /work/shared/nest-artifact/inputs/*_dev<N>.json: devices_per_level
    // [8, 4, N/32], bws 900 / 100 / 400 (GB/s in the paper's text), latency_per_level
    // [0.0001, 0.0002, 0.0003] s, maxMemoryPerDevice 68719476736.
    const int devices = GetParam();
    const auto t = clusterPreset("paper-fattree-" + std::to_string(devices));
    ASSERT_TRUE(t.ok()) << t.error().c_str();
    ASSERT_EQ(t->deviceCount(), devices);
    ASSERT_EQ(fanouts(*t), (std::vector<int>{8, 4, devices / 32}));
    ASSERT_QFUZZY_EQ(t->levels[0].link.bandwidth, 900e9);
    ASSERT_QFUZZY_EQ(t->levels[1].link.bandwidth, 100e9);
    ASSERT_QFUZZY_EQ(t->levels[2].link.bandwidth, 400e9);
    ASSERT_TRUE(near(t->levels[0].link.latency, 0.0001));
    ASSERT_TRUE(near(t->levels[1].link.latency, 0.0002));
    ASSERT_TRUE(near(t->levels[2].link.latency, 0.0003));
    ASSERT_QFUZZY_EQ(t->spec(0).memoryBytes, 68719476736.0);
    ASSERT_QFUZZY_EQ(t->spec(0).peakFlops, 275e12);
    ASSERT_EQ(t->name, "paper-fattree-" + std::to_string(devices));
}

INSTANTIATE_TEST_SUITE_P(Rows, ClusterTemplatesPaperFatTree, ::testing::Values(64, 128, 256, 512, 1024),
                         [](const auto &p) { return std::to_string(p.param); });

TEST(ClusterTemplates, paperSpineLeafAndV100)
{
    // Paper §5.3: 8 H100 per node (900 GB/s), 4 nodes per leaf at 12.5 GB/s, 2:1 spine.
    const auto sl = clusterPreset("paper-spineleaf-1024");
    ASSERT_TRUE(sl.ok());
    ASSERT_EQ(sl->deviceCount(), 1024);
    ASSERT_EQ(fanouts(*sl), (std::vector<int>{8, 4, 32}));
    ASSERT_QFUZZY_EQ(sl->levels[1].link.bandwidth, 12.5e9);
    ASSERT_QFUZZY_EQ(sl->levels[2].link.oversubscription, 2.0);
    ASSERT_EQ(sl->spec(0).name, std::string("h100-sxm-80gb"));
    ASSERT_EQ(clusterPreset("paper-spineleaf-64")->deviceCount(), 64);
    // Paper §5.4: 2 V100 per node on 300 GB/s NVLink, nodes on one 12.5 GB/s switch.
    const auto v8 = clusterPreset("paper-v100-8");
    ASSERT_TRUE(v8.ok());
    ASSERT_EQ(v8->deviceCount(), 8);
    ASSERT_EQ(fanouts(*v8), (std::vector<int>{2, 4}));
    ASSERT_EQ(v8->level(0, 1), 0);
    ASSERT_EQ(v8->level(1, 2), 1);
    ASSERT_QFUZZY_EQ(v8->link(1, 2).bandwidth, 12.5e9);
    ASSERT_QFUZZY_EQ(v8->link(0, 1).bandwidth, 300e9);
    ASSERT_EQ(v8->spec(0).name, std::string("v100-32gb"));
    ASSERT_EQ(clusterPreset("paper-v100-16")->deviceCount(), 16);
}

namespace {

struct TorusRow {
    std::string name;
    std::string tmpl;
    std::map<std::string, double> params;
    std::vector<double> gbps;
    std::vector<double> us;
    std::vector<int> fan;
};

void PrintTo(const TorusRow &row, std::ostream *os) { *os << row.name; }

const std::vector<TorusRow> torusRows = {
    // Link 50 GB/s, 1 us per hop. bandwidth = 50 * links per chip / mean hops;
    // latency = diameter in hops.
    // 8x8, tile 2x2: 1 link per dim inside -> 2; mean hops over the 12 ordered pairs =
    //   (8 one-hop + 4 two-hop)/12 = 4/3 -> 75; diameter 2.
    // block 4x4 (segments): links 2*3/4 per dim -> 3; per dim sum_{i,j}|i-j| = 20 for 4
    //   positions, times (16/4)^2 others, 2 dims -> 640 / (16*15) = 8/3 -> 56.25; diameter 6.
    // 8x8 rings: links 4; ring of 8: sum over pairs = 8 * 16 = 128, x 8^2 others x 2 dims
    //   = 16384 / (64*63) -> 200 * 4032 / 16384 = 49.21875; diameter 4 + 4 = 8.
    {"torus2d 8x8", "torus2d", {}, {75, 56.25, 49.21875}, {2, 6, 8}, {4, 4, 4}},
    // 4x4x4 (TPU v4 cube), tile 2x2x1 -> 75 and 2 hops as above.
    // block 4x4x1: two rings of 4 -> links 4; ring of 4: sum = 4 * (0+1+2+1) = 16, x 4^2
    //   others x 2 dims = 512 / 240 -> 200 * 240 / 512 = 93.75; diameter 2 + 2 = 4.
    // 4x4x4: links 6; 3 dims x 16 x 16^2 = 12288 / 4032 -> 300 * 4032 / 12288 = 98.4375;
    //   diameter 6.
    {"torus3d 4x4x4", "torus3d", {}, {75, 93.75, 98.4375}, {2, 4, 6}, {4, 4, 4}},
    // 4x4, tile 1x2 (one y-neighbour: links 1, mean hops 1 -> 50, 1 hop), block 2x2 (75, 2
    // hops), whole 4x4 torus (rings: links 4, 2 x 16 x 16 / 240 = 32/15 hops -> 93.75,
    // 4 hops). Link 100 GB/s doubles every bandwidth, hop 0.5 us halves every latency.
    {"torus2d 4x4 small tiles",
     "torus2d",
     {{"x", 4}, {"y", 4}, {"tile_x", 1}, {"tile_y", 2}, {"block_x", 2}, {"block_y", 2},
      {"link_bandwidth_GBps", 100}, {"hop_latency_us", 0.5}},
     {100, 150, 187.5},
     {0.5, 1, 2},
     {2, 2, 4}},
};

class ClusterTemplatesTorus : public ::testing::TestWithParam<TorusRow> {};

} // namespace

TEST_P(ClusterTemplatesTorus, torusClasses)
{
    const std::string &tmpl = GetParam().tmpl;
    const std::map<std::string, double> &p = GetParam().params;
    const std::vector<double> &gbps = GetParam().gbps;
    const std::vector<double> &us = GetParam().us;
    const std::vector<int> &fan = GetParam().fan;
    const auto t = makeCluster(tmpl, p);
    ASSERT_TRUE(t.ok()) << t.error().c_str();
    ASSERT_EQ(t->levelCount(), 3);
    for (int l = 0; l < 3; ++l) {
        ASSERT_TRUE(near(t->levels[l].link.bandwidth, gbps[l] * 1e9))
            << "level " << l << ": " << t->levels[l].link.bandwidth;
        ASSERT_TRUE(near(t->levels[l].link.latency, us[l] * 1e-6));
        ASSERT_EQ(fanouts(*t)[l], fan[l]);
    }
}

INSTANTIATE_TEST_SUITE_P(Rows, ClusterTemplatesTorus, ::testing::ValuesIn(torusRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(ClusterTemplates, presets)
{
    const std::regex keyPattern("^[a-z0-9]+(-[a-z0-9]+)*$");
    ASSERT_TRUE(clusterPresets().size() >= 13);
    for (const auto &p : clusterPresets()) {
        ASSERT_TRUE(std::regex_match(p.key, keyPattern)) << p.key.c_str();
        const auto t = clusterPreset(p.key);
        ASSERT_TRUE(t.ok()) << t.error().c_str();
        ASSERT_EQ(t->validate(), std::string());
        ASSERT_EQ(t->name, p.key);
        ASSERT_TRUE(findClusterTemplate(p.templateKey) != nullptr);
    }
    // Sizes named in the keys: 8 x 4 x 16 = 512; 8 x 8 torus; 4 x 4 x 4 torus.
    ASSERT_EQ(clusterPreset("a100-512")->deviceCount(), 512);
    ASSERT_EQ(clusterPreset("torus2d-tpuv4-64")->deviceCount(), 64);
    ASSERT_EQ(clusterPreset("torus3d-tpuv4-64")->deviceCount(), 64);
    ASSERT_EQ(clusterPreset("superpod-h100-1024")->deviceCount(), 1024);
    const auto missing = clusterPreset("a100-513");
    ASSERT_TRUE(!missing.ok());
    ASSERT_TRUE(missing.error().find("unknown cluster preset") != std::string::npos);
    ASSERT_TRUE(missing.error().find("a100-512") != std::string::npos);  // lists the known ones
}

namespace {

using Params = std::map<std::string, double>;
using Needles = std::vector<std::string>;

struct ErrorRow {
    std::string name;
    std::string tmpl;
    Params params;
    std::string device;
    Needles needles;
};

void PrintTo(const ErrorRow &row, std::ostream *os) { *os << row.name; }

const std::vector<ErrorRow> errorRows = {
    {"unknown template", "mesh", Params{}, "", Needles{"unknown cluster template 'mesh'", "fat-tree"}},
    {"racks 0", "fat-tree", Params{{"racks", 0}}, "", Needles{"'racks'", "between 1 and 4096", "found 0"}},
    {"racks 2.5", "fat-tree", Params{{"racks", 2.5}}, "", Needles{"'racks'", "whole number"}},
    {"bandwidth 0", "fat-tree", Params{{"rack_bandwidth_GBps", 0}}, "", Needles{"rack_bandwidth_GBps", "between"}},
    {"unknown parameter", "fat-tree", Params{{"rackz", 3}}, "",
     Needles{"'rackz'", "unknown parameter", "nodes_per_rack"}},
    {"oversubscription 0.5", "spine-leaf", Params{{"spine_oversubscription", 0.5}}, "",
     Needles{"spine_oversubscription", "between 1"}},
    {"paper devices 100", "paper-fattree", Params{{"devices", 100}}, "", Needles{"'devices'", "multiple of 32"}},
    {"v100 odd", "paper-v100", Params{{"devices", 7}}, "", Needles{"'devices'", "multiple of 2"}},
    {"torus block", "torus2d", Params{{"block_x", 3}}, "", Needles{"block_x", "multiple of tile_x"}},
    {"torus block divides", "torus2d", Params{{"block_y", 16}}, "", Needles{"block_y", "must divide y"}},
    {"too many devices", "fat-tree", Params{{"devices_per_node", 64}, {"nodes_per_rack", 1024}, {"racks", 64}}, "",
     Needles{"4194304 devices", "at most 1048576"}},
    {"unknown device", "fat-tree", Params{}, "tpu-v9", Needles{"unknown device preset 'tpu-v9'"}},
};

class ClusterTemplatesErrors : public ::testing::TestWithParam<ErrorRow> {};

} // namespace

TEST_P(ClusterTemplatesErrors, errors)
{
    const std::string &tmpl = GetParam().tmpl;
    const std::map<std::string, double> &p = GetParam().params;
    const std::string &device = GetParam().device;
    const std::vector<std::string> &needles = GetParam().needles;
    const auto t = makeCluster(tmpl, p, device);
    ASSERT_TRUE(!t.ok());
    for (const auto &n : needles)
        ASSERT_TRUE(t.error().find(n) != std::string::npos) << t.error().c_str();
}

INSTANTIATE_TEST_SUITE_P(Rows, ClusterTemplatesErrors, ::testing::ValuesIn(errorRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(ClusterTemplates, nanParameter)
{
    const auto t = makeCluster("fat-tree", {{"racks", std::nan("")}});
    ASSERT_TRUE(!t.ok());
    ASSERT_TRUE(t.error().find("finite") != std::string::npos) << t.error().c_str();
}

TEST(ClusterTemplates, templateDefaultDeviceByName)
{
    // Naming the default device explicitly is the same as leaving it out.
    const auto a = makeCluster("paper-fattree", {{"devices", 64}}, "tpuv4-like");
    const auto b = makeCluster("paper-fattree", {{"devices", 64}});
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(*a == *b);
    ASSERT_EQ(templateDefaultDevice(*findClusterTemplate("paper-v100")).name, std::string("v100-32gb"));
}
