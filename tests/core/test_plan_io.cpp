// Plan JSON: round trip, error messages with file and JSON path, the sample plan, and the
// report object's keys.
#include "Evaluator.h"
#include "PlanBuilder.h"
#include "PlanIO.h"

#include "CoreTestSupport.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

using namespace nest;

namespace {
Plan samplePlan()
{
    Plan p;
    p.globalBatch = 8;
    p.microBatch = 2;
    p.seqLength = 128;
    p.schedule = Schedule::Interleaved;
    p.virtualStages = 2;
    p.dp = 2;
    for (int k = 0; k < 4; ++k) {
        StagePlan s;
        s.firstLayer = k;
        s.endLayer = k + 1;
        s.tp = 2;
        s.ep = k % 2 ? 2 : 1;
        s.sp = true;
        s.zero = k % 4;
        s.recompute = k == 3 ? Recompute::Full : (k == 2 ? Recompute::Selective : Recompute::None);
        s.devices = k % 2 ? std::vector<std::vector<int>>{{4, 5}, {6, 7}} : std::vector<std::vector<int>>{{0, 1}, {2, 3}};
        p.stages.push_back(s);
    }
    return p;
}

// `text` with every `from` replaced by `to`.
std::string replaceAll(std::string text, const std::string &from, const std::string &to)
{
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// The files named *.json (any case, as the old Qt name filter; not hidden) in `dir`, sorted by
// name, as paths.
std::vector<std::string> jsonFilesIn(const std::string &dir)
{
    std::vector<std::string> out;
    for (const auto &e : std::filesystem::directory_iterator(dir)) {
        std::string name = e.path().filename().string();
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        if (e.is_regular_file() && name.size() > 5 && name[0] != '.' && name.substr(name.size() - 5) == ".json")
            out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}
} // namespace

TEST(PlanIO, roundTrip)
{
    const Plan p = samplePlan();
    const auto back = planFromJson(planToJson(p), "mem");
    ASSERT_TRUE(back.ok()) << back.error().c_str();
    ASSERT_TRUE(*back == p);
    coretest::TempDir dir;
    const std::string file = dir.filePath("p.json");
    ASSERT_TRUE(savePlan(file, p).ok());
    const auto loaded = loadPlan(file);
    ASSERT_TRUE(loaded.ok()) << loaded.error().c_str();
    ASSERT_TRUE(*loaded == p);
}

TEST(PlanIO, errors)
{
    struct Row {
        const char *name;
        std::string json, expect;
    };
    const std::string good = planToJson(samplePlan()).dump();
    const Row rows[] = {
        {"not an object", "[1]", "expected an object"},
        {"missing stages", R"({"global_batch":8,"seq_length":128,"dp":1})", "at stages: required"},
        {"bad schedule", replaceAll(good, "\"interleaved\"", "\"zigzag\""), "at schedule: unknown schedule"},
        {"bad zero", replaceAll(good, "\"zero\":3", "\"zero\":5"), "at stages[3].zero"},
        {"row width", replaceAll(good, "[[4,5],[6,7]]", "[[4,5],[6]]"), "at stages[1].devices[1]: lists 1 devices"},
        {"replicas", replaceAll(good, "[[4,5],[6,7]]", "[[4,5]]"), "at stages[1].devices: lists 1 replicas"},
        {"device type", replaceAll(good, "[[4,5],[6,7]]", "[[4,\"x\"],[6,7]]"),
         "at stages[1].devices[0][1]: expected a number"},
        {"batch split", replaceAll(good, "\"global_batch\":8", "\"global_batch\":6"),
         "at global_batch: must be a multiple"},
        // Unknown keys are errors (docs/formats.md), at the top and in a stage (issue 25).
        {"unknown key", replaceAll(good, "\"dp\":2", "\"dp\":2,\"colour\":\"red\""),
         "at colour: unknown key"},
        {"unknown stage key", replaceAll(good, "\"first_layer\":1", "\"first_layer\":1,\"tpp\":2"),
         "at stages[1].tpp: unknown key"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const auto j = parseJsonText(row.json, "plan.json");
            ASSERT_TRUE(j.ok());
            const auto r = planFromJson(*j, "plan.json");
            ASSERT_TRUE(!r.ok());
            ASSERT_TRUE(r.error().rfind("plan.json: ", 0) == 0) << r.error().c_str();
            ASSERT_TRUE(r.error().find(row.expect) != std::string::npos) << r.error().c_str();
        }();
    }
}

TEST(PlanIO, fileErrors)
{
    coretest::TempDir dir;
    const auto missing = loadPlan(dir.filePath("none.json"));
    ASSERT_TRUE(!missing.ok());
    ASSERT_TRUE(missing.error().find("no such file") != std::string::npos);
    const auto isDir = loadPlan(dir.path());
    ASSERT_TRUE(!isDir.ok());
}

TEST(PlanIO, sampleFilesLoad)
{
    const std::vector<std::string> files = jsonFilesIn(coretest::sample("sample_configs/plans"));
    ASSERT_TRUE(!files.empty());
    for (const std::string &f : files) {
        const auto p = loadPlan(f);
        ASSERT_TRUE(p.ok()) << p.error().c_str();
    }
}

TEST(PlanIO, reportKeys)
{
    DeviceSpec dev{"r", 100e12, 80e9, 1e12, 0.5, ""};
    const Topology topo = Topology::uniform("r", dev, {{"node", 4, {100e9, 0, 1}}});
    ModelProfile m;
    m.seqLength = 128;
    LayerProfile l;
    l.fwdFlops = 1e12;
    l.bwdFlops = 2e12;
    l.params = l.tpParams = 1e6;
    m.layers = {l, l};
    UniformLayout u;
    u.pp = 2;
    u.dp = 2;
    u.globalBatch = 4;
    u.seqLength = 128;
    const Report r = evaluate(*buildUniformPlan(u, topo, m), topo, m);
    const Json j = reportToJson(r);
    for (const char *key : {"iteration_time_s", "throughput_samples_per_s", "tokens_per_s", "mfu", "feasible",
                            "peak_memory_bytes", "stages", "devices", "reasons"})
        ASSERT_TRUE(j.contains(key)) << key;
    ASSERT_EQ(j["stages"].size(), size_t(2));
    ASSERT_EQ(j["devices"].size(), size_t(4));
    ASSERT_QFUZZY_EQ(j["iteration_time_s"].get<double>(), r.iterationTime);
    ASSERT_QFUZZY_EQ(j["stages"][1]["time_s"]["forward"].get<double>(), r.stages[1].cost.forward);
}

TEST(PlanIO, microBatchTimesDpIsCheckedIn64Bits)
{
    // micro_batch 65,536 x dp 65,536 = 2^32: an int product wrapped to 0 and the divisibility
    // check ended the process with SIGFPE (issue 25). Now the plan is refused with the product.
    Json plan = planToJson(samplePlan());
    plan["schedule"] = "1f1b";
    plan["virtual_stages"] = 1;
    plan["micro_batch"] = 65536;
    plan["dp"] = 65536;
    plan["global_batch"] = 512;
    Json stage = plan["stages"][0];
    stage["tp"] = 1;
    stage["devices"] = Json::array();
    for (int r = 0; r < 65536; ++r)
        stage["devices"].push_back(Json::array({0}));
    plan["stages"] = Json::array({stage});
    const auto r = planFromJson(plan, "plan.json");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("plan.json: at global_batch: must be a multiple of micro_batch x dp = 4294967296"),
              std::string::npos)
        << r.error();
    // A plan built in memory the same way: 0 micro-batches, never a division by zero.
    Plan p;
    p.globalBatch = 512;
    p.microBatch = 65536;
    p.dp = 65536;
    EXPECT_EQ(p.numMicroBatches(), 0);
}

TEST(PlanIO, everyPlanTheToolWritesHasOnlyKnownKeys)
{
    // The keys planToJson writes (every optional one set) are the keys planFromJson accepts:
    // exported plans, pinned plans and the samples keep loading with unknown keys refused.
    Plan p = samplePlan();
    p.pipelineUnits = PipelineUnits::LayersEmbedding;
    const Json j = planToJson(p);
    ASSERT_TRUE(j.contains("pipeline_units"));
    const auto back = planFromJson(j, "mem");
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_TRUE(*back == p);
}

