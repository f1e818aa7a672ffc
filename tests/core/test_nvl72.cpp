// GB200 / GB300 NVL72 (issue 46): the nvl72 template and its presets, the NVLink domain as a
// level of the tree, Slurm's topology/block files read as NVLink domains, and expert-parallel
// all-to-alls priced by where their group sits relative to the domain. Numbers from the
// GB200 NVL72 data sheet (72 GPUs, NVLink 5 at 900 GB/s per direction) and worked by hand.
#include "ClusterImport.h"
#include "ClusterTemplates.h"
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "PlanBuilder.h"
#include "SlurmBlocks.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace nest;
using namespace coretest;

TEST(Nvl72, presetsAreRacksOf72OnOneNvlinkDomain)
{
    const auto small = clusterPreset("gb200-nvl72-576");
    ASSERT_TRUE(small) << small.error();
    EXPECT_EQ(small->deviceCount(), 576);
    EXPECT_EQ(small->deviceTypes.front().name, "gb200");
    // tray (4) and rack (18 trays) at 900 GB/s: the rack is the domain.
    EXPECT_EQ(small->nvlinkDomainLevel(), 1);
    EXPECT_EQ(small->groupsAtLevel(1).size(), 8u);
    EXPECT_EQ(small->deviceCountUnder(small->groupsAtLevel(1).front()), 72);
    EXPECT_DOUBLE_EQ(small->levels[1].link.bandwidth, 900e9);
    EXPECT_DOUBLE_EQ(small->levels[2].link.bandwidth, 50e9);  // ConnectX-7 400 Gb/s per GPU
    EXPECT_TRUE(small->railOptimized);
    const auto big = clusterPreset("gb200-nvl72-9216");
    ASSERT_TRUE(big) << big.error();
    EXPECT_EQ(big->deviceCount(), 9216);
    EXPECT_EQ(big->groupsAtLevel(1).size(), 128u);
    // A DGX node's domain is the node; the B200 SuperPOD template runs NVLink 5 in it.
    const auto dgx = makeCluster("dgx-b200-superpod", {{"sus", 1}});
    ASSERT_TRUE(dgx) << dgx.error();
    EXPECT_EQ(dgx->nvlinkDomainLevel(), 0);
    EXPECT_EQ(dgx->deviceCount(), 256);
    EXPECT_DOUBLE_EQ(dgx->levels[0].link.bandwidth, 900e9);
    // GB300: the template with the ConnectX-8 rate.
    const auto gb300 = makeCluster("nvl72", {{"nic_bandwidth_GBps", 100}, {"spine_bandwidth_GBps", 100}}, "gb300");
    ASSERT_TRUE(gb300) << gb300.error();
    EXPECT_EQ(gb300->deviceTypes.front().name, "gb300");
    EXPECT_DOUBLE_EQ(gb300->levels[2].link.bandwidth, 100e9);
}

TEST(Nvl72, slurmBlocksAreNvlinkDomains)
{
    const std::string file = sample("sample_configs/clusters/imports/gb200-nvl72-blocks.conf");
    ClusterImportOptions o;
    o.device = "gb200";
    o.gpusPerNode = 4;
    o.bandwidthGBps = {900, 900, 50};  // node, block, scale-out
    const auto topo = importCluster(file, o);
    ASSERT_TRUE(topo) << topo.error();
    EXPECT_EQ(topo->deviceCount(), 144);
    ASSERT_EQ(topo->levelCount(), 3);
    EXPECT_EQ(topo->levels[1].name, "nvlink-block");
    EXPECT_EQ(topo->levels[2].name, "scale-out");
    EXPECT_EQ(topo->nvlinkDomainLevel(), 1);
    EXPECT_EQ(topo->groups[topo->ancestor(0, 0)].name, "gb200-a01");
    // Two devices of one block talk over NVLink, of two blocks over the scale-out fabric.
    EXPECT_EQ(topo->level(0, 71), 1);
    EXPECT_EQ(topo->level(0, 72), 2);
    // Without a bandwidth for the block, it runs at the node's.
    ClusterImportOptions shorter = o;
    shorter.bandwidthGBps = {};
    shorter.nodeFile = sample("sample_configs/clusters/imports/dgx-h100-nccl-topo.xml");
    shorter.device = "";
    shorter.gpusPerNode.reset();
    auto sketch = sketchCluster(file, shorter);
    ASSERT_TRUE(sketch) << sketch.error();
    EXPECT_EQ(sketch->nvlinkLevels, 1);
    // A file the tree plugin would refuse is read; its errors name the line.
    const auto twice = parseSlurmBlocks("BlockName=a Nodes=n[1-2]\nBlockName=b Nodes=n[2-3]\n", "blocks.conf");
    ASSERT_FALSE(twice);
    EXPECT_TRUE(contains(twice.error(), "blocks.conf:2")) << twice.error();
    EXPECT_TRUE(contains(twice.error(), "two blocks")) << twice.error();
    const auto unknown = parseSlurmBlocks("BlockName=a Nodes=n1 Speed=9\n", "blocks.conf");
    ASSERT_FALSE(unknown);
    EXPECT_TRUE(contains(unknown.error(), "Speed")) << unknown.error();
    EXPECT_TRUE(detectClusterFormat("BlockName=a Nodes=n1\n", "x").value() == ClusterFormat::Slurm);
}

TEST(Nvl72, anExpertGroupInsideTheDomainCostsLessThanAcrossIt)
{
    // Two racks (144 GPUs); a MoE of 64 experts at ep 64, tp 1, dp 128, one stage.
    const Topology topo = *makeCluster("nvl72", {{"sus", 1}, {"racks_per_su", 2}});
    ModelConfig c = tinyGptConfig(2);
    c.hidden = 1024;
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 1024;
    c.experts = 64;
    c.topK = 2;
    c.globalBatch = 128;
    c.seqLength = 1024;
    const ModelProfile model = buildProfile(c);
    UniformLayout u;
    u.dp = 128;
    u.ep = 64;
    u.globalBatch = 128;
    u.seqLength = 1024;
    // Ranks in order: expert group 1 (replicas 64..127) on devices 64..127, across the racks.
    const auto across = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(across) << across.error();
    // The same, group 1 moved to devices 72..135: each group inside one rack.
    UniformLayout inside = u;
    for (int r = 0; r < 128; ++r)
        inside.rankDevices.push_back(r < 64 ? r : r + 8);
    const auto within = buildUniformPlan(inside, topo, model);
    ASSERT_TRUE(within) << within.error();
    const Report a = evaluate(*across, topo, model, {}), w = evaluate(*within, topo, model, {});
    ASSERT_TRUE(a.feasible && w.feasible);
    EXPECT_GT(a.stages.at(0).cost.epComm, 2 * w.stages.at(0).cost.epComm);
    EXPECT_LT(w.iterationTime, a.iterationTime);
}

// The whole NVL72 rack is the scale-up domain (trays and rack switches at 900 GB/s): both
// levels are priced at NCCL's NVLink 5 rate (40.1 of 50 GB/s per link), the scale-out at
// NCCL's channel speed (96 % of the NIC).
TEST(Nvl72, theRackRunsAtNcclsNvlinkRate)
{
    const Topology topo = *makeCluster("nvl72", {{"sus", 1}, {"racks_per_su", 2}});
    const int domain = topo.nvlinkDomainLevel();
    ASSERT_GE(domain, 1);
    for (int l = 0; l < topo.levelCount(); ++l) {
        const double nominal = topo.levels[static_cast<size_t>(l)].link.bandwidth;
        const double expect = l <= domain ? nominal * 40.1 / 50 : nominal * 0.96;
        ASSERT_NEAR(topo.achievableLevelLink(l).bandwidth, expect, 1e-6 * nominal) << "level " << l;
    }
}
