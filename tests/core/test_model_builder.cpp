// ModelBuilder on toy models small enough to count every field by hand (comments show the
// arithmetic), plus ModelConfig JSON parsing and validation.
#include "ModelBuilder.h"
#include "ModelConfig.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

using namespace nest;

namespace {

using coretest::rowName;

// Llama-like toy: 1 block, h = 8, 4 heads (head dim 2), 2 KV heads (hkv = 4), ffn 12,
// vocab 10, s = 4; SwiGLU, RMSNorm, no biases, no dropout, untied output, flash attention
// (the llama family default).
ModelConfig toyLlama()
{
    ModelConfig m = familyDefaults("llama");
    m.name = "toy-llama";
    m.layers = 1;
    m.hidden = 8;
    m.heads = 4;
    m.kvHeads = 2;
    m.ffnHidden = 12;
    m.vocab = 10;
    m.seqLength = 4;
    return m;
}

// GPT-like toy: 1 block, h = 8, 2 heads, ffn 32 (4h), vocab 10, 4 positions, s = 4;
// LayerNorm, biases, dropout, tied output.
ModelConfig toyGpt()
{
    ModelConfig m = familyDefaults("gpt");
    m.name = "toy-gpt";
    m.layers = 1;
    m.hidden = 8;
    m.heads = 2;
    m.kvHeads = 2;
    m.ffnHidden = 32;
    m.vocab = 10;
    m.maxPositions = 4;
    m.seqLength = 4;
    return m;
}

} // namespace

TEST(ModelBuilder, toyLlamaByHand)
{
    const ModelProfile p = buildProfile(toyLlama());
    ASSERT_EQ(p.layerCount(), 3);
    ASSERT_EQ(p.kvHeads, 2);

    const LayerProfile &e = p.layers[0];
    ASSERT_QFUZZY_EQ(e.params, 80.0);            // 10 x 8, no positions (rotary)
    ASSERT_QFUZZY_EQ(e.tpParams, 80.0);          // vocab-parallel
    ASSERT_QFUZZY_EQ(e.fwdFlops, 0.0);
    ASSERT_QFUZZY_EQ(e.outputBytes, 64.0);       // 2 bytes * 4 * 8
    ASSERT_QFUZZY_EQ(e.stashSpBytes, 0.0);       // no dropout mask
    ASSERT_QFUZZY_EQ(e.tpAllReduceBytes, 64.0);

    const LayerProfile &b = p.layers[1];
    ASSERT_EQ(b.kind, LayerKind::Transformer);
    // Q 8x8, K and V 8x4 each -> 128; O 8x8 = 64; MLP 3 x 8 x 12 = 288; two RMSNorms 16.
    ASSERT_QFUZZY_EQ(b.params, 496.0);
    ASSERT_QFUZZY_EQ(b.tpParams, 480.0);         // all but the norms
    ASSERT_QFUZZY_EQ(b.activeParams, 496.0);
    ASSERT_QFUZZY_EQ(b.expertParams, 0.0);
    // Projections 2*s*8*(8+8) + 2*s*8*8 = 1024 + 512; scores + values 2 * 2*s*s*h = 512;
    // MLP 2*s*8*12*3 = 2304. Sum 4352.
    ASSERT_QFUZZY_EQ(b.fwdFlops, 4352.0);
    ASSERT_QFUZZY_EQ(b.bwdFlops, 8704.0);
    // Replicated: norm inputs and norm outputs, 4 x 2*s*h = 256 (no dropout masks).
    ASSERT_QFUZZY_EQ(b.stashSpBytes, 256.0);
    // Q, O input 2 x 2*s*8 = 128, K, V 2 x 2*s*4 = 64; flash attention: FP32 logsumexp
    // 4*a*s = 64 (no softmax); SwiGLU gate, up, product 3 x 2*s*12 = 288. Sum 544.
    ASSERT_QFUZZY_EQ(b.stashTpBytes, 544.0);
    ASSERT_QFUZZY_EQ(b.recomputeStashBytes, 64.0);
    ASSERT_QFUZZY_EQ(b.outputBytes, 64.0);
    // 2 x max(gate+up 2*4*24 = 192, QKV 2*4*16 = 128) = 384 (flash: no scores term).
    ASSERT_QFUZZY_EQ(b.workingBytes, 384.0);
    ASSERT_QFUZZY_EQ(b.tpAllReduceBytes, 128.0); // 2 x 2*s*h
    ASSERT_QFUZZY_EQ(b.cpExchangeBytes, 64.0);   // K and V: 2 x 2*s*4
    ASSERT_QFUZZY_EQ(b.epAllToAllBytes, 0.0);

    const LayerProfile &h = p.layers[2];
    ASSERT_QFUZZY_EQ(h.params, 88.0);            // final norm 8 + untied output 80
    ASSERT_QFUZZY_EQ(h.tpParams, 80.0);
    ASSERT_QFUZZY_EQ(h.tiedParams, 0.0);
    ASSERT_QFUZZY_EQ(h.fwdFlops, 640.0);         // 2 * 4 * 8 * 10
    ASSERT_QFUZZY_EQ(h.stashSpBytes, 128.0);     // norm input + projection input
    ASSERT_QFUZZY_EQ(h.stashTpBytes, 160.0);     // FP32 logits 4 * 4 * 10
    ASSERT_QFUZZY_EQ(h.recomputeStashBytes, 64.0);
    ASSERT_QFUZZY_EQ(h.workingBytes, 80.0);      // BF16 logits 80 (the FP32 gradient reuses the stash)
    ASSERT_QFUZZY_EQ(h.outputBytes, 0.0);

    ASSERT_QFUZZY_EQ(p.totalParams(), 664.0);    // 80 + 496 + 88
    // (0 + 3*4352 + 3*640) / 4 tokens = 3744
    ASSERT_QFUZZY_EQ(p.flopsPerToken(), 3744.0);
}

TEST(ModelBuilder, toyMoeByHand)
{
    ModelConfig c = toyLlama();
    c.family = "mixtral";
    c.experts = 4;
    c.topK = 2;
    const ModelProfile p = buildProfile(c);
    const LayerProfile &b = p.layers[1];
    ASSERT_EQ(b.kind, LayerKind::Moe);
    // Attention 128 + 64, 4 experts x 288, router 8 x 4 = 32, norms 16 -> 1392.
    ASSERT_QFUZZY_EQ(b.params, 1392.0);
    ASSERT_QFUZZY_EQ(b.expertParams, 1152.0);
    ASSERT_QFUZZY_EQ(b.activeParams, 816.0);     // 1392 - 2 idle experts x 288
    ASSERT_QFUZZY_EQ(b.tpParams, 1344.0);        // attention 192 + experts 1152
    // Attention 1536 + 512; 2 active experts x 2304; router 2*s*8*4 = 256. Sum 6912.
    ASSERT_QFUZZY_EQ(b.fwdFlops, 6912.0);
    // Attention part 192 + logsumexp 64 as above (mixtral: flash by default), expert
    // activations per routed copy 2 x 288 = 576. Sum 832.
    ASSERT_QFUZZY_EQ(b.stashTpBytes, 832.0);
    // 256 as above + FP32 router logits 4*s*4 = 64 + dispatched inputs and expert outputs
    // 2 x 2 copies x 2*s*h = 256.
    ASSERT_QFUZZY_EQ(b.stashSpBytes, 576.0);
    // Dispatch + combine of top_k copies of the s*h BF16 tokens: 2 * 2 * 4 * 8 * 2 = 256.
    ASSERT_QFUZZY_EQ(b.epAllToAllBytes, 256.0);
    ASSERT_EQ(p.numExperts, 4);
    ASSERT_EQ(p.topK, 2);
    ASSERT_QFUZZY_EQ(p.activeParams(), 80.0 + 816.0 + 88.0);
}

TEST(ModelBuilder, toyGptByHand)
{
    const ModelProfile p = buildProfile(toyGpt());
    const LayerProfile &e = p.layers[0];
    ASSERT_QFUZZY_EQ(e.params, 112.0);           // word 80 + positions 4 x 8
    ASSERT_QFUZZY_EQ(e.tpParams, 80.0);          // positions replicated
    ASSERT_QFUZZY_EQ(e.stashSpBytes, 32.0);      // 1-byte dropout mask s*h

    const LayerProfile &b = p.layers[1];
    // 12h^2 + 13h = 768 + 104.
    ASSERT_QFUZZY_EQ(b.params, 872.0);
    // Replicated: LN weights/biases 32, out bias 8, MLP down bias 8 -> 872 - 48.
    ASSERT_QFUZZY_EQ(b.tpParams, 824.0);
    // Korthikanti: 10sh = 320 replicated, 24sh + 5as^2 = 768 + 160 divided by TP.
    ASSERT_QFUZZY_EQ(b.stashSpBytes, 320.0);
    ASSERT_QFUZZY_EQ(b.stashTpBytes, 928.0);
    // 24*s*h^2 + 4*s^2*h = 6144 + 512.
    ASSERT_QFUZZY_EQ(b.fwdFlops, 6656.0);

    const LayerProfile &h = p.layers[2];
    ASSERT_QFUZZY_EQ(h.params, 16.0);            // final LayerNorm only
    ASSERT_QFUZZY_EQ(h.tiedParams, 80.0);        // shares the word embedding
    ASSERT_QFUZZY_EQ(h.tpParams, 0.0);
    ASSERT_QFUZZY_EQ(h.fwdFlops, 640.0);         // the tied projection still costs its FLOPs
    ASSERT_QFUZZY_EQ(p.totalParams(), 112.0 + 872.0 + 16.0);
}

TEST(ModelBuilder, flashAttentionGptBlock)
{
    // The GPT toy with flash attention: Korthikanti's s*h*(34 + 5as/h) without the 5as^2
    // score / softmax / dropout bytes, plus the FP32 logsumexp 4*a*s (Dao 2023).
    ModelConfig c = toyGpt();
    ASSERT_TRUE(!c.flashAttention);           // gpt family default
    c.flashAttention = true;
    const LayerProfile b = buildProfile(c).layers[1];
    const LayerProfile korthikanti = buildProfile(toyGpt()).layers[1];
    // s*h = 32: replicated 10sh = 320 unchanged; TP part 24sh + 4as = 768 + 4*2*4 = 800.
    ASSERT_QFUZZY_EQ(b.stashSpBytes, 320.0);
    ASSERT_QFUZZY_EQ(b.stashTpBytes, 800.0);
    // Total 34sh + 4as = 1088 + 32 = 1120 (Korthikanti: 1088 + 5as^2 = 1088 + 160 = 1248).
    ASSERT_QFUZZY_EQ(b.stashSpBytes + b.stashTpBytes, 1120.0);
    ASSERT_QFUZZY_EQ(korthikanti.stashSpBytes + korthikanti.stashTpBytes, 1248.0);
    // Model FLOPs unchanged (24*s*h^2 + 4*s^2*h = 6656), as are the recompute stash,
    // parameters and communication.
    ASSERT_QFUZZY_EQ(b.fwdFlops, 6656.0);
    ASSERT_QFUZZY_EQ(b.bwdFlops, korthikanti.bwdFlops);
    ASSERT_QFUZZY_EQ(b.params, korthikanti.params);
    ASSERT_QFUZZY_EQ(b.recomputeStashBytes, korthikanti.recomputeStashBytes);
    ASSERT_QFUZZY_EQ(b.tpAllReduceBytes, korthikanti.tpAllReduceBytes);
    ASSERT_QFUZZY_EQ(b.cpExchangeBytes, korthikanti.cpExchangeBytes);
    // Working set: scores 2*a*s^2 = 64, GeLU input 2*s*32 = 256, QKV 2*s*24 = 192: the MLP
    // dominates either way, 2 x 256 = 512.
    ASSERT_QFUZZY_EQ(b.workingBytes, 512.0);
    ASSERT_QFUZZY_EQ(korthikanti.workingBytes, 512.0);
}

TEST(ModelBuilder, flashAttentionLongSequence)
{
    // The llama toy at s = 64, where the s^2 tensors dominate. By hand (h = 8, a = 4,
    // hkv = 4, f = 12, no dropout):
    //   common TP part: Q, O input 2 x 2*64*8 = 2048, K, V 2 x 2*64*4 = 1024, SwiGLU
    //   3 x 2*64*12 = 4608 -> 7680;
    //   materialised: + softmax output 2*a*s^2 = 2*4*4096 = 32768 -> 40448;
    //   flash: + logsumexp 4*a*s = 1024 -> 8704.
    //   working: materialised 2 x scores 32768 = 65536; flash 2 x max(gate+up 2*64*24 =
    //   3072, QKV 2*64*16 = 2048) = 6144.
    ModelConfig c = toyLlama();
    c.seqLength = 64;
    ASSERT_TRUE(c.flashAttention);
    const LayerProfile flash = buildProfile(c).layers[1];
    c.flashAttention = false;
    const LayerProfile plain = buildProfile(c).layers[1];
    ASSERT_QFUZZY_EQ(flash.stashTpBytes, 8704.0);
    ASSERT_QFUZZY_EQ(plain.stashTpBytes, 40448.0);
    ASSERT_QFUZZY_EQ(flash.stashSpBytes, 4 * 2 * 64 * 8.0);   // norm inputs and outputs, unchanged
    ASSERT_QFUZZY_EQ(plain.stashSpBytes, flash.stashSpBytes);
    ASSERT_QFUZZY_EQ(flash.workingBytes, 6144.0);
    ASSERT_QFUZZY_EQ(plain.workingBytes, 65536.0);
    ASSERT_QFUZZY_EQ(flash.fwdFlops, plain.fwdFlops);
    ASSERT_QFUZZY_EQ(flash.bwdFlops, plain.bwdFlops);
    // With dropout the materialised path adds the mask a*s^2 and the dropped probabilities
    // 2*a*s^2 (Korthikanti); flash attention regenerates the mask: no change.
    c.dropout = true;
    ASSERT_QFUZZY_EQ(buildProfile(c).layers[1].stashTpBytes, 40448.0 + 3 * 4 * 4096.0);
    c.flashAttention = true;
    ASSERT_QFUZZY_EQ(buildProfile(c).layers[1].stashTpBytes, 8704.0);
}

TEST(ModelBuilder, flashAttentionFamilyDefaults)
{
    ASSERT_TRUE(familyDefaults("llama").flashAttention);
    ASSERT_TRUE(familyDefaults("mixtral").flashAttention);
    ASSERT_TRUE(!familyDefaults("gpt").flashAttention);
    ASSERT_TRUE(!familyDefaults("bert").flashAttention);
    ASSERT_TRUE(!ModelConfig().flashAttention);            // the struct's family is "gpt"
    for (const auto &m : modelPresets())
        ASSERT_EQ(m.flashAttention, familyDefaults(m.family).flashAttention);
}

TEST(ModelBuilder, flashAttentionJson)
{
    // Absent key: the family default.
    const Json full = {{"family", "llama"}, {"layers", 1}, {"hidden", 8}, {"heads", 4},
                       {"ffn_hidden", 12}, {"vocab", 10}};
    ASSERT_TRUE(modelConfigFromJson(full, "").flashAttention);
    Json off = full;
    off["flash_attention"] = false;
    ASSERT_TRUE(!modelConfigFromJson(off, "").flashAttention);
    ASSERT_TRUE(modelConfigToJson(modelConfigFromJson(off, "")).at("flash_attention") == Json(false))
        << modelConfigToJson(modelConfigFromJson(off, "")).at("flash_attention").dump();
    // A preset keeps its citation when only the attention kernel changes.
    const ModelConfig g = modelConfigFromJson({{"preset", "gpt3-175b"}, {"flash_attention", true}}, "");
    ASSERT_TRUE(g.flashAttention);
    ASSERT_EQ(g.source, modelPreset("gpt3-175b")->source);
    // Changing a preset's family moves the default along, unless the file says otherwise.
    ASSERT_TRUE(!modelConfigFromJson({{"preset", "llama2-7b"}, {"family", "gpt"}, {"max_positions", 4096}}, "")
                 .flashAttention);
    ASSERT_TRUE(modelConfigFromJson({{"preset", "llama2-7b"}, {"family", "gpt"}, {"max_positions", 4096},
                                 {"flash_attention", true}}, "")
                .flashAttention);
    ASSERT_TRUE(modelConfigFromJson({{"preset", "gpt3-175b"}, {"family", "llama"}}, "").flashAttention);
    // Wrong type: the path and the reason.
    try {
        modelConfigFromJson({{"preset", "llama2-7b"}, {"flash_attention", "yes"}}, "model");
        FAIL() << "no error";
    } catch (const JsonError &e) {
        ASSERT_EQ(e.path(), std::string("model.flash_attention"));
        ASSERT_TRUE(coretest::contains(e.reason(), "expected true or false")) << e.what();
    }
}

TEST(ModelBuilder, totalsAreSums)
{
    const ModelProfile p = buildProfile(*modelPreset("mixtral-8x7b"));
    double params = 0, active = 0, flops = 0;
    for (const auto &l : p.layers) {
        params += l.params;
        active += l.activeParams;
        flops += l.fwdFlops + l.bwdFlops;
        ASSERT_TRUE(l.tpParams <= l.params);
        ASSERT_TRUE(l.activeParams <= l.params);
    }
    ASSERT_QFUZZY_EQ(p.totalParams(), params);
    ASSERT_QFUZZY_EQ(p.activeParams(), active);
    ASSERT_QFUZZY_EQ(p.flopsPerToken(), flops / 4096);
    ASSERT_QFUZZY_EQ(p.weightBytes(), 2 * params);
}

TEST(ModelBuilder, configJsonRoundTrip)
{
    for (const auto &m : modelPresets()) {
        const Json j = modelConfigToJson(m);
        ASSERT_EQ(modelConfigFromJson(j, ""), m);
    }
    ModelConfig odd = toyGpt();
    odd.dropout = false;
    odd.flashAttention = true;
    odd.rmsNorm = true;
    odd.typeVocab = 3;
    ASSERT_EQ(modelConfigFromJson(modelConfigToJson(odd), ""), odd);
}

TEST(ModelBuilder, presetOverrides)
{
    // Llama 2 13B as overrides of the 7B preset (Touvron et al. 2023: 40 layers, hidden
    // 5120, 40 heads, ffn 13824). kv_heads follows heads because the preset is MHA.
    const Json j = {{"preset", "llama2-7b"}, {"name", "llama2-13b"}, {"layers", 40},
                    {"hidden", 5120}, {"heads", 40}, {"ffn_hidden", 13824}};
    const ModelConfig m = modelConfigFromJson(j, "");
    ASSERT_EQ(m.kvHeads, 40);
    ASSERT_EQ(m.family, std::string("llama"));
    ASSERT_EQ(m.seqLength, 4096);
    // By hand: blocks 40 x (4*5120^2 + 3*5120*13824 + 2*5120) = 12,688,179,200; embedding
    // and output 2*32000*5120 = 327,680,000; final norm 5120. 13,015,864,320 (HF: 13.0B).
    ASSERT_QFUZZY_EQ(buildProfile(m).totalParams(), 13015864320.0);

    // A GQA preset keeps its kv_heads when heads change and they still divide.
    const ModelConfig g = modelConfigFromJson({{"preset", "llama3-70b"}, {"heads", 32}}, "");
    ASSERT_EQ(g.kvHeads, 8);
    // GPT-3 at a longer sequence: the learned position table follows.
    const ModelConfig s = modelConfigFromJson({{"preset", "gpt3-175b"}, {"seq_length", 4096}}, "");
    ASSERT_EQ(s.maxPositions, 4096);
    ASSERT_EQ(s.ffnHidden, 4 * 12288);
}

TEST(ModelBuilder, fullHyperparametersDefaults)
{
    const Json j = {{"family", "gpt"}, {"layers", 12}, {"hidden", 768}, {"heads", 12},
                    {"vocab", 50257}, {"max_positions", 1024}};
    const ModelConfig m = modelConfigFromJson(j, "");
    ASSERT_EQ(m.ffnHidden, 3072);
    ASSERT_EQ(m.kvHeads, 12);
    ASSERT_EQ(m.seqLength, 1024);   // min(family default 2048, max_positions)
    ASSERT_TRUE(m.tiedEmbeddings);
    // GPT-2 small: 124,439,808 parameters (HF gpt2; 12 x (12h^2 + 13h) = 85,054,464,
    // embeddings (50257 + 1024) x 768 = 39,383,808, final LN 1536).
    ASSERT_QFUZZY_EQ(buildProfile(m).totalParams(), 124439808.0);
}

namespace {

struct ValidationRow {
    std::string name;
    std::string json;
    std::string path;
    std::string reason;
};

void PrintTo(const ValidationRow &row, std::ostream *os) { *os << row.name; }

const std::vector<ValidationRow> validationRows = {
    {"unknown preset", R"({"preset": "gpt5"})", "preset", "unknown model preset 'gpt5'"},
    {"heads do not divide hidden", R"({"preset": "gpt3-175b", "heads": 100})", "heads",
     "heads (100) must divide hidden (12288)"},
    {"kv heads do not divide heads", R"({"preset": "llama3-70b", "kv_heads": 7})", "kv_heads",
     "kv_heads (7) must divide heads (64)"},
    {"negative layers", R"({"preset": "llama2-7b", "layers": -2})", "layers", "must be between 1 and"},
    {"fractional hidden", R"({"preset": "llama2-7b", "hidden": 4096.5})", "hidden", "expected a whole number"},
    {"string vocab", R"({"preset": "llama2-7b", "vocab": "32000"})", "vocab", "expected a number"},
    {"top_k above experts", R"({"preset": "mixtral-8x7b", "top_k": 9})", "top_k",
     "top_k (9) must not exceed experts (8)"},
    {"sequence beyond positions", R"({"preset": "bert-large", "max_positions": 512, "seq_length": 1024})", "seq_length",
     "exceeds max_positions (512)"},
    {"unknown family", R"({"family": "t5", "layers": 1})", "family", "unknown family 't5'"},
    {"missing layers", R"({"family": "gpt", "hidden": 8, "heads": 2, "vocab": 10})", "layers",
     "required field is missing"},
    {"llama needs ffn", R"({"family": "llama", "layers": 1, "hidden": 8, "heads": 2, "vocab": 10})", "ffn_hidden",
     "required field is missing"},
    {"typo key", R"({"preset": "llama2-7b", "hiden": 10})", "hiden", "unknown key"},
    {"bad norm", R"({"preset": "llama2-7b", "norm": "batchnorm"})", "norm", "expected \"layernorm\" or \"rmsnorm\""},
    {"not an object", R"([1, 2])", "", "expected an object"},
};

class ModelBuilderValidation : public ::testing::TestWithParam<ValidationRow> {};

} // namespace

TEST_P(ModelBuilderValidation, validationErrors)
{
    const std::string &json = GetParam().json;
    const std::string &path = GetParam().path;
    const std::string &reason = GetParam().reason;
    const Json j = Json::parse(json);
    try {
        modelConfigFromJson(j, "");
        FAIL() << "no error";
    } catch (const JsonError &e) {
        ASSERT_EQ(e.path(), path);
        ASSERT_TRUE(coretest::contains(e.reason(), reason)) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Rows, ModelBuilderValidation, ::testing::ValuesIn(validationRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(ModelBuilder, nanFromCode)
{
    // JSON text cannot hold NaN, but JSON built in code (a workspace, the GUI) can.
    const Json j = {{"preset", "llama2-7b"}, {"hidden", std::nan("")}};
    try {
        modelConfigFromJson(j, "model");
        FAIL() << "no error";
    } catch (const JsonError &e) {
        ASSERT_EQ(e.path(), std::string("model.hidden"));
        ASSERT_EQ(e.reason(), std::string("must be a finite number"));
    }
    ModelConfig c = toyGpt();
    c.heads = 3;
    ASSERT_EQ(validate(c), std::string("heads (3) must divide hidden (8)"));
    ASSERT_TRUE(!buildValidatedProfile(c).ok());
    ASSERT_TRUE(buildValidatedProfile(toyGpt()).ok());
}

