// ModelBuilder on toy models small enough to count every field by hand (comments show the
// arithmetic), plus ModelConfig JSON parsing and validation.
#include "ModelBuilder.h"
#include "ModelConfig.h"

#include <QtTest>

#include <cmath>

using namespace nest;

namespace {

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

class TestModelBuilder : public QObject {
    Q_OBJECT

private slots:
    void toyLlamaByHand();
    void toyMoeByHand();
    void toyGptByHand();
    void flashAttentionGptBlock();
    void flashAttentionLongSequence();
    void flashAttentionFamilyDefaults();
    void flashAttentionJson();
    void totalsAreSums();
    void configJsonRoundTrip();
    void presetOverrides();
    void fullHyperparametersDefaults();
    void validationErrors_data();
    void validationErrors();
    void nanFromCode();
};

void TestModelBuilder::toyLlamaByHand()
{
    const ModelProfile p = buildProfile(toyLlama());
    QCOMPARE(p.layerCount(), 3);
    QCOMPARE(p.kvHeads, 2);

    const LayerProfile &e = p.layers[0];
    QCOMPARE(e.params, 80.0);            // 10 x 8, no positions (rotary)
    QCOMPARE(e.tpParams, 80.0);          // vocab-parallel
    QCOMPARE(e.fwdFlops, 0.0);
    QCOMPARE(e.outputBytes, 64.0);       // 2 bytes * 4 * 8
    QCOMPARE(e.stashSpBytes, 0.0);       // no dropout mask
    QCOMPARE(e.tpAllReduceBytes, 64.0);

    const LayerProfile &b = p.layers[1];
    QCOMPARE(b.kind, LayerKind::Transformer);
    // Q 8x8, K and V 8x4 each -> 128; O 8x8 = 64; MLP 3 x 8 x 12 = 288; two RMSNorms 16.
    QCOMPARE(b.params, 496.0);
    QCOMPARE(b.tpParams, 480.0);         // all but the norms
    QCOMPARE(b.activeParams, 496.0);
    QCOMPARE(b.expertParams, 0.0);
    // Projections 2*s*8*(8+8) + 2*s*8*8 = 1024 + 512; scores + values 2 * 2*s*s*h = 512;
    // MLP 2*s*8*12*3 = 2304. Sum 4352.
    QCOMPARE(b.fwdFlops, 4352.0);
    QCOMPARE(b.bwdFlops, 8704.0);
    // Replicated: norm inputs and norm outputs, 4 x 2*s*h = 256 (no dropout masks).
    QCOMPARE(b.stashSpBytes, 256.0);
    // Q, O input 2 x 2*s*8 = 128, K, V 2 x 2*s*4 = 64; flash attention: FP32 logsumexp
    // 4*a*s = 64 (no softmax); SwiGLU gate, up, product 3 x 2*s*12 = 288. Sum 544.
    QCOMPARE(b.stashTpBytes, 544.0);
    QCOMPARE(b.recomputeStashBytes, 64.0);
    QCOMPARE(b.outputBytes, 64.0);
    // 2 x max(gate+up 2*4*24 = 192, QKV 2*4*16 = 128) = 384 (flash: no scores term).
    QCOMPARE(b.workingBytes, 384.0);
    QCOMPARE(b.tpAllReduceBytes, 128.0); // 2 x 2*s*h
    QCOMPARE(b.cpExchangeBytes, 64.0);   // K and V: 2 x 2*s*4
    QCOMPARE(b.epAllToAllBytes, 0.0);

    const LayerProfile &h = p.layers[2];
    QCOMPARE(h.params, 88.0);            // final norm 8 + untied output 80
    QCOMPARE(h.tpParams, 80.0);
    QCOMPARE(h.tiedParams, 0.0);
    QCOMPARE(h.fwdFlops, 640.0);         // 2 * 4 * 8 * 10
    QCOMPARE(h.stashSpBytes, 128.0);     // norm input + projection input
    QCOMPARE(h.stashTpBytes, 160.0);     // FP32 logits 4 * 4 * 10
    QCOMPARE(h.recomputeStashBytes, 64.0);
    QCOMPARE(h.workingBytes, 80.0);      // BF16 logits 80 (the FP32 gradient reuses the stash)
    QCOMPARE(h.outputBytes, 0.0);

    QCOMPARE(p.totalParams(), 664.0);    // 80 + 496 + 88
    // (0 + 3*4352 + 3*640) / 4 tokens = 3744
    QCOMPARE(p.flopsPerToken(), 3744.0);
}

void TestModelBuilder::toyMoeByHand()
{
    ModelConfig c = toyLlama();
    c.family = "mixtral";
    c.experts = 4;
    c.topK = 2;
    const ModelProfile p = buildProfile(c);
    const LayerProfile &b = p.layers[1];
    QCOMPARE(b.kind, LayerKind::Moe);
    // Attention 128 + 64, 4 experts x 288, router 8 x 4 = 32, norms 16 -> 1392.
    QCOMPARE(b.params, 1392.0);
    QCOMPARE(b.expertParams, 1152.0);
    QCOMPARE(b.activeParams, 816.0);     // 1392 - 2 idle experts x 288
    QCOMPARE(b.tpParams, 1344.0);        // attention 192 + experts 1152
    // Attention 1536 + 512; 2 active experts x 2304; router 2*s*8*4 = 256. Sum 6912.
    QCOMPARE(b.fwdFlops, 6912.0);
    // Attention part 192 + logsumexp 64 as above (mixtral: flash by default), expert
    // activations per routed copy 2 x 288 = 576. Sum 832.
    QCOMPARE(b.stashTpBytes, 832.0);
    // 256 as above + FP32 router logits 4*s*4 = 64 + dispatched inputs and expert outputs
    // 2 x 2 copies x 2*s*h = 256.
    QCOMPARE(b.stashSpBytes, 576.0);
    // Dispatch + combine of top_k copies of the s*h BF16 tokens: 2 * 2 * 4 * 8 * 2 = 256.
    QCOMPARE(b.epAllToAllBytes, 256.0);
    QCOMPARE(p.numExperts, 4);
    QCOMPARE(p.topK, 2);
    QCOMPARE(p.activeParams(), 80.0 + 816.0 + 88.0);
}

void TestModelBuilder::toyGptByHand()
{
    const ModelProfile p = buildProfile(toyGpt());
    const LayerProfile &e = p.layers[0];
    QCOMPARE(e.params, 112.0);           // word 80 + positions 4 x 8
    QCOMPARE(e.tpParams, 80.0);          // positions replicated
    QCOMPARE(e.stashSpBytes, 32.0);      // 1-byte dropout mask s*h

    const LayerProfile &b = p.layers[1];
    // 12h^2 + 13h = 768 + 104.
    QCOMPARE(b.params, 872.0);
    // Replicated: LN weights/biases 32, out bias 8, MLP down bias 8 -> 872 - 48.
    QCOMPARE(b.tpParams, 824.0);
    // Korthikanti: 10sh = 320 replicated, 24sh + 5as^2 = 768 + 160 divided by TP.
    QCOMPARE(b.stashSpBytes, 320.0);
    QCOMPARE(b.stashTpBytes, 928.0);
    // 24*s*h^2 + 4*s^2*h = 6144 + 512.
    QCOMPARE(b.fwdFlops, 6656.0);

    const LayerProfile &h = p.layers[2];
    QCOMPARE(h.params, 16.0);            // final LayerNorm only
    QCOMPARE(h.tiedParams, 80.0);        // shares the word embedding
    QCOMPARE(h.tpParams, 0.0);
    QCOMPARE(h.fwdFlops, 640.0);         // the tied projection still costs its FLOPs
    QCOMPARE(p.totalParams(), 112.0 + 872.0 + 16.0);
}

void TestModelBuilder::flashAttentionGptBlock()
{
    // The GPT toy with flash attention: Korthikanti's s*h*(34 + 5as/h) without the 5as^2
    // score / softmax / dropout bytes, plus the FP32 logsumexp 4*a*s (Dao 2023).
    ModelConfig c = toyGpt();
    QVERIFY(!c.flashAttention);           // gpt family default
    c.flashAttention = true;
    const LayerProfile b = buildProfile(c).layers[1];
    const LayerProfile korthikanti = buildProfile(toyGpt()).layers[1];
    // s*h = 32: replicated 10sh = 320 unchanged; TP part 24sh + 4as = 768 + 4*2*4 = 800.
    QCOMPARE(b.stashSpBytes, 320.0);
    QCOMPARE(b.stashTpBytes, 800.0);
    // Total 34sh + 4as = 1088 + 32 = 1120 (Korthikanti: 1088 + 5as^2 = 1088 + 160 = 1248).
    QCOMPARE(b.stashSpBytes + b.stashTpBytes, 1120.0);
    QCOMPARE(korthikanti.stashSpBytes + korthikanti.stashTpBytes, 1248.0);
    // Model FLOPs unchanged (24*s*h^2 + 4*s^2*h = 6656), as are the recompute stash,
    // parameters and communication.
    QCOMPARE(b.fwdFlops, 6656.0);
    QCOMPARE(b.bwdFlops, korthikanti.bwdFlops);
    QCOMPARE(b.params, korthikanti.params);
    QCOMPARE(b.recomputeStashBytes, korthikanti.recomputeStashBytes);
    QCOMPARE(b.tpAllReduceBytes, korthikanti.tpAllReduceBytes);
    QCOMPARE(b.cpExchangeBytes, korthikanti.cpExchangeBytes);
    // Working set: scores 2*a*s^2 = 64, GeLU input 2*s*32 = 256, QKV 2*s*24 = 192: the MLP
    // dominates either way, 2 x 256 = 512.
    QCOMPARE(b.workingBytes, 512.0);
    QCOMPARE(korthikanti.workingBytes, 512.0);
}

void TestModelBuilder::flashAttentionLongSequence()
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
    QVERIFY(c.flashAttention);
    const LayerProfile flash = buildProfile(c).layers[1];
    c.flashAttention = false;
    const LayerProfile plain = buildProfile(c).layers[1];
    QCOMPARE(flash.stashTpBytes, 8704.0);
    QCOMPARE(plain.stashTpBytes, 40448.0);
    QCOMPARE(flash.stashSpBytes, 4 * 2 * 64 * 8.0);   // norm inputs and outputs, unchanged
    QCOMPARE(plain.stashSpBytes, flash.stashSpBytes);
    QCOMPARE(flash.workingBytes, 6144.0);
    QCOMPARE(plain.workingBytes, 65536.0);
    QCOMPARE(flash.fwdFlops, plain.fwdFlops);
    QCOMPARE(flash.bwdFlops, plain.bwdFlops);
    // With dropout the materialised path adds the mask a*s^2 and the dropped probabilities
    // 2*a*s^2 (Korthikanti); flash attention regenerates the mask: no change.
    c.dropout = true;
    QCOMPARE(buildProfile(c).layers[1].stashTpBytes, 40448.0 + 3 * 4 * 4096.0);
    c.flashAttention = true;
    QCOMPARE(buildProfile(c).layers[1].stashTpBytes, 8704.0);
}

void TestModelBuilder::flashAttentionFamilyDefaults()
{
    QVERIFY(familyDefaults("llama").flashAttention);
    QVERIFY(familyDefaults("mixtral").flashAttention);
    QVERIFY(!familyDefaults("gpt").flashAttention);
    QVERIFY(!familyDefaults("bert").flashAttention);
    QVERIFY(!ModelConfig().flashAttention);            // the struct's family is "gpt"
    for (const auto &m : modelPresets())
        QCOMPARE(m.flashAttention, familyDefaults(m.family).flashAttention);
}

void TestModelBuilder::flashAttentionJson()
{
    // Absent key: the family default.
    const Json full = {{"family", "llama"}, {"layers", 1}, {"hidden", 8}, {"heads", 4},
                       {"ffn_hidden", 12}, {"vocab", 10}};
    QVERIFY(modelConfigFromJson(full, "").flashAttention);
    Json off = full;
    off["flash_attention"] = false;
    QVERIFY(!modelConfigFromJson(off, "").flashAttention);
    QCOMPARE(modelConfigToJson(modelConfigFromJson(off, "")).at("flash_attention"), Json(false));
    // A preset keeps its citation when only the attention kernel changes.
    const ModelConfig g = modelConfigFromJson({{"preset", "gpt3-175b"}, {"flash_attention", true}}, "");
    QVERIFY(g.flashAttention);
    QCOMPARE(g.source, modelPreset("gpt3-175b")->source);
    // Changing a preset's family moves the default along, unless the file says otherwise.
    QVERIFY(!modelConfigFromJson({{"preset", "llama2-7b"}, {"family", "gpt"}, {"max_positions", 4096}}, "")
                 .flashAttention);
    QVERIFY(modelConfigFromJson({{"preset", "llama2-7b"}, {"family", "gpt"}, {"max_positions", 4096},
                                 {"flash_attention", true}}, "")
                .flashAttention);
    QVERIFY(modelConfigFromJson({{"preset", "gpt3-175b"}, {"family", "llama"}}, "").flashAttention);
    // Wrong type: the path and the reason.
    try {
        modelConfigFromJson({{"preset", "llama2-7b"}, {"flash_attention", "yes"}}, "model");
        QFAIL("no error");
    } catch (const JsonError &e) {
        QCOMPARE(QString::fromStdString(e.path()), QString("model.flash_attention"));
        QVERIFY2(QString::fromStdString(e.reason()).contains("expected true or false"), e.what());
    }
}

void TestModelBuilder::totalsAreSums()
{
    const ModelProfile p = buildProfile(*modelPreset("mixtral-8x7b"));
    double params = 0, active = 0, flops = 0;
    for (const auto &l : p.layers) {
        params += l.params;
        active += l.activeParams;
        flops += l.fwdFlops + l.bwdFlops;
        QVERIFY(l.tpParams <= l.params);
        QVERIFY(l.activeParams <= l.params);
    }
    QCOMPARE(p.totalParams(), params);
    QCOMPARE(p.activeParams(), active);
    QCOMPARE(p.flopsPerToken(), flops / 4096);
    QCOMPARE(p.weightBytes(), 2 * params);
}

void TestModelBuilder::configJsonRoundTrip()
{
    for (const auto &m : modelPresets()) {
        const Json j = modelConfigToJson(m);
        QCOMPARE(modelConfigFromJson(j, ""), m);
    }
    ModelConfig odd = toyGpt();
    odd.dropout = false;
    odd.flashAttention = true;
    odd.rmsNorm = true;
    odd.typeVocab = 3;
    QCOMPARE(modelConfigFromJson(modelConfigToJson(odd), ""), odd);
}

void TestModelBuilder::presetOverrides()
{
    // Llama 2 13B as overrides of the 7B preset (Touvron et al. 2023: 40 layers, hidden
    // 5120, 40 heads, ffn 13824). kv_heads follows heads because the preset is MHA.
    const Json j = {{"preset", "llama2-7b"}, {"name", "llama2-13b"}, {"layers", 40},
                    {"hidden", 5120}, {"heads", 40}, {"ffn_hidden", 13824}};
    const ModelConfig m = modelConfigFromJson(j, "");
    QCOMPARE(m.kvHeads, 40);
    QCOMPARE(m.family, std::string("llama"));
    QCOMPARE(m.seqLength, 4096);
    // By hand: blocks 40 x (4*5120^2 + 3*5120*13824 + 2*5120) = 12,688,179,200; embedding
    // and output 2*32000*5120 = 327,680,000; final norm 5120. 13,015,864,320 (HF: 13.0B).
    QCOMPARE(buildProfile(m).totalParams(), 13015864320.0);

    // A GQA preset keeps its kv_heads when heads change and they still divide.
    const ModelConfig g = modelConfigFromJson({{"preset", "llama3-70b"}, {"heads", 32}}, "");
    QCOMPARE(g.kvHeads, 8);
    // GPT-3 at a longer sequence: the learned position table follows.
    const ModelConfig s = modelConfigFromJson({{"preset", "gpt3-175b"}, {"seq_length", 4096}}, "");
    QCOMPARE(s.maxPositions, 4096);
    QCOMPARE(s.ffnHidden, 4 * 12288);
}

void TestModelBuilder::fullHyperparametersDefaults()
{
    const Json j = {{"family", "gpt"}, {"layers", 12}, {"hidden", 768}, {"heads", 12},
                    {"vocab", 50257}, {"max_positions", 1024}};
    const ModelConfig m = modelConfigFromJson(j, "");
    QCOMPARE(m.ffnHidden, 3072);
    QCOMPARE(m.kvHeads, 12);
    QCOMPARE(m.seqLength, 1024);   // min(family default 2048, max_positions)
    QVERIFY(m.tiedEmbeddings);
    // GPT-2 small: 124,439,808 parameters (HF gpt2; 12 x (12h^2 + 13h) = 85,054,464,
    // embeddings (50257 + 1024) x 768 = 39,383,808, final LN 1536).
    QCOMPARE(buildProfile(m).totalParams(), 124439808.0);
}

void TestModelBuilder::validationErrors_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("reason");
    QTest::newRow("unknown preset") << QByteArray(R"({"preset": "gpt5"})") << "preset"
                                    << "unknown model preset 'gpt5'";
    QTest::newRow("heads do not divide hidden")
        << QByteArray(R"({"preset": "gpt3-175b", "heads": 100})") << "heads"
        << "heads (100) must divide hidden (12288)";
    QTest::newRow("kv heads do not divide heads")
        << QByteArray(R"({"preset": "llama3-70b", "kv_heads": 7})") << "kv_heads"
        << "kv_heads (7) must divide heads (64)";
    QTest::newRow("negative layers") << QByteArray(R"({"preset": "llama2-7b", "layers": -2})")
                                     << "layers" << "must be between 1 and";
    QTest::newRow("fractional hidden") << QByteArray(R"({"preset": "llama2-7b", "hidden": 4096.5})")
                                       << "hidden" << "expected a whole number";
    QTest::newRow("string vocab") << QByteArray(R"({"preset": "llama2-7b", "vocab": "32000"})")
                                  << "vocab" << "expected a number";
    QTest::newRow("top_k above experts")
        << QByteArray(R"({"preset": "mixtral-8x7b", "top_k": 9})") << "top_k"
        << "top_k (9) must not exceed experts (8)";
    QTest::newRow("sequence beyond positions")
        << QByteArray(R"({"preset": "bert-large", "max_positions": 512, "seq_length": 1024})")
        << "seq_length" << "exceeds max_positions (512)";
    QTest::newRow("unknown family") << QByteArray(R"({"family": "t5", "layers": 1})") << "family"
                                    << "unknown family 't5'";
    QTest::newRow("missing layers")
        << QByteArray(R"({"family": "gpt", "hidden": 8, "heads": 2, "vocab": 10})") << "layers"
        << "required field is missing";
    QTest::newRow("llama needs ffn")
        << QByteArray(R"({"family": "llama", "layers": 1, "hidden": 8, "heads": 2, "vocab": 10})")
        << "ffn_hidden" << "required field is missing";
    QTest::newRow("typo key") << QByteArray(R"({"preset": "llama2-7b", "hiden": 10})") << "hiden"
                              << "unknown key";
    QTest::newRow("bad norm") << QByteArray(R"({"preset": "llama2-7b", "norm": "batchnorm"})")
                              << "norm" << "expected \"layernorm\" or \"rmsnorm\"";
    QTest::newRow("not an object") << QByteArray(R"([1, 2])") << "" << "expected an object";
}

void TestModelBuilder::validationErrors()
{
    QFETCH(QByteArray, json);
    QFETCH(QString, path);
    QFETCH(QString, reason);
    const Json j = Json::parse(json.toStdString());
    try {
        modelConfigFromJson(j, "");
        QFAIL("no error");
    } catch (const JsonError &e) {
        QCOMPARE(QString::fromStdString(e.path()), path);
        QVERIFY2(QString::fromStdString(e.reason()).contains(reason), e.what());
    }
}

void TestModelBuilder::nanFromCode()
{
    // JSON text cannot hold NaN, but JSON built in code (a workspace, the GUI) can.
    const Json j = {{"preset", "llama2-7b"}, {"hidden", std::nan("")}};
    try {
        modelConfigFromJson(j, "model");
        QFAIL("no error");
    } catch (const JsonError &e) {
        QCOMPARE(QString::fromStdString(e.path()), QString("model.hidden"));
        QCOMPARE(QString::fromStdString(e.reason()), QString("must be a finite number"));
    }
    ModelConfig c = toyGpt();
    c.heads = 3;
    QCOMPARE(QString::fromStdString(validate(c)), QString("heads (3) must divide hidden (8)"));
    QVERIFY(!buildValidatedProfile(c).ok());
    QVERIFY(buildValidatedProfile(toyGpt()).ok());
}

QTEST_APPLESS_MAIN(TestModelBuilder)
#include "test_model_builder.moc"
