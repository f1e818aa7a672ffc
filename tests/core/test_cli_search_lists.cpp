// `nest-cli plan` candidate lists (issue 10, item 4): --cp 1,2,4 (taken as given),
// --vpp 1,2,3 (1 = the plain schedules, >= 2 = interleaving depths) and
// --recompute none,selective,full; the settings they produce, the plans honouring them, the
// same plan as a workspace holding those settings, and the usage errors (exit 2, naming the
// option and the bad item). `evaluate --recompute MODE` keeps its single value.
#include "JsonUtil.h"
#include "SearchSettings.h"

#include "CoreTestSupport.h"

#include <algorithm>

using coretest::contains;
using coretest::runCli;
using nest::Json;

namespace {

using Args = std::vector<std::string>;

Args operator+(Args a, const Args &b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

template <typename T>
bool has(const std::vector<T> &list, const T &item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

// 8 V100 (2 per node), Llama-2 7B at 1024 tokens, 16 sequences: plans in ~0.1 s.
const Args kSmall{"--cluster", "paper-v100-8", "--model", "llama2-7b", "--batch", "16", "--seq", "1024"};

Json outJson(const coretest::Run &r)
{
    return Json::parse(r.out, nullptr, false);
}

coretest::Run plan(const Args &extra)
{
    return runCli(Args{"plan"} + kSmall + extra + Args{"--json"});
}

std::vector<std::string> strings(const Json &list)
{
    std::vector<std::string> out;
    for (const Json &v : list)
        out.push_back(v.get<std::string>());
    return out;
}

} // namespace

TEST(CliSearchLists, listsReachTheSettings)
{
    const coretest::Run r = plan({"--cp", "1,2", "--vpp", "1,3,4", "--recompute", "none,selective"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    const Json s = outJson(r).at("search");
    ASSERT_EQ(s.at("cp_candidates"), Json::array({1, 2}));
    ASSERT_EQ(s.at("cp_min_tokens_per_rank").get<int>(), 0);  // an explicit list is taken as given
    ASSERT_EQ(s.at("virtual_stages"), Json::array({3, 4}));
    ASSERT_EQ(strings(s.at("schedules")), (std::vector<std::string>{"1f1b", "gpipe", "interleaved"}));
    ASSERT_EQ(strings(s.at("recompute_modes")), (std::vector<std::string>{"none", "selective"}));
    ASSERT_TRUE(s.at("allow_recompute").get<bool>());

    // Without the flags: the defaults.
    const coretest::Run d = plan({});
    ASSERT_TRUE(d.exitCode == 0) << d.err;
    const Json ds = outJson(d).at("search");
    ASSERT_EQ(ds.at("cp_candidates"), Json::array({1, 2, 4, 8, 16}));
    ASSERT_EQ(ds.at("cp_min_tokens_per_rank").get<int>(), 4096);
    ASSERT_EQ(ds.at("virtual_stages"), Json::array({2, 3, 4}));
    ASSERT_EQ(strings(ds.at("recompute_modes")), (std::vector<std::string>{"none", "selective", "full"}));

    // --vpp without 1: interleaved only; --vpp 1 alone: no interleaving.
    const Json only = outJson(plan({"--vpp", "3"})).at("search");
    ASSERT_EQ(strings(only.at("schedules")), (std::vector<std::string>{"interleaved"}));
    ASSERT_EQ(only.at("virtual_stages"), Json::array({3}));
    const Json plain = outJson(plan({"--vpp", "1"})).at("search");
    ASSERT_EQ(strings(plain.at("schedules")), (std::vector<std::string>{"1f1b", "gpipe"}));
}

TEST(CliSearchLists, plansHonourTheLists)
{
    struct Row {
        const char *name;
        Args flags;
        std::vector<int> cps;            // allowed cp of every stage
        std::vector<std::string> modes;  // allowed recompute of every stage
        std::vector<int> depths;         // allowed virtual stages of the plan (1 = plain)
    };
    const std::vector<Row> rows{
        {"interleaved depth 3 only", {"--vpp", "3"}, {1, 2, 4, 8, 16}, {"none", "selective", "full"}, {3}},
        {"depth 4 or plain, cp 2", {"--vpp", "4,1", "--cp", "2"}, {2}, {"none", "selective", "full"}, {1, 4}},
        {"full recompute only", {"--recompute", "full"}, {1, 2, 4, 8, 16}, {"full"}, {1, 2, 3, 4}},
        {"selective only, cp 1", {"--recompute", "selective", "--cp", "1"}, {1}, {"selective"}, {1, 2, 3, 4}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = plan(row.flags);
            ASSERT_TRUE(r.exitCode == 0) << r.err;
            const Json j = outJson(r);
            ASSERT_TRUE(j.at("verified").get<bool>());
            const Json &p = j.at("plan");
            ASSERT_TRUE(has(row.depths, p.at("virtual_stages").get<int>())) << p.dump();
            if (p.at("virtual_stages").get<int>() > 1) {
                ASSERT_EQ(p.at("schedule").get<std::string>(), std::string("interleaved"));
            }
            for (const Json &st : p.at("stages")) {
                ASSERT_TRUE(has(row.cps, st.at("cp").get<int>())) << st.dump();
                ASSERT_TRUE(has(row.modes, st.at("recompute").get<std::string>())) << st.dump();
            }
        }();
    }
}

TEST(CliSearchLists, flagsEqualWorkspaceSettings)
{
    // The flags say what a workspace's search object says: the same settings, the same plan.
    const coretest::TempDir dir;
    const std::string ws = dir.filePath("lists.nestws.json");
    const Json workspace{{"format", "nest-workspace"},
                         {"version", 1},
                         {"cluster", {{"template", "paper-v100"}, {"params", {{"devices", 8}}}}},
                         {"model", {{"preset", "llama2-7b"}, {"seq_length", 1024}, {"global_batch", 16}}},
                         {"search",
                          {{"cp_candidates", {1, 2}},
                           {"cp_min_tokens_per_rank", 0},
                           {"virtual_stages", {3}},
                           {"schedules", {"1f1b", "gpipe", "interleaved"}},
                           {"recompute_modes", {"selective", "full"}}}}};
    ASSERT_TRUE(nest::writeJsonFile(ws, workspace));
    const coretest::Run viaWorkspace = runCli({"plan", "--workspace", ws, "--json"});
    ASSERT_TRUE(viaWorkspace.exitCode == 0) << viaWorkspace.err;
    const coretest::Run viaFlags = plan({"--cp", "1,2", "--vpp", "1,3", "--recompute", "selective,full"});
    ASSERT_TRUE(viaFlags.exitCode == 0) << viaFlags.err;
    const Json a = outJson(viaWorkspace), b = outJson(viaFlags);
    ASSERT_EQ(a.at("search").dump(), b.at("search").dump());
    ASSERT_EQ(a.at("plan").dump(), b.at("plan").dump());
    ASSERT_QFUZZY_EQ(a.at("report").at("iteration_time_s").get<double>(),
                     b.at("report").at("iteration_time_s").get<double>());
    // And the flags override a workspace's lists.
    const coretest::Run over = runCli({"plan", "--workspace", ws, "--json", "--recompute", "none", "--vpp", "1"});
    ASSERT_TRUE(over.exitCode == 0) << over.err;
    const Json os = outJson(over).at("search");
    ASSERT_EQ(strings(os.at("recompute_modes")), (std::vector<std::string>{"none"}));
    ASSERT_EQ(strings(os.at("schedules")), (std::vector<std::string>{"1f1b", "gpipe"}));
    ASSERT_EQ(os.at("cp_candidates"), Json::array({1, 2}));  // not given: the workspace's
}

TEST(CliSearchLists, longSequenceDefaultsUseContextParallelism)
{
    // 131072 tokens: the default cp list reaches 16 (8192 tokens per rank); without
    // context parallelism (--cp 1) the best plan is slower.
    const Args base{"plan", "--cluster", "paper-spineleaf-64", "--model", "llama3-70b", "--seq", "131072",
                           "--batch", "2", "--json"};
    const coretest::Run withCp = runCli(base);
    const coretest::Run noCp = runCli(base + Args{"--cp", "1"});
    ASSERT_TRUE(withCp.exitCode == 0) << withCp.err;
    ASSERT_TRUE(noCp.exitCode == 0) << noCp.err;
    const Json a = outJson(withCp), b = outJson(noCp);
    int maxCp = 1;
    for (const Json &st : a.at("plan").at("stages"))
        maxCp = std::max(maxCp, st.at("cp").get<int>());
    ASSERT_TRUE(maxCp > 1);
    for (const Json &st : b.at("plan").at("stages"))
        ASSERT_EQ(st.at("cp").get<int>(), 1);
    ASSERT_TRUE(a.at("report").at("iteration_time_s").get<double>() <
                b.at("report").at("iteration_time_s").get<double>());
}

TEST(CliSearchLists, noRecomputeStillWorks)
{
    const coretest::Run r = plan({"--no-recompute", "--vpp", "1,2"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    const Json j = outJson(r);
    ASSERT_TRUE(!j.at("search").at("allow_recompute").get<bool>());
    for (const Json &st : j.at("plan").at("stages"))
        ASSERT_EQ(st.at("recompute").get<std::string>(), std::string("none"));
}

TEST(CliSearchLists, evaluateTakesOneMode)
{
    const Args base = Args{"evaluate"} + kSmall + Args{"--tp", "2", "--pp", "4", "--json"};
    double times[3] = {0, 0, 0};
    int i = 0;
    for (const char *mode : {"none", "selective", "full"}) {
        const coretest::Run r = runCli(base + Args{"--recompute", mode});
        ASSERT_TRUE(r.exitCode == 0) << r.err;
        times[i++] = outJson(r).at("iteration_time_s").get<double>();
    }
    // Recomputation costs time: the three modes are three different plans.
    ASSERT_TRUE(times[0] < times[1]);
    ASSERT_TRUE(times[1] < times[2]);
    const coretest::Run list = runCli(base + Args{"--recompute", "none,full"});
    ASSERT_EQ(list.exitCode, 2);
    ASSERT_TRUE(contains(list.err, "--recompute") && contains(list.err, "none,full")) << list.err;
}

TEST(CliSearchLists, badItems)
{
    struct Row {
        const char *name;
        Args flags;
        std::vector<std::string> fragments;  // each must appear in the message
    };
    const std::vector<Row> rows{
        {"cp not a number", {"--cp", "1,x"}, {"--cp", "'x'"}},
        {"cp 0", {"--cp", "0"}, {"--cp", "'0'"}},
        {"cp empty item", {"--cp", "1,,2"}, {"--cp", "''"}},
        {"cp twice", {"--cp", "2,4,2"}, {"--cp", "2 twice"}},
        {"cp not dividing the sequence", {"--cp", "1,3"}, {"--cp", "3 does not divide", "1024"}},
        {"vpp 0", {"--vpp", "1,0"}, {"--vpp", "'0'"}},
        {"vpp above 64", {"--vpp", "2,65"}, {"--vpp", "65"}},
        {"vpp twice", {"--vpp", "3,1,3"}, {"--vpp", "3 twice"}},
        {"vpp 1 twice", {"--vpp", "1,1"}, {"--vpp", "1 twice"}},
        {"vpp not a number", {"--vpp", "two"}, {"--vpp", "'two'"}},
        {"recompute unknown", {"--recompute", "none,partial"}, {"--recompute", "'partial'", "selective"}},
        {"recompute empty item", {"--recompute", "none,"}, {"--recompute", "''"}},
        {"recompute twice", {"--recompute", "full,none,full"}, {"--recompute", "'full' twice"}},
        {"recompute and no-recompute", {"--recompute", "full", "--no-recompute"}, {"--recompute", "--no-recompute"}},
        {"layout option", {"--tp", "2"}, {"unknown option --tp"}},
        {"pipeline units unknown", {"--pipeline-units", "layers+loss"}, {"--pipeline-units", "'layers+loss'"}},
        {"pipeline units spelling", {"--pipeline-units", "Layers"}, {"--pipeline-units", "'Layers'"}},
        {"pipeline units empty", {"--pipeline-units", ""}, {"--pipeline-units"}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = plan(row.flags);
            ASSERT_EQ(r.exitCode, 2);
            ASSERT_TRUE(r.out.empty());
            for (const std::string &f : row.fragments)
                ASSERT_TRUE(contains(r.err, f)) << f << " not in: " << r.err;
        }();
    }
}

TEST(CliSearchLists, usageMentionsTheLists)
{
    const coretest::Run r = runCli({"--help"});
    ASSERT_EQ(r.exitCode, 0);
    for (const char *f : {"--cp 1,2,4", "--vpp 1,2,3,4", "--recompute none,selective,full", "--no-recompute"})
        ASSERT_TRUE(contains(r.out, f)) << f;
}


// Issue 23: the embedding and the loss as pipeline units, for plan and evaluate.
TEST(CliSearchLists, pipelineUnits)
{
    // plan: the flag reaches the settings and the plan records it; by default neither says it.
    const coretest::Run r = plan({"--pipeline-units", "layers+embedding+loss", "--vpp", "2,4"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    const Json j = outJson(r);
    ASSERT_EQ(j.at("search").at("pipeline_units"), "layers+embedding+loss");
    ASSERT_EQ(j.at("plan").at("pipeline_units"), "layers+embedding+loss");
    const coretest::Run d = plan({});
    ASSERT_TRUE(d.exitCode == 0) << d.err;
    ASSERT_EQ(outJson(d).at("search").at("pipeline_units"), "layers");
    ASSERT_FALSE(outJson(d).at("plan").contains("pipeline_units"));

    // evaluate: Llama-2 7B's 32 blocks + embedding + head = 34 units on 34 stages (8 V100
    // hold it only as 8 stages, so pp 34 is asked of a larger cluster).
    const Args base = Args{"evaluate", "--cluster", "paper-fattree-64", "--model", "llama2-7b", "--batch", "68",
                           "--seq", "1024", "--pp", "34", "--json"};
    const coretest::Run blocks = runCli(base);
    ASSERT_EQ(blocks.exitCode, 2);
    ASSERT_TRUE(contains(blocks.err, "32 transformer blocks")) << blocks.err;
    const coretest::Run units = runCli(base + Args{"--pipeline-units", "layers+embedding+loss"});
    ASSERT_TRUE(units.exitCode == 0) << units.err;
    const coretest::Run bad = runCli(base + Args{"--pipeline-units", "embedding"});
    ASSERT_EQ(bad.exitCode, 2);
    ASSERT_TRUE(contains(bad.err, "--pipeline-units") && contains(bad.err, "'embedding'")) << bad.err;
}
