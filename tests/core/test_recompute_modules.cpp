// Selective recomputation by module (Megatron-Core's --recompute-modules; RecomputeModules.h,
// docs/cost-model.md, "Recomputation by module"): each module discards exactly the tensors it
// names and reruns exactly their forward work, the default (core_attn) prices as before, and
// the workspace carries the list (the CLI and the export: test_cli_recompute_modules.cpp). Expected bytes and seconds are
// worked out by hand below from the tensor shapes, never read back from the code under test.
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "PlanBuilder.h"
#include "RecomputeModules.h"
#include "SearchSettings.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace nest;
using namespace coretest;

namespace {

// Llama-style blocks (RMSNorm, SwiGLU, fused attention): h 64, 4 heads, s 256, micro-batch 1.
ModelConfig tinyLlama(int layers)
{
    ModelConfig c = familyDefaults("llama");
    c.name = "tiny";
    c.layers = layers;
    c.hidden = 64;
    c.heads = 4;
    c.kvHeads = 4;
    c.ffnHidden = 128;
    c.vocab = 100;
    c.seqLength = 256;
    c.globalBatch = 8;
    return c;
}

struct StageNumbers {
    double stash = 0, recompute = 0;
};

// One stage on roundDevice() (1 TB/s HBM, which the cost model streams at 80 %), tp 1,
// selective recomputation with `modules`, the serial framework (no fragmentation on the
// stash, one pass per element-wise kernel).
StageNumbers selective(const ModelProfile &model, RecomputeModules modules, const Precision &precision = {})
{
    const Topology topo = Topology::uniform("one", roundDevice(), {{"node", 1, linkOf(100e9, 1e-6)}});
    UniformLayout u;
    u.globalBatch = 8;
    u.seqLength = 256;
    u.recompute = Recompute::Selective;
    Plan plan = *buildUniformPlan(u, topo, model);
    plan.precision = precision;
    CostOptions o;
    o.framework = Framework::Serial;
    o.recomputeModules = modules;
    const StageCost c = evaluate(plan, topo, model, o).stages.at(0).cost;
    return {c.stashPerMicroBatch, c.recompute};
}

RecomputeModules modulesOf(const std::string &list)
{
    std::string why;
    const auto m = parseRecomputeModules(list, &why);
    EXPECT_TRUE(m) << why;
    return m.value_or(RecomputeModules{});
}

int blocks(const ModelProfile &model)
{
    int n = 0;
    for (const LayerProfile &l : model.layers)
        n += l.kind != LayerKind::Embedding && l.kind != LayerKind::Head;
    return n;
}

} // namespace

TEST(RecomputeModules, parsesMegatronsNames)
{
    EXPECT_TRUE(RecomputeModules{}.isDefault());
    EXPECT_EQ(recomputeModulesText(RecomputeModules{}), "core_attn");
    // Commas or spaces; Megatron-Core's order back (core_attn, moe_act, layernorm, mla_up_proj).
    EXPECT_EQ(recomputeModulesText(modulesOf("layernorm,moe_act")), "moe_act,layernorm");
    EXPECT_EQ(recomputeModulesText(modulesOf("mla_up_proj core_attn")), "core_attn,mla_up_proj");
    EXPECT_EQ(modulesOf("").mask, 0u);  // nothing rerun
    std::string why;
    EXPECT_FALSE(parseRecomputeModules("layernorm,mlp", &why));
    EXPECT_TRUE(contains(why, "'mlp'") && contains(why, "whole submodule")) << why;
    EXPECT_FALSE(parseRecomputeModules("core_attention", &why));
    EXPECT_TRUE(contains(why, "unknown recompute module 'core_attention'")) << why;
}

// The default prices selective recomputation as it always did: the fused attention's
// statistics dropped (4 B per head and token: 4 x 4 x 256 = 4,096 B a block) and the core
// attention rerun; with no module at all both come back.
TEST(RecomputeModules, coreAttentionIsTheDefault)
{
    const ModelProfile model = buildProfile(tinyLlama(2));
    const StageNumbers core = selective(model, RecomputeModules{});
    const StageNumbers none = selective(model, modulesOf(""));
    EXPECT_NEAR(none.stash - core.stash, 2 * 4096.0, 1e-6);
    EXPECT_GT(core.recompute, 0);
    EXPECT_EQ(none.recompute, 0);
}

// layernorm: the input and pre-MLP norms' outputs (each s x h BF16: 2 x 2 x 256 x 64 =
// 65,536 B a block) are discarded; the rerun reads and writes h per norm and token
// (2 x 4 x 256 x 64 = 131,072 B a block) at 0.8 TB/s.
TEST(RecomputeModules, layerNormDropsTheNormOutputsAndRerunsTheNorms)
{
    const ModelProfile model = buildProfile(tinyLlama(2));
    const StageNumbers none = selective(model, modulesOf(""));
    const StageNumbers norm = selective(model, modulesOf("layernorm"));
    EXPECT_NEAR(none.stash - norm.stash, 2 * 65536.0, 1e-6);
    EXPECT_NEAR(norm.recompute, 2 * 131072.0 / 0.8e12, 1e-18);
    // FP8: the linear layers keep their inputs in FP8 (1 B, delayed scaling's per-tensor scale
    // negligible), so the norm outputs discarded are half the BF16 bytes.
    const Precision fp8{NumberFormat::Fp8, Fp8Recipe::Delayed};
    EXPECT_NEAR(selective(model, modulesOf(""), fp8).stash - selective(model, modulesOf("layernorm"), fp8).stash,
                2 * 65536.0 / 2, 1e-6);
}

// moe_act: 8 experts of width 32, top 2: each routed copy's activation output (the down
// projection's input, 2 x 32 B) is discarded: 2 x 256 x 64 = 32,768 B a block; the rerun reads
// the gate and up outputs and writes the product, 3 x 32 x 2 B a copy: 2 x 256 x 192 = 98,304 B.
TEST(RecomputeModules, moeActDropsTheExpertActivationOutputs)
{
    ModelConfig c = tinyLlama(2);
    c.family = "mixtral";
    c.experts = 8;
    c.topK = 2;
    c.expertFfnHidden = 32;
    ASSERT_EQ(validate(c), "");
    const ModelProfile model = buildProfile(c);
    const int n = blocks(model);
    ASSERT_EQ(n, 2);
    const StageNumbers none = selective(model, modulesOf(""));
    const StageNumbers act = selective(model, modulesOf("moe_act"));
    EXPECT_NEAR(none.stash - act.stash, n * 32768.0, 1e-6);
    EXPECT_NEAR(act.recompute, n * 98304.0 / 0.8e12, 1e-18);
    EXPECT_EQ(recomputeModulesProblem(modulesOf("moe_act"), model), "");
    EXPECT_TRUE(contains(recomputeModulesProblem(modulesOf("moe_act"), buildProfile(tinyLlama(2))), "no MoE layers"));
}

// mla_up_proj: 4 heads, nope 16, rope 8, v 16: Q and K (4 x 24 each) and V (4 x 16) are
// discarded after the core attention, 2 x 256 x (96 + 96 + 64) = 131,072 B a block. The rerun
// is the projections that make them (no q rank: q_proj 64 -> 4 x 24 = 96; kv_b 16 -> 4 x 32 =
// 128), each bound by its BF16 operands and result at these shapes, 2 (mk + kn + mn) B at
// 0.8 TB/s: q_proj 2 (256x64 + 64x96 + 256x96) = 94,208 B, kv_b 2 (256x16 + 16x128 + 256x128)
// = 77,824 B (their FLOPs take less: 3.1 and 1.0 MFLOP at 500 TFLOP/s and the tile factors).
TEST(RecomputeModules, mlaUpProjDropsQueryKeyAndValue)
{
    ModelConfig c = tinyLlama(2);
    c.kvLoraRank = 16;
    c.qkRopeHeadDim = 8;
    c.qkNopeHeadDim = 16;
    c.vHeadDim = 16;
    ASSERT_EQ(validate(c), "");
    const ModelProfile model = buildProfile(c);
    const StageNumbers none = selective(model, modulesOf(""));
    const StageNumbers up = selective(model, modulesOf("mla_up_proj"));
    EXPECT_NEAR(none.stash - up.stash, 2 * 131072.0, 1e-6);
    EXPECT_NEAR(up.recompute, 2 * (94208.0 + 77824.0) / 0.8e12, 1e-18);
    EXPECT_TRUE(contains(recomputeModulesProblem(modulesOf("mla_up_proj"), buildProfile(tinyLlama(2))),
                         "no multi-latent attention"));
}

// A stage without selective recomputation ignores the modules.
TEST(RecomputeModules, onlySelectiveStagesUseThem)
{
    const ModelProfile model = buildProfile(tinyLlama(2));
    const Topology topo = Topology::uniform("one", roundDevice(), {{"node", 1, linkOf(100e9, 1e-6)}});
    UniformLayout u;
    u.globalBatch = 8;
    u.seqLength = 256;
    const Plan plan = *buildUniformPlan(u, topo, model);
    CostOptions a, b;
    b.recomputeModules = modulesOf("layernorm");
    EXPECT_EQ(evaluate(plan, topo, model, a).iterationTime, evaluate(plan, topo, model, b).iterationTime);
    EXPECT_EQ(evaluate(plan, topo, model, a).stages.at(0).cost.memoryTotal,
              evaluate(plan, topo, model, b).stages.at(0).cost.memoryTotal);
}

TEST(RecomputeModules, workspaceKeyWrittenOnlyWhenNotTheDefault)
{
    SearchSettings s;
    EXPECT_FALSE(searchSettingsToJson(s).contains("recompute_modules"));
    s.recomputeModules = modulesOf("layernorm,moe_act");
    const nlohmann::json j = searchSettingsToJson(s);
    ASSERT_TRUE(j.contains("recompute_modules"));
    EXPECT_EQ(j.at("recompute_modules"), nlohmann::json::parse(R"(["moe_act", "layernorm"])"));
    EXPECT_EQ(searchSettingsFromJson(j, "search").recomputeModules, s.recomputeModules);
    EXPECT_EQ(settingsCostOptions(s).recomputeModules, s.recomputeModules);
    nlohmann::json bad = j;
    bad["recompute_modules"] = nlohmann::json::parse(R"(["layernorm", "moe"])");
    try {
        searchSettingsFromJson(bad, "search");
        ADD_FAILURE() << "a module the model does not price was accepted";
    } catch (const JsonError &e) {
        EXPECT_EQ(e.path(), "search.recompute_modules");
        EXPECT_TRUE(contains(e.reason(), "'moe'")) << e.reason();
    }
}
