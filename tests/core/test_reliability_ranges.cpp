// Issue 13, ranges: every number read from a file has a documented range (Limits.h); outside
// it the loader says "FILE: at PATH: REASON (range ...)". One row per field class.
#include "ClusterIO.h"
#include "HfConfigImport.h"
#include "Limits.h"
#include "ModelIO.h"
#include "PlanIO.h"
#include "ProfileIO.h"

#include <QtTest>

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

class TestReliabilityRanges : public QObject {
    Q_OBJECT
private slots:
    void checkRangeHelper()
    {
        QVERIFY(!checkRange(300, limits::bandwidthGBps, "--bandwidth"));
        QCOMPARE(checkRange(2e7, limits::bandwidthGBps, "--bandwidth").value(),
                 std::string("--bandwidth: must be at most 10000000 GB/s, found 20000000 (range 1e-06 to 10000000 GB/s)"));
        QCOMPARE(checkRange(1e-320, limits::efficiency, "--efficiency").value(),
                 std::string("--efficiency: must be above 0.001, found 9.99989e-321 (range (0.001, 1])"));
        QVERIFY(!checkRange(1, limits::efficiency, "--efficiency"));
        QVERIFY(checkRange(std::numeric_limits<double>::quiet_NaN(), limits::oversubscription, "x"));
        QVERIFY(checkRange(std::numeric_limits<double>::infinity(), limits::latencyUs, "x"));
        QCOMPARE(checkRange(2.5, limits::layers, "--layers").value(),
                 std::string("--layers: must be a whole number, found 2.5 (range 1 to 100000)"));
        QCOMPARE(describeRange(limits::oversubscription), std::string("range 1 to 1024"));
    }

    void clusterFieldRanges_data()
    {
        QTest::addColumn<QString>("pointer");  // JSON pointer of the field to set
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("expected");
        QTest::newRow("bandwidth too high") << "/levels/1/bandwidth_GBps" << 1e300
            << "cluster.json: at levels[1].bandwidth_GBps: must be at most 10000000 GB/s, found 1e+300 (range 1e-06 to 10000000 GB/s)";
        QTest::newRow("bandwidth too low") << "/levels/0/bandwidth_GBps" << 1e-300
            << "cluster.json: at levels[0].bandwidth_GBps: must be at least 1e-06 GB/s, found 1e-300 (range 1e-06 to 10000000 GB/s)";
        QTest::newRow("latency") << "/levels/1/latency_us" << 1e300
            << "cluster.json: at levels[1].latency_us: must be at most 1000000 us, found 1e+300 (range 0 to 1000000 us)";
        QTest::newRow("oversubscription") << "/levels/1/oversubscription" << 1e308
            << "cluster.json: at levels[1].oversubscription: must be at most 1024, found 1e+308 (range 1 to 1024)";
    }
    void clusterFieldRanges()
    {
        QFETCH(QString, pointer);
        QFETCH(double, value);
        QFETCH(QString, expected);
        Json j = compactCluster();
        j[Json::json_pointer(pointer.toStdString())] = value;
        const Result<Topology> t = clusterFromJson(j, "cluster.json");
        QVERIFY(!t.ok());
        QCOMPARE(QString::fromStdString(t.error()), expected);
    }

    void deviceFieldRanges_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("expected");
        QTest::newRow("peak tiny") << "peak_tflops" << 1e-320
            << "at device.peak_tflops: must be at least 0.001 TFLOP/s, found 9.99989e-321 (range 0.001 to 1000000 TFLOP/s)";
        QTest::newRow("peak huge") << "peak_tflops" << 1e7 << "at device.peak_tflops: must be at most 1000000 TFLOP/s";
        QTest::newRow("memory tiny") << "memory_GB" << 1e-6 << "at device.memory_GB: must be at least 0.001 GB";
        QTest::newRow("memory huge") << "memory_GB" << 1e6 << "at device.memory_GB: must be at most 100000 GB";
        QTest::newRow("hbm bandwidth") << "memory_bandwidth_GBps" << 1e12
            << "at device.memory_bandwidth_GBps: must be at most 10000000 GB/s";
        QTest::newRow("efficiency tiny") << "matmul_efficiency" << 1e-320
            << "at device.matmul_efficiency: must be above 0.001";
    }
    void deviceFieldRanges()
    {
        QFETCH(QString, key);
        QFETCH(double, value);
        QFETCH(QString, expected);
        Json j = compactCluster();
        j["device"] = Json{{"name", "custom"}, {"peak_tflops", 100}, {"memory_GB", 80}, {"memory_bandwidth_GBps", 2000}};
        j["device"][key.toStdString()] = value;
        const Result<Topology> t = clusterFromJson(j, "cluster.json");
        QVERIFY(!t.ok());
        QVERIFY2(QString::fromStdString(t.error()).startsWith("cluster.json: " + expected), t.error().c_str());
        QVERIFY2(t.error().find("(range ") != std::string::npos, t.error().c_str());
    }

    void modelFieldRanges_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("expected");
        QTest::newRow("layers") << "layers" << 100000000.0 << "layers must be at most 100000, found 100000000 (range 1 to 100000)";
        QTest::newRow("hidden") << "hidden" << 8388608.0 << "hidden must be at most 1048576";
        QTest::newRow("seq") << "seq_length" << 50000000.0 << "seq_length must be at most 16777216";
        QTest::newRow("batch") << "global_batch" << 99999999.0 << "global_batch must be at most 16777216";
    }
    void modelFieldRanges()
    {
        QFETCH(QString, key);
        QFETCH(double, value);
        QFETCH(QString, expected);
        Json j = smallModel();
        j[key.toStdString()] = value;
        if (key == "seq_length")
            j["max_positions"] = value;
        const Result<ModelProfile> m = modelFromJson(j, "model.json");
        QVERIFY(!m.ok());
        QVERIFY2(QString::fromStdString(m.error()).startsWith("model.json: at " + key + ": " + expected), m.error().c_str());
    }

    void hfConfigHugeLayerCount()
    {
        const Json j = Json::parse(R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
          "num_hidden_layers": 50000000, "intermediate_size": 11008, "vocab_size": 32000})");
        const Result<ModelConfig> c = importHfConfig(j, "config.json");
        QVERIFY(!c.ok());
        QVERIFY2(c.error().find("must be at most 100000") != std::string::npos, c.error().c_str());
        QVERIFY2(c.error().find("config.json") == 0, c.error().c_str());
    }

    void profileRepeatBeyondTheLayerLimit()
    {
        const Json j = Json::parse(R"({"format": "nest-profile", "seq_length": 1024, "hidden": 1024,
          "layers": [{"kind": "transformer", "fwd_ms": 1, "bwd_ms": 2, "params": 1e6, "repeat": 60000},
                     {"kind": "transformer", "fwd_ms": 1, "bwd_ms": 2, "params": 1e6, "repeat": 60000}]})");
        const Result<ModelProfile> p = profileFromJson(j, "profile.json");
        QVERIFY(!p.ok());
        QVERIFY2(p.error().find("profile.json: at layers[1].repeat: the profile would have 120000 layers") == 0,
                 p.error().c_str());
        Json ok = j;
        ok["layers"][1]["repeat"] = 40000;  // 100000 in all: the limit itself is accepted
        QVERIFY(profileFromJson(ok, "profile.json").ok());
    }

    void profileTimesAndBytes()
    {
        Json j = Json::parse(R"({"format": "nest-profile", "seq_length": 1024, "hidden": 1024,
          "layers": [{"kind": "transformer", "fwd_ms": 1e300, "bwd_ms": 2, "params": 1e6}]})");
        Result<ModelProfile> p = profileFromJson(j, "profile.json");
        QVERIFY(!p.ok());
        QVERIFY2(p.error().find("at layers[0].fwd_ms: must be at most 3600000 ms") != std::string::npos, p.error().c_str());
        j["layers"][0]["fwd_ms"] = 1;
        j["layers"][0]["params"] = 1e300;
        p = profileFromJson(j, "profile.json");
        QVERIFY(!p.ok());
        QVERIFY2(p.error().find("at layers[0].params: must be at most") != std::string::npos, p.error().c_str());
    }

    void planBatchRange()
    {
        Json j = Json::parse(R"({"format": "nest-plan", "global_batch": 100000000, "micro_batch": 1,
          "seq_length": 1024, "dp": 1, "stages": [{"first_layer": 0, "end_layer": 1, "devices": [[0]]}]})");
        const Result<Plan> p = planFromJson(j, "plan.json");
        QVERIFY(!p.ok());
        QVERIFY2(p.error().find("plan.json: at global_batch: must be at most 16777216") == 0, p.error().c_str());
    }

    void devicesAboveTheLimit()
    {
        Json j = compactCluster();
        j["levels"][1]["fanout"] = 1 << 20;  // 8 x 2^20 devices
        const Result<Topology> t = clusterFromJson(j, "cluster.json");
        QVERIFY(!t.ok());
        QVERIFY2(t.error().find("levels[1].fanout") != std::string::npos, t.error().c_str());
    }

    void valuesAtTheBoundsAreAccepted()
    {
        Json j = compactCluster();
        j["levels"][1]["oversubscription"] = 1024;
        j["levels"][1]["latency_us"] = 1e6;
        j["levels"][0]["bandwidth_GBps"] = 1e7;
        const Result<Topology> t = clusterFromJson(j, "cluster.json");
        QVERIFY2(t.ok(), t.error().c_str());
        Json m = smallModel();
        m["layers"] = 100000;
        QVERIFY(modelFromJson(m, "model.json").ok());
    }
};

QTEST_APPLESS_MAIN(TestReliabilityRanges)
#include "test_reliability_ranges.moc"
