// Issue 13, ranges: every number read from a file has a documented range (Limits.h); outside
// it the loader says "FILE: at PATH: REASON (range ...)". One row per field class.
#include "ClusterIO.h"
#include "HfConfigImport.h"
#include "Limits.h"
#include "ModelIO.h"
#include "PlanIO.h"
#include "ProfileIO.h"

#include "CoreTestSupport.h"

#include <limits>
#include <string>
#include <vector>

using namespace nest;

namespace {

Json compactCluster()
{
    return Json::parse(R"({"format": "compact", "device": "a100-80gb",
      "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": 300, "latency_us": 1},
                 {"name": "rack", "fanout": 4, "bandwidth_GBps": 25, "latency_us": 5, "oversubscription": 2}]})");
}

Json smallModel()
{
    return Json::parse(R"({"family": "gpt", "layers": 4, "hidden": 256, "heads": 8, "ffn_hidden": 1024,
      "vocab": 1000, "max_positions": 512, "seq_length": 512, "global_batch": 32})");
}

} // namespace

TEST(ReliabilityRanges, checkRangeHelper)
{
    ASSERT_TRUE(!checkRange(300, limits::bandwidthGBps, "--bandwidth"));
    ASSERT_EQ(checkRange(2e7, limits::bandwidthGBps, "--bandwidth").value(),
              std::string("--bandwidth: must be at most 10000000 GB/s, found 20000000 (range 1e-06 to 10000000 GB/s)"));
    ASSERT_EQ(checkRange(1e-320, limits::efficiency, "--efficiency").value(),
              std::string("--efficiency: must be above 0.001, found 9.99989e-321 (range (0.001, 1])"));
    ASSERT_TRUE(!checkRange(1, limits::efficiency, "--efficiency"));
    ASSERT_TRUE(checkRange(std::numeric_limits<double>::quiet_NaN(), limits::oversubscription, "x"));
    ASSERT_TRUE(checkRange(std::numeric_limits<double>::infinity(), limits::latencyUs, "x"));
    ASSERT_EQ(checkRange(2.5, limits::layers, "--layers").value(),
              std::string("--layers: must be a whole number, found 2.5 (range 1 to 100000)"));
    ASSERT_EQ(describeRange(limits::oversubscription), std::string("range 1 to 1024"));
}

TEST(ReliabilityRanges, clusterFieldRanges)
{
    struct Row {
        const char *name;
        std::string pointer;  // JSON pointer of the field to set
        double value;
        std::string expected;
    };
    const std::vector<Row> rows{
        {"bandwidth too high", "/levels/1/bandwidth_GBps", 1e300,
         "cluster.json: at levels[1].bandwidth_GBps: must be at most 10000000 GB/s, found 1e+300 (range 1e-06 to 10000000 GB/s)"},
        {"bandwidth too low", "/levels/0/bandwidth_GBps", 1e-300,
         "cluster.json: at levels[0].bandwidth_GBps: must be at least 1e-06 GB/s, found 1e-300 (range 1e-06 to 10000000 GB/s)"},
        {"latency", "/levels/1/latency_us", 1e300,
         "cluster.json: at levels[1].latency_us: must be at most 1000000 us, found 1e+300 (range 0 to 1000000 us)"},
        {"oversubscription", "/levels/1/oversubscription", 1e308,
         "cluster.json: at levels[1].oversubscription: must be at most 1024, found 1e+308 (range 1 to 1024)"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            Json j = compactCluster();
            j[Json::json_pointer(row.pointer)] = row.value;
            const Result<Topology> t = clusterFromJson(j, "cluster.json");
            ASSERT_TRUE(!t.ok());
            ASSERT_EQ(t.error(), row.expected);
        }();
    }
}

TEST(ReliabilityRanges, deviceFieldRanges)
{
    struct Row {
        const char *name;
        std::string key;
        double value;
        std::string expected;
    };
    const std::vector<Row> rows{
        {"peak tiny", "peak_tflops", 1e-320,
         "at device.peak_tflops: must be at least 0.001 TFLOP/s, found 9.99989e-321 (range 0.001 to 1000000 TFLOP/s)"},
        {"peak huge", "peak_tflops", 1e7, "at device.peak_tflops: must be at most 1000000 TFLOP/s"},
        {"memory tiny", "memory_GB", 1e-6, "at device.memory_GB: must be at least 0.001 GB"},
        {"memory huge", "memory_GB", 1e6, "at device.memory_GB: must be at most 100000 GB"},
        {"hbm bandwidth", "memory_bandwidth_GBps", 1e12, "at device.memory_bandwidth_GBps: must be at most 10000000 GB/s"},
        {"efficiency tiny", "matmul_efficiency", 1e-320, "at device.matmul_efficiency: must be above 0.001"},
        {"scale-up share above 1", "scale_up_efficiency", 1.5, "at device.scale_up_efficiency: must be at most 1"},
        {"scale-up share tiny", "scale_up_efficiency", 1e-9, "at device.scale_up_efficiency: must be above 0.001"},
        {"scale-out share above 1", "scale_out_efficiency", 2.0, "at device.scale_out_efficiency: must be at most 1"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            Json j = compactCluster();
            j["device"] =
                Json{{"name", "custom"}, {"peak_tflops", 100}, {"memory_GB", 80}, {"memory_bandwidth_GBps", 2000}};
            j["device"][row.key] = row.value;
            const Result<Topology> t = clusterFromJson(j, "cluster.json");
            ASSERT_TRUE(!t.ok());
            ASSERT_TRUE(coretest::startsWith(t.error(), "cluster.json: " + row.expected)) << t.error();
            ASSERT_TRUE(t.error().find("(range ") != std::string::npos) << t.error();
        }();
    }
}

TEST(ReliabilityRanges, modelFieldRanges)
{
    struct Row {
        const char *name;
        std::string key;
        double value;
        std::string expected;
    };
    const std::vector<Row> rows{
        {"layers", "layers", 100000000.0, "layers must be at most 100000, found 100000000 (range 1 to 100000)"},
        {"hidden", "hidden", 8388608.0, "hidden must be at most 1048576"},
        {"seq", "seq_length", 50000000.0, "seq_length must be at most 16777216"},
        {"batch", "global_batch", 99999999.0, "global_batch must be at most 16777216"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            Json j = smallModel();
            j[row.key] = row.value;
            if (row.key == "seq_length")
                j["max_positions"] = row.value;
            const Result<ModelProfile> m = modelFromJson(j, "model.json");
            ASSERT_TRUE(!m.ok());
            ASSERT_TRUE(coretest::startsWith(m.error(), "model.json: at " + row.key + ": " + row.expected))
                << m.error();
        }();
    }
}

TEST(ReliabilityRanges, hfConfigHugeLayerCount)
{
    const Json j = Json::parse(R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
      "num_hidden_layers": 50000000, "intermediate_size": 11008, "vocab_size": 32000})");
    const Result<ModelConfig> c = importHfConfig(j, "config.json");
    ASSERT_TRUE(!c.ok());
    ASSERT_TRUE(c.error().find("must be at most 100000") != std::string::npos) << c.error();
    ASSERT_TRUE(c.error().find("config.json") == 0) << c.error();
}

TEST(ReliabilityRanges, profileRepeatBeyondTheLayerLimit)
{
    const Json j = Json::parse(R"({"format": "nest-profile", "seq_length": 1024, "hidden": 1024,
      "layers": [{"kind": "transformer", "fwd_ms": 1, "bwd_ms": 2, "params": 1e6, "repeat": 60000},
                 {"kind": "transformer", "fwd_ms": 1, "bwd_ms": 2, "params": 1e6, "repeat": 60000}]})");
    const Result<ModelProfile> p = profileFromJson(j, "profile.json");
    ASSERT_TRUE(!p.ok());
    ASSERT_TRUE(p.error().find("profile.json: at layers[1].repeat: the profile would have 120000 layers") == 0)
        << p.error();
    Json ok = j;
    ok["layers"][1]["repeat"] = 40000;  // 100000 in all: the limit itself is accepted
    ASSERT_TRUE(profileFromJson(ok, "profile.json").ok());
}

TEST(ReliabilityRanges, profileTimesAndBytes)
{
    Json j = Json::parse(R"({"format": "nest-profile", "seq_length": 1024, "hidden": 1024,
      "layers": [{"kind": "transformer", "fwd_ms": 1e300, "bwd_ms": 2, "params": 1e6}]})");
    Result<ModelProfile> p = profileFromJson(j, "profile.json");
    ASSERT_TRUE(!p.ok());
    ASSERT_TRUE(p.error().find("at layers[0].fwd_ms: must be at most 3600000 ms") != std::string::npos) << p.error();
    j["layers"][0]["fwd_ms"] = 1;
    j["layers"][0]["params"] = 1e300;
    p = profileFromJson(j, "profile.json");
    ASSERT_TRUE(!p.ok());
    ASSERT_TRUE(p.error().find("at layers[0].params: must be at most") != std::string::npos) << p.error();
}

TEST(ReliabilityRanges, planBatchRange)
{
    Json j = Json::parse(R"({"format": "nest-plan", "global_batch": 100000000, "micro_batch": 1,
      "seq_length": 1024, "dp": 1, "stages": [{"first_layer": 0, "end_layer": 1, "devices": [[0]]}]})");
    const Result<Plan> p = planFromJson(j, "plan.json");
    ASSERT_TRUE(!p.ok());
    ASSERT_TRUE(p.error().find("plan.json: at global_batch: must be at most 16777216") == 0) << p.error();
}

TEST(ReliabilityRanges, devicesAboveTheLimit)
{
    Json j = compactCluster();
    j["levels"][1]["fanout"] = 1 << 20;  // 8 x 2^20 devices
    const Result<Topology> t = clusterFromJson(j, "cluster.json");
    ASSERT_TRUE(!t.ok());
    ASSERT_TRUE(t.error().find("levels[1].fanout") != std::string::npos) << t.error();
}

TEST(ReliabilityRanges, valuesAtTheBoundsAreAccepted)
{
    Json j = compactCluster();
    j["levels"][1]["oversubscription"] = 1024;
    j["levels"][1]["latency_us"] = 1e6;
    j["levels"][0]["bandwidth_GBps"] = 1e7;
    const Result<Topology> t = clusterFromJson(j, "cluster.json");
    ASSERT_TRUE(t.ok()) << t.error();
    Json m = smallModel();
    m["layers"] = 100000;
    ASSERT_TRUE(modelFromJson(m, "model.json").ok());
}
