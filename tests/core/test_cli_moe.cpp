// nest-cli's MoE parallelism options (issue 46): --etp on the one-plan commands and as a
// searched list, the folding rule's refusals (exit 2 with the reason), the MoE cost flags,
// and the experts' tensor width in the exports (Megatron-LM's --expert-tensor-parallel-size;
// NeMo 1.x has none: a stated fallback).
#include "ClusterIO.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "PlanIO.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace coretest;

namespace {

const std::vector<std::string> kMixtral = {"--cluster", "sample_configs/clusters/fat-tree-8x4x4.json", "--model",
                                           "mixtral-8x7b"};

std::vector<std::string> cmd(std::vector<std::string> head, const std::vector<std::string> &tail)
{
    for (const std::string &a : kMixtral)
        head.push_back(a.rfind("sample_configs", 0) == 0 ? sample(a) : a);
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
}

// tp 4 x pp 4 x dp 8 with ep 8, sequence parallelism and ZeRO 1 on fat-tree-8x4x4's 128 GPUs;
// `etp` the experts' own tensor width (0: the stage's tp).
nest::UniformLayout ep8Layout(const nest::ModelProfile &model, int etp)
{
    nest::UniformLayout u;
    u.tp = 4;
    u.pp = 4;
    u.dp = 8;
    u.ep = 8;
    u.etp = etp;
    u.sp = true;
    u.zero = 1;
    u.globalBatch = model.globalBatch;
    u.seqLength = model.seqLength;
    return u;
}

} // namespace

TEST(CliMoe, badMoeOptionsExitTwoWithTheReason)
{
    struct Case {
        std::vector<std::string> args;
        const char *says;
    };
    const Case cases[] = {
        // 128 GPUs: tp 4 x dp 8 = 32 ranks per stage; etp 3 x ep 8 = 24 does not divide them.
        {cmd({"evaluate"}, {"--tp", "4", "--pp", "4", "--dp", "8", "--ep", "8", "--etp", "3", "--sp"}), "etp 3 x ep 8"},
        {cmd({"evaluate"}, {"--tp", "4", "--pp", "4", "--dp", "8", "--etp", "0"}), "--etp"},
        {cmd({"evaluate"}, {"--tp", "2", "--pp", "4", "--dp", "16", "--moe-imbalance", "0.5"}), "--moe-imbalance"},
        {cmd({"evaluate"}, {"--tp", "2", "--pp", "4", "--dp", "16", "--capacity-factor", "nan"}), "--capacity-factor"},
        {cmd({"evaluate"}, {"--tp", "2", "--pp", "4", "--dp", "16", "--moe-dispatcher", "nccl"}), "alltoall or deepep"},
        {cmd({"evaluate"}, {"--tp", "2", "--pp", "4", "--dp", "16", "--moe-a2a-overlap", "yes"}), "on or off"},
        {cmd({"plan"}, {"--etp", "1,x"}), "--etp"},
    };
    for (const Case &c : cases) {
        const coretest::Run r = runCli(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.args.back() << ": " << r.err;
        EXPECT_TRUE(contains(r.err, c.says)) << r.err;
    }
}

TEST(CliMoe, foldedLayoutsEvaluateAndPriceTheLoad)
{
    // Mixtral's 8 experts at ep 8 over tp 4 x dp 8: the experts' own width (etp 1) folds the ep
    // group onto tp ranks and replicas (2 replicas x 4 tp ranks) instead of 8 replicas.
    auto time = [](const std::vector<std::string> &extra) {
        std::vector<std::string> tail{"--tp", "4", "--pp", "4", "--dp", "8", "--ep", "8", "--sp", "--json"};
        tail.insert(tail.end(), extra.begin(), extra.end());
        const coretest::Run r = runCli(cmd({"evaluate"}, tail));
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return r.exitCode == 0 ? jsonObject(r.out).at("iteration_time_s").get<double>() : 0.0;
    };
    const double base = time({}), folded = time({"--etp", "1"});
    EXPECT_GT(base, 0);
    EXPECT_GT(folded, 0);
    EXPECT_NE(base, folded);
    // A heavier load on the most loaded rank costs time; dropping at capacity 1.0 caps it.
    const double balanced = time({"--moe-imbalance", "1"}), skewed = time({"--moe-imbalance", "1.5"});
    EXPECT_LT(balanced, skewed);
    EXPECT_EQ(time({"--moe-imbalance", "1.5", "--capacity-factor", "1"}), balanced);
}

TEST(CliMoe, exportsCarryTheExpertTensorWidth)
{
    const auto topo = nest::resolveCluster(sample("sample_configs/clusters/fat-tree-8x4x4.json"));
    ASSERT_TRUE(topo) << topo.error();
    const auto model = nest::resolveModel("mixtral-8x7b");
    ASSERT_TRUE(model) << model.error();
    nest::UniformLayout u = ep8Layout(*model, 1);
    const auto plan = nest::buildUniformPlan(u, *topo, *model);
    ASSERT_TRUE(plan) << plan.error();
    const std::string planFile = testing::TempDir() + "moe-etp-plan.json";
    ASSERT_TRUE(writeFile(planFile, nest::planToJson(*plan).dump(1)));
    EXPECT_TRUE(contains(readFile(planFile), "\"etp\": 1"));
    auto exportAs = [&](const std::string &format, bool json) {
        std::vector<std::string> tail{"--plan", planFile, "--format", format};
        if (json)
            tail.push_back("--json");  // the summary and the fallbacks; without: the launch files
        return runCli(cmd({"export"}, tail));
    };
    const coretest::Run megatron = exportAs("megatron", false);
    ASSERT_EQ(megatron.exitCode, 0) << megatron.err;
    EXPECT_TRUE(contains(megatron.out, "--expert-tensor-parallel-size 1")) << megatron.out.substr(0, 3000);
    EXPECT_TRUE(contains(megatron.out, "--expert-model-parallel-size 8"));
    EXPECT_FALSE(contains(megatron.out, "--moe-enable-deepep"));
    // The hierarchical dispatch priced is the one exported: DeepEP behind the flex dispatcher.
    const coretest::Run deepep =
        runCli(cmd({"export"}, {"--plan", planFile, "--format", "megatron", "--moe-dispatcher", "deepep"}));
    ASSERT_EQ(deepep.exitCode, 0) << deepep.err;
    EXPECT_TRUE(contains(deepep.out, "--moe-token-dispatcher-type flex")) << deepep.out.substr(0, 3000);
    EXPECT_TRUE(contains(deepep.out, "--moe-enable-deepep"));
    EXPECT_FALSE(contains(deepep.out, "--overlap-moe-expert-parallel-comm"));
    // The expert-parallel overlap priced is the one exported, with the delayed weight
    // gradients, where Megatron-Core runs it: TransformerConfig asserts virtual stages when
    // pp > 1 and refuses full recomputation, so not on this 4-stage 1F1B plan.
    auto overlapExport = [&](const nest::UniformLayout &layout) {
        const auto p = nest::buildUniformPlan(layout, *topo, *model);
        EXPECT_TRUE(p) << p.error();
        const std::string file = testing::TempDir() + "moe-overlap-plan.json";
        EXPECT_TRUE(p && writeFile(file, nest::planToJson(*p).dump(1)));
        const coretest::Run r =
            runCli(cmd({"export"}, {"--plan", file, "--format", "megatron", "--moe-a2a-overlap", "on"}));
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return r.out;
    };
    EXPECT_FALSE(contains(overlapExport(u), "--overlap-moe-expert-parallel-comm"));
    u.schedule = nest::Schedule::Interleaved;
    u.virtualStages = 2;
    const std::string overlap = overlapExport(u);
    EXPECT_TRUE(contains(overlap, "--overlap-moe-expert-parallel-comm")) << overlap.substr(0, 3000);
    EXPECT_TRUE(contains(overlap, "--delay-wgrad-compute"));
    u.recompute = nest::Recompute::Full;
    EXPECT_FALSE(contains(overlapExport(u), "--overlap-moe-expert-parallel-comm"));
    const coretest::Run nemo = exportAs("nemo", true);
    ASSERT_EQ(nemo.exitCode, 0) << nemo.err;
    EXPECT_TRUE(contains(nemo.out, "expert tensor width")) << nemo.out.substr(0, 3000);
}

TEST(CliMoe, exportsCarryTheModelsGroupLimitedRouting)
{
    // A Mixtral with DeepSeek-style group-limited routing (top 2 inside 2 of 4 groups): the
    // Megatron export sets Megatron-Core's group-limited top-k, NeMo's YAML the same config
    // keys; the model without groups writes neither.
    const std::string dir = testing::TempDir();
    nest::Json grouped = nest::Json::parse(readFile(sample("sample_configs/models/mixtral-8x7b.json")));
    grouped["router_groups"] = 4;
    grouped["router_group_topk"] = 2;
    const std::string modelFile = dir + "grouped-mixtral.json";
    ASSERT_TRUE(writeFile(modelFile, grouped.dump(1)));
    const std::string cluster = sample("sample_configs/clusters/fat-tree-8x4x4.json");
    const auto topo = nest::resolveCluster(cluster);
    const auto model = nest::resolveModel(modelFile);
    ASSERT_TRUE(topo && model);
    EXPECT_EQ(model->routerGroups, 4);
    const nest::UniformLayout u = ep8Layout(*model, 0);
    const auto plan = nest::buildUniformPlan(u, *topo, *model);
    ASSERT_TRUE(plan) << plan.error();
    const std::string planFile = dir + "grouped-moe-plan.json";
    ASSERT_TRUE(writeFile(planFile, nest::planToJson(*plan).dump(1)));
    auto exportAs = [&](const std::string &modelArg, const std::string &format) {
        const coretest::Run r =
            runCli({"export", "--cluster", cluster, "--model", modelArg, "--plan", planFile, "--format", format});
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return r.out;
    };
    const std::string megatron = exportAs(modelFile, "megatron");
    EXPECT_TRUE(contains(megatron, "--moe-router-num-groups 4")) << megatron.substr(0, 3000);
    EXPECT_TRUE(contains(megatron, "--moe-router-group-topk 2"));
    const std::string nemo = exportAs(modelFile, "nemo");
    EXPECT_TRUE(contains(nemo, "moe_router_num_groups: 4")) << nemo.substr(0, 3000);
    EXPECT_TRUE(contains(nemo, "moe_router_group_topk: 2"));
    EXPECT_FALSE(contains(exportAs("mixtral-8x7b", "megatron"), "--moe-router-num-groups"));
}

TEST(CliMoe, aWorkspacesMoeOptionsReachTheOnePlanCommandsAndTheFlagsWin)
{
    // The quickstart workspace with Mixtral 8x7B: search.moe_imbalance prices as the flag
    // does, a flag over the key wins, and search.moe_a2a_overlap pairs the micro-batches of a
    // one-stage plan (the unpaired all-to-all is charged once an iteration) unless
    // --moe-a2a-overlap off takes it back, as `plan --workspace` and the window price them.
    nlohmann::json w = jsonObject(readFile(sample("sample_configs/workspaces/quickstart.nestws.json")));
    w["model"] = {{"preset", "mixtral-8x7b"}, {"seq_length", 4096}, {"global_batch", 256}};
    const coretest::TempDir dir;
    const std::string plain = dir.filePath("plain.nestws.json"), keyed = dir.filePath("keyed.nestws.json");
    ASSERT_TRUE(writeFile(plain, w.dump()));
    w["search"]["moe_imbalance"] = 1.5;
    w["search"]["moe_a2a_overlap"] = true;
    ASSERT_TRUE(writeFile(keyed, w.dump()));
    auto evaluate = [](const std::string &workspace, const std::vector<std::string> &extra) {
        std::vector<std::string> args{"evaluate", "--workspace", workspace, "--tp", "4", "--dp", "8", "--ep", "8",
                                      "--sp", "--json"};
        args.insert(args.end(), extra.begin(), extra.end());
        const coretest::Run r = runCli(args);
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return r.exitCode == 0 ? jsonObject(r.out) : nlohmann::json::object();
    };
    auto time = [](const nlohmann::json &j) { return j.value("iteration_time_s", 0.0); };
    auto unpaired = [](const nlohmann::json &j) { return j.at("stages").at(0).at("time_s").at("ep_unpaired").get<double>(); };
    const nlohmann::json byKey = evaluate(keyed, {}), byFlags = evaluate(plain, {"--moe-imbalance", "1.5",
                                                                                  "--moe-a2a-overlap", "on"});
    ASSERT_GT(time(byKey), 0);
    EXPECT_EQ(time(byKey), time(byFlags));
    EXPECT_GT(unpaired(byKey), 0);
    const nlohmann::json overridden = evaluate(keyed, {"--moe-imbalance", "1.1", "--moe-a2a-overlap", "off"});
    EXPECT_EQ(time(overridden), time(evaluate(plain, {})));
    EXPECT_EQ(unpaired(overridden), 0);
    EXPECT_LT(time(evaluate(plain, {})), time(evaluate(plain, {"--moe-imbalance", "1.5"})));
}
