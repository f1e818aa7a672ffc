#include "ModelConfig.h"

#include "Limits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <utility>

namespace nest {

namespace {

// Upper bound for every integer hyperparameter: keeps products like hidden * ffn far from
// overflow and catches unit mistakes (a hidden of 4e9 is a typo, not a model).
constexpr long long MAX_SIZE = 100'000'000;

std::string normalise(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
        return c == '_' || c == ' ' ? '-' : static_cast<char>(std::tolower(c));
    });
    return s;
}

ModelConfig gpt(std::string name, int layers, int hidden, int heads, int seq, std::string source)
{
    ModelConfig m = familyDefaults("gpt");
    m.name = std::move(name);
    m.layers = layers;
    m.hidden = hidden;
    m.heads = heads;
    m.kvHeads = heads;
    m.ffnHidden = 4 * hidden;
    m.vocab = 50257;          // GPT-2 byte-level BPE (Radford et al. 2019), reused by GPT-3
    m.maxPositions = seq;
    m.seqLength = seq;
    m.source = std::move(source);
    return m;
}

std::vector<ModelConfig> makePresets()
{
    std::vector<ModelConfig> out;
    // Brown et al., "Language Models are Few-Shot Learners" (NeurIPS 2020), Table 2.1:
    // GPT-3 175B: n_layers 96, d_model 12288, n_heads 96, d_head 128, n_ctx 2048; the
    // feed-forward layer is 4 * d_model; vocabulary of GPT-2 (50257 tokens).
    out.push_back(gpt("gpt3-175b", 96, 12288, 96, 2048,
                      "Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads, n_ctx 2048"));
    // GPT3-35B: the NEST paper's Table 4 (a GPT-3 scaled below hidden 8192 for Mist) is not in
    // our copy of the paper. Our choice: hidden 7168 (< 8192), 56 heads of 128 (GPT-3's head
    // size), 56 layers, GPT-3's vocabulary and context: 12*56*7168^2 + embeddings = 34.9e9.
    out.push_back(gpt("gpt3-35b", 56, 7168, 56, 2048,
                      "NEST planner choice (paper Table 4 unavailable): GPT-3 shape, 56 layers, "
                      "hidden 7168, 56 heads, 34.9e9 parameters"));
    {
        // Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat Models" (2023) and the
        // meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096, 32 heads, intermediate
        // 11008, vocab 32000, context 4096; 6.74e9 parameters.
        ModelConfig m = familyDefaults("llama");
        m.name = "llama2-7b";
        m.layers = 32;
        m.hidden = 4096;
        m.heads = 32;
        m.kvHeads = 32;
        m.ffnHidden = 11008;
        m.vocab = 32000;
        m.maxPositions = 4096;
        m.seqLength = 4096;
        m.source = "Touvron et al. 2023 (Llama 2), HF meta-llama/Llama-2-7b-hf config: 32 layers, "
                   "hidden 4096, 32 heads, ffn 11008, vocab 32000, context 4096";
        out.push_back(m);
    }
    {
        // Grattafiori et al., "The Llama 3 Herd of Models" (2024), Table 3, and the Meta
        // Llama 3 70B model card: 80 layers, model dimension 8192, FFN 28672, 64 heads, 8
        // key/value heads, vocabulary 128256 (HF config), context 8192. The NEST paper trains
        // it at sequence length 4096, our default.
        ModelConfig m = familyDefaults("llama");
        m.name = "llama3-70b";
        m.layers = 80;
        m.hidden = 8192;
        m.heads = 64;
        m.kvHeads = 8;
        m.ffnHidden = 28672;
        m.vocab = 128256;
        m.maxPositions = 8192;
        m.seqLength = 4096;
        m.source = "Grattafiori et al. 2024 (Llama 3), Table 3 and Meta model card: 80 layers, "
                   "hidden 8192, 64 heads, 8 KV heads, ffn 28672, vocab 128256";
        out.push_back(m);
    }
    {
        // Devlin et al., "BERT" (NAACL 2019): BERT-Large L=24, H=1024, A=16, feed-forward 4H,
        // WordPiece vocabulary 30522 (bert-large-uncased config.json), 512 positions, 2
        // segment types.
        ModelConfig m = familyDefaults("bert");
        m.name = "bert-large";
        m.layers = 24;
        m.hidden = 1024;
        m.heads = 16;
        m.kvHeads = 16;
        m.ffnHidden = 4096;
        m.vocab = 30522;
        m.maxPositions = 512;
        m.typeVocab = 2;
        m.seqLength = 512;
        m.source = "Devlin et al. 2019 (BERT-Large): 24 layers, hidden 1024, 16 heads, ffn 4096; "
                   "vocab 30522, 512 positions (bert-large-uncased config)";
        out.push_back(m);
    }
    {
        // Jiang et al., "Mixtral of Experts" (2024), Table 1: dim 4096, 32 layers, 32 heads, 8
        // KV heads, hidden_dim 14336, 8 experts, top-2, vocab 32000, context 32768. Sequence
        // length 4096 as in the NEST artifact's inputs.
        ModelConfig m = familyDefaults("mixtral");
        m.name = "mixtral-8x7b";
        m.layers = 32;
        m.hidden = 4096;
        m.heads = 32;
        m.kvHeads = 8;
        m.ffnHidden = 14336;
        m.vocab = 32000;
        m.maxPositions = 32768;
        m.experts = 8;
        m.topK = 2;
        m.seqLength = 4096;
        m.source = "Jiang et al. 2024 (Mixtral), Table 1: 32 layers, dim 4096, 32 heads, 8 KV heads, "
                   "ffn 14336, 8 experts, top-2, vocab 32000";
        out.push_back(m);
    }
    return out;
}

} // namespace

ConfigProblem findProblem(const ModelConfig &m)
{
    const auto &fams = modelFamilies();
    if (std::find(fams.begin(), fams.end(), m.family) == fams.end())
        return {"family", "unknown family '" + m.family + "' (known: gpt, llama, mixtral, bert)"};
    const std::pair<const char *, long long> positive[] = {
        {"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads}, {"kv_heads", m.kvHeads},
        {"ffn_hidden", m.ffnHidden}, {"vocab", m.vocab}, {"experts", m.experts},
        {"top_k", m.topK}, {"seq_length", m.seqLength}, {"global_batch", m.globalBatch}};
    for (const auto &[key, value] : positive) {
        if (value <= 0)
            return {key, std::string(key) + " must be positive, found " + std::to_string(value)};
        if (value > MAX_SIZE)
            return {key, std::string(key) + " is implausibly large (" + std::to_string(value) + ")"};
    }
    // The documented ranges (Limits.h, docs/reliability.md): what the cost model and the
    // planner can hold without overflow or absurd memory.
    const std::pair<const char *, std::pair<long long, Range>> bounded[] = {
        {"layers", {m.layers, limits::layers}}, {"hidden", {m.hidden, limits::hidden}},
        {"heads", {m.heads, limits::heads}}, {"kv_heads", {m.kvHeads, limits::heads}},
        {"ffn_hidden", {m.ffnHidden, limits::ffnHidden}}, {"vocab", {m.vocab, limits::vocab}},
        {"experts", {m.experts, limits::experts}}, {"top_k", {m.topK, limits::experts}},
        {"seq_length", {m.seqLength, limits::seqLength}}, {"global_batch", {m.globalBatch, limits::batch}}};
    for (const auto &entry : bounded) {
        if (auto problem = rangeProblem(static_cast<double>(entry.second.first), entry.second.second))
            return {entry.first, std::string(entry.first) + " " + *problem};
    }
    for (const auto &[key, value] : {std::pair<const char *, long long>{"max_positions", m.maxPositions},
                                     {"type_vocab", m.typeVocab}}) {
        if (value < 0 || value > MAX_SIZE)
            return {key, std::string(key) + " must be between 0 and " + std::to_string(MAX_SIZE) +
                             ", found " + std::to_string(value)};
    }
    if (m.hidden % m.heads != 0)
        return {"heads", "heads (" + std::to_string(m.heads) + ") must divide hidden (" +
                             std::to_string(m.hidden) + ")"};
    if (m.kvHeads > m.heads || m.heads % m.kvHeads != 0)
        return {"kv_heads", "kv_heads (" + std::to_string(m.kvHeads) + ") must divide heads (" +
                                std::to_string(m.heads) + ")"};
    if (m.topK > m.experts)
        return {"top_k", "top_k (" + std::to_string(m.topK) + ") must not exceed experts (" +
                             std::to_string(m.experts) + ")"};
    const bool learnedPositions = m.family == "gpt" || m.family == "bert";
    if (learnedPositions && m.maxPositions <= 0)
        return {"max_positions", "max_positions must be positive for family '" + m.family +
                                     "' (learned position embeddings)"};
    if (learnedPositions && m.seqLength > m.maxPositions)
        return {"seq_length", "seq_length (" + std::to_string(m.seqLength) +
                                  ") exceeds max_positions (" + std::to_string(m.maxPositions) +
                                  ") of the learned position embeddings"};
    return {};
}

namespace {

const std::set<std::string> &knownKeys()
{
    static const std::set<std::string> keys = {
        "format", "preset", "name", "family", "layers", "hidden", "heads", "kv_heads",
        "ffn_hidden", "vocab", "max_positions", "type_vocab", "experts", "top_k",
        "tied_embeddings", "gated_mlp", "linear_bias", "norm", "dropout", "flash_attention",
        "causal", "seq_length", "global_batch", "source", "comment"};
    return keys;
}

int readSize(const Json &j, const char *key, const std::string &path, int fallback, long long min = 1)
{
    return static_cast<int>(getInt(j, key, path, min, MAX_SIZE, fallback));
}

} // namespace

const std::vector<std::string> &modelFamilies()
{
    static const std::vector<std::string> families = {"gpt", "llama", "mixtral", "bert"};
    return families;
}

ModelConfig familyDefaults(const std::string &family)
{
    ModelConfig m;
    m.family = family;
    if (family == "llama" || family == "mixtral") {
        m.tiedEmbeddings = false;
        m.gatedMlp = true;
        m.linearBias = false;
        m.rmsNorm = true;
        m.dropout = false;
        m.flashAttention = true;
        m.seqLength = 4096;
        if (family == "mixtral") {
            m.experts = 8;
            m.topK = 2;
        }
    } else if (family == "bert") {
        m.seqLength = 512;
        m.typeVocab = 2;
        m.causal = false;
    }
    return m;
}

const std::vector<ModelConfig> &modelPresets()
{
    static const std::vector<ModelConfig> presets = makePresets();  // immutable after init
    return presets;
}

std::string modelPresetNames()
{
    std::string names;
    for (const auto &m : modelPresets())
        names += (names.empty() ? "" : ", ") + m.name;
    return names;
}

Result<ModelConfig> modelPreset(const std::string &name)
{
    std::string key = normalise(name);
    if (key == "gpt3" || key == "gpt-3-175b" || key == "gpt3-175")
        key = "gpt3-175b";
    else if (key == "llama2" || key == "llama-2-7b")
        key = "llama2-7b";
    else if (key == "llama3" || key == "llama-3-70b")
        key = "llama3-70b";
    else if (key == "bert" || key == "bertlarge")
        key = "bert-large";
    else if (key == "mixtral")
        key = "mixtral-8x7b";
    for (const auto &m : modelPresets())
        if (m.name == key)
            return m;
    return Result<ModelConfig>::failure("unknown model preset '" + name + "' (known: " +
                                        modelPresetNames() + ")");
}

std::string validate(const ModelConfig &m)
{
    return findProblem(m).reason;
}

namespace {

// Every key of `j` is a known one; a "format" is "nest-model".
void checkModelKeys(const Json &j, const std::string &path)
{
    requireObject(j, path);
    for (const auto &[key, value] : j.items()) {
        if (!knownKeys().count(key)) {
            std::string known;
            for (const auto &k : knownKeys())
                known += (known.empty() ? "" : ", ") + k;
            throw JsonError(childPath(path, key), "unknown key (known: " + known + ")");
        }
    }
    if (has(j, "format")) {
        const std::string format = getString(j, "format", path);
        if (format != "nest-model")
            throw JsonError(childPath(path, "format"), "expected \"nest-model\", found \"" + format + "\"");
    }
}

// Where the fields start from: the named preset (its family possibly changed), or the
// family's defaults, which need the sizes without a sensible default.
ModelConfig modelBase(const Json &j, const std::string &path)
{
    ModelConfig m;
    if (has(j, "preset")) {
        auto preset = modelPreset(getString(j, "preset", path));
        if (!preset)
            throw JsonError(childPath(path, "preset"), preset.error());
        m = *preset;
        if (has(j, "family")) {
            // Flash attention follows the family unless the preset departed from its own.
            const bool followsFamily = m.flashAttention == familyDefaults(m.family).flashAttention;
            m.family = getString(j, "family", path);
            if (followsFamily)
                m.flashAttention = familyDefaults(m.family).flashAttention;
        }
        return m;
    }
    const std::string family = getString(j, "family", path);
    const auto &fams = modelFamilies();
    if (std::find(fams.begin(), fams.end(), family) == fams.end())
        throw JsonError(childPath(path, "family"), "unknown family '" + family + "' (known: gpt, llama, mixtral, bert)");
    m = familyDefaults(family);
    m.name = family;
    for (const char *key : {"layers", "hidden", "heads", "vocab"})
        requireKey(j, key, path);
    if (family == "llama" || family == "mixtral")
        requireKey(j, "ffn_hidden", path);
    return m;
}

// The architecture's fields over `m`. Defaults that follow other fields: a preset's
// multi-head attention (kv == heads), its 4h MLP and its position table sized to the
// sequence keep following when those fields are overridden; otherwise the preset's own
// value stays.
void readArchitecture(const Json &j, const std::string &path, ModelConfig &m)
{
    const ModelConfig before = m;
    const bool learnedPositions = m.family == "gpt" || m.family == "bert";
    m.layers = readSize(j, "layers", path, m.layers);
    m.hidden = readSize(j, "hidden", path, m.hidden);
    m.heads = readSize(j, "heads", path, m.heads);
    const bool mha = before.kvHeads == 0 || before.kvHeads == before.heads;
    m.kvHeads = readSize(j, "kv_heads", path, mha ? m.heads : before.kvHeads);
    const bool fourH = before.ffnHidden == 0 || before.ffnHidden == 4 * before.hidden;
    m.ffnHidden = readSize(j, "ffn_hidden", path, fourH ? 4 * m.hidden : before.ffnHidden);
    m.vocab = readSize(j, "vocab", path, m.vocab);
    m.typeVocab = readSize(j, "type_vocab", path, m.typeVocab, 0);
    m.experts = readSize(j, "experts", path, m.experts);
    m.topK = readSize(j, "top_k", path, m.topK);
    m.tiedEmbeddings = getBool(j, "tied_embeddings", path, m.tiedEmbeddings);
    m.gatedMlp = getBool(j, "gated_mlp", path, m.gatedMlp);
    m.linearBias = getBool(j, "linear_bias", path, m.linearBias);
    m.dropout = getBool(j, "dropout", path, m.dropout);
    m.flashAttention = getBool(j, "flash_attention", path, m.flashAttention);
    m.causal = getBool(j, "causal", path, m.causal);
    if (has(j, "norm")) {
        const std::string norm = getString(j, "norm", path);
        if (norm != "layernorm" && norm != "rmsnorm")
            throw JsonError(childPath(path, "norm"), "expected \"layernorm\" or \"rmsnorm\", found \"" + norm + "\"");
        m.rmsNorm = norm == "rmsnorm";
    }
    if (has(j, "max_positions")) {
        m.maxPositions = readSize(j, "max_positions", path, 0, 0);
        // Full hyperparameters with a context window: train at most at that length.
        if (!has(j, "seq_length") && !has(j, "preset"))
            m.seqLength = std::min(m.seqLength, m.maxPositions);
    }
    m.seqLength = readSize(j, "seq_length", path, m.seqLength);
    if (learnedPositions && !has(j, "max_positions") &&
        (before.maxPositions == 0 || before.maxPositions == before.seqLength))
        m.maxPositions = m.seqLength;
}

// A preset's citation stays only while its architecture does (the attention kernel is not
// architecture); a file's own "source" wins.
std::string modelSource(const Json &j, const std::string &path, const ModelConfig &m)
{
    bool architectureChanged = false;
    for (const auto &[key, value] : j.items())
        architectureChanged = architectureChanged ||
                              !(key == "format" || key == "preset" || key == "name" || key == "source" ||
                                key == "comment" || key == "seq_length" || key == "global_batch" ||
                                key == "flash_attention");
    const std::string inherited = !has(j, "preset")     ? std::string()
                                  : architectureChanged ? "overrides of preset " + getString(j, "preset", path)
                                                        : m.source;
    return getString(j, "source", path, inherited);
}

} // namespace

ModelConfig modelConfigFromJson(const Json &j, const std::string &path)
{
    checkModelKeys(j, path);
    ModelConfig m = modelBase(j, path);
    m.name = getString(j, "name", path, m.name);
    if (m.name.empty())
        throw JsonError(childPath(path, "name"), "must not be empty");
    readArchitecture(j, path, m);
    m.globalBatch = readSize(j, "global_batch", path, m.globalBatch);
    m.source = modelSource(j, path, m);
    if (const ConfigProblem p = findProblem(m); !p.reason.empty())
        throw JsonError(childPath(path, p.key), p.reason);
    return m;
}

Json modelConfigToJson(const ModelConfig &m)
{
    Json j = {{"format", "nest-model"},
              {"name", m.name},
              {"family", m.family},
              {"layers", m.layers},
              {"hidden", m.hidden},
              {"heads", m.heads},
              {"kv_heads", m.kvHeads},
              {"ffn_hidden", m.ffnHidden},
              {"vocab", m.vocab},
              {"max_positions", m.maxPositions},
              {"type_vocab", m.typeVocab},
              {"experts", m.experts},
              {"top_k", m.topK},
              {"tied_embeddings", m.tiedEmbeddings},
              {"gated_mlp", m.gatedMlp},
              {"linear_bias", m.linearBias},
              {"norm", m.rmsNorm ? "rmsnorm" : "layernorm"},
              {"dropout", m.dropout},
              {"flash_attention", m.flashAttention},
              {"causal", m.causal},
              {"seq_length", m.seqLength},
              {"global_batch", m.globalBatch}};
    if (!m.source.empty())
        j["source"] = m.source;
    return j;
}

} // namespace nest
