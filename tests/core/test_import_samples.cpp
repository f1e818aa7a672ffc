// Real-file defects of the cluster importers (issue 49, point 1), one sample each in
// sample_configs/clusters/imports/ (written for these tests, modelled on the public formats)
// with the cluster it must give. Expected numbers are hand arithmetic from the files and the
// data sheets, in the comments; never the importer's own output.
#include "CoreTestSupport.h"

#include "ClusterImport.h"
#include "SlurmTopology.h"

namespace {

using coretest::contains;
using coretest::sample;
using namespace nest;

std::string imports(const std::string &file) { return sample("sample_configs/clusters/imports/" + file); }

// Children (devices for level 0) of each group of a level, in tree order.
std::vector<int> fanouts(const Topology &t, int level)
{
    std::vector<int> out;
    for (int g : t.groupsAtLevel(level))
        out.push_back(static_cast<int>(level == 0 ? t.groups[g].devices.size() : t.groups[g].children.size()));
    return out;
}

std::vector<std::string> names(const Topology &t, int level)
{
    std::vector<std::string> out;
    for (int g : t.groupsAtLevel(level))
        out.push_back(t.groups[g].name);
    return out;
}

constexpr double GBps = 1e9;

} // namespace

// ---- Partial NVLink meshes: pairs as a level, then PCIe

TEST(ImportSamples, ncclDumpOfNvlinkPairsIsTwoLevels)
{
    // Azure NC A100 v4: NVLink bridges of 12 links between GPUs 0-1 and 2-3 only. sm 80:
    // 25 GB/s per link, so 12 x 25 = 300 GB/s inside a pair; between pairs the GPUs' PCIe
    // Gen4 x16 links, NCCL's figure 16 lanes x 120 x 100 Mbit/s / 8 = 24 GB/s.
    ClusterImportOptions o;
    o.device = "a100-80gb";  // 0x20b5 (A100 PCIe) has no preset of its own
    auto t = importCluster(imports("azure-ncv4-nccl-topo.xml"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 4);
    ASSERT_EQ(t->levelCount(), 2);
    EXPECT_EQ(t->levels[0].name, "nvlink");
    EXPECT_EQ(t->levels[1].name, "node");
    EXPECT_EQ(fanouts(*t, 0), (std::vector<int>{2, 2}));
    EXPECT_EQ(fanouts(*t, 1), (std::vector<int>{2}));
    EXPECT_DOUBLE_EQ(t->levels[0].link.bandwidth, 300 * GBps);
    EXPECT_DOUBLE_EQ(t->levels[1].link.bandwidth, 24 * GBps);
    // GPUs 0 and 1 share a pair; 1 and 2 meet only at the node (PCIe) level.
    EXPECT_EQ(t->level(0, 1), 0);
    EXPECT_EQ(t->level(1, 2), 1);
}

TEST(ImportSamples, nvidiaSmiMatrixOfNvlinkPairsIsTwoLevels)
{
    // The same VM as `nvidia-smi topo -m` prints it: NV12 in pairs, SYS across. The matrix
    // gives no PCIe speed, so the node level needs --bandwidth (one value: the levels above
    // the NVLink pairs); without it the message names that level.
    ClusterImportOptions o;
    o.device = "a100-80gb";
    auto missing = importCluster(imports("azure-ncv4-nvidia-smi-topo.txt"), o);
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(contains(missing.error(), "level 1 (node) has no bandwidth")) << missing.error();
    o.bandwidthGBps = {12};
    auto t = importCluster(imports("azure-ncv4-nvidia-smi-topo.txt"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    ASSERT_EQ(t->levelCount(), 2);
    EXPECT_EQ(fanouts(*t, 0), (std::vector<int>{2, 2}));
    EXPECT_DOUBLE_EQ(t->levels[0].link.bandwidth, 300 * GBps);   // 12 links x 25 GB/s (A100)
    EXPECT_DOUBLE_EQ(t->levels[1].link.bandwidth, 12 * GBps);
}

TEST(ImportSamples, nvlinkPairsUnderASlurmTree)
{
    // Every node of a Slurm tree is the NC A100 v4: levels nvlink, node, leaf and the root
    // above the two islands; 8 nodes of two pairs = 32 GPUs. The dump has no NIC, so the
    // levels above the node need their bandwidth.
    ClusterImportOptions o;
    o.nodeFile = imports("azure-ncv4-nccl-topo.xml");
    o.device = "a100-80gb";
    o.bandwidthGBps = {25};
    auto one = importCluster(imports("slurm-no-common-root.conf"), o);
    ASSERT_FALSE(one.ok());
    EXPECT_TRUE(contains(one.error(), "or 2 for the levels above the node")) << one.error();
    o.bandwidthGBps = {25, 12.5};  // the levels above the node
    auto t = importCluster(imports("slurm-no-common-root.conf"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 32);
    ASSERT_EQ(t->levelCount(), 4);
    EXPECT_EQ(t->levels[0].name, "nvlink");
    EXPECT_EQ(t->levels[1].name, "node");
    EXPECT_EQ(t->levels[2].name, "leaf");
    EXPECT_EQ(names(*t, 0).front(), "gpu01-nvl0");
    EXPECT_EQ(names(*t, 1).front(), "gpu01");
    EXPECT_EQ(fanouts(*t, 0), std::vector<int>(16, 2));
    EXPECT_DOUBLE_EQ(t->levels[0].link.bandwidth, 300 * GBps);
    EXPECT_DOUBLE_EQ(t->levels[1].link.bandwidth, 24 * GBps);
    EXPECT_DOUBLE_EQ(t->levels[2].link.bandwidth, 25 * GBps);
    EXPECT_DOUBLE_EQ(t->levels[3].link.bandwidth, 12.5 * GBps);
}

// ---- Slurm fabrics that are not one tree

TEST(ImportSamples, multiSpineFabricIsItsLogicalTree)
{
    // Leaves 1-2 below spines 1 and 2, leaves 3-4 below spines 3 and 4, every spine below both
    // cores: spines serving the same leaves are one logical switch, so are the cores.
    auto slurm = parseSlurmTopology(coretest::readFile(imports("slurm-multi-spine.conf")), "f");
    ASSERT_TRUE(slurm.ok()) << slurm.error();
    ClusterImportOptions o;
    o.device = "h100-sxm-80gb";
    o.gpusPerNode = 8;
    o.bandwidthGBps = {450, 50, 50, 50};
    auto t = importCluster(imports("slurm-multi-spine.conf"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 64);  // 8 nodes x 8
    ASSERT_EQ(t->levelCount(), 4);
    EXPECT_EQ(names(*t, 3), (std::vector<std::string>{"core1+core2"}));
    EXPECT_EQ(names(*t, 2), (std::vector<std::string>{"spine1+spine2", "spine3+spine4"}));
    EXPECT_EQ(names(*t, 1), (std::vector<std::string>{"leaf1", "leaf2", "leaf3", "leaf4"}));
    EXPECT_EQ(fanouts(*t, 2), (std::vector<int>{2, 2}));
    EXPECT_EQ(fanouts(*t, 1), (std::vector<int>{2, 2, 2, 2}));
    // gpu01 and gpu03 meet at the spine pair, gpu01 and gpu05 at the cores.
    EXPECT_EQ(t->level(0, 16), 2);
    EXPECT_EQ(t->level(0, 32), 3);
}

TEST(ImportSamples, fabricWithoutCommonRootGetsOne)
{
    ClusterImportOptions o;
    o.device = "h100-sxm-80gb";
    o.gpusPerNode = 8;
    o.bandwidthGBps = {450, 50, 25};
    auto t = importCluster(imports("slurm-no-common-root.conf"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 64);
    ASSERT_EQ(t->levelCount(), 3);
    EXPECT_EQ(names(*t, 2), (std::vector<std::string>{"top"}));
    EXPECT_EQ(names(*t, 1), (std::vector<std::string>{"ib1", "ib2"}));
    EXPECT_EQ(fanouts(*t, 1), (std::vector<int>{4, 4}));
}

// ---- Static NCCL_TOPO_FILE inputs

TEST(ImportSamples, staticNcclTopoFileGivesTheGpus)
{
    // Eight <pci class="0x030200"> and no <gpu>: 8 GPUs, NVLink unknown. Without --bandwidth
    // the message says what kind of file it is.
    ClusterImportOptions o;
    o.device = "a100-40gb";
    auto missing = importCluster(imports("aws-p4d-nccl-topo-file.xml"), o);
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(contains(missing.error(), "NCCL_TOPO_FILE input")) << missing.error();
    EXPECT_TRUE(contains(missing.error(), "--bandwidth")) << missing.error();
    o.bandwidthGBps = {300};
    auto t = importCluster(imports("aws-p4d-nccl-topo-file.xml"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 8);
    ASSERT_EQ(t->levelCount(), 1);
    EXPECT_DOUBLE_EQ(t->levels[0].link.bandwidth, 300 * GBps);
}

// ---- Messages

TEST(ImportSamples, byteOrderMarkIsReadPast)
{
    ClusterImportOptions o;
    o.device = "h100-sxm-80gb";
    o.gpusPerNode = 4;
    o.bandwidthGBps = {450, 50, 50};
    auto t = importCluster(imports("slurm-bom.conf"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 16);  // 4 nodes x 4
    EXPECT_EQ(names(*t, 1), (std::vector<std::string>{"leaf1", "leaf2"}));
    // The same for XML: the NCv4 dump behind a byte-order mark.
    coretest::TempDir dir;
    const std::string bom = dir.filePath("bom.xml");
    ASSERT_TRUE(coretest::writeFile(bom, "\xEF\xBB\xBF" + coretest::readFile(imports("azure-ncv4-nccl-topo.xml"))));
    ClusterImportOptions x;
    x.device = "a100-80gb";
    auto n = importCluster(bom, x);
    ASSERT_TRUE(n.ok()) << n.error();
    EXPECT_EQ(n->deviceCount(), 4);
}

TEST(ImportSamples, truncatedDumpSaysWhereItEnds)
{
    // Cut inside the second <nic>, opened on line 30; the file's last line is 31.
    const std::string file = imports("truncated-nccl-topo.xml");
    auto t = importCluster(file, {});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error(), file + ":31: the file ends inside <nic> (opened on line 30): the file is cut short");
}

// ---- ASTRA-sim

TEST(ImportSamples, astraSimSwitchIsTwoHopsAndFullyConnectedHasPeerLinks)
{
    // FullyConnected of 4 NPUs: 3 links of 100 GB/s each per NPU = 300 x 2^30 bytes/s; one hop
    // of 500 ns. Switch: one link of 25 x 2^30 bytes/s, NPU -> switch -> NPU = 2 x 1000 ns.
    ClusterImportOptions o;
    o.device = "h100-sxm-80gb";
    auto t = importCluster(imports("astra-sim-switch-fullyconnected.yml"), o);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 32);
    ASSERT_EQ(t->levelCount(), 2);
    EXPECT_DOUBLE_EQ(t->levels[0].link.bandwidth, 3 * 100 * 1073741824.0);
    EXPECT_DOUBLE_EQ(t->levels[0].link.latency, 500e-9);
    EXPECT_DOUBLE_EQ(t->levels[1].link.bandwidth, 25 * 1073741824.0);
    EXPECT_DOUBLE_EQ(t->levels[1].link.latency, 2000e-9);
}
