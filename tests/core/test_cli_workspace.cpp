// `nest-cli plan|evaluate --workspace FILE`: the workspace's cluster, model and search
// settings, through the same searchOptionsFrom() the window uses. Drives the real binary.
#include "SourceDir.h"
#include "JsonUtil.h"
#include "SearchSettings.h"

#include "CoreTestSupport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

using nest::Json;

namespace {

using coretest::contains;
using coretest::runCli;
using Args = std::vector<std::string>;

const std::string kQuickstart = NEST_SOURCE_DIR "/sample_configs/workspaces/quickstart.nestws.json";

Json quickstartJson()
{
    const auto j = nest::readJsonFile(kQuickstart);
    return j ? *j : Json();
}

bool writeJson(const std::string &file, const Json &j)
{
    return static_cast<bool>(nest::writeJsonFile(file, j));
}

// The command's stdout as JSON (null when it is not JSON).
Json outJson(const coretest::Run &r)
{
    return Json::parse(r.out, nullptr, false);
}

std::string joined(const std::vector<int> &values)
{
    std::string out;
    for (int v : values)
        out += (out.empty() ? "" : ",") + std::to_string(v);
    return out;
}

// QString::number(v, 'g', 17): every digit of a double.
std::string number17(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

} // namespace

TEST(CliWorkspace, planWorkspaceEqualsExplicitFlags)
{
    const Json ws = quickstartJson();
    ASSERT_TRUE(ws.is_object());
    const coretest::TempDir dir;
    const std::string cluster = dir.filePath("cluster.json");
    const std::string model = dir.filePath("model.json");
    ASSERT_TRUE(writeJson(cluster, ws.at("cluster")));
    ASSERT_TRUE(writeJson(model, ws.at("model")));

    // The flags that say what the workspace's search object says; every setting that no
    // flag expresses must be at its default, or this comparison would prove nothing.
    const nest::SearchSettings s = nest::searchSettingsFromJson(ws.at("search"), "search");
    nest::SearchSettings expressible;
    expressible.planner = s.planner;
    expressible.microBatches = s.microBatches;
    expressible.maxStages = s.maxStages;
    expressible.memoryHeadroom = s.memoryHeadroom;
    expressible.allowZero = s.allowZero;
    expressible.allowRecompute = s.allowRecompute;
    ASSERT_TRUE(s == expressible) << "the quickstart search settings need flags nest-cli plan does not have";
    ASSERT_TRUE(s.memoryHeadroom > 0);  // the sample sets one: the flag below must carry it
    Args flags{"plan", "--cluster", cluster, "--model", model, "--json",
               "--planner", s.planner,
               "--microbatch", joined(s.microBatches),
               "--max-stages", std::to_string(s.maxStages),
               "--memory-headroom", number17(s.memoryHeadroom)};
    if (!s.allowZero)
        flags.push_back("--no-zero");
    if (!s.allowRecompute)
        flags.push_back("--no-recompute");

    const coretest::Run viaWorkspace = runCli({"plan", "--workspace", kQuickstart, "--json"});
    ASSERT_TRUE(viaWorkspace.exitCode == 0) << viaWorkspace.err;
    const coretest::Run viaFlags = runCli(flags);
    ASSERT_TRUE(viaFlags.exitCode == 0) << viaFlags.err;
    const Json a = outJson(viaWorkspace), b = outJson(viaFlags);
    ASSERT_TRUE(a.is_object() && b.is_object());
    ASSERT_TRUE(a.at("verified").get<bool>());
    ASSERT_EQ(a.at("plan").dump(), b.at("plan").dump());
    ASSERT_QFUZZY_EQ(a.at("report").at("iteration_time_s").get<double>(),
                     b.at("report").at("iteration_time_s").get<double>());
    ASSERT_EQ(a.at("search").dump(), b.at("search").dump());
    ASSERT_EQ(a.at("search").dump(), nest::searchSettingsToJson(s).dump());
    // The model is the workspace's: its global batch and sequence length.
    ASSERT_EQ(a.at("plan").at("global_batch").get<int>(), ws.at("model").at("global_batch").get<int>());
    ASSERT_EQ(a.at("plan").at("seq_length").get<int>(), ws.at("model").at("seq_length").get<int>());

    // Without the headroom flag the defaults differ from the workspace: the settings
    // reported say so (the workspace's headroom is not a default that happens to match).
    const auto at = std::find(flags.begin(), flags.end(), "--memory-headroom");
    ASSERT_TRUE(at != flags.end());
    flags.erase(at, at + 2);
    const coretest::Run noHeadroom = runCli(flags);
    ASSERT_TRUE(noHeadroom.exitCode == 0) << noHeadroom.err;
    ASSERT_QFUZZY_EQ(outJson(noHeadroom).at("search").at("memory_headroom").get<double>(), 0.0);
}

TEST(CliWorkspace, explicitFlagsOverrideTheWorkspace)
{
    const coretest::Run r = runCli({"plan", "--workspace", kQuickstart, "--json", "--microbatch", "2", "--no-zero",
                          "--batch", "256"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    const Json j = outJson(r);
    ASSERT_EQ(j.at("search").at("micro_batches").dump(), std::string("[2]"));
    ASSERT_EQ(j.at("search").at("allow_zero").get<bool>(), false);
    ASSERT_EQ(j.at("plan").at("micro_batch").get<int>(), 2);
    ASSERT_EQ(j.at("plan").at("global_batch").get<int>(), 256);
    for (const Json &stage : j.at("plan").at("stages"))
        ASSERT_EQ(stage.at("zero").get<int>(), 0);
    // Settings no flag touched stay the workspace's.
    ASSERT_QFUZZY_EQ(j.at("search").at("memory_headroom").get<double>(),
                     quickstartJson().at("search").at("memory_headroom").get<double>());
}

TEST(CliWorkspace, tpCandidatesRestrictThePlan)
{
    // Unrestricted, the quickstart plan uses tensor parallelism somewhere; restricted
    // to tp 1 by the workspace, no stage does.
    const coretest::Run free = runCli({"plan", "--workspace", kQuickstart, "--json"});
    ASSERT_TRUE(free.exitCode == 0) << free.err;
    int maxTp = 0;
    const Json freePlan = outJson(free).at("plan");
    for (const Json &stage : freePlan.at("stages"))
        maxTp = std::max(maxTp, stage.at("tp").get<int>());
    ASSERT_TRUE(maxTp > 1) << "the unrestricted plan must use tp > 1 for this test to mean anything";

    Json ws = quickstartJson();
    ws["search"]["tp_candidates"] = Json::array({1});
    const coretest::TempDir dir;
    const std::string file = dir.filePath("tp1.nestws.json");
    ASSERT_TRUE(writeJson(file, ws));
    const coretest::Run r = runCli({"plan", "--workspace", file, "--json"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    const Json j = outJson(r);
    ASSERT_TRUE(j.at("verified").get<bool>());
    ASSERT_TRUE(!j.at("plan").at("stages").empty());
    for (const Json &stage : j.at("plan").at("stages"))
        ASSERT_EQ(stage.at("tp").get<int>(), 1);
    ASSERT_EQ(j.at("search").at("tp_candidates").dump(), std::string("[1]"));
}

// The workspace's mcmc budget and seed (issue 25: settable in the window) reach the mcmc
// planner: it spends exactly that many evaluations (its "states"), and --budget / --seed
// override them.
TEST(CliWorkspace, mcmcBudgetAndSeedFromTheWorkspace)
{
    Json ws = quickstartJson();
    ws["search"]["planner"] = "mcmc";
    ws["search"]["mcmc_budget"] = 60;
    ws["search"]["seed"] = 7;
    const coretest::TempDir dir;
    const std::string file = dir.filePath("mcmc.nestws.json");
    ASSERT_TRUE(writeJson(file, ws));
    const coretest::Run r = runCli({"plan", "--workspace", file, "--json"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    ASSERT_EQ(outJson(r).at("stats").at("states").get<long long>(), 60);
    const coretest::Run same = runCli({"plan", "--workspace", kQuickstart, "--planner", "mcmc", "--budget", "60",
                                       "--seed", "7", "--json"});
    ASSERT_TRUE(same.exitCode == 0) << same.err;
    ASSERT_EQ(outJson(same).at("plan").dump(), outJson(r).at("plan").dump());
    const coretest::Run flag = runCli({"plan", "--workspace", file, "--budget", "40", "--json"});
    ASSERT_TRUE(flag.exitCode == 0) << flag.err;
    ASSERT_EQ(outJson(flag).at("stats").at("states").get<long long>(), 40);
    ws["search"]["mcmc_budget"] = -1;
    ASSERT_TRUE(writeJson(file, ws));
    const coretest::Run bad = runCli({"plan", "--workspace", file});
    ASSERT_EQ(bad.exitCode, 2);
    ASSERT_TRUE(bad.err.find("mcmc_budget") != std::string::npos) << bad.err;
}

// The workspace's top_k (the window's "Keep best"): `plan --workspace` lists that many best
// plans, the same list `--top` gives, and --top overrides it; 0 is refused with its path.
TEST(CliWorkspace, topKFromTheWorkspace)
{
    Json ws = quickstartJson();
    ws["search"]["top_k"] = 3;
    const coretest::TempDir dir;
    const std::string file = dir.filePath("top.nestws.json");
    ASSERT_TRUE(writeJson(file, ws));
    const coretest::Run r = runCli({"plan", "--workspace", file, "--json"});
    ASSERT_TRUE(r.exitCode == 0) << r.err;
    ASSERT_EQ(outJson(r).at("top").size(), 3u);
    ASSERT_EQ(outJson(r).at("search").at("top_k").get<int>(), 3);
    const coretest::Run flag = runCli({"plan", "--workspace", kQuickstart, "--top", "3", "--json"});
    ASSERT_TRUE(flag.exitCode == 0) << flag.err;
    ASSERT_EQ(outJson(flag).at("top").dump(), outJson(r).at("top").dump());
    const coretest::Run one = runCli({"plan", "--workspace", file, "--top", "1", "--json"});
    ASSERT_TRUE(one.exitCode == 0) << one.err;
    ASSERT_FALSE(outJson(one).contains("top"));
    ASSERT_EQ(outJson(one).at("plan").dump(), outJson(r).at("plan").dump());
    ws["search"]["top_k"] = 0;
    ASSERT_TRUE(writeJson(file, ws));
    const coretest::Run bad = runCli({"plan", "--workspace", file});
    ASSERT_EQ(bad.exitCode, 2);
    ASSERT_TRUE(bad.err.find("search.top_k") != std::string::npos) << bad.err;
}

TEST(CliWorkspace, workspaceFrameworkCostsThePlan)
{
    // The workspace's framework profile is the cost model of plan and evaluate alike;
    // --framework overrides it.
    Json ws = quickstartJson();
    ws["search"]["framework"] = "serial";
    const coretest::TempDir dir;
    const std::string file = dir.filePath("serial.nestws.json");
    const std::string plan = dir.filePath("plan.json");
    ASSERT_TRUE(writeJson(file, ws));
    const coretest::Run p = runCli({"plan", "--workspace", file, "--out", plan, "--json"});
    ASSERT_TRUE(p.exitCode == 0) << p.err;
    const double planned = outJson(p).at("report").at("iteration_time_s").get<double>();
    const coretest::Run e = runCli({"evaluate", "--workspace", file, "--plan", plan, "--json"});
    ASSERT_TRUE(e.exitCode == 0) << e.err;
    ASSERT_QFUZZY_EQ(outJson(e).at("iteration_time_s").get<double>(), planned);
    const coretest::Run direct =
        runCli({"evaluate", "--workspace", kQuickstart, "--plan", plan, "--framework", "serial", "--json"});
    ASSERT_TRUE(direct.exitCode == 0) << direct.err;
    ASSERT_QFUZZY_EQ(outJson(direct).at("iteration_time_s").get<double>(), planned);
    const coretest::Run mcore =
        runCli({"evaluate", "--workspace", file, "--plan", plan, "--framework", "megatron-core", "--json"});
    ASSERT_TRUE(mcore.exitCode == 0) << mcore.err;
    ASSERT_TRUE(outJson(mcore).at("iteration_time_s").get<double>() < planned);  // overlap hides traffic
    const coretest::Run bad = runCli({"evaluate", "--workspace", file, "--plan", plan, "--framework", "jax"});
    ASSERT_EQ(bad.exitCode, 2);
    ASSERT_TRUE(contains(bad.err, "--framework expects one of megatron-core"));
}

TEST(CliWorkspace, planThenEvaluateAgree)
{
    const coretest::TempDir dir;
    const std::string plan = dir.filePath("plan.json");
    const coretest::Run p = runCli({"plan", "--workspace", kQuickstart, "--out", plan, "--json"});
    ASSERT_TRUE(p.exitCode == 0) << p.err;
    const Json planned = outJson(p).at("report");

    const coretest::Run e = runCli({"evaluate", "--workspace", kQuickstart, "--plan", plan, "--json"});
    ASSERT_TRUE(e.exitCode == 0) << e.err;
    const Json evaluated = outJson(e);
    const double tp = planned.at("iteration_time_s").get<double>();
    const double te = evaluated.at("iteration_time_s").get<double>();
    ASSERT_TRUE(tp > 0);
    ASSERT_TRUE(std::abs(te - tp) <= 1e-9 * tp) << number17(te) << " vs " << number17(tp);
    // Memory is judged with the workspace's headroom in both.
    ASSERT_EQ(evaluated.at("feasible").get<bool>(), planned.at("feasible").get<bool>());
    ASSERT_QFUZZY_EQ(evaluated.at("peak_memory_bytes").get<double>(), planned.at("peak_memory_bytes").get<double>());

    const coretest::Run s = runCli({"simulate", "--workspace", kQuickstart, "--plan", plan, "--json"});
    ASSERT_TRUE(s.exitCode == 0) << s.err;
    const double ts = outJson(s).at("evaluator_iteration_time_s").get<double>();
    ASSERT_TRUE(std::abs(ts - tp) <= 1e-9 * tp);
}

TEST(CliWorkspace, workspaceExcludesClusterAndModel)
{
    struct Row {
        const char *name;
        Args args;
    };
    const std::vector<Row> rows{
        {"plan --cluster", {"plan", "--workspace", kQuickstart, "--cluster", "paper-v100-8"}},
        {"plan --model", {"plan", "--workspace", kQuickstart, "--model", "llama2-7b"}},
        {"evaluate --cluster", {"evaluate", "--workspace", kQuickstart, "--cluster", "paper-v100-8", "--tp", "2"}},
        {"evaluate --model", {"evaluate", "--workspace", kQuickstart, "--model", "llama2-7b", "--tp", "2"}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = runCli(row.args);
            ASSERT_EQ(r.exitCode, 2);
            ASSERT_TRUE(contains(r.err, "--workspace") && contains(r.err, "--cluster") && contains(r.err, "--model"))
                << r.err;
            ASSERT_TRUE(r.out.empty());
        }();
    }
}

TEST(CliWorkspace, badWorkspaceNamesFileAndPath)
{
    struct Row {
        const char *name;
        std::string command;
        std::string content;  // empty: the file does not exist
        std::string mustMention;
    };
    const Json ws = quickstartJson();
    Json badLink = ws;
    badLink["cluster"]["levels"][1]["bandwidth_GBps"] = -3;
    Json badMicro = ws;
    badMicro["search"]["micro_batches"] = Json::array({1, 0});
    Json badModel = ws;
    badModel["model"]["hidden"] = -1;
    Json badPlanner = ws;
    badPlanner["search"]["planner"] = "annealing";
    const std::vector<Row> rows{
        {"missing", "plan", "", ""},
        {"syntax", "plan", "{\"cluster\": {,}}", "line 1"},
        {"cluster value", "plan", badLink.dump(), "at cluster.levels[1].bandwidth_GBps"},
        {"search value", "evaluate", badMicro.dump(), "at search.micro_batches[1]"},
        {"model value", "plan", badModel.dump(), "at model.hidden"},
        {"unknown planner", "plan", badPlanner.dump(), "at search.planner"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::TempDir dir;
            const std::string file = dir.filePath("bad.nestws.json");
            if (!row.content.empty()) {
                ASSERT_TRUE(coretest::writeFile(file, row.content));
            }
            Args args{row.command, "--workspace", file};
            if (row.command == "evaluate") {
                args.push_back("--tp");
                args.push_back("2");
            }
            const coretest::Run r = runCli(args);
            ASSERT_EQ(r.exitCode, 2);
            ASSERT_TRUE(contains(r.err, file + ":")) << r.err;
            ASSERT_TRUE(contains(r.err, row.mustMention)) << r.err;
            ASSERT_TRUE(r.out.empty());
        }();
    }
}

TEST(CliWorkspace, everyPlannerNameConstructs)
{
    // A small instance the exhaustive planner enumerates quickly: 8 V100s, 2 blocks.
    const coretest::TempDir dir;
    const std::string model = dir.filePath("tiny.json");
    ASSERT_TRUE(writeJson(model, Json{{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024},
                                  {"global_batch", 8}}));
    const auto cluster = nest::readJsonFile(NEST_SOURCE_DIR "/sample_configs/clusters/paper-v100-8.json");
    ASSERT_TRUE(cluster);
    ASSERT_TRUE(!nest::plannerNames().empty());
    for (const std::string &name : nest::plannerNames()) {
        const std::string &planner = name;
        // By the flag...
        const coretest::Run r = runCli({"plan", "--cluster", "paper-v100-8", "--model", model, "--planner", planner,
                              "--microbatch", "1,2", "--json"});
        ASSERT_TRUE(r.exitCode == 0) << planner << ": " << r.err;
        const Json j = outJson(r);
        ASSERT_EQ(j.at("planner").get<std::string>(), name);
        ASSERT_EQ(j.at("search").at("planner").get<std::string>(), name);
        ASSERT_TRUE(j.at("verified").get<bool>());
        // ... and by the workspace's search.planner.
        const Json ws{{"format", "nest-workspace"},
                      {"cluster", *cluster},
                      {"model", {{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024}, {"global_batch", 8}}},
                      {"search", {{"planner", name}, {"micro_batches", {1, 2}}}}};
        const std::string file = dir.filePath(planner + ".nestws.json");
        ASSERT_TRUE(writeJson(file, ws));
        const coretest::Run w = runCli({"plan", "--workspace", file, "--json"});
        ASSERT_TRUE(w.exitCode == 0) << planner << ": " << w.err;
        ASSERT_EQ(outJson(w).at("planner").get<std::string>(), name);
        ASSERT_EQ(outJson(w).at("plan").dump(), j.at("plan").dump());
    }
    const coretest::Run bad = runCli({"plan", "--cluster", "paper-v100-8", "--model", model, "--planner", "annealing"});
    ASSERT_EQ(bad.exitCode, 2);
    ASSERT_TRUE(contains(bad.err, "annealing")) << bad.err;
    for (const std::string &name : nest::plannerNames())
        ASSERT_TRUE(contains(bad.err, "'" + name + "'")) << bad.err;
}
