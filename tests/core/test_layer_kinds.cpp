// A model as a list of layer kinds (issue 45): the compact pattern, the model file's new keys
// (and the old files unchanged), and the builder's per-kind parameters and FLOPs against
// numbers worked out by hand below (not from the builder).
#include "LayerStack.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "ModelIO.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace nest;

namespace {

std::vector<std::string> labels(const ModelProfile &p)
{
    std::vector<std::string> out;
    for (const auto &l : p.layers)
        out.push_back(layerLabel(l));
    return out;
}

// A tiny model with every part sized, dense by default.
ModelConfig tiny()
{
    ModelConfig c = familyDefaults("llama");
    c.name = "tiny";
    c.layers = 4;
    c.hidden = 64;
    c.heads = 4;
    c.kvHeads = 2;
    c.ffnHidden = 128;
    c.vocab = 100;
    c.seqLength = 256;
    return c;
}

} // namespace

TEST(LayerPattern, parsesTheCompactForms)
{
    std::string error;
    const auto a = parseLayerPattern("3*dense, 58*moe", error);
    ASSERT_TRUE(a) << error;
    EXPECT_EQ(*a, (std::vector<LayerRun>{{"dense", 3}, {"moe", 58}}));
    const auto b = parseLayerPattern("3 dense then 58 MoE", error);
    ASSERT_TRUE(b) << error;
    EXPECT_EQ(*b, (std::vector<LayerRun>{{"dense", 3}, {"moe", 58}}));
    const auto c = parseLayerPattern("sliding, sliding, sliding, sliding, sliding, global", error);
    ASSERT_TRUE(c) << error;
    EXPECT_EQ(*c, (std::vector<LayerRun>{{"sliding", 5}, {"global", 1}}));
    const auto d = parseLayerPattern("2 x mamba,attention", error);
    ASSERT_TRUE(d) << error;
    EXPECT_EQ(*d, (std::vector<LayerRun>{{"mamba", 2}, {"attention", 1}}));
    EXPECT_EQ(formatLayerPattern(*a), "3*dense, 58*moe");
    EXPECT_EQ(patternLength(*a), 61);
    for (const char *bad : {"", "3*", "0*dense", "3dense", "dense,,moe", "a b", "9999999*dense"}) {
        EXPECT_FALSE(parseLayerPattern(bad, error)) << bad;
        EXPECT_TRUE(coretest::contains(error, "item")) << bad << ": " << error;
    }
}

TEST(LayerPattern, hybridStringIsOneLayerPerCharacter)
{
    std::string error;
    const auto r = parseHybridPattern("M-M*-E", error);
    ASSERT_TRUE(r) << error;
    EXPECT_EQ(*r, (std::vector<LayerRun>{{"mamba", 1}, {"mlp", 1}, {"mamba", 1}, {"attention", 1}, {"mlp", 1},
                                         {"moe_mlp", 1}}));
    EXPECT_FALSE(parseHybridPattern("MM?", error));
    EXPECT_TRUE(coretest::contains(error, "character 3"));
}

TEST(LayerPattern, repeatsToTheLayerCountAndCutsAtTheEnd)
{
    // Gemma 3 at 8 layers: five sliding, one global, then two sliding.
    ModelConfig c = tiny();
    c.layers = 8;
    c.slidingWindow = 64;
    c.pattern = {{"sliding", 5}, {"global", 1}};
    ASSERT_EQ(validate(c), "");
    const ModelProfile p = buildProfile(c);
    EXPECT_EQ(labels(p), (std::vector<std::string>{"embedding", "sliding", "sliding", "sliding", "sliding", "sliding",
                                                   "global", "sliding", "sliding", "head"}));
    EXPECT_EQ(formatLayerPattern(layerRuns(p)), "5*sliding, global, 2*sliding");
    EXPECT_EQ(layerKindCounts(p), (std::vector<LayerRun>{{"sliding", 7}, {"global", 1}}));
}

TEST(LayerKinds, modelFileReadsKindsAndPatternAndWritesThemBack)
{
    const Json j = Json::parse(R"({
        "format": "nest-model", "family": "mixtral", "name": "deepseek-like",
        "hidden": 256, "heads": 8, "vocab": 1000, "ffn_hidden": 512,
        "experts": 16, "top_k": 4, "expert_ffn_hidden": 64, "shared_experts": 1,
        "q_lora_rank": 96, "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32,
        "router_bias": true, "mtp_layers": 1, "router_groups": 8, "router_group_topk": 4,
        "layer_pattern": "3 dense then 58 moe"})");
    const ModelConfig c = modelConfigFromJson(j, "");
    EXPECT_EQ(c.layers, 61);  // the pattern's length when "layers" is not given
    EXPECT_EQ(c.routerGroups, 8);
    EXPECT_EQ(c.routerGroupTopK, 4);
    EXPECT_EQ(c.defaultAttention(), AttentionKind::Mla);
    const ModelProfile p = buildProfile(c);
    ASSERT_EQ(p.layerCount(), 1 + 61 + 1 + 1);
    EXPECT_EQ(p.layers[3].kind, LayerKind::Transformer);
    EXPECT_EQ(p.layers[4].kind, LayerKind::Moe);
    EXPECT_EQ(p.layers[62].kind, LayerKind::Mtp);
    EXPECT_EQ(p.layers[63].kind, LayerKind::Head);
    EXPECT_TRUE(p.routing().groupLimited());
    EXPECT_EQ(p.routing().groups, 8);
    EXPECT_EQ(p.routing().groupTopK, 4);
    // Written back and read again: the same config.
    const ModelConfig again = modelConfigFromJson(modelConfigToJson(c), "");
    EXPECT_EQ(again, c);
    EXPECT_EQ(modelConfigToJson(c).at("layer_pattern"), "3*dense, 58*moe");

    // A file's own kinds: a kind with its own MLP width and window.
    const Json own = Json::parse(R"({"family": "llama", "hidden": 64, "heads": 4, "vocab": 100, "ffn_hidden": 128,
        "layers": 4, "layer_kinds": {"Local": {"attention": "sliding", "window": 32, "ffn_hidden": 96}},
        "layer_pattern": ["local", "dense"]})");
    const ModelConfig o = modelConfigFromJson(own, "");
    const auto stack = o.layerStack();
    ASSERT_EQ(stack.size(), 4u);
    EXPECT_EQ(stack[0].name, "local");
    EXPECT_EQ(stack[0].window, 32);
    EXPECT_EQ(stack[0].ffnHidden, 96);
    EXPECT_EQ(stack[1].ffnHidden, 128);
    EXPECT_EQ(modelConfigFromJson(modelConfigToJson(o), ""), o);
}

TEST(LayerKinds, oldModelFilesLoadUnchangedAndWriteNoNewKey)
{
    const std::set<std::string> oldKeys = {
        "format", "name", "family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "max_positions",
        "type_vocab", "experts", "top_k", "tied_embeddings", "gated_mlp", "linear_bias", "norm", "dropout",
        "flash_attention", "causal", "seq_length", "global_batch", "source"};
    int files = 0;
    for (const auto &e : std::filesystem::directory_iterator(coretest::sample("sample_configs/models"))) {
        if (e.path().extension() != ".json")
            continue;
        const auto loaded = loadModelConfig(e.path().string());
        ASSERT_TRUE(loaded) << loaded.error();
        EXPECT_TRUE(loaded->pattern.empty() && loaded->layerKinds.empty() && loaded->mtpLayers == 0) << e.path();
        const Json written = modelConfigToJson(*loaded);
        for (const auto &[key, value] : written.items())
            EXPECT_TRUE(oldKeys.count(key)) << e.path() << ": " << key;
        ++files;
    }
    EXPECT_GE(files, 7);
}

// MLA by hand (DeepSeek-V2 Sec. 2.1.2 with q_lora_rank 0, as V2-Lite): h 64, 4 heads, KV
// rank 16, rope 8, nope 16, v 16.
//   q_proj  64 x 4*(16+8)          = 6144
//   kv_a    64 x (16+8) + norm 16  = 1552
//   kv_b    16 x 4*(16+16)         = 2048
//   o_proj  4*16 x 64              = 4096       attention: 13840
//   MLP (SwiGLU, f 128): 3 x 64 x 128 = 24576; two RMSNorms: 128      block: 38544
TEST(LayerKinds, mlaBlockParametersByHand)
{
    ModelConfig c = tiny();
    c.layers = 1;
    c.heads = 4;
    c.kvHeads = 4;
    c.kvLoraRank = 16;
    c.qkRopeHeadDim = 8;
    c.qkNopeHeadDim = 16;
    c.vHeadDim = 16;
    ASSERT_EQ(validate(c), "");
    const ModelProfile p = buildProfile(c);
    EXPECT_EQ(p.layers[1].params, 38544);
    EXPECT_EQ(p.layers[1].kindLabel, "dense");
    // Forward model FLOPs of the attention core: s^2 x heads x 2 x (qk 24 + v 16).
    const double s = 256;
    const double projections = 2 * s * (6144 + 64 * 24 + 2048 + 4096);
    const double core = 2 * s * s * 4 * (24 + 16);
    const double mlp = 2 * s * 24576;
    EXPECT_EQ(p.layers[1].fwdFlops, projections + core + mlp);
    // With a q rank of 32: q_a 64x32 + norm 32, q_b 32 x 96 replace q_proj: 2048 + 32 + 3072.
    c.qLoraRank = 32;
    EXPECT_EQ(buildProfile(c).layers[1].params, 38544 - 6144 + 2048 + 32 + 3072);
}

// Sliding window W = s/4 against full causal attention: a causal kernel computes s*W - W^2/2
// key pairs instead of s^2/2 = (1/4 - 1/32) / (1/2) = 7/16 of the work; model FLOPs count s*W
// instead of s^2 (1/4). Parameters are the same.
TEST(LayerKinds, slidingWindowAttentionWorkByHand)
{
    ModelConfig c = tiny();
    c.layers = 2;
    c.slidingWindow = 64;  // s = 256
    c.pattern = {{"sliding", 1}, {"global", 1}};
    const ModelProfile p = buildProfile(c);
    const LayerProfile &sliding = p.layers[1], &full = p.layers[2];
    EXPECT_EQ(sliding.kindLabel, "sliding");
    EXPECT_EQ(sliding.params, full.params);
    EXPECT_DOUBLE_EQ(sliding.attentionFlops / full.attentionFlops, 7.0 / 16.0);
    const double s = 256, q = 64;  // Q width = hidden
    const double fullCore = 4 * s * s * q, slidingCore = 4 * s * 64 * q;
    EXPECT_EQ(full.fwdFlops - sliding.fwdFlops, fullCore - slidingCore);
    // A window at least the sequence is full attention.
    c.slidingWindow = 4096;
    const ModelProfile wide = buildProfile(c);
    EXPECT_EQ(wide.layers[1].attentionFlops, wide.layers[2].attentionFlops);
}

// Mamba-2 by hand (transformers' Mamba2Mixer): h 64, 4 heads of 16 (inner 64), state 8, 2
// groups, conv 4, no linear biases, conv bias.
//   in_proj   64 x (2*64 + 2*2*8 + 4) = 64 x 164 = 10496
//   conv1d    (64 + 32) x 4 + 96 = 480
//   dt_bias, A_log, D: 3 x 4 = 12;  gated norm 64;  out_proj 64 x 64 = 4096
//   one RMSNorm before the mixer: 64                       block: 15212
TEST(LayerKinds, mambaBlockParametersByHand)
{
    ModelConfig c = tiny();
    c.layers = 1;
    c.mambaHeads = 4;
    c.mambaHeadDim = 16;
    c.ssmState = 8;
    c.mambaGroups = 2;
    c.pattern = {{"mamba", 1}};
    ASSERT_EQ(validate(c), "");
    const ModelProfile p = buildProfile(c);
    EXPECT_EQ(p.layers[1].kind, LayerKind::Mamba);
    EXPECT_EQ(p.layers[1].params, 15212);
    EXPECT_EQ(p.layers[1].cpExchangeBytes, 0);
    EXPECT_GT(p.layers[1].attentionFlops, 0);
}

// MoE with a shared expert and experts of their own width (h 64, 8 experts of width 32, top 2,
// one shared expert of width 48, router bias):
//   routed   8 x 3 x 64 x 32 = 49152 (each 6144)   shared 3 x 64 x 48 = 9216
//   router   64 x 8 + 8 = 520                       GQA attention 64x(64+2*32) + 64x64 = 12288
//   norms    128                                    block: 71304; active: 71304 - 6 x 6144 = 34440
TEST(LayerKinds, sharedExpertsByHand)
{
    ModelConfig c = tiny();
    c.family = "mixtral";
    c.layers = 1;
    c.experts = 8;
    c.topK = 2;
    c.expertFfnHidden = 32;
    c.sharedExperts = 1;
    c.sharedFfnHidden = 48;
    c.routerBias = true;
    ASSERT_EQ(validate(c), "");
    const ModelProfile p = buildProfile(c);
    EXPECT_EQ(p.layers[1].kind, LayerKind::Moe);
    EXPECT_EQ(p.layers[1].params, 71304);
    EXPECT_EQ(p.layers[1].expertParams, 49152);
    EXPECT_EQ(p.layers[1].activeParams, 34440);
}

// An MTP module: the last kind's block plus eh_proj (2h x h) and three RMSNorms, the embedding
// shared (a copy where the stage lacks it).
TEST(LayerKinds, mtpModuleAfterTheLastBlock)
{
    ModelConfig c = tiny();
    c.mtpLayers = 1;
    const ModelProfile p = buildProfile(c);
    ASSERT_EQ(p.layerCount(), 1 + 4 + 1 + 1);
    const LayerProfile &mtp = p.layers[5];
    EXPECT_EQ(mtp.kind, LayerKind::Mtp);
    EXPECT_EQ(mtp.params, p.layers[4].params + 2 * 64 * 64 + 3 * 64);
    EXPECT_EQ(mtp.tiedParams, 100 * 64);
    EXPECT_TRUE(isRecomputedBlock(mtp.kind));
    EXPECT_FALSE(isDecoderBlock(mtp.kind));
}

TEST(LayerKinds, problemsNameTheKey)
{
    struct Case {
        const char *json;
        const char *path;
        const char *reason;
    };
    const Case cases[] = {
        {R"({"layer_pattern": "2*dense, 3*bogus"})", "layer_pattern", "unknown layer kind 'bogus'"},
        {R"({"layer_pattern": ["2*dense", "turbo"]})", "layer_pattern[1]", "unknown layer kind 'turbo'"},
        {R"({"layer_pattern": "8*dense"})", "layer_pattern", "more than the model's 4"},
        {R"({"kv_lora_rank": 16, "qk_rope_head_dim": 8, "v_head_dim": 16})", "qk_nope_head_dim", "must be positive with MLA"},
        {R"({"qk_rope_head_dim": 8})", "qk_rope_head_dim", "kv_lora_rank is 0"},
        {R"({"layer_pattern": "sliding"})", "layer_pattern", "no window"},
        {R"({"layer_pattern": "mamba"})", "layer_pattern", "lacks mamba_heads"},
        {R"({"layer_pattern": "moe"})", "layer_pattern", "set experts > 1"},
        {R"({"experts": 4, "top_k": 5})", "top_k", "must not exceed experts"},
        {R"({"experts": 8, "top_k": 2, "router_groups": 4})", "router_group_topk", "set both or neither"},
        {R"({"experts": 8, "top_k": 2, "router_group_topk": 1})", "router_groups", "set both or neither"},
        {R"({"experts": 8, "top_k": 2, "router_groups": 3, "router_group_topk": 1})", "router_groups", "must divide experts (8)"},
        {R"({"experts": 8, "top_k": 2, "router_groups": 4, "router_group_topk": 5})", "router_group_topk", "must not exceed router_groups"},
        {R"({"experts": 8, "top_k": 4, "router_groups": 4, "router_group_topk": 1})", "router_group_topk", "fewer than top_k (4)"},
        {R"({"experts": 8, "top_k": 2, "router_groups": -1, "router_group_topk": 1})", "router_groups", "must be between 0 and"},
        {R"({"hybrid_pattern": "M-X"})", "hybrid_pattern", "character 3"},
        {R"({"layer_kinds": {"x": {"mlp": "giant"}}})", "layer_kinds.x.mlp", "expected"},
        {R"({"layer_kinds": {"x": {"mixer": "none", "mlp": "none"}}, "layer_pattern": "x"})", "layer_kinds.x", "neither"},
        {R"({"norm_placement": "post"})", "norm_placement", "expected"},
    };
    for (const Case &k : cases) {
        Json j = Json::parse(R"({"family": "llama", "hidden": 64, "heads": 4, "vocab": 100, "ffn_hidden": 128, "layers": 4})");
        j.update(Json::parse(k.json));
        try {
            modelConfigFromJson(j, "");
            ADD_FAILURE() << k.json << " was accepted";
        } catch (const JsonError &e) {
            EXPECT_EQ(e.path(), k.path) << k.json << ": " << e.reason();
            EXPECT_TRUE(coretest::contains(e.reason(), k.reason)) << k.json << ": " << e.reason();
        }
    }
}
