// nest-cli's --recompute-modules (RecomputeModules.h, docs/cost-model.md, "Recomputation by
// module"): bad names and modules the model lacks exit 2 with the reason; the Megatron-LM
// export carries the list as Megatron-LM's own arguments.py spells it.
#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace coretest;

TEST(CliRecomputeModules, refusedWithTheReasonAndExported)
{
    const std::vector<std::string> base{"--cluster", "superpod-h100-256", "--model", "llama2-7b", "--tp", "8",
                                        "--dp", "2", "--recompute", "selective"};
    auto run = [&](const std::string &command, std::vector<std::string> extra) {
        std::vector<std::string> args{command};
        args.insert(args.end(), base.begin(), base.end());
        args.insert(args.end(), extra.begin(), extra.end());
        return runCli(args);
    };
    const coretest::Run unknown = run("evaluate", {"--recompute-modules", "layernorm,attn"});
    EXPECT_EQ(unknown.exitCode, 2);
    EXPECT_TRUE(contains(unknown.err, "--recompute-modules") && contains(unknown.err, "'attn'")) << unknown.err;
    const coretest::Run dense = run("evaluate", {"--recompute-modules", "moe_act"});
    EXPECT_EQ(dense.exitCode, 2);
    EXPECT_TRUE(contains(dense.err, "no MoE layers")) << dense.err;
    const coretest::Run ok = run("evaluate", {"--recompute-modules", "core_attn,layernorm", "--json"});
    ASSERT_EQ(ok.exitCode, 0) << ok.err;
    // A plan whose stages recompute selectively, exported: Megatron-LM spells the list as
    // separate arguments (arguments.py: nargs='*'), after --recompute-granularity selective.
    const std::string planFile = testing::TempDir() + "recompute-modules-plan.json";
    const coretest::Run planned = runCli({"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b",
                                          "--recompute", "selective", "--no-frameworks", "--out", planFile});
    ASSERT_EQ(planned.exitCode, 0) << planned.err;
    ASSERT_EQ(jsonObject(readFile(planFile)).at("stages").at(0).value("recompute", ""), "selective");
    auto exportWith = [&](std::vector<std::string> extra) {
        std::vector<std::string> args{"export", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--plan",
                                      planFile, "--format", "megatron"};
        args.insert(args.end(), extra.begin(), extra.end());
        return runCli(args);
    };
    const coretest::Run exported = exportWith({"--recompute-modules", "moe_act,layernorm"});
    EXPECT_EQ(exported.exitCode, 2);  // a dense model has no expert activation
    const coretest::Run norms = exportWith({"--recompute-modules", "core_attn,layernorm"});
    ASSERT_EQ(norms.exitCode, 0) << norms.err;
    EXPECT_TRUE(contains(norms.out, "--recompute-granularity selective\n")) << norms.out.substr(0, 3000);
    EXPECT_TRUE(contains(norms.out, "--recompute-modules core_attn layernorm\n")) << norms.out.substr(0, 3000);
    const coretest::Run plain = exportWith({});
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    EXPECT_TRUE(contains(plain.out, "--recompute-granularity selective\n"));
    EXPECT_FALSE(contains(plain.out, "--recompute-modules"));
}
