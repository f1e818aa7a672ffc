// The NEST artifact's per-layer solver input read faithfully (issue 22, point 3): every
// tensor width from its own nodes[t], only those widths allowed, the TP all-reduce rule, the
// file's optimizer, ep_degree x cp_degree devices per shard, its cluster, its sequence length,
// the --match-artifact memory accounting, and every bad input named by file and JSON path.
// Expected values are computed by hand from the tiny file below (comments show the sums).
#include "Evaluator.h"
#include "ModelIO.h"
#include "Plan.h"
#include "PlanBuilder.h"
#include "ProfileIO.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace nest;

namespace {

// Two widths, 1 and 8; a width-8 latency that is NOT the width-1 one divided by 8 (40 / 8 = 5
// ms, the file says 7 ms). Micro-batch 2 (from the name), so per sample = file value / 2.
// Cluster: 16 devices, 8 per node, 2 nodes; 1 TB per device.
const char *TOY = R"({
  "maxMemoryPerDevice": 1000000000000, "maxDevices": 16,
  "bws": [100000000000, 10000000000], "latency_per_level": [0.00001, 0.00002],
  "devices_per_level": [8, 2], "mbsInBatch": 8, "ep_degree": 1, "cp_degree": 1,
  "activationRecomputation": false, "optimizerAlgorithm": "SGD",
  "nodes": {
    "1": [{"id": -1, "parameterSize": 1600, "activationSize": 100, "optimalLatencyFw": 2, "optimalLatencyBw": 2, "isTensorParallelized": false},
          {"id": 0, "parameterSize": 6400, "activationSize": 3000, "optimalLatencyFw": 40, "optimalLatencyBw": 80, "isTensorParallelized": false},
          {"id": 1, "parameterSize": 6400, "activationSize": 3000, "optimalLatencyFw": 40, "optimalLatencyBw": 80, "isTensorParallelized": false}],
    "8": [{"id": -1, "parameterSize": 200, "activationSize": 60, "optimalLatencyFw": 1, "optimalLatencyBw": 1, "isTensorParallelized": true},
          {"id": 0, "parameterSize": 800, "activationSize": 500, "optimalLatencyFw": 7, "optimalLatencyBw": 13, "isTensorParallelized": true},
          {"id": 1, "parameterSize": 800, "activationSize": 500, "optimalLatencyFw": 7, "optimalLatencyBw": 13, "isTensorParallelized": true}]},
  "edges": {
    "1": [{"sourceId": -1, "destId": 0, "communicationCost": 1000}, {"sourceId": 0, "destId": 1, "communicationCost": 1000}],
    "8": [{"sourceId": -1, "destId": 0, "communicationCost": 1000}, {"sourceId": 0, "destId": 1, "communicationCost": 1000}]}
})";
const std::string NAME = "dir/toy_mbs_2_sl_128_dev16.json";

Json toy()
{
    return Json::parse(TOY);
}

ModelProfile load(const Json &j, const std::string &name = NAME)
{
    auto p = profileFromArtifactJson(j, name);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
    return p.ok() ? std::move(p).value() : ModelProfile{};
}

Topology cluster(const Json &j)
{
    auto t = artifactClusterFromJson(j, NAME);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error());
    return t.ok() ? std::move(t).value() : Topology{};
}

Plan uniform(const Topology &topo, const ModelProfile &m, int tp, int pp, int dp)
{
    UniformLayout u;
    u.tp = tp;
    u.pp = pp;
    u.dp = dp;
    u.microBatch = 2;
    u.globalBatch = m.globalBatch;
    u.seqLength = m.seqLength;
    u.stageBlocks = pp == 2 ? std::vector<int>{1, 1} : std::vector<int>{};
    auto plan = buildUniformPlan(u, topo, m);
    EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error());
    return plan.ok() ? std::move(plan).value() : Plan{};
}

} // namespace

TEST(ArtifactInput, everyWidthReadFromItsOwnNodes)
{
    const ModelProfile m = load(toy());
    ASSERT_EQ(m.tensorWidths, (std::vector<int>{1, 8}));
    ASSERT_EQ(m.seqLength, 128);      // "_sl_128_"
    ASSERT_EQ(m.globalBatch, 16);     // mbs 2 x mbsInBatch 8
    ASSERT_EQ(m.layerCount(), 3);
    const WidthMeasurement *w8 = m.layers[1].measuredAt(8);
    const WidthMeasurement *w1 = m.layers[1].measuredAt(1);
    ASSERT_NE(w8, nullptr);
    ASSERT_NE(w1, nullptr);
    ASSERT_EQ(m.layers[1].measuredAt(4), nullptr);
    EXPECT_DOUBLE_EQ(w8->fwdTime, 7e-3 / 2);   // nodes["8"]: 7 ms per micro-batch of 2
    EXPECT_DOUBLE_EQ(w8->bwdTime, 13e-3 / 2);
    EXPECT_DOUBLE_EQ(w1->fwdTime, 40e-3 / 2);  // nodes["1"]
    EXPECT_DOUBLE_EQ(w8->params, 800.0 / 2);   // BF16 bytes -> parameters per device
    EXPECT_DOUBLE_EQ(w8->stashBytes, 500.0 / 2);
    // TP rule: a block all-reduces twice its output edge per forward (1000 B per micro-batch
    // of 2), the embedding once; nothing at width 1.
    EXPECT_DOUBLE_EQ(w8->tpAllReduceBytes, 2 * 1000.0 / 2);
    EXPECT_DOUBLE_EQ(m.layers[0].measuredAt(8)->tpAllReduceBytes, 1000.0 / 2);
    EXPECT_DOUBLE_EQ(w1->tpAllReduceBytes, 0.0);
    EXPECT_DOUBLE_EQ(m.optimizerBytesPerParam, 0.0);  // SGD
    EXPECT_EQ(m.groupDevices, 1);
    EXPECT_EQ(m.measuredMicroBatch, 2);
    ASSERT_TRUE(m.measuredRecompute.has_value());
    EXPECT_FALSE(*m.measuredRecompute);
}

TEST(ArtifactInput, evaluatorTakesWidthEightFromTheFile)
{
    const Json j = toy();
    const ModelProfile m = load(j);
    const Topology topo = cluster(j);
    ASSERT_EQ(topo.deviceCount(), 16);
    const Report r = evaluate(uniform(topo, m, 8, 1, 1), topo, m);
    ASSERT_TRUE(r.feasible) << (r.reasons.empty() ? "" : r.reasons.front());
    // Forward per micro-batch of 2: 1 + 7 + 7 ms from nodes["8"] (scaling width 1 would give
    // 2/8 + 40/8 + 40/8 = 10.25 ms).
    EXPECT_NEAR(r.stages[0].cost.forward, 15e-3, 1e-12);
    EXPECT_NEAR(r.stages[0].cost.backward, 27e-3, 1e-12);  // 1 + 13 + 13
    EXPECT_GT(r.stages[0].cost.tpComm, 0.0);               // the rule's all-reduces
    // Width 1: 2 + 40 + 40 ms and no TP communication.
    const Report r1 = evaluate(uniform(topo, m, 1, 1, 1), topo, m);
    ASSERT_TRUE(r1.feasible);
    EXPECT_NEAR(r1.stages[0].cost.forward, 82e-3, 1e-12);
    EXPECT_EQ(r1.stages[0].cost.tpComm, 0.0);
}

TEST(ArtifactInput, widthAbsentFromTheFileRefused)
{
    const Json j = toy();
    const ModelProfile m = load(j);
    const Topology topo = cluster(j);
    UniformLayout u;
    u.tp = 4;
    u.microBatch = 2;
    u.globalBatch = m.globalBatch;
    u.seqLength = m.seqLength;
    const auto plan = buildUniformPlan(u, topo, m);
    std::vector<std::string> errors;
    if (plan.ok())
        errors = planErrors(*plan, topo, m);
    else
        errors.push_back(plan.error());
    ASSERT_FALSE(errors.empty());
    EXPECT_TRUE(coretest::contains(errors.front(), "tensor width 4 is not measured by the model file (widths 1, 8)"))
        << errors.front();
}

TEST(ArtifactInput, epDegreeMultipliesDevices)
{
    Json j = toy();
    j["ep_degree"] = 4;
    const ModelProfile m = load(j);
    EXPECT_EQ(m.groupDevices, 4);
    const Topology topo = cluster(j);
    // 16 devices in groups of 4: 4 planning devices, 2 per node of 8.
    EXPECT_EQ(topo.deviceCount(), 4);
    j["cp_degree"] = 2;  // 8 devices per shard: one per node
    EXPECT_EQ(cluster(j).deviceCount(), 2);
    j["cp_degree"] = 3;  // 12 does not divide a node of 8
    const auto bad = artifactClusterFromJson(j, NAME);
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(coretest::contains(bad.error(), NAME + ": at devices_per_level[0]: must be a multiple of ep_degree x cp_degree (12)"))
        << bad.error();
}

TEST(ArtifactInput, sgdAndAdamDifferByTheOptimizerBytes)
{
    Json j = toy();
    const ModelProfile sgd = load(j);
    j["optimizerAlgorithm"] = "Adam";
    const ModelProfile adam = load(j);
    EXPECT_DOUBLE_EQ(adam.optimizerBytesPerParam, 12.0);
    const Topology topo = cluster(j);
    const Plan plan = uniform(topo, sgd, 8, 1, 1);
    const Report a = evaluate(plan, topo, adam), s = evaluate(plan, topo, sgd);
    // Parameters per device at width 8: (200 + 800 + 800) B / 2 B = 900; Adam's fp32 copy and
    // two moments: 12 B each.
    EXPECT_DOUBLE_EQ(a.stages[0].cost.optimizerState, 900.0 * 12);
    EXPECT_DOUBLE_EQ(s.stages[0].cost.optimizerState, 0.0);
    EXPECT_DOUBLE_EQ(a.stages[0].cost.memoryTotal - s.stages[0].cost.memoryTotal, 900.0 * 12);
}

TEST(ArtifactInput, artifactMemoryAccounting)
{
    const Json j = toy();
    const ModelProfile m = load(j);
    const Topology topo = cluster(j);
    CostOptions o;
    o.artifactMemory = true;
    o.gradBytesPerParam = 2;
    o.runtimeOverheadBytes = 0;
    // Two stages at width 1, 1F1B, 8 micro-batches: stage 0 = embedding + block 0, two
    // micro-batches in flight. Artifact: 2 x parameterSize + activations once + 1 more stash
    // (no recomputation: all activations again) = 2 x (1600 + 6400) + 2 x (100 + 3000).
    const Report r = evaluate(uniform(topo, m, 1, 2, 1), topo, m, o);
    ASSERT_TRUE(r.feasible) << (r.reasons.empty() ? "" : r.reasons.front());
    EXPECT_DOUBLE_EQ(r.stages[0].cost.memoryTotal, 2 * 8000.0 + 2 * 3100.0);
    // Stage 1 (block 1, the last): one micro-batch in flight: 2 x 6400 + 3000.
    EXPECT_DOUBLE_EQ(r.stages[1].cost.memoryTotal, 2 * 6400.0 + 3000.0);
    // With recomputation each further micro-batch keeps only the stage's input edge; stage 0
    // has none (the embedding's input is not an edge): 2 x 8000 + 3100, nothing more.
    UniformLayout u;
    u.pp = 2;
    u.microBatch = 2;
    u.globalBatch = m.globalBatch;
    u.seqLength = m.seqLength;
    u.recompute = Recompute::Full;
    u.stageBlocks = {1, 1};
    const auto plan = buildUniformPlan(u, topo, m);
    ASSERT_TRUE(plan.ok()) << plan.error();
    const Report rr = evaluate(*plan, topo, m, o);
    EXPECT_DOUBLE_EQ(rr.stages[0].cost.memoryTotal, 2 * 8000.0 + 3100.0);
}

TEST(ArtifactInput, sequenceLength)
{
    Json j = toy();
    EXPECT_EQ(load(j).seqLength, 128);  // from the name
    const auto none = profileFromArtifactJson(j, "dir/toy_64.json");
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(coretest::contains(none.error(), "dir/toy_64.json: "));
    EXPECT_TRUE(coretest::contains(none.error(), "give it with --seq N")) << none.error();
    EXPECT_EQ(profileFromArtifactJson(j, "dir/toy_64.json", 256)->seqLength, 256);  // --seq
    j["seq_length"] = 512;
    EXPECT_EQ(profileFromArtifactJson(j, "dir/toy_64.json")->seqLength, 512);  // the file's
}

namespace {

struct BadRow {
    const char *name;
    std::function<void(Json &)> edit;
    const char *path, *reason;
};

} // namespace

TEST(ArtifactInput, badInputNamesFileAndPath)
{
    const BadRow rows[] = {
        {"missing key", [](Json &j) { j["nodes"]["8"][1].erase("parameterSize"); }, "nodes.8[1]", "parameterSize"},
        {"NaN as text", [](Json &j) { j["nodes"]["8"][1]["optimalLatencyFw"] = "NaN"; }, "nodes.8[1].optimalLatencyFw", ""},
        {"negative size", [](Json &j) { j["nodes"]["1"][2]["activationSize"] = -5; }, "nodes.1[2].activationSize",
         "must not be negative"},
        {"mismatched node lists", [](Json &j) { j["nodes"]["8"].erase(2); }, "nodes.8", "every width must list the same layers"},
        {"bad optimizer", [](Json &j) { j["optimizerAlgorithm"] = "Lion"; }, "optimizerAlgorithm", "must be \"SGD\" or \"Adam\""},
        {"bad width key", [](Json &j) { j["nodes"]["x"] = j["nodes"]["1"]; }, "nodes.x", "tensor widths"},
    };
    for (const BadRow &row : rows) {
        Json j = toy();
        row.edit(j);
        const auto p = profileFromArtifactJson(j, NAME);
        ASSERT_FALSE(p.ok()) << row.name;
        EXPECT_TRUE(coretest::contains(p.error(), NAME + ": at " + row.path)) << row.name << ": " << p.error();
        EXPECT_TRUE(coretest::contains(p.error(), row.reason)) << row.name << ": " << p.error();
    }
    const BadRow clusterRows[] = {
        {"missing bws", [](Json &j) { j.erase("bws"); }, "bws", ""},
        {"negative bandwidth", [](Json &j) { j["bws"][1] = -1; }, "bws[1]", "must be a positive number"},
        {"levels vs maxDevices", [](Json &j) { j["maxDevices"] = 32; }, "devices_per_level", "multiplies to 16 devices"},
        {"level count", [](Json &j) { j["latency_per_level"] = Json::array({0.1}); }, "latency_per_level", "has 1 levels"},
    };
    for (const BadRow &row : clusterRows) {
        Json j = toy();
        row.edit(j);
        const auto t = artifactClusterFromJson(j, NAME);
        ASSERT_FALSE(t.ok()) << row.name;
        EXPECT_TRUE(coretest::contains(t.error(), NAME + ": at " + row.path)) << row.name << ": " << t.error();
        EXPECT_TRUE(coretest::contains(t.error(), row.reason)) << row.name << ": " << t.error();
    }
}
