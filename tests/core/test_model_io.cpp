// Loading models from files: Hugging Face config.json import, our model files, measured
// nest-profiles, the NEST artifact's solver input, presets by name, and every error path
// (the message names the file, the JSON path and the reason).
#include "SourceDir.h"
#include "HfConfigImport.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "ProfileIO.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>
#include <unistd.h>

using namespace nest;

namespace {

using coretest::rowName;

const std::string SRC = NEST_SOURCE_DIR;

std::string sample(const std::string &rel)
{
    return SRC + "/sample_configs/" + rel;
}

ModelProfile presetProfile(const std::string &name)
{
    return buildProfile(*modelPreset(name));
}

bool sameLayers(const ModelProfile &a, const ModelProfile &b)
{
    return a.layers == b.layers && a.seqLength == b.seqLength && a.hidden == b.hidden &&
           a.heads == b.heads && a.kvHeads == b.kvHeads && a.numExperts == b.numExperts &&
           a.topK == b.topK && a.vocab == b.vocab;
}

void writeText(const std::string &file, const std::string &text)
{
    std::ofstream out(file, std::ios::binary);
    out << text;
}

bool near(double a, double b, double rel = 1e-12)
{
    return std::abs(a - b) <= rel * std::abs(b);
}

} // namespace

namespace {

struct PresetFileRow {
    std::string name;
    std::string file;
    std::string preset;
};

void PrintTo(const PresetFileRow &row, std::ostream *os) { *os << row.name; }

const std::vector<PresetFileRow> presetFileRows = {
    {"llama2-7b", "llama2-7b.json", "llama2-7b"},
    {"mixtral-8x7b", "mixtral-8x7b.json", "mixtral-8x7b"},
    {"bert-large-uncased", "bert-large-uncased.json", "bert-large"},
};

class ModelIoHfPresets : public ::testing::TestWithParam<PresetFileRow> {};

} // namespace

TEST_P(ModelIoHfPresets, hfImportMatchesPresets)
{
    const std::string &file = GetParam().file;
    const std::string &preset = GetParam().preset;
    const auto loaded = loadModelFile(sample("models/hf/" + file));
    ASSERT_TRUE(loaded.ok()) << loaded.error().c_str();
    const ModelProfile expected = presetProfile(preset);
    ASSERT_QFUZZY_EQ(loaded->totalParams(), expected.totalParams());
    ASSERT_QFUZZY_EQ(loaded->activeParams(), expected.activeParams());
    // Not only the count: every layer field, at the same default sequence length.
    ASSERT_TRUE(sameLayers(*loaded, expected));
}

INSTANTIATE_TEST_SUITE_P(Rows, ModelIoHfPresets, ::testing::ValuesIn(presetFileRows),
                         [](const auto &p) { return rowName(p.param.name); });

namespace {

struct PublishedCountRow {
    std::string name;
    std::string file;
    double expected;
    int seq;
};

void PrintTo(const PublishedCountRow &row, std::ostream *os) { *os << row.name; }

const std::vector<PublishedCountRow> publishedCountRows = {
    // HF gpt2 (GPT2LMHeadModel, tied): 124,439,808 parameters; n_positions 1024.
    {"gpt2", "gpt2.json", 124439808.0, 1024},
    // Mistral 7B v0.1 (Jiang et al. 2023; HF 7.24B). By hand: 32 x (2*4096^2 +
    // 2*4096*1024 + 3*4096*14336 + 2*4096) = 6,979,584,000 + 2*32000*4096 + 4096 =
    // 7,241,732,096. Sequence min(32768, 4096).
    {"mistral-7b", "mistral-7b.json", 7241732096.0, 4096},
};

class ModelIoHfCounts : public ::testing::TestWithParam<PublishedCountRow> {};

} // namespace

TEST_P(ModelIoHfCounts, hfImportPublishedCounts)
{
    const std::string &file = GetParam().file;
    const double expected = GetParam().expected;
    const int seq = GetParam().seq;
    const auto loaded = loadModelFile(sample("models/hf/" + file));
    ASSERT_TRUE(loaded.ok()) << loaded.error().c_str();
    ASSERT_QFUZZY_EQ(loaded->totalParams(), expected);
    ASSERT_EQ(loaded->seqLength, seq);
    ASSERT_EQ(loaded->globalBatch, 4096);
}

INSTANTIATE_TEST_SUITE_P(Rows, ModelIoHfCounts, ::testing::ValuesIn(publishedCountRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(ModelIo, sampleModelFilesEqualPresets)
{
    for (const auto &m : modelPresets()) {
        const std::string file = sample("models/" + m.name + ".json");
        const auto config = loadModelConfig(file);
        ASSERT_TRUE(config.ok()) << config.error().c_str();
        ASSERT_TRUE(*config == m) << file.c_str();
    }
}

TEST(ModelIo, overrideSampleFile)
{
    const auto p = loadModelFile(sample("models/llama2-13b.json"));
    ASSERT_TRUE(p.ok()) << p.error().c_str();
    // Llama 2 13B, HF 13.0B; by hand 13,015,864,320 (see test_model_builder).
    ASSERT_QFUZZY_EQ(p->totalParams(), 13015864320.0);
    ASSERT_EQ(p->name, std::string("llama2-13b"));
}

TEST(ModelIo, optionsOverrideSequenceAndBatch)
{
    ModelOptions o;
    o.seqLength = 2048;
    o.globalBatch = 512;
    const auto p = resolveModel("llama2-7b", o);
    ASSERT_TRUE(p.ok()) << p.error().c_str();
    ASSERT_EQ(p->seqLength, 2048);
    ASSERT_EQ(p->globalBatch, 512);
    // Attention FLOPs shrink with s: per token 12*L*h*s drops by 12*32*4096*2048.
    const auto base = resolveModel("llama2-7b");
    ASSERT_QFUZZY_EQ(base->flopsPerToken() - p->flopsPerToken(), 12.0 * 32 * 4096 * 2048);
    // A learned position table grows with the sequence.
    ModelOptions longer;
    longer.seqLength = 1024;
    const auto bert = resolveModel("bert-large", longer);
    ASSERT_TRUE(bert.ok()) << bert.error().c_str();
    ASSERT_QFUZZY_EQ(bert->layers[0].params - presetProfile("bert-large").layers[0].params, 512.0 * 1024);
    // A measured profile cannot change its sequence length.
    ModelOptions other;
    other.seqLength = 1024;
    const auto prof = loadModelFile(sample("profiles/llama2-7b-example.json"), other);
    ASSERT_TRUE(!prof.ok());
    ASSERT_TRUE(coretest::contains(prof.error(), "measured at 4096")) << prof.error().c_str();
}

TEST(ModelIo, resolveByNameOrFile)
{
    const auto byName = resolveModel("mixtral-8x7b");
    ASSERT_TRUE(byName.ok());
    ASSERT_EQ(byName->family, std::string("mixtral"));
    const auto byFile = resolveModel(sample("models/mixtral-8x7b.json"));
    ASSERT_TRUE(byFile.ok());
    ASSERT_TRUE(sameLayers(*byName, *byFile));
    const auto missing = resolveModel("no-such-model");
    ASSERT_TRUE(!missing.ok());
    ASSERT_TRUE(coretest::contains(missing.error(), "gpt3-175b, gpt3-35b, llama2-7b")) << missing.error().c_str();
}

TEST(ModelIo, profileRoundTrip)
{
    ModelProfile p = presetProfile("mixtral-8x7b");
    auto back = profileFromJson(profileToJson(p), "mem");
    ASSERT_TRUE(back.ok()) << back.error().c_str();
    back->source = p.source;  // profileToJson keeps it; profileFromJson too, when given
    ASSERT_EQ(*back, p);

    // With measured times the seconds <-> milliseconds trip may round the last bit.
    p.layers[3].measuredFwdTime = 0.0123456789;
    p.layers[3].measuredBwdTime = 0.0246913578;
    p.notes = {"a note"};
    back = profileFromJson(profileToJson(p), "mem");
    ASSERT_TRUE(back.ok()) << back.error().c_str();
    ASSERT_TRUE(near(back->layers[3].measuredFwdTime, 0.0123456789));
    ASSERT_TRUE(near(back->layers[3].measuredBwdTime, 0.0246913578));
    ASSERT_QFUZZY_EQ(back->layers[2].measuredFwdTime, -1.0);
    ASSERT_EQ(back->notes, p.notes);
    ASSERT_EQ(back->layerCount(), p.layerCount());
}

TEST(ModelIo, profileSampleFile)
{
    const auto p = loadModelFile(sample("profiles/llama2-7b-example.json"));
    ASSERT_TRUE(p.ok()) << p.error().c_str();
    ASSERT_EQ(p->layerCount(), 34);
    ASSERT_EQ(p->layers[1].name, std::string("block0"));
    ASSERT_EQ(p->layers[32].name, std::string("block31"));
    ASSERT_EQ(p->layers[33].kind, LayerKind::Head);
    ASSERT_TRUE(near(p->layers[5].measuredFwdTime, 12.389e-3));
    // The example's analytic FLOPs equal the builder's for llama2-7b blocks and head.
    const ModelProfile built = presetProfile("llama2-7b");
    ASSERT_QFUZZY_EQ(p->layers[5].fwdFlops, built.layers[5].fwdFlops);
    ASSERT_QFUZZY_EQ(p->layers[33].fwdFlops, built.layers[33].fwdFlops);
    ASSERT_QFUZZY_EQ(p->totalParams(), built.totalParams());
}

TEST(ModelIo, profileMicroBatchAndRepeat)
{
    // Times and byte counts in the file are per micro-batch of 4: the profile holds 1/4.
    const Json j = Json::parse(R"({"format": "nest-profile", "seq_length": 8, "micro_batch": 4,
        "hidden": 2, "layers": [
          {"kind": "embedding", "fwd_ms": 4, "bwd_ms": 8, "params": 20},
          {"name": "layer", "repeat": 3, "fwd_ms": 40, "bwd_ms": 80, "fwd_flops": 400,
           "params": 10, "tp_params": 8, "stash_tp_bytes": 1000, "tp_allreduce_bytes": 64}]})");
    const auto p = profileFromJson(j, "inline");
    ASSERT_TRUE(p.ok()) << p.error().c_str();
    ASSERT_EQ(p->layerCount(), 4);
    ASSERT_EQ(p->layers[2].name, std::string("layer1"));
    ASSERT_TRUE(near(p->layers[0].measuredFwdTime, 1e-3));
    ASSERT_TRUE(near(p->layers[3].measuredBwdTime, 20e-3));
    ASSERT_QFUZZY_EQ(p->layers[1].fwdFlops, 100.0);
    ASSERT_QFUZZY_EQ(p->layers[1].bwdFlops, 200.0);   // default 2 x forward
    ASSERT_QFUZZY_EQ(p->layers[1].stashTpBytes, 250.0);
    ASSERT_QFUZZY_EQ(p->layers[1].tpAllReduceBytes, 16.0);
    ASSERT_QFUZZY_EQ(p->layers[1].outputBytes, 32.0);  // default 2 bytes * s * h = 2 * 8 * 2
    ASSERT_QFUZZY_EQ(p->layers[1].params, 10.0);       // parameters are not per sample
    ASSERT_QFUZZY_EQ(p->layers[0].tpParams, 20.0);     // tp_params defaults to params
    ASSERT_QFUZZY_EQ(p->totalParams(), 50.0);
    ASSERT_EQ(p->name, std::string("inline"));
}

TEST(ModelIo, artifactSample)
{
    const std::string file = sample("profiles/ilp_llama2_llama2_mbs_1_sl_4096_dev64.json");
    const auto p = loadModelFile(file);
    ASSERT_TRUE(p.ok()) << p.error().c_str();
    ASSERT_EQ(p->layerCount(), 33);               // id -1 (embedding) and 0..31, no head
    ASSERT_EQ(p->layers[0].kind, LayerKind::Embedding);
    ASSERT_EQ(p->layers[1].kind, LayerKind::Transformer);
    ASSERT_EQ(p->seqLength, 4096);                // from "sl_4096"
    ASSERT_EQ(p->globalBatch, 4096);              // mbs 1 x mbsInBatch 4096
    ASSERT_EQ(p->hidden, 4096);                   // edge 33554432 B = 2 * 4096 * h
    // nodes["1"][id 0]: optimalLatencyFw 170.46776857142865 (ms), parameterSize 666918912 B.
    ASSERT_TRUE(near(p->layers[1].measuredFwdTime, 0.17046776857142865));
    ASSERT_TRUE(near(p->layers[1].measuredBwdTime, 0.15498490571721823));
    ASSERT_QFUZZY_EQ(p->layers[1].params, 666918912.0 / 2);
    ASSERT_QFUZZY_EQ(p->layers[1].stashTpBytes, 9074450476.0);
    ASSERT_QFUZZY_EQ(p->layers[0].params, 262144000.0 / 2);  // = 32000 x 4096, the embedding
    ASSERT_QFUZZY_EQ(p->layers[1].outputBytes, 33554432.0);
    ASSERT_TRUE(!p->notes.empty());
}

TEST(ModelIo, artifactScalesSmallestWidth)
{
    // Only width 2 and 4: the base fields (totals) come from width 2 scaled back to width 1
    // (each width's own numbers are in byWidth: tests/core/test_artifact_input.cpp). Micro-batch
    // 2 from the name, so per sample: latency 3 ms * 2 / 2 = 3 ms; params 100 B * 2 / 2 B = 100.
    const Json j = Json::parse(R"({"mbsInBatch": 8, "ep_degree": 1,
        "nodes": {"4": [{"id": 0, "parameterSize": 1, "activationSize": 1,
                        "optimalLatencyFw": 1, "optimalLatencyBw": 1},
                        {"id": 1, "parameterSize": 1, "activationSize": 1,
                        "optimalLatencyFw": 1, "optimalLatencyBw": 1}],
                  "2": [{"id": 0, "parameterSize": 100, "activationSize": 40,
                         "optimalLatencyFw": 3, "optimalLatencyBw": 5, "isTensorParallelized": true},
                        {"id": 1, "parameterSize": 100, "activationSize": 40,
                         "optimalLatencyFw": 3, "optimalLatencyBw": 5, "isTensorParallelized": true}]},
        "edges": {"2": [{"sourceId": 0, "destId": 1, "communicationCost": 64}]}})");
    const auto p = profileFromArtifactJson(j, "dir/toy_mbs_2_sl_16_dev8.json");
    ASSERT_TRUE(p.ok()) << p.error().c_str();
    ASSERT_EQ(p->layerCount(), 2);
    ASSERT_EQ(p->seqLength, 16);
    ASSERT_EQ(p->globalBatch, 16);
    ASSERT_TRUE(near(p->layers[0].measuredFwdTime, 3e-3));
    ASSERT_TRUE(near(p->layers[1].measuredBwdTime, 5e-3));
    ASSERT_QFUZZY_EQ(p->layers[0].params, 100.0);
    ASSERT_QFUZZY_EQ(p->layers[0].stashTpBytes, 40.0);
    ASSERT_QFUZZY_EQ(p->layers[0].outputBytes, 32.0);
    ASSERT_QFUZZY_EQ(p->layers[1].outputBytes, 32.0);    // last layer: same as its input
    // 32 B / (2 * 16) = 1: not a plausible hidden size, left unknown with a note.
    ASSERT_EQ(p->hidden, 0);
    ASSERT_TRUE(std::any_of(p->notes.begin(), p->notes.end(),
                        [](const std::string &n) { return n.find("hidden size unknown") != std::string::npos; }));
    // Without "sl_" in the name the caller must say the sequence length.
    ASSERT_TRUE(!profileFromArtifactJson(j, "toy.json").ok());
    ASSERT_TRUE(profileFromArtifactJson(j, "toy.json", 16).ok());
}

TEST(ModelIo, loadConfigRejectsProfiles)
{
    const auto c = loadModelConfig(sample("profiles/llama2-7b-example.json"));
    ASSERT_TRUE(!c.ok());
    ASSERT_TRUE(coretest::contains(c.error(), "not model hyperparameters")) << c.error().c_str();
    const auto hf = loadModelConfig(sample("models/hf/mixtral-8x7b.json"));
    ASSERT_TRUE(hf.ok()) << hf.error().c_str();
    ASSERT_EQ(hf->experts, 8);
    ASSERT_EQ(hf->topK, 2);
    ASSERT_EQ(hf->kvHeads, 8);
}

TEST(ModelIo, hfImportFlashAttentionDefault)
{
    // config.json says nothing about the attention kernel: the family default (flash for
    // llama / mistral / mixtral, materialised for gpt2 and bert).
    const std::pair<const char *, bool> cases[] = {{"llama2-7b.json", true}, {"mistral-7b.json", true},
                                                   {"mixtral-8x7b.json", true}, {"gpt2.json", false},
                                                   {"bert-large-uncased.json", false}};
    for (const auto &[file, flash] : cases) {
        const auto c = loadModelConfig(sample(std::string("models/hf/") + file));
        ASSERT_TRUE(c.ok()) << c.error().c_str();
        ASSERT_TRUE(c->flashAttention == flash) << file;
    }
    // The sample model files carry no flash_attention key and still equal the presets
    // (sampleModelFilesEqualPresets); a file may set it explicitly.
    const coretest::TempDir dir;
    const std::string file = dir.path() + "/m.json";
    writeText(file, R"({"preset": "llama3-70b", "flash_attention": false})");
    const auto off = loadModelFile(file);
    ASSERT_TRUE(off.ok()) << off.error().c_str();
    // Llama 3 70B block at s = 4096: the materialised softmax 2as^2 = 2,147,483,648 B
    // replaces the logsumexp 4as = 1,048,576 B (test_model_presets has the whole sum).
    ASSERT_QFUZZY_EQ(off->layers[1].stashTpBytes - presetProfile("llama3-70b").layers[1].stashTpBytes,
                     2147483648.0 - 1048576.0);
}

namespace {

struct ErrorRow {
    std::string name;
    std::string text;    // file content; "<dir>" / "<missing>" / "<unreadable>"
    std::string path;    // expected "at PATH" in the message ("" = none)
    std::string reason;
};

void PrintTo(const ErrorRow &row, std::ostream *os) { *os << row.name; }

const std::vector<ErrorRow> errorRows = {
    {"unknown preset", R"({"preset": "gpt5"})", "preset", "unknown model preset 'gpt5' (known: gpt3-175b"},
    {"heads do not divide hidden", R"({"family": "gpt", "layers": 2, "hidden": 1000, "heads": 7, "vocab": 10})",
     "heads", "heads (7) must divide hidden (1000)"},
    {"negative layers", R"({"preset": "gpt3-175b", "layers": -1})", "layers",
     "must be between 1 and 100000000, found -1"},
    {"flash_attention not a bool", R"({"preset": "llama3-70b", "flash_attention": 1})", "flash_attention",
     "expected true or false, found number"},
    {"infinite hidden", R"({"preset": "gpt3-175b", "hidden": 1e400})", "", "number overflow parsing '1e400'"},
    {"NaN literal", R"({"preset": "gpt3-175b", "hidden": NaN})", "", "malformed JSON near line 1"},
    {"missing model_type", R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096})", "model_type",
     "required field is missing"},
    {"unknown model_type", R"({"model_type": "t5", "d_model": 512})", "model_type",
     "unsupported model_type 't5' (supported: gpt2, bert, llama, mistral, mixtral, minicpm, phi3, qwen2, qwen2_moe, "
     "qwen3, qwen3_moe, deepseek, deepseek_v2, deepseek_v3, gemma, gemma2, gemma3, gemma3_text, phi, gpt_neox, gptj, "
     "falcon, starcoder2, gpt_oss, nemotron_h, llama4, llama4_text)"},
    {"hf heads do not divide", R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 100,
                          "num_attention_heads": 3, "intermediate_size": 10, "vocab_size": 5})",
     "num_attention_heads", "heads (3) must divide hidden (100)"},
    {"hf missing size", R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "vocab_size": 5})", "n_embd",
     "required field is missing"},
    {"profile negative time", R"({"format": "nest-profile", "seq_length": 8, "hidden": 2,
                          "layers": [{"fwd_ms": 1, "bwd_ms": 2}, {"fwd_ms": -1, "bwd_ms": 2}]})",
     "layers[1].fwd_ms", "must not be negative"},
    {"profile empty layers", R"({"format": "nest-profile", "seq_length": 8, "layers": []})", "layers",
     "must list at least one layer"},
    {"profile fwd without bwd", R"({"format": "nest-profile", "seq_length": 8, "hidden": 2,
                          "layers": [{"fwd_ms": 1}]})", "layers[0].bwd_ms", "must be given together"},
    {"profile unknown kind", R"({"format": "nest-profile", "seq_length": 8, "hidden": 2,
                          "layers": [{"kind": "conv"}]})", "layers[0].kind", "unknown layer kind 'conv'"},
    {"profile head not last", R"({"format": "nest-profile", "seq_length": 8, "hidden": 2,
                          "layers": [{"kind": "head"}, {"kind": "transformer"}]})",
     "layers[0]", "a head layer must come last"},
    {"profile tp_params above params", R"({"format": "nest-profile", "seq_length": 8, "hidden": 2,
                          "layers": [{"params": 5, "tp_params": 6}]})", "layers[0].tp_params", "exceeds params"},
    {"profile RMSNorm bytes above the element-wise bytes", R"({"format": "nest-profile", "seq_length": 8, "hidden": 2,
                          "layers": [{"elementwise_sp_bytes": 4, "rms_norm_sp_bytes": 5}]})",
     "layers[0].rms_norm_sp_bytes", "exceeds elementwise_sp_bytes"},
    {"artifact negative latency", R"({"nodes": {"1": [{"id": 0, "parameterSize": 1, "activationSize": 1,
                          "optimalLatencyFw": -3, "optimalLatencyBw": 1}]}})",
     "nodes.1[0].optimalLatencyFw", "must not be negative"},
    {"artifact gap in ids", R"({"nodes": {"1": [
              {"id": 0, "parameterSize": 1, "activationSize": 1, "optimalLatencyFw": 1, "optimalLatencyBw": 1},
              {"id": 2, "parameterSize": 1, "activationSize": 1, "optimalLatencyFw": 1, "optimalLatencyBw": 1}]}})",
     "nodes.1", "without gaps"},
    {"empty file", "  \n", "", "the file is empty"},
    {"directory", "<dir>", "", "is a directory"},
    {"missing file", "<missing>", "", "no such file"},
    {"unreadable file", "<unreadable>", "", "cannot be opened for reading"},
};

class ModelIoErrors : public ::testing::TestWithParam<ErrorRow> {};

} // namespace

TEST_P(ModelIoErrors, errors)
{
    const std::string &text = GetParam().text;
    const std::string &path = GetParam().path;
    const std::string &reason = GetParam().reason;
    coretest::TempDir dir;
    ASSERT_TRUE(std::filesystem::is_directory(dir.path()));
    // The artifact rows need a sequence length in the name.
    std::string file = dir.path() + "/model_sl_8.json";
    if (text == "<dir>") {
        file = dir.path();
    } else if (text == "<missing>") {
        file += ".gone";
    } else if (text == "<unreadable>") {
        if (geteuid() == 0) {
            GTEST_SKIP() << "root reads files whatever their mode";
        }
        writeText(file, "{}");
        std::error_code ec;
        std::filesystem::permissions(file, std::filesystem::perms::none, ec);
        ASSERT_TRUE(!ec);
    } else {
        writeText(file, text);
    }
    const auto result = loadModelFile(file);
    ASSERT_TRUE(!result.ok());
    const std::string &msg = result.error();
    ASSERT_TRUE(msg.starts_with(file + ": ")) << msg;
    if (!path.empty()) {
        ASSERT_TRUE(coretest::contains(msg, "at " + path + ": ")) << msg;
    }
    ASSERT_TRUE(coretest::contains(msg, reason)) << msg;
}

INSTANTIATE_TEST_SUITE_P(Rows, ModelIoErrors, ::testing::ValuesIn(errorRows),
                         [](const auto &p) { return rowName(p.param.name); });

