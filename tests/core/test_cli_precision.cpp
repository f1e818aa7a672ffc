// nest-cli's --precision and --fp8-recipe (issue 46): what each command refuses, with exit 2
// and the reason (the device that lacks the format, the framework that does not train in it,
// the values allowed); and that a plan searched over a list records its precision.
#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace coretest;

TEST(CliPrecision, badPrecisionsExitTwoWithTheReason)
{
    const std::string cluster = "--cluster=" + sample("sample_configs/clusters/paper-v100-16.json");
    struct Case {
        std::vector<std::string> args;
        const char *says;
    };
    const Case cases[] = {
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "nvfp4"}, "h100-sxm-80gb"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "fp9"}, "bf16, fp8, mxfp8, nvfp4"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16,bf16"}, "twice"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16", "--fp8-recipe",
          "current"},
         "fp8"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--fp8-recipe", "weekly"}, "delayed"},
        {{"evaluate", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16,fp8"}, "one"},
        {{"evaluate", cluster, "--model", "llama2-7b", "--precision", "fp8"}, "v100"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--framework", "deepspeed", "--precision",
          "fp8"},
         "deepspeed"},
        // FP8 attention exists only inside an FP8 recipe.
        {{"evaluate", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--fp8-attention"},
         "--fp8-attention needs an fp8 or mxfp8 plan"},
        {{"evaluate", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16", "--fp8-attention"},
         "fp8 or mxfp8"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16", "--fp8-attention"},
         "fp8 or mxfp8 among the precisions"},
    };
    for (const Case &c : cases) {
        const coretest::Run r = runCli(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.args.back() << ": " << r.err;
        EXPECT_TRUE(contains(r.err, c.says)) << r.err;
    }
}

TEST(CliPrecision, planSearchesTheListAndRecordsThePrecision)
{
    const coretest::Run r = runCli({"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16,fp8",
                          "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json j = jsonObject(r.out);
    // Which one wins is the cost model's business; the plan names it and the search lists both.
    ASSERT_TRUE(j.at("plan").contains("precision")) << r.out.substr(0, 400);
    EXPECT_EQ(j.at("plan").at("precision"), "fp8");
    EXPECT_EQ(j.at("plan").at("fp8_recipe"), "delayed");
    EXPECT_EQ(j.at("search").at("precisions"), nlohmann::json::array({"bf16", "fp8"}));
    const coretest::Run bf = runCli({"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16",
                           "--json"});
    ASSERT_EQ(bf.exitCode, 0) << bf.err;
    EXPECT_FALSE(jsonObject(bf.out).at("plan").contains("precision"));
    EXPECT_LT(j.at("objective_s").get<double>(), jsonObject(bf.out).at("objective_s").get<double>());
}

TEST(CliPrecision, exportsCarryThePrecisionAsEachFrameworkSpellsIt)
{
    // A BF16 plan, exported with --precision over the file's own.
    const std::string planFile = testing::TempDir() + "precision-export-plan.json";
    const coretest::Run planned = runCli({"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b",
                                          "--precision", "bf16", "--no-frameworks", "--out", planFile});
    ASSERT_EQ(planned.exitCode, 0) << planned.err;
    const nlohmann::json plan = jsonObject(readFile(planFile));
    const bool sharded = plan.at("stages").at(0).value("zero", 0) >= 1;
    auto with = [&planFile](std::vector<std::string> extra) {
        std::vector<std::string> args{"export", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--plan",
                                      planFile};
        args.insert(args.end(), extra.begin(), extra.end());
        return runCli(args);
    };
    // Megatron-LM (megatron/training/arguments.py): hybrid E4M3/E5M2 delayed scaling; the
    // parameters gathered in FP8 under the distributed optimizer where the priced stack does
    // (the recipes' --fp8-param-gather: --stack tuned; off in Megatron-LM's defaults).
    const coretest::Run megatron = with({"--format", "megatron", "--precision", "fp8", "--stack", "tuned"});
    ASSERT_EQ(megatron.exitCode, 0) << megatron.err;
    EXPECT_TRUE(contains(megatron.out, "--fp8-format")) << megatron.out.substr(0, 2000);
    EXPECT_TRUE(contains(megatron.out, "hybrid"));
    EXPECT_TRUE(contains(megatron.out, "--fp8-recipe"));
    EXPECT_TRUE(contains(megatron.out, "--fp8-amax-history-len"));
    EXPECT_EQ(contains(megatron.out, "--fp8-param-gather"), sharded);
    EXPECT_FALSE(contains(megatron.out, "--fp8-dot-product-attention"));
    // FP8 attention, where the plan was priced with it (Megatron-LM's own flag).
    const coretest::Run fp8Attention = with({"--format", "megatron", "--precision", "fp8", "--fp8-attention"});
    ASSERT_EQ(fp8Attention.exitCode, 0) << fp8Attention.err;
    EXPECT_TRUE(contains(fp8Attention.out, "--fp8-dot-product-attention")) << fp8Attention.out.substr(0, 2000);
    const coretest::Run megatronDefaults = with({"--format", "megatron", "--precision", "fp8"});
    ASSERT_EQ(megatronDefaults.exitCode, 0) << megatronDefaults.err;
    EXPECT_TRUE(contains(megatronDefaults.out, "--fp8-format"));
    EXPECT_FALSE(contains(megatronDefaults.out, "--fp8-param-gather"));
    const coretest::Run blockwise = with({"--format", "megatron", "--precision", "fp8", "--fp8-recipe", "blockwise",
                                          "--stack", "tuned"});
    ASSERT_EQ(blockwise.exitCode, 0) << blockwise.err;
    EXPECT_TRUE(contains(blockwise.out, "blockwise"));
    EXPECT_TRUE(contains(blockwise.out, "e4m3"));
    // Megatron-Bridge's blockwise preset gathers BF16 (fp8_param_gather False), even tuned.
    EXPECT_FALSE(contains(blockwise.out, "--fp8-param-gather"));
    const coretest::Run bf16 = with({"--format", "megatron"});
    ASSERT_EQ(bf16.exitCode, 0) << bf16.err;
    EXPECT_FALSE(contains(bf16.out, "--fp8"));
    // NeMo 1.x: delayed scaling only; a current-scaling plan falls back to BF16, says so,
    // and --strict refuses it.
    const coretest::Run nemo = with({"--format", "nemo", "--precision", "fp8"});
    ASSERT_EQ(nemo.exitCode, 0) << nemo.err;
    EXPECT_TRUE(contains(nemo.out, "fp8_hybrid: true")) << nemo.out.substr(0, 3000);
    EXPECT_TRUE(contains(nemo.out, "fp8_amax_history_len: 1024"));
    const coretest::Run current = with({"--format", "nemo", "--precision", "fp8", "--fp8-recipe", "current", "--json"});
    ASSERT_EQ(current.exitCode, 0) << current.err;
    const nlohmann::json j = jsonObject(current.out);
    ASSERT_FALSE(j.at("fallback").empty());
    EXPECT_TRUE(contains(j.at("fallback").dump(), "does not train in fp8-current")) << j.at("fallback").dump();
    const coretest::Run strict = with({"--format", "nemo", "--precision", "fp8", "--fp8-recipe", "current", "--strict"});
    EXPECT_EQ(strict.exitCode, 2) << strict.err;
    EXPECT_TRUE(contains(strict.err, "fp8-current")) << strict.err;
}

TEST(CliPrecision, aWorkspacesFp8AttentionReachesTheOnePlanCommands)
{
    // The quickstart workspace with every node an H100 (FP8 tensor cores), once without and
    // once with search.fp8_attention: evaluate prices the attention's Q, K, V and output in
    // FP8 from the workspace alone, less memory and the same time (the kernel keeps the BF16
    // rate), as `plan --workspace` and the window do.
    nlohmann::json w = jsonObject(readFile(sample("sample_configs/workspaces/quickstart.nestws.json")));
    w["cluster"]["device_types"]["a100"] = "h100-sxm-80gb";
    const coretest::TempDir dir;
    const std::string off = dir.filePath("off.nestws.json"), on = dir.filePath("on.nestws.json");
    ASSERT_TRUE(writeFile(off, w.dump()));
    w["search"]["fp8_attention"] = true;
    ASSERT_TRUE(writeFile(on, w.dump()));
    auto evaluate = [](const std::string &workspace) {
        const coretest::Run r = runCli({"evaluate", "--workspace", workspace, "--tp", "8", "--dp", "4", "--microbatch",
                                        "2", "--precision", "fp8", "--json"});
        EXPECT_EQ(r.exitCode, 0) << r.err;
        return jsonObject(r.out);
    };
    const nlohmann::json a = evaluate(off), b = evaluate(on);
    EXPECT_LT(b.at("peak_memory_bytes").get<double>(), a.at("peak_memory_bytes").get<double>());
    EXPECT_DOUBLE_EQ(b.at("iteration_time_s").get<double>(), a.at("iteration_time_s").get<double>());
}
