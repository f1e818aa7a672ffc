// The nest-cli contract of the foundation issue: `presets` and `inspect`, their JSON keys,
// exit codes (0 success, 2 bad input with the message on stderr) and the printed counts.
#include "SourceDir.h"
#include "CoreTestSupport.h"

#include <algorithm>
#include <cmath>

namespace {

using coretest::contains;
using coretest::jsonObject;
using coretest::runCli;
using coretest::sample;
using nlohmann::json;

bool has(const std::vector<std::string> &list, const std::string &item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

} // namespace

TEST(CliFoundation, presetsJsonListsEverything)
{
    const coretest::Run r = runCli({"presets", "--json"});
    ASSERT_EQ(r.exitCode, 0);
    const json o = jsonObject(r.out);
    std::vector<std::string> devices;
    for (const json &d : o.value("devices", json::array()))
        devices.push_back(d.value("name", ""));
    for (const char *name : {"v100-32gb", "a100-80gb", "h100-sxm-80gb", "h200", "tpuv4", "b200", "mi300x"})
        ASSERT_TRUE(has(devices, name)) << name;
    std::vector<std::string> models;
    for (const json &m : o.value("models", json::array()))
        models.push_back(m.value("name", ""));
    for (const char *name : {"llama2-7b", "llama3-70b", "bert-large", "gpt3-175b", "gpt3-35b", "mixtral-8x7b"})
        ASSERT_TRUE(has(models, name)) << name;
    std::vector<std::string> templates;
    for (const json &t : o.value("cluster_templates", json::array()))
        templates.push_back(t.value("key", ""));
    for (const char *name : {"fat-tree", "spine-leaf", "superpod", "torus2d", "torus3d"})
        ASSERT_TRUE(has(templates, name)) << name;
}

TEST(CliFoundation, presetsTableIsHumanReadable)
{
    const coretest::Run r = runCli({"presets"});
    ASSERT_EQ(r.exitCode, 0);
    ASSERT_TRUE(contains(r.out, "h100-sxm-80gb"));
    ASSERT_TRUE(contains(r.out, "mixtral-8x7b"));
}

TEST(CliFoundation, inspectCompactClusterFile)
{
    // sample_configs/clusters/a100-512.json is the issue's example: 8 x 4 x 16 = 512
    // devices on three levels, the spine 2:1 oversubscribed.
    const coretest::Run r = runCli({"inspect", "--cluster", sample("sample_configs/clusters/a100-512.json"), "--json"});
    ASSERT_EQ(r.exitCode, 0);
    const json o = jsonObject(r.out);
    ASSERT_EQ(o.value("devices", 0), 512);
    const json levels = o.value("levels", json::array());
    ASSERT_EQ(levels.size(), 3u);
    ASSERT_QFUZZY_EQ(levels[0].value("bandwidth_GBps", 0.0), 300.0);
    // Priced at NCCL's rates: 12 NVLinks x 20 GB/s of an A100's 300; 96 % of the NICs above.
    ASSERT_QFUZZY_EQ(levels[0].value("achievable_GBps", 0.0), 240.0);
    ASSERT_QFUZZY_EQ(levels[1].value("achievable_GBps", 0.0), 24.0);
    ASSERT_QFUZZY_EQ(levels[2].value("oversubscription", 0.0), 2.0);
    ASSERT_EQ(levels[1].value("groups", 0), 16);  // 16 racks
}

TEST(CliFoundation, inspectModelCounts)
{
    struct Row {
        const char *name;
        std::string model;
        double published, publishedActive;
    };
    // Published totals: Touvron et al. 2023 (Llama 2 7B: 6.74 B); Brown et al. 2020
    // (GPT-3: 175 B); Jiang et al. 2024 (Mixtral 8x7B: 46.7 B total, 12.9 B active).
    const std::vector<Row> rows{
        {"llama2-7b", "llama2-7b", 6.74e9, 6.74e9},
        {"gpt3-175b", "gpt3-175b", 175e9, 175e9},
        {"mixtral-8x7b", "mixtral-8x7b", 46.7e9, 12.9e9},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = runCli({"inspect", "--model", row.model, "--json"});
            ASSERT_EQ(r.exitCode, 0);
            const json o = jsonObject(r.out);
            for (const char *key : {"devices", "levels", "parameters", "active_parameters", "flops_per_token"})
                ASSERT_TRUE(o.contains(key)) << key;
            ASSERT_TRUE(std::abs(o.value("parameters", 0.0) / row.published - 1) < 0.01);
            ASSERT_TRUE(std::abs(o.value("active_parameters", 0.0) / row.publishedActive - 1) < 0.01);
            // Training FLOPs per token are at least 6 x active parameters (Kaplan et al. 2020:
            // 2 forward + 4 backward per parameter) plus attention, and not wildly more.
            const double f = o.value("flops_per_token", 0.0);
            ASSERT_TRUE(f >= 6 * row.publishedActive * 0.98);
            ASSERT_TRUE(f <= 6 * row.publishedActive * 1.6);
        }();
    }
}

TEST(CliFoundation, inspectPrintsCounts)
{
    const coretest::Run r = runCli({"inspect", "--cluster", "paper-v100-16", "--model", "llama2-7b"});
    ASSERT_EQ(r.exitCode, 0);
    ASSERT_TRUE(contains(r.out, "16 devices"));
    ASSERT_TRUE(contains(r.out, "6.7"));
}

TEST(CliFoundation, badInputExitsTwo)
{
    struct Row {
        const char *name;
        std::vector<std::string> args;
        std::string mustMention;
    };
    const std::vector<Row> rows{
        {"no args", {}, "usage"},
        {"unknown command", {"frobnicate"}, "unknown command"},
        {"unknown option", {"presets", "--jsn"}, "--jsn"},
        {"unknown preset", {"inspect", "--cluster", "no-such-cluster"}, "no-such-cluster"},
        {"unknown model", {"inspect", "--model", "gpt5"}, "gpt5"},
        {"missing value", {"inspect", "--model"}, "needs a value"},
        {"nothing to inspect", {"inspect"}, "--cluster"},
        {"bad seq", {"inspect", "--model", "llama2-7b", "--seq", "-5"}, "--seq"},
        {"directory", {"inspect", "--cluster", NEST_SOURCE_DIR}, "directory"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = runCli(row.args);
            ASSERT_EQ(r.exitCode, 2);
            ASSERT_TRUE(coretest::containsNoCase(r.err, row.mustMention)) << r.err;
            ASSERT_TRUE(r.out.empty());
        }();
    }
}

TEST(CliFoundation, malformedFileNamesFileAndPlace)
{
    const coretest::TempDir dir;
    const std::string file = dir.filePath("broken.json");
    ASSERT_TRUE(coretest::writeFile(
        file, "{\"name\": \"x\", \"device\": \"a100-80gb\",\n \"levels\": [ {\"name\": \"node\", \"fanout\": 8,, } ]}"));
    const coretest::Run r = runCli({"inspect", "--cluster", file});
    ASSERT_EQ(r.exitCode, 2);
    ASSERT_TRUE(contains(r.err, file)) << r.err;
    ASSERT_TRUE(contains(r.err, "line 2")) << r.err;

    const std::string negative = dir.filePath("negative.json");
    ASSERT_TRUE(coretest::writeFile(
        negative,
        R"({"name": "x", "device": "a100-80gb", "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": -3, "latency_us": 1}]})"));
    const coretest::Run r2 = runCli({"inspect", "--cluster", negative});
    ASSERT_EQ(r2.exitCode, 2);
    ASSERT_TRUE(contains(r2.err, negative) && contains(r2.err, "levels[0].bandwidth_GBps")) << r2.err;
}
