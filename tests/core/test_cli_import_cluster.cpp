// The nest-cli contract of issue 22, point 1: `import-cluster` and `export-cluster`. Each
// sample imports to a cluster file that `plan` accepts; bad input exits 2 with a message
// that names the file and line; the ASTRA-sim round trip through the CLI is exact.
#include "CoreTestSupport.h"

namespace {

using coretest::contains;
using coretest::jsonObject;
using coretest::runCli;
using coretest::sample;
using nlohmann::json;

const std::string Imports = "sample_configs/clusters/imports/";

} // namespace

TEST(CliImportCluster, everySampleImportsAndPlans)
{
    coretest::TempDir dir;
    struct Case {
        const char *name;
        std::vector<std::string> args;
        int devices;
        int levels;
    };
    const std::vector<Case> cases{
        // 16 nodes (4 + 4 + 3 + 5) x the dump's 8 GPUs; node, leaf, spine, core.
        {"slurm", {sample(Imports + "slurm-topology.conf"), "--node", sample(Imports + "dgx-h100-nccl-topo.xml")}, 128, 4},
        {"slurm-flags",
         {sample(Imports + "slurm-topology.conf"), "--format", "slurm", "--device", "a100-80gb", "--gpus-per-node", "8",
          "--bandwidth", "300,25,25,25", "--latency", "1,2,4,8", "--oversubscription", "1,1,1,2"},
         128, 4},
        {"nccl-xml", {sample(Imports + "dgx-h100-nccl-topo.xml")}, 8, 1},
        {"nvidia-smi", {sample(Imports + "h100x8-nvidia-smi-topo.txt"), "--device", "h100-sxm-80gb"}, 8, 1},
        {"astra-sim", {sample(Imports + "astra-sim-network.yml"), "--device", "h100-sxm-80gb"}, 128, 3},
    };
    for (const Case &c : cases) {
        const std::string out = dir.filePath(std::string(c.name) + ".json");
        std::vector<std::string> args{"import-cluster"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        args.insert(args.end(), {"--out", out});
        const coretest::Run imported = runCli(args);
        ASSERT_EQ(imported.exitCode, 0) << c.name << ": " << imported.err;
        const coretest::Run inspected = runCli({"inspect", "--cluster", out, "--json"});
        ASSERT_EQ(inspected.exitCode, 0) << c.name << ": " << inspected.err;
        const json o = jsonObject(inspected.out);
        EXPECT_EQ(o.value("devices", 0), c.devices) << c.name;
        EXPECT_EQ(o.value("levels", json::array()).size(), static_cast<size_t>(c.levels)) << c.name;
        const coretest::Run planned = runCli({"plan", "--cluster", out, "--model", "llama2-7b"});
        EXPECT_EQ(planned.exitCode, 0) << c.name << ": " << planned.err;
        EXPECT_TRUE(contains(planned.out, "best plan")) << c.name << ": " << planned.out;
    }
}

TEST(CliImportCluster, withoutOutItPrintsTheClusterJson)
{
    const coretest::Run r = runCli({"import-cluster", sample(Imports + "dgx-h100-nccl-topo.xml")});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json o = jsonObject(r.out);
    EXPECT_EQ(o.value("device", ""), "h100-sxm-80gb");
    // One uniform level of 8 GPUs on 18 x 25 GB/s of NVLink.
    ASSERT_EQ(o.value("levels", json::array()).size(), 1u);
    EXPECT_EQ(o["levels"][0].value("fanout", 0), 8);
    ASSERT_QFUZZY_EQ(o["levels"][0].value("bandwidth_GBps", 0.0), 450.0);
}

TEST(CliImportCluster, badInputExitsTwoNamingFileAndLine)
{
    coretest::TempDir dir;
    struct Case {
        const char *what;
        const char *fileName;
        std::string text;
        std::vector<std::string> flags;
        int line;
    };
    const std::vector<Case> cases{
        {"slurm unknown key", "t.conf", "SwitchName=l1 Nodes=n[1-2]\nSwitchName=s Switches=l1 Uplinks=4\n",
         {"--gpus-per-node", "8", "--device", "h100-sxm-80gb"}, 2},
        {"slurm cycle", "t.conf", "SwitchName=l1 Nodes=n[1-2]\nSwitchName=a Switches=b,l1\nSwitchName=b Switches=a\n",
         {"--gpus-per-node", "8", "--device", "h100-sxm-80gb"}, 3},
        {"slurm hostlist", "t.conf", "# leaf\nSwitchName=l1 Nodes=n[1-\n", {"--gpus-per-node", "8", "--device", "h100-sxm-80gb"}, 2},
        {"astra npus", "n.yml", "topology: [ Ring ]\nnpus_count: [ 0 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n",
         {"--device", "h100-sxm-80gb"}, 2},
        {"nccl no sm", "x.xml", "<system version=\"1\">\n  <cpu>\n    <gpu dev=\"0\" rank=\"0\"/>\n  </cpu>\n</system>\n", {}, 3},
        {"nvidia-smi cell", "m.txt", "\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t Y \n", {"--device", "a100-80gb"}, 3},
    };
    for (const Case &c : cases) {
        const std::string file = dir.filePath(c.fileName);
        ASSERT_TRUE(coretest::writeFile(file, c.text));
        std::vector<std::string> args{"import-cluster", file};
        args.insert(args.end(), c.flags.begin(), c.flags.end());
        const coretest::Run r = runCli(args);
        EXPECT_EQ(r.exitCode, 2) << c.what;
        EXPECT_TRUE(contains(r.err, file + ":" + std::to_string(c.line) + ":")) << c.what << ": " << r.err;
    }
    // A GPU count that contradicts the node file: the message names the file and the line of
    // its header (nvidia-smi: line 1).
    const coretest::Run mismatch = runCli({"import-cluster", sample(Imports + "slurm-topology.conf"), "--node",
                                           sample(Imports + "h100x8-nvidia-smi-topo.txt"), "--device", "h100-sxm-80gb",
                                           "--gpus-per-node", "4"});
    EXPECT_EQ(mismatch.exitCode, 2);
    EXPECT_TRUE(contains(mismatch.err, sample(Imports + "h100x8-nvidia-smi-topo.txt") + ":1:")) << mismatch.err;
    // Usage errors: an unknown format, a missing file.
    EXPECT_EQ(runCli({"import-cluster", sample(Imports + "astra-sim-network.yml"), "--format", "torus"}).exitCode, 2);
    const coretest::Run missing = runCli({"import-cluster", dir.filePath("nope.conf")});
    EXPECT_EQ(missing.exitCode, 2);
    EXPECT_TRUE(contains(missing.err, "nope.conf")) << missing.err;
}

TEST(CliExportCluster, astraSimRoundTripThroughTheCli)
{
    coretest::TempDir dir;
    const std::string cluster = dir.filePath("c.json"), yaml = dir.filePath("n.yml");
    ASSERT_EQ(runCli({"import-cluster", sample(Imports + "astra-sim-network.yml"), "--device", "h100-sxm-80gb", "--out",
                      cluster}).exitCode, 0);
    const coretest::Run exported = runCli({"export-cluster", "--cluster", cluster, "--format", "astra-sim", "--out", yaml});
    ASSERT_EQ(exported.exitCode, 0) << exported.err;
    // The numbers of the sample, as written there (the comments aside).
    const std::string text = coretest::readFile(yaml);
    EXPECT_TRUE(contains(text, "topology: [ Ring, FullyConnected, Switch ]")) << text;
    EXPECT_TRUE(contains(text, "npus_count: [ 4, 2, 16 ]")) << text;
    EXPECT_TRUE(contains(text, "bandwidth: [ 300, 150, 50 ]")) << text;
    EXPECT_TRUE(contains(text, "latency: [ 200, 700.5, 2500 ]")) << text;
    // And it imports again.
    EXPECT_EQ(runCli({"import-cluster", yaml, "--device", "h100-sxm-80gb"}).exitCode, 0);
    // A non-uniform cluster cannot be an ASTRA-sim network: exit 2 with the reason.
    const coretest::Run refused =
        runCli({"export-cluster", "--cluster", sample("sample_configs/clusters/nonuniform-3-4.json"), "--format", "astra-sim"});
    EXPECT_EQ(refused.exitCode, 2);
    EXPECT_TRUE(contains(refused.err, "nonuniform-3-4.json")) << refused.err;
}
