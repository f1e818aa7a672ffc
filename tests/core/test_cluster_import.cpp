// The cluster importers of core/interop (issue 22, point 1): Slurm topology.conf, NCCL topology
// XML, nvidia-smi topo -m, ASTRA-sim network YAML, and their assembly into a cluster. Expected
// numbers are read off the sample files by hand (the comments show the arithmetic); every
// broken variant must name its file and line.
#include "CoreTestSupport.h"

#include "AstraSimNetwork.h"
#include "ClusterIO.h"
#include "ClusterImport.h"
#include "NcclTopology.h"
#include "NvidiaSmiTopology.h"
#include "SlurmTopology.h"

namespace {

using coretest::contains;
using coretest::sample;
using namespace nest;

const std::string Imports = "sample_configs/clusters/imports/";
std::string slurmSample() { return sample(Imports + "slurm-topology.conf"); }
std::string ncclSample() { return sample(Imports + "dgx-h100-nccl-topo.xml"); }
std::string smiSample() { return sample(Imports + "h100x8-nvidia-smi-topo.txt"); }
std::string astraSample() { return sample(Imports + "astra-sim-network.yml"); }

// The devices of the node group named `name`.
std::vector<int> devicesOfNode(const Topology &t, const std::string &name)
{
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].name == name)
            return t.devicesUnder(g);
    return {};
}

// Fanouts of the groups of one level, in tree order.
std::vector<int> fanouts(const Topology &t, int level)
{
    std::vector<int> out;
    for (int g : t.groupsAtLevel(level))
        out.push_back(static_cast<int>(level == 0 ? t.groups[g].devices.size() : t.groups[g].children.size()));
    return out;
}

// A file with `text` in `dir`, its path returned.
std::string writeTemp(const coretest::TempDir &dir, const std::string &name, const std::string &text)
{
    std::string path = dir.filePath(name);
    coretest::writeFile(path, text);
    return path;
}

// True when `message` starts with "FILE:LINE:".
::testing::AssertionResult namesLine(const std::string &message, const std::string &file, int line)
{
    const std::string prefix = file + ":" + std::to_string(line) + ":";
    if (message.rfind(prefix, 0) == 0)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "expected '" << prefix << "...', got '" << message << "'";
}

} // namespace

// ---- Slurm hostlists and the switch tree

TEST(SlurmTopology, hostlistsExpandAsSlurmDoes)
{
    auto a = expandHostlist("gpu[001-016,020]");
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_EQ(a->size(), 17u);   // 16 in the range + 020
    EXPECT_EQ(a->front(), "gpu001");
    EXPECT_EQ((*a)[15], "gpu016");
    EXPECT_EQ(a->back(), "gpu020");
    auto b = expandHostlist("rack[1-2]-n[08-10]");
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_EQ(*b, (std::vector<std::string>{"rack1-n08", "rack1-n09", "rack1-n10", "rack2-n08", "rack2-n09", "rack2-n10"}));
    auto c = expandHostlist("a[8-10],login1");
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(*c, (std::vector<std::string>{"a8", "a9", "a10", "login1"}));
    for (const char *bad : {"gpu[1-", "gpu]1[", "gpu[5-1]", "gpu[a-b]", "gpu[]", "a,,b", "gpu[1-2[3]]"})
        EXPECT_FALSE(expandHostlist(bad).ok()) << bad;
}

TEST(SlurmTopology, sampleTreeHasThreeSwitchTiersAndUnevenLeaves)
{
    const std::string text = coretest::readFile(slurmSample());
    auto slurm = parseSlurmTopology(text, "t.conf");
    ASSERT_TRUE(slurm.ok()) << slurm.error();
    // leaf01..leaf04, spine0, spine1, core0.
    ASSERT_EQ(slurm->switches.size(), 7u);
    EXPECT_EQ(slurm->switches[slurm->root].name, "core0");
    EXPECT_EQ(slurm->height(), 3);
    // 4 + 4 + 3 + 5 (gpu015-018 and gpu020, written across continuation lines).
    EXPECT_EQ(slurm->nodeCount(), 16);
    EXPECT_EQ(slurm->switches[3].name, "leaf04");
    EXPECT_EQ(slurm->switches[3].nodes.back(), "gpu020");
    EXPECT_EQ(slurm->switches[3].linkSpeed, "400");
    EXPECT_EQ(slurm->switches[3].line, 10);   // the statement starts where its first line is
}

TEST(ClusterImport, slurmWithNcclNodeIsTheWholeCluster)
{
    ClusterImportOptions options;
    options.nodeFile = ncclSample();
    auto t = importCluster(slurmSample(), options);
    ASSERT_TRUE(t.ok()) << t.error();
    // 16 nodes x 8 GPUs of the dump.
    EXPECT_EQ(t->deviceCount(), 128);
    EXPECT_EQ(t->deviceTypes.front().name, "h100-sxm-80gb");   // PCI device 0x2330
    ASSERT_EQ(t->levelCount(), 4);
    EXPECT_EQ(t->levels[0].name, "node");
    EXPECT_EQ(t->levels[1].name, "leaf");
    EXPECT_EQ(t->levels[2].name, "spine");
    EXPECT_EQ(t->levels[3].name, "core");
    // NVLink: 5 + 4 + 4 + 5 = 18 links per GPU x 25 GB/s.
    EXPECT_QFUZZY_EQ(t->levels[0].link.bandwidth, 450e9);
    // NICs: 8 x 400000 Mbit/s = 3.2e12 bit/s = 400 GB/s for 8 GPUs = 50 GB/s per GPU, every tier.
    for (int l = 1; l < 4; ++l)
        EXPECT_QFUZZY_EQ(t->levels[l].link.bandwidth, 50e9);
    EXPECT_EQ(fanouts(*t, 1), (std::vector<int>{4, 4, 3, 5}));
    EXPECT_EQ(fanouts(*t, 2), (std::vector<int>{2, 2}));
    // gpu001 and gpu005 meet at spine0, gpu001 and gpu009 at the core, gpu015 and gpu020 at leaf04.
    const int a = devicesOfNode(*t, "gpu001").front();
    EXPECT_EQ(t->level(a, devicesOfNode(*t, "gpu005").front()), 2);
    EXPECT_EQ(t->level(a, devicesOfNode(*t, "gpu009").front()), 3);
    EXPECT_EQ(t->level(devicesOfNode(*t, "gpu015").front(), devicesOfNode(*t, "gpu020").front()), 1);
    // Saved and loaded back, it is the same cluster.
    coretest::TempDir dir;
    ASSERT_TRUE(saveCluster(dir.filePath("c.json"), *t).ok());
    auto back = loadCluster(dir.filePath("c.json"));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_TRUE(*back == *t);
}

TEST(ClusterImport, slurmFlagsFillWhatTheFileLacks)
{
    ClusterImportOptions options;
    options.device = "a100-80gb";
    options.gpusPerNode = 4;
    options.bandwidthGBps = {300, 25, 25, 12.5};
    options.latencyUs = {1, 2, 3, 4};
    options.oversubscription = {1, 1, 2, 4};
    auto t = importCluster(slurmSample(), options);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 64);   // 16 nodes x 4
    EXPECT_EQ(t->deviceTypes.front().name, "a100-80gb");
    EXPECT_QFUZZY_EQ(t->levels[3].link.bandwidth, 12.5e9);
    EXPECT_QFUZZY_EQ(t->levels[2].link.latency, 3e-6);
    EXPECT_QFUZZY_EQ(t->levels[3].link.oversubscription, 4.0);
    // With a node file, a list one shorter starts at level 1 and level 0 stays NVLink's.
    ClusterImportOptions shorter;
    shorter.nodeFile = ncclSample();
    shorter.bandwidthGBps = {25, 25, 25};
    auto s = importCluster(slurmSample(), shorter);
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_QFUZZY_EQ(s->levels[0].link.bandwidth, 450e9);
    EXPECT_QFUZZY_EQ(s->levels[1].link.bandwidth, 25e9);
}

TEST(ClusterImport, slurmSwitchesOfDifferentHeightArePadded)
{
    // core0 holds a spine (over two leaves) and a leaf directly: the leaf reaches the core
    // through a pass-through group, so every branch crosses every level.
    coretest::TempDir dir;
    const std::string file = writeTemp(dir, "t.conf",
                                       "SwitchName=l1 Nodes=n[1-2]\nSwitchName=l2 Nodes=n[3-4]\nSwitchName=l3 Nodes=n5\n"
                                       "SwitchName=s1 Switches=l[1-2]\nSwitchName=c Switches=s1,l3\n");
    ClusterImportOptions options;
    options.device = "h100-sxm-80gb";
    options.gpusPerNode = 8;
    options.bandwidthGBps = {450, 50, 50, 50};
    auto t = importCluster(file, options);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 40);   // 5 nodes x 8
    EXPECT_EQ(fanouts(*t, 2), (std::vector<int>{2, 1}));   // s1 and the pass-through above l3
    const int n1 = devicesOfNode(*t, "n1").front(), n5 = devicesOfNode(*t, "n5").front();
    EXPECT_EQ(t->level(n1, n5), 3);
}

TEST(ClusterImport, slurmErrorsNameTheLine)
{
    coretest::TempDir dir;
    struct Case {
        const char *what;
        std::string text;
        int line;
        const char *reason;
    };
    const std::vector<Case> cases{
        {"unknown key", "SwitchName=l1 Nodes=n[1-2]\n# note\nSwitchName=l2 Nodes=n[3-4] Bandwidth=100\n", 3, "unknown key"},
        {"cycle", "SwitchName=a Switches=b\nSwitchName=b Switches=a\n", 2, "cycle"},
        {"hostlist", "SwitchName=l1 Nodes=gpu[001-0x5]\n", 1, "hostlist"},
        {"node under Switches", "SwitchName=l1 Nodes=n[1-2]\nSwitchName=s1 Switches=l1,n3\n", 2, "no switch"},
        {"no children", "SwitchName=l1 LinkSpeed=10\n", 1, "neither"},
        {"continued statement", "SwitchName=l1 \\\n  Nodes=n[1-2] \\\n  Speed=3\n", 1, "unknown key"},
    };
    for (const Case &c : cases) {
        const std::string file = writeTemp(dir, "bad.conf", c.text);
        ClusterImportOptions options;
        options.format = ClusterFormat::Slurm;
        options.gpusPerNode = 8;
        options.device = "h100-sxm-80gb";
        auto t = importCluster(file, options);
        ASSERT_FALSE(t.ok()) << c.what;
        EXPECT_TRUE(namesLine(t.error(), file, c.line)) << c.what;
        EXPECT_TRUE(contains(t.error(), c.reason)) << c.what << ": " << t.error();
    }
}

TEST(ClusterImport, slurmGapsAndContradictionsAreRefused)
{
    // No GPU count, no device, too few bandwidths: each says what to give.
    ClusterImportOptions none;
    auto a = importCluster(slurmSample(), none);
    ASSERT_FALSE(a.ok());
    EXPECT_TRUE(contains(a.error(), "--device")) << a.error();
    ClusterImportOptions noGpus;
    noGpus.device = "h100-sxm-80gb";
    auto b = importCluster(slurmSample(), noGpus);
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(contains(b.error(), "--gpus-per-node")) << b.error();
    ClusterImportOptions shortList = noGpus;
    shortList.gpusPerNode = 8;
    shortList.bandwidthGBps = {450, 50};
    auto c = importCluster(slurmSample(), shortList);
    ASSERT_FALSE(c.ok());
    EXPECT_TRUE(contains(c.error(), "4 levels (node, leaf, spine, core)")) << c.error();
    // The dump has 8 GPUs per node (its first <gpu> is on line 5): --gpus-per-node 4 contradicts it.
    ClusterImportOptions mismatch;
    mismatch.nodeFile = ncclSample();
    mismatch.gpusPerNode = 4;
    auto d = importCluster(slurmSample(), mismatch);
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(namesLine(d.error(), ncclSample(), 5)) << d.error();
    EXPECT_TRUE(contains(d.error(), "8 GPUs per node")) << d.error();
    // The dump's GPUs are H100 (PCI 0x2330 on line 4): --device a100-80gb contradicts it.
    ClusterImportOptions otherDevice;
    otherDevice.nodeFile = ncclSample();
    otherDevice.device = "a100-80gb";
    auto e = importCluster(slurmSample(), otherDevice);
    ASSERT_FALSE(e.ok());
    EXPECT_TRUE(namesLine(e.error(), ncclSample(), 4)) << e.error();
}

// ---- NCCL topology XML

TEST(NcclTopology, dgxSampleGivesOneNode)
{
    auto node = parseNcclTopology(coretest::readFile(ncclSample()), "x.xml");
    ASSERT_TRUE(node.ok()) << node.error();
    EXPECT_EQ(node->gpuCount, 8);
    EXPECT_EQ(*node->smVersion, 90);
    EXPECT_EQ(node->nvlinksPerGpu, 18);                 // 5 + 4 + 4 + 5
    EXPECT_QFUZZY_EQ(*node->nvlinkBandwidth, 450e9);    // 18 x 25 GB/s
    EXPECT_QFUZZY_EQ(*node->nicBandwidthPerGpu, 50e9);  // 400 Gbit/s = 50 GB/s per NIC, one per GPU
    ASSERT_TRUE(node->device.has_value());
    EXPECT_EQ(node->device->name, "h100-sxm-80gb");

    // Alone it is a one-node cluster.
    auto t = importCluster(ncclSample(), {});
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 8);
    EXPECT_EQ(t->levelCount(), 1);
    EXPECT_QFUZZY_EQ(t->levels[0].link.bandwidth, 450e9);
}

TEST(NcclTopology, brokenDumpsNameTheLine)
{
    coretest::TempDir dir;
    const std::string good = coretest::readFile(ncclSample());
    struct Case {
        const char *what;
        std::string from, to;
        int line;
    };
    // Line 5 is GPU 0's <gpu>, line 6 its first <nvlink>, line 11 closes its <pci>; line 20 is GPU 1's <gpu>.
    const std::vector<Case> cases{
        {"no sm", "<gpu dev=\"0\" sm=\"90\"", "<gpu dev=\"0\"", 5},
        {"bad count", "count=\"5\" tclass=\"0x068000\"/>", "count=\"five\" tclass=\"0x068000\"/>", 6},
        {"mixed sm", "<gpu dev=\"1\" sm=\"90\"", "<gpu dev=\"1\" sm=\"80\"", 20},
        {"malformed", "      </pci>\n      <pci busid=\"0000:1a", "      </pcx>\n      <pci busid=\"0000:1a", 11},
    };
    for (const Case &c : cases) {
        std::string text = good;
        const auto at = text.find(c.from);
        ASSERT_NE(at, std::string::npos) << c.what;
        text.replace(at, c.from.size(), c.to);
        const std::string file = writeTemp(dir, "bad.xml", text);
        auto t = importCluster(file, {});
        ASSERT_FALSE(t.ok()) << c.what;
        EXPECT_TRUE(namesLine(t.error(), file, c.line)) << c.what;
    }
}

// ---- nvidia-smi topo -m

TEST(NvidiaSmiTopology, h100MatrixGivesEightGpusOnEighteenLinks)
{
    auto m = parseNvidiaSmiMatrix(coretest::readFile(smiSample()), "m.txt");
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->gpuCount, 8);
    EXPECT_EQ(m->nvlinks[0][7], 18);
    EXPECT_EQ(m->nvlinks[3][3], 0);
    // The matrix names no GPU: --device completes it; 18 links x 25 GB/s.
    ClusterImportOptions options;
    options.device = "h100-sxm-80gb";
    auto t = importCluster(smiSample(), options);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 8);
    EXPECT_QFUZZY_EQ(t->levels[0].link.bandwidth, 450e9);
    EXPECT_FALSE(importCluster(smiSample(), {}).ok());   // no device
}

TEST(NvidiaSmiTopology, directLinksAddUpPerGpu)
{
    // Four GPUs, each with 2 links to two peers and none to the third: 4 links per GPU
    // (a mesh, not a switch), and the terminal's underline codes around the header.
    const std::string text = "\x1b[4m\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\x1b[0m\n"
                             "GPU0\t X \tNV2\tNV2\tSYS\t0-15\n"
                             "GPU1\tNV2\t X \tSYS\tNV2\t0-15\n"
                             "GPU2\tNV2\tSYS\t X \tNV2\t0-15\n"
                             "GPU3\tSYS\tNV2\tNV2\t X \t0-15\n";
    auto node = parseNvidiaSmiTopology(text, "m.txt");
    ASSERT_TRUE(node.ok()) << node.error();
    EXPECT_EQ(node->gpuCount, 4);
    EXPECT_EQ(node->nvlinksPerGpu, 4);
}

TEST(NvidiaSmiTopology, brokenMatricesNameTheLine)
{
    const std::string good = coretest::readFile(smiSample());
    // Line 1 is the header, line 2 GPU0's row, line 3 GPU1's.
    auto replaced = [&good](const std::string &from, const std::string &to) {
        std::string t = good;
        t.replace(t.find(from), from.size(), to);
        return t;
    };
    auto a = parseNvidiaSmiMatrix(replaced("GPU1\tNV18", "GPU1\tNV12"), "m.txt");   // asymmetric
    ASSERT_FALSE(a.ok());
    EXPECT_TRUE(namesLine(a.error(), "m.txt", 3)) << a.error();
    auto b = parseNvidiaSmiMatrix(replaced("GPU1\tNV18", "GPU1\tNVX"), "m.txt");    // unknown cell
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(namesLine(b.error(), "m.txt", 3)) << b.error();
    auto c = parseNvidiaSmiMatrix(replaced("GPU1\tNV18", "GPU0\tNV18"), "m.txt");   // GPU0 twice, no GPU1
    ASSERT_FALSE(c.ok());
    EXPECT_TRUE(namesLine(c.error(), "m.txt", 3)) << c.error();
    // A count that contradicts the file: the header (line 1) fixes 8 GPUs.
    ClusterImportOptions options;
    options.device = "h100-sxm-80gb";
    options.gpusPerNode = 4;
    auto d = importCluster(smiSample(), options);
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(namesLine(d.error(), smiSample(), 1)) << d.error();
}

// ---- ASTRA-sim

TEST(AstraSimNetwork, sampleDimensionsBecomeLevels)
{
    ClusterImportOptions options;
    options.device = "h100-sxm-80gb";
    auto t = importCluster(astraSample(), options);
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t->deviceCount(), 128);   // 4 x 2 x 16
    ASSERT_EQ(t->levelCount(), 3);
    EXPECT_EQ(t->levels[0].name, "ring");
    EXPECT_EQ(t->levels[1].name, "fullyconnected");
    EXPECT_EQ(t->levels[2].name, "switch");
    // ASTRA-sim's GB is 2^30 bytes: 300 GB/s = 300 x 1073741824 bytes/s.
    EXPECT_QFUZZY_EQ(t->levels[0].link.bandwidth, 300.0 * 1073741824.0);
    EXPECT_QFUZZY_EQ(t->levels[2].link.bandwidth, 50.0 * 1073741824.0);
    // 700.5 ns = 0.7005 us.
    EXPECT_QFUZZY_EQ(t->levels[1].link.latency, 700.5e-9);
    EXPECT_EQ(fanouts(*t, 0).front(), 4);
    EXPECT_EQ(fanouts(*t, 2).front(), 16);
}

TEST(AstraSimNetwork, roundTripsAreExact)
{
    // astra-sim -> cluster file -> astra-sim: the same dimensions, number for number.
    const std::string text = coretest::readFile(astraSample());
    auto original = parseAstraSimNetwork(text, "n.yml");
    ASSERT_TRUE(original.ok()) << original.error();
    ClusterImportOptions options;
    options.device = "h100-sxm-80gb";
    auto t = importCluster(astraSample(), options);
    ASSERT_TRUE(t.ok()) << t.error();
    coretest::TempDir dir;
    ASSERT_TRUE(saveCluster(dir.filePath("c.json"), *t).ok());
    auto loaded = loadCluster(dir.filePath("c.json"));
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    auto exported = astraSimFromTopology(*loaded);
    ASSERT_TRUE(exported.ok()) << exported.error();
    auto reread = parseAstraSimNetwork(astraSimNetworkToYaml(*exported), "out.yml");
    ASSERT_TRUE(reread.ok()) << reread.error();
    EXPECT_TRUE(*reread == *original) << astraSimNetworkToYaml(*exported);
    EXPECT_EQ(reread->dimensions[1].latencyNs, 700.5);
    EXPECT_EQ(reread->dimensions[2].bandwidthGBps, 50.0);

    // cluster -> astra-sim -> cluster for a uniform, non-oversubscribed cluster: the same
    // fanouts and links (the names become the topology kinds; the device stays the caller's).
    auto a100 = loadCluster(sample("sample_configs/clusters/fat-tree-8x4x4.json"));
    ASSERT_TRUE(a100.ok()) << a100.error();
    auto net = astraSimFromTopology(*a100);
    ASSERT_TRUE(net.ok()) << net.error();
    auto netBack = parseAstraSimNetwork(astraSimNetworkToYaml(*net), "n.yml");
    ASSERT_TRUE(netBack.ok()) << netBack.error();
    const Topology back = topologyFromAstraSim(*netBack, a100->deviceTypes.front(), a100->name);
    ASSERT_EQ(back.levelCount(), a100->levelCount());
    EXPECT_EQ(back.deviceCount(), a100->deviceCount());
    for (int l = 0; l < back.levelCount(); ++l) {
        EXPECT_EQ(back.levels[l].link, a100->levels[l].link) << l;
        EXPECT_EQ(fanouts(back, l), fanouts(*a100, l)) << l;
    }
}

TEST(AstraSimNetwork, exportRefusesWhatItCannotHold)
{
    auto uneven = loadCluster(sample("sample_configs/clusters/nonuniform-3-4.json"));
    ASSERT_TRUE(uneven.ok()) << uneven.error();
    auto a = astraSimFromTopology(*uneven);
    ASSERT_FALSE(a.ok());
    EXPECT_TRUE(contains(a.error(), "uniform") || contains(a.error(), "overrides")) << a.error();
    // Oversubscription 2 at the spine (a100-512.json: 25 GB/s) is folded in: 12.5 GB/s.
    auto over = loadCluster(sample("sample_configs/clusters/a100-512.json"));
    ASSERT_TRUE(over.ok()) << over.error();
    std::vector<std::string> notes;
    auto b = astraSimFromTopology(*over, &notes);
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_EQ(notes.size(), 1u);
    EXPECT_QFUZZY_EQ(b->dimensions[2].bandwidthGBps * 1073741824.0, 12.5e9);
}

TEST(AstraSimNetwork, brokenFilesNameTheLine)
{
    struct Case {
        const char *what;
        std::string text;
        int line;
    };
    const std::string head = "topology: [ Ring, Switch ]\n";
    const std::vector<Case> cases{
        {"unknown key", head + "npus_count: [ 4, 2 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\nlinks_count: [ 2, 1 ]\n", 5},
        {"npus 1", head + "npus_count: [ 4, 1 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n", 2},
        {"length", head + "npus_count: [ 4, 2 ]\nbandwidth: [ 1 ]\nlatency: [ 1, 1 ]\n", 3},
        {"topology", "topology: [ Ring, Torus ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n", 1},
        {"negative latency", head + "npus_count: [ 4, 2 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1,\n  -5 ]\n", 5},
        {"not yaml", head + "npus_count: [ 4, 2\nbandwidth: [ 1, 1 ]\n", 3},
    };
    for (const Case &c : cases) {
        auto r = parseAstraSimNetwork(c.text, "n.yml");
        ASSERT_FALSE(r.ok()) << c.what;
        EXPECT_TRUE(namesLine(r.error(), "n.yml", c.line)) << c.what;
    }
}

// ---- Detection

TEST(ClusterImport, formatIsDetectedFromTheContent)
{
    const std::pair<std::string, ClusterFormat> samples[] = {{slurmSample(), ClusterFormat::Slurm},
                                                             {ncclSample(), ClusterFormat::NcclXml},
                                                             {smiSample(), ClusterFormat::NvidiaSmi},
                                                             {astraSample(), ClusterFormat::AstraSim}};
    for (const auto &[file, format] : samples) {
        auto f = detectClusterFormat(coretest::readFile(file), file);
        ASSERT_TRUE(f.ok()) << f.error();
        EXPECT_EQ(*f, format) << file;
    }
    auto none = detectClusterFormat("hello\n", "x.txt");
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(contains(none.error(), "--format")) << none.error();
}
