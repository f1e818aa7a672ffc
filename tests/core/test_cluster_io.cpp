// Cluster files: the three input forms, round trips, the sample files and every error path
// (each message must name the file, the JSON path and the reason).
#include "SourceDir.h"
#include "ClusterIO.h"
#include "ClusterTemplates.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace nest;

namespace {

using coretest::rowName;

// The compact example of issue 2, verbatim.
const char *const CompactExample = R"({"name": "a100-512", "device": "a100-80gb",
 "levels": [{"name": "node",  "fanout": 8,  "bandwidth_GBps": 300, "latency_us": 1},
            {"name": "rack",  "fanout": 4,  "bandwidth_GBps": 25,  "latency_us": 5},
            {"name": "spine", "fanout": 16, "bandwidth_GBps": 25,  "latency_us": 8, "oversubscription": 2}]})";

const std::string SampleDir = std::string(NEST_SOURCE_DIR) + "/sample_configs/clusters";

// Helpers that return a value cannot ASSERT: they throw, and GoogleTest fails the test that
// called them (Qt Test's qFatal stopped the whole run).
Topology parse(const std::string &text)
{
    auto j = parseJsonText(text, "inline");
    if (!j)
        throw std::runtime_error(j.error());
    auto t = clusterFromJson(*j, "inline");
    if (!t)
        throw std::runtime_error(t.error());
    return *t;
}

Topology reparse(const Topology &t)
{
    auto back = clusterFromJson(clusterToJson(t), "roundtrip");
    if (!back)
        throw std::runtime_error(back.error());
    return *back;
}

int groupNamed(const Topology &t, const std::string &name)
{
    for (size_t g = 0; g < t.groups.size(); ++g)
        if (t.groups[g].name == name)
            return static_cast<int>(g);
    return -1;
}

// Small explicit documents for the error table; `tree` is spliced into a valid frame.
std::string explicitWith(const std::string &tree)
{
    return std::string(R"({"format": "explicit", "device_types": {"gpu": "h100-sxm-80gb"},
 "levels": [{"name": "node", "bandwidth_GBps": 450, "latency_us": 1},
            {"name": "rack", "bandwidth_GBps": 50, "latency_us": 2},
            {"name": "spine", "bandwidth_GBps": 25, "latency_us": 4}],
 "tree": )") + tree + "}";
}

std::string compactWith(const std::string &levels, const std::string &device = "\"a100-80gb\"")
{
    return R"({"name": "t", "device": )" + device + R"(, "levels": )" + levels + "}";
}

} // namespace

// Every test gets its own temporary directory (Qt Test shared one across the suite; no two
// tests use the same file name, so nothing depended on the sharing).
class ClusterIo : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(std::filesystem::is_directory(m_dir.path())); }

    std::string tempPath(const std::string &name) const { return m_dir.filePath(name); }

private:
    coretest::TempDir m_dir;
};

TEST_F(ClusterIo, compactExample)
{
    const Topology t = parse(CompactExample);
    ASSERT_EQ(t.validate(), std::string());
    ASSERT_EQ(t.name, std::string("a100-512"));
    ASSERT_EQ(t.deviceCount(), 8 * 4 * 16);
    ASSERT_EQ(t.levelCount(), 3);
    ASSERT_EQ(t.spec(0).name, std::string("a100-80gb"));
    ASSERT_QFUZZY_EQ(t.levels[0].link.bandwidth, 300e9);
    ASSERT_QFUZZY_EQ(t.levels[1].link.bandwidth, 25e9);
    ASSERT_QFUZZY_EQ(t.levels[1].link.oversubscription, 1.0);  // default
    ASSERT_QFUZZY_EQ(t.levels[2].link.oversubscription, 2.0);
    ASSERT_TRUE(std::abs(t.levels[2].link.latency - 8e-6) < 1e-18);
    ASSERT_EQ(t.level(31, 32), 2);  // 32 devices per rack
    ASSERT_EQ(t.level(30, 31), 0);
    ASSERT_EQ(t.level(7, 8), 1);
    const auto preset = clusterPreset("a100-512");
    ASSERT_TRUE(preset.ok());
    ASSERT_TRUE(t == *preset);
}

TEST_F(ClusterIo, compactRoundTrip)
{
    const Topology t = parse(CompactExample);
    const Topology back = reparse(t);
    ASSERT_TRUE(back == t);
    // Through a file as well: load -> save -> load.
    const std::string file = tempPath("a100.json");
    ASSERT_TRUE(saveCluster(file, t).ok());
    const auto loaded = loadCluster(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().c_str();
    ASSERT_TRUE(*loaded == t);
    // The compact writer gives the same cluster back.
    const auto compact = clusterToCompactJson(t);
    ASSERT_TRUE(compact.has_value());
    ASSERT_EQ(compact->at("levels").size(), size_t(3));
    ASSERT_EQ(compact->at("levels")[2].at("fanout").get<int>(), 16);
    ASSERT_TRUE(*clusterFromJson(*compact, "compact") == t);
}

// Issue 23, point 2: the rail_optimized key reads, writes (explicit and compact forms) and
// round-trips; the rail-optimized template sets it; a cluster without it reads as false.
TEST_F(ClusterIo, railOptimizedRoundTrip)
{
    const Topology plain = parse(CompactExample);
    ASSERT_FALSE(plain.railOptimized);
    ASSERT_FALSE(clusterToJson(plain).contains("rail_optimized"));  // written only when true

    const Topology rail = parse(R"({"name": "r", "device": "h100-sxm-80gb", "rail_optimized": true,
        "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": 450, "latency_us": 1},
                   {"name": "su", "fanout": 4, "bandwidth_GBps": 50, "latency_us": 2}]})");
    ASSERT_TRUE(rail.railOptimized);
    ASSERT_EQ(rail.deviceCount(), 32);
    const Json explicitForm = clusterToJson(rail);
    ASSERT_TRUE(explicitForm.value("rail_optimized", false));
    const Topology back = reparse(rail);
    ASSERT_TRUE(back.railOptimized);
    ASSERT_TRUE(back == rail);
    const auto compact = clusterToCompactJson(rail);
    ASSERT_TRUE(compact.has_value());
    ASSERT_TRUE(compact->value("rail_optimized", false));
    const auto again = clusterFromJson(*compact, "compact");
    ASSERT_TRUE(again.ok()) << again.error();
    ASSERT_TRUE(*again == rail);
    // The flag is part of equality: the same tree without rails differs.
    Topology norail = rail;
    norail.railOptimized = false;
    ASSERT_FALSE(norail == rail);

    const auto tmpl = resolveCluster("rail-optimized");
    ASSERT_TRUE(tmpl.ok()) << tmpl.error();
    ASSERT_TRUE(tmpl->railOptimized);
    ASSERT_EQ(tmpl->deviceCount(), 4 * 32 * 8);
    ASSERT_TRUE(reparse(*tmpl) == *tmpl);
}

TEST_F(ClusterIo, explicitNonUniform)
{
    // sample_configs/clusters/nonuniform-3-4.json: rack0 = 3 H100 nodes x 8, rack1 = 4
    // A100 nodes x 8 with a link override (25 GB/s, 3 us, oversubscription inherited 1).
    const auto t = loadCluster(SampleDir + "/nonuniform-3-4.json");
    ASSERT_TRUE(t.ok()) << t.error().c_str();
    ASSERT_EQ(t->deviceCount(), 56);
    const int rack0 = groupNamed(*t, "rack0"), rack1 = groupNamed(*t, "rack1");
    ASSERT_EQ(t->groups[rack0].children.size(), size_t(3));
    ASSERT_EQ(t->groups[rack1].children.size(), size_t(4));
    ASSERT_TRUE(!t->groups[rack0].linkOverride.has_value());
    ASSERT_TRUE(t->groups[rack1].linkOverride.has_value());
    ASSERT_QFUZZY_EQ(t->groups[rack1].linkOverride->bandwidth, 25e9);
    ASSERT_TRUE(std::abs(t->groups[rack1].linkOverride->latency - 3e-6) < 1e-18);
    ASSERT_QFUZZY_EQ(t->groups[rack1].linkOverride->oversubscription, 1.0);
    // Device types in first-use order: h100 (rack0) then a100.
    ASSERT_EQ(t->deviceTypes.size(), size_t(2));
    ASSERT_EQ(t->spec(0).name, std::string("h100-sxm-80gb"));
    ASSERT_EQ(t->spec(24).name, std::string("a100-80gb"));  // node3 starts at 3 * 8
    ASSERT_EQ(t->level(23, 24), 2);                          // rack0's last / rack1's first
    ASSERT_QFUZZY_EQ(t->link(24, 32).bandwidth, 25e9);              // node3 / node4 meet at rack1
    ASSERT_QFUZZY_EQ(t->link(0, 8).bandwidth, 50e9);                // rack0 keeps the level's 50
    ASSERT_QFUZZY_EQ(t->link(0, 55).oversubscription, 2.0);         // across the spine
    // load -> save -> load.
    const std::string file = tempPath("nu.json");
    ASSERT_TRUE(saveCluster(file, *t).ok());
    const auto again = loadCluster(file);
    ASSERT_TRUE(again.ok()) << again.error().c_str();
    ASSERT_TRUE(*again == *t);
    ASSERT_TRUE(!clusterToCompactJson(*t).has_value());  // not uniform
}

TEST_F(ClusterIo, explicitDefaultsAndEditedTree)
{
    // Names, "level" and per-node "device" may be left out; one "device" for every node.
    const Topology t = parse(R"({"format": "explicit", "name": "tiny", "device": "v100",
        "levels": [{"name": "node", "bandwidth_GBps": 300}, {"name": "switch", "bandwidth_GBps": 12.5}],
        "tree": {"children": [{"devices": 2}, {"devices": 1}, {"devices": 3}]}})");
    ASSERT_EQ(t.deviceCount(), 6);
    ASSERT_EQ(t.groups[t.root].name, std::string("switch0"));
    ASSERT_EQ(t.groups[t.ancestor(5, 0)].name, std::string("node2"));
    ASSERT_QFUZZY_EQ(t.levels[0].link.latency, 0.0);
    ASSERT_EQ(t.level(1, 2), 1);
    ASSERT_EQ(t.level(3, 5), 0);
    ASSERT_TRUE(reparse(t) == t);

    // A tree edited in memory (node moved between racks). Its group vector is no longer in
    // depth-first order, which the loader produces, so compare what the planner sees
    // (levels and links of every pair), then require load -> save -> load equality.
    Topology edited = parse(CompactExample);
    const int rack0 = groupNamed(edited, "rack0"), rack1 = groupNamed(edited, "rack1");
    const int moved = edited.groups[rack0].children.back();
    edited.groups[rack0].children.pop_back();
    edited.groups[rack1].children.push_back(moved);
    edited.groups[rack1].linkOverride = LinkParams{10e9, 3e-6, 1.5};
    edited.reindex();
    ASSERT_EQ(edited.validate(), std::string());
    const Topology loaded = reparse(edited);
    ASSERT_EQ(loaded.deviceCount(), edited.deviceCount());
    for (int a = 0; a < edited.deviceCount(); ++a)
        for (int b = a + 1; b < edited.deviceCount(); ++b) {
            if (loaded.level(a, b) != edited.level(a, b) || !(loaded.link(a, b) == edited.link(a, b))) {
                FAIL() << "pair " << a << ", " << b << " differs";
            }
        }
    // rack0 now has 3 nodes (0..23), rack1 5 (24..63): 24 and 63 share rack1's override.
    ASSERT_EQ(loaded.level(23, 24), 2);
    ASSERT_EQ(loaded.level(24, 63), 1);
    ASSERT_QFUZZY_EQ(loaded.link(24, 63).bandwidth, 10e9);
    ASSERT_TRUE(reparse(loaded) == loaded);
    ASSERT_TRUE(!clusterToCompactJson(edited).has_value());
}

TEST_F(ClusterIo, uniformAsExplicitEqualsUniform)
{
    for (const auto &p : clusterPresets()) {
        const auto t = clusterPreset(p.key);
        ASSERT_TRUE(t.ok());
        ASSERT_TRUE(reparse(*t) == *t) << p.key.c_str();
        const auto compact = clusterToCompactJson(*t);
        ASSERT_TRUE(compact.has_value()) << p.key.c_str();
        ASSERT_TRUE(*clusterFromJson(*compact, p.key) == *t) << p.key.c_str();
    }
}

TEST_F(ClusterIo, templateForm)
{
    const auto t = loadCluster(SampleDir + "/fat-tree-8x4x4.json");
    ASSERT_TRUE(t.ok()) << t.error().c_str();
    ASSERT_EQ(t->deviceCount(), 128);
    ASSERT_EQ(t->name, std::string("fat-tree-8x4x4"));
    ASSERT_QFUZZY_EQ(t->levels[2].link.bandwidth, 25e9);
    const Topology inlineDevice = parse(R"({"template": "paper-v100", "params": {"devices": 8},
        "device": {"name": "v100-16", "peak_tflops": 125, "memory_GB": 16, "memory_bandwidth_GBps": 900}})");
    ASSERT_EQ(inlineDevice.deviceCount(), 8);
    ASSERT_QFUZZY_EQ(inlineDevice.spec(7).memoryBytes, 16e9);
}

TEST_F(ClusterIo, sampleFiles)
{
    namespace fs = std::filesystem;
    int files = 0, matchedPresets = 0;
    for (const auto &entry : fs::directory_iterator(SampleDir)) {
        if (entry.path().extension() != ".json")
            continue;
        ++files;
        const std::string file = entry.path().string();
        const auto t = loadCluster(file);
        ASSERT_TRUE(t.ok()) << t.error().c_str();
        ASSERT_EQ(t->validate(), std::string());
        const std::string stem = entry.path().stem().string();
        if (const auto preset = clusterPreset(stem); preset.ok()) {
            ++matchedPresets;
            ASSERT_TRUE(*t == *preset) << file.c_str();
        }
        const std::string copy = tempPath("copy-" + stem + ".json");
        ASSERT_TRUE(saveCluster(copy, *t).ok());
        const auto again = loadCluster(copy);
        ASSERT_TRUE(again.ok() && *again == *t) << file.c_str();
    }
    // One file per preset, plus the non-uniform and template examples.
    ASSERT_EQ(matchedPresets, static_cast<int>(clusterPresets().size()));
    ASSERT_TRUE(files >= matchedPresets + 2);
}

TEST_F(ClusterIo, resolve)
{
    const auto preset = resolveCluster("paper-v100-16");
    ASSERT_TRUE(preset.ok());
    ASSERT_EQ(preset->deviceCount(), 16);
    const auto file = resolveCluster(SampleDir + "/nonuniform-3-4.json");
    ASSERT_TRUE(file.ok());
    ASSERT_EQ(file->deviceCount(), 56);
    const auto tmpl = resolveCluster("superpod");
    ASSERT_TRUE(tmpl.ok());
    ASSERT_EQ(tmpl->deviceCount(), 1024);
    const auto unknown = resolveCluster("a100-999");
    ASSERT_TRUE(!unknown.ok());
    ASSERT_TRUE(unknown.error().find("a100-999") != std::string::npos);
    ASSERT_TRUE(unknown.error().find("paper-fattree-64") != std::string::npos);
    const auto missing = resolveCluster("no/such/cluster.json");
    ASSERT_TRUE(!missing.ok());
    ASSERT_TRUE(missing.error().find("no/such/cluster.json: no such file") != std::string::npos);
}

TEST_F(ClusterIo, saveErrors)
{
    Topology broken = parse(CompactExample);
    broken.levels[1].link.bandwidth = -1;
    const auto refused = saveCluster(tempPath("broken.json"), broken);
    ASSERT_TRUE(!refused.ok());
    ASSERT_TRUE(refused.error().find("not saved") != std::string::npos);
    ASSERT_TRUE(refused.error().find("bandwidth") != std::string::npos);
    const std::string badDir = tempPath("missing-dir/out.json");
    const auto unwritable = saveCluster(badDir, parse(CompactExample));
    ASSERT_TRUE(!unwritable.ok());
    ASSERT_TRUE(unwritable.error().find(badDir) != std::string::npos);
}

namespace {

struct LoadErrorRow {
    std::string tag;
    std::string name;     // file name in the temp dir
    std::string content;  // "<none>" = do not create; "<dir>" = a directory
    std::string path;     // JSON path expected in the message ("" = none)
    std::string reason;   // a word of the reason
};

void PrintTo(const LoadErrorRow &row, std::ostream *os) { *os << row.tag; }

std::vector<LoadErrorRow> loadErrorRows()
{
    return {
        {"missing file", "missing.json", "<none>", "", "no such file"},
        {"directory", "adir.json", "<dir>", "", "directory"},
        {"empty file", "empty.json", "  \n", "", "empty"},
        {"malformed", "malformed.json", R"({"name": "x", "levels": [)", "", "malformed"},
        {"top-level array", "array.json", "[1, 2]", "", "expected an object"},
        {"missing levels", "nolevels.json", R"({"name": "x", "device": "a100"})", "levels", "missing"},
        {"empty levels", "emptylevels.json", compactWith("[]"), "levels", "at least one"},
        {"fanout 0", "fanout0.json", compactWith(R"([{"name": "node", "fanout": 0, "bandwidth_GBps": 300}])"),
         "levels[0].fanout", "between 1"},
        {"fanout 2.5", "fanout25.json", compactWith(R"([{"name": "node", "fanout": 2.5, "bandwidth_GBps": 300}])"),
         "levels[0].fanout", "whole number"},
        {"negative bandwidth", "negbw.json", compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 2, "bandwidth_GBps": -25}])"),
         "levels[1].bandwidth_GBps", "positive"},
        {"bandwidth as a string", "strbw.json",
         compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": "300"}])"), "levels[0].bandwidth_GBps",
         "expected a number"},
        {"negative latency", "neglat.json",
         compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300, "latency_us": -1}])"),
         "levels[0].latency_us", "negative"},
        {"oversubscription 0.5", "over.json", compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 2, "bandwidth_GBps": 25},
                               {"name": "spine", "fanout": 2, "bandwidth_GBps": 25, "oversubscription": 0.5}])"),
         "levels[2].oversubscription", ">= 1"},
        {"huge number 1e999", "inf.json", compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 2, "bandwidth_GBps": 1e999}])"),
         "levels[1].bandwidth_GBps", "out of range"},
        {"unknown device preset", "dev.json",
         compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300}])", "\"gtx-1080\""), "device",
         "unknown device preset"},
        {"inline device without memory", "devinline.json",
         compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300}])",
                     R"({"name": "x", "peak_tflops": 100, "memory_bandwidth_GBps": 1000})"),
         "device.memory_GB", "missing"},
        {"unknown key", "typo.json", compactWith(R"([{"name": "node", "fanot": 8, "bandwidth_GBps": 300}])"),
         "levels[0].fanot", "unknown key"},
        {"duplicate level name", "dup.json", compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "node", "fanout": 2, "bandwidth_GBps": 25}])"), "levels[1].name", "duplicate"},
        {"too many devices", "huge.json", compactWith(R"([{"name": "node", "fanout": 1024, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 1024, "bandwidth_GBps": 25},
                               {"name": "spine", "fanout": 2, "bandwidth_GBps": 25}])"),
         "levels[2].fanout", "more than 1048576"},
        {"unknown format", "fmt.json", R"({"format": "yaml"})", "format", "unknown format"},
        {"zero devices", "zero.json", explicitWith(R"({"children": [{"children": [{"devices": 0}]}]})"),
         "tree.children[0].children[0].devices", "between 1"},
        {"missing devices", "nodev.json", explicitWith(R"({"children": [{"children": [{"name": "n"}]}]})"),
         "tree.children[0].children[0].devices", "missing"},
        {"tree too shallow", "shallow.json", explicitWith(R"({"children": [{"devices": 8}]})"),
         "tree.children[0].devices", "shallower"},
        {"tree too deep", "deep.json",
         explicitWith(R"({"children": [{"children": [{"children": [{"devices": 8}]}]}]})"),
         "tree.children[0].children[0].children", "deeper"},
        {"unknown level name", "lvl.json",
         explicitWith(R"({"children": [{"level": "pod", "children": [{"devices": 8}]}]})"), "tree.children[0].level",
         "unknown level name"},
        {"level at the wrong depth", "depth.json",
         explicitWith(R"({"level": "node", "children": [{"children": [{"devices": 8}]}]})"), "tree.level", "depth"},
        {"unknown device type", "devtype.json",
         explicitWith(R"({"children": [{"children": [{"device": "tpu", "devices": 8}]}]})"),
         "tree.children[0].children[0].device", "unknown device type"},
        {"empty children", "nochildren.json", explicitWith(R"({"children": []})"), "tree.children", "at least one"},
        {"bad link override", "override.json",
         explicitWith(R"({"children": [{"link": {"bandwidth_GBps": 0}, "children": [{"devices": 8}]}]})"),
         "tree.children[0].link.bandwidth_GBps", "positive"},
        {"rail flag not a boolean", "rail.json",
         R"({"device": "a100-80gb", "rail_optimized": "yes", "levels": [{"name": "node", "fanout": 8,
             "bandwidth_GBps": 300}, {"name": "rack", "fanout": 4, "bandwidth_GBps": 25}]})",
         "rail_optimized", "expected true or false"},
        {"rail flag a number", "rail2.json",
         explicitWith(R"({"children": [{"children": [{"devices": 8}]}]})").replace(0, 1, R"({"rail_optimized": 1, )"),
         "rail_optimized", "expected true or false"},
        {"rail without a switch level", "rail3.json",
         R"({"device": "a100-80gb", "rail_optimized": true, "levels": [{"name": "node", "fanout": 8,
             "bandwidth_GBps": 300}]})",
         "rail_optimized", "needs a switch level"},
        {"unknown template", "tmpl.json", R"({"template": "hypercube"})", "template", "unknown cluster template"},
        {"template param out of range", "tparam.json", R"({"template": "fat-tree", "params": {"racks": 0}})",
         "params.racks", "between"},
        {"template param not a number", "tparam2.json", R"({"template": "fat-tree", "params": {"racks": "four"}})",
         "params.racks", "expected a number"},
        {"template param unknown", "tparam3.json", R"({"template": "superpod", "params": {"pods": 2}})", "params.pods",
         "unknown parameter"},
        {"template device unknown", "tdev.json", R"({"template": "superpod", "device": "h1000"})", "device",
         "unknown device preset"},
    };
}

class ClusterIoLoadErrors : public ClusterIo, public ::testing::WithParamInterface<LoadErrorRow> {};

} // namespace

TEST_P(ClusterIoLoadErrors, loadErrors)
{
    const std::string &name = GetParam().name;
    const std::string &content = GetParam().content;
    const std::string &path = GetParam().path;
    const std::string &reason = GetParam().reason;
    const std::string file = tempPath(name);
    if (content == "<dir>") {
        std::filesystem::create_directories(file);
    } else if (content != "<none>") {
        std::ofstream(file, std::ios::binary) << content;
    }
    const auto t = loadCluster(file);
    ASSERT_TRUE(!t.ok());
    const std::string &msg = t.error();
    ASSERT_TRUE(msg.rfind(file + ": ", 0) == 0) << msg.c_str();  // starts with the file name
    if (!path.empty()) {
        ASSERT_TRUE(msg.find("at " + path + ": ") != std::string::npos) << msg.c_str();
    }
    ASSERT_TRUE(msg.find(reason) != std::string::npos) << msg.c_str();
    ASSERT_TRUE(msg.find('\n') == std::string::npos) << msg.c_str();  // one message, one line
}

INSTANTIATE_TEST_SUITE_P(Rows, ClusterIoLoadErrors, ::testing::ValuesIn(loadErrorRows()),
                         [](const auto &p) { return rowName(p.param.tag); });
