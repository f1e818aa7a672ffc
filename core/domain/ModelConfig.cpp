#include "ModelConfig.h"

#include "Limits.h"
#include "TextCase.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <utility>

namespace nest {

namespace {

// Upper bound for every integer hyperparameter: keeps products like hidden * ffn far from
// overflow and catches unit mistakes (a hidden of 4e9 is a typo, not a model).

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

std::vector<ModelConfig> makeModelPresets()
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

namespace {

// The layer-kind sizes and switches of the model file (docs/formats.md, "Layer kinds"): one
// table that the reader, the writer and the validator all walk.
struct SizeField {
    const char *key;
    int ModelConfig::*member;
    long long min, max;
};
constexpr SizeField kSizeFields[] = {
    {"head_dim", &ModelConfig::headDimension, 0, limits::modelCountMax},
    {"sliding_window", &ModelConfig::slidingWindow, 0, limits::modelCountMax},
    {"q_lora_rank", &ModelConfig::qLoraRank, 0, limits::modelCountMax},
    {"kv_lora_rank", &ModelConfig::kvLoraRank, 0, limits::modelCountMax},
    {"qk_rope_head_dim", &ModelConfig::qkRopeHeadDim, 0, limits::modelCountMax},
    {"qk_nope_head_dim", &ModelConfig::qkNopeHeadDim, 0, limits::modelCountMax},
    {"v_head_dim", &ModelConfig::vHeadDim, 0, limits::modelCountMax},
    {"expert_ffn_hidden", &ModelConfig::expertFfnHidden, 0, static_cast<long long>(limits::ffnHidden.max)},
    {"shared_experts", &ModelConfig::sharedExperts, 0, static_cast<long long>(limits::experts.max)},
    {"shared_ffn_hidden", &ModelConfig::sharedFfnHidden, 0, static_cast<long long>(limits::ffnHidden.max)},
    {"mamba_heads", &ModelConfig::mambaHeads, 0, static_cast<long long>(limits::heads.max)},
    {"mamba_head_dim", &ModelConfig::mambaHeadDim, 0, limits::modelCountMax},
    {"ssm_state", &ModelConfig::ssmState, 0, limits::modelCountMax},
    {"mamba_groups", &ModelConfig::mambaGroups, 1, 1'000'000},
    {"conv_kernel", &ModelConfig::convKernel, 1, 1'000'000},
    {"mamba_chunk", &ModelConfig::mambaChunk, 1, 1'000'000},
    {"mtp_layers", &ModelConfig::mtpLayers, 0, 64},
    {"router_groups", &ModelConfig::routerGroups, 0, static_cast<long long>(limits::experts.max)},
    {"router_group_topk", &ModelConfig::routerGroupTopK, 0, static_cast<long long>(limits::experts.max)}};

struct FlagField {
    const char *key;
    bool ModelConfig::*member;
};
constexpr FlagField kFlagFields[] = {
    {"qkv_bias", &ModelConfig::qkvBias}, {"head_bias", &ModelConfig::headBias},
    {"qk_norm", &ModelConfig::qkNorm}, {"attention_sinks", &ModelConfig::attentionSinks},
    {"shared_expert_gate", &ModelConfig::sharedExpertGate}, {"router_bias", &ModelConfig::routerBias},
    {"mamba_bias", &ModelConfig::mambaBias}, {"mamba_conv_bias", &ModelConfig::mambaConvBias}};

ConfigProblem sizeProblem(const char *key, long long value, long long min, long long max)
{
    if (value < min || value > max)
        return {key, std::string(key) + " must be between " + std::to_string(min) + " and " +
                         std::to_string(max) + ", found " + std::to_string(value)};
    return {};
}

// MLA: either no rank at all, or the KV rank with every head width.
ConfigProblem mlaProblem(const ModelConfig &m)
{
    if (m.kvLoraRank == 0) {
        for (const auto &[key, value] : {std::pair<const char *, int>{"q_lora_rank", m.qLoraRank},
                                         {"qk_rope_head_dim", m.qkRopeHeadDim},
                                         {"qk_nope_head_dim", m.qkNopeHeadDim}, {"v_head_dim", m.vHeadDim}})
            if (value != 0)
                return {key, std::string(key) + " (" + std::to_string(value) +
                                 ") is an MLA size, but kv_lora_rank is 0 (no MLA): set kv_lora_rank or remove " + key};
        return {};
    }
    for (const auto &[key, value] : {std::pair<const char *, int>{"qk_rope_head_dim", m.qkRopeHeadDim},
                                     {"qk_nope_head_dim", m.qkNopeHeadDim}, {"v_head_dim", m.vHeadDim}})
        if (value <= 0)
            return {key, std::string(key) + " must be positive with MLA (kv_lora_rank " +
                             std::to_string(m.kvLoraRank) + "), found " + std::to_string(value)};
    return {};
}

// What one kind needs of the model: a window for sliding attention, MLA ranks, Mamba sizes,
// experts.
ConfigProblem kindNeeds(const ModelConfig &m, const LayerKindSpec &k, const std::string &where)
{
    if (k.mixer == MixerKind::Attention && k.attention == AttentionKind::Sliding && k.window == 0 &&
        m.slidingWindow == 0)
        return {where, "layer kind '" + k.name + "' has sliding-window attention but no window: set sliding_window"};
    if (k.mixer == MixerKind::Attention && k.attention == AttentionKind::Mla && m.kvLoraRank == 0)
        return {where, "layer kind '" + k.name + "' has MLA attention but the model has no kv_lora_rank"};
    if (k.mixer == MixerKind::Mamba && (m.mambaHeads == 0 || m.mambaHeadDim == 0 || m.ssmState == 0))
        return {where, "layer kind '" + k.name + "' has a Mamba-2 mixer but the model lacks mamba_heads, "
                       "mamba_head_dim or ssm_state"};
    if (k.mlp == MlpKind::Moe && m.experts <= 1)
        return {where, "layer kind '" + k.name + "' has a MoE MLP but the model has " +
                           std::to_string(m.experts) + " expert (set experts > 1)"};
    if (k.mixer == MixerKind::None && k.mlp == MlpKind::None)
        return {where, "layer kind '" + k.name + "' has neither a mixer nor an MLP"};
    return {};
}

// The kinds a pattern may name, for messages: the built-in ones, then the file's own.
std::string knownLayerKindNames(const ModelConfig &m)
{
    std::string known = builtinLayerKindNames();
    for (const auto &own : m.layerKinds)
        known += ", " + own.name;
    return known;
}

ConfigProblem layerKindProblem(const ModelConfig &m)
{
    for (const SizeField &f : kSizeFields)
        if (ConfigProblem p = sizeProblem(f.key, m.*f.member, f.min, f.max); !p.reason.empty())
            return p;
    if (m.mambaHeads > 0 && m.mambaHeads % m.mambaGroups != 0)
        return {"mamba_groups", "mamba_groups (" + std::to_string(m.mambaGroups) + ") must divide mamba_heads (" +
                                    std::to_string(m.mambaHeads) + ")"};
    if (ConfigProblem p = mlaProblem(m); !p.reason.empty())
        return p;
    for (const auto &k : m.layerKinds)
        if (ConfigProblem p = kindNeeds(m, k, "layer_kinds." + k.name); !p.reason.empty())
            return p;
    if (m.pattern.empty()) {
        LayerKindSpec uniform = *m.findLayerKind(m.defaultMlp() == MlpKind::Moe ? "moe" : "dense");
        return kindNeeds(m, uniform, "layers");
    }
    for (size_t i = 0; i < m.pattern.size(); ++i) {
        const LayerRun &r = m.pattern[i];
        const LayerKindSpec *k = m.findLayerKind(r.kind);
        if (!k) {
            return {"layer_pattern", "run " + std::to_string(i + 1) + ": unknown layer kind '" + r.kind +
                                         "' (known: " + knownLayerKindNames(m) + ")"};
        }
        if (r.count < 1)
            return {"layer_pattern", "run " + std::to_string(i + 1) + ": count must be at least 1"};
        if (ConfigProblem p = kindNeeds(m, *k, "layer_pattern"); !p.reason.empty())
            return p;
    }
    if (const long long n = patternLength(m.pattern); n > m.layers)
        return {"layer_pattern", "the pattern holds " + std::to_string(n) + " layers, more than the model's " +
                                     std::to_string(m.layers) + " (layers)"};
    return {};
}

// Group-limited routing: both keys or neither, whole groups of experts, and enough experts in
// the chosen groups for a token's top-k.
ConfigProblem routerGroupProblem(const ModelConfig &m)
{
    const int groups = m.routerGroups, chosen = m.routerGroupTopK;
    if (groups == 0 && chosen == 0)
        return {};
    if (groups == 0 || chosen == 0)
        return {groups == 0 ? "router_groups" : "router_group_topk",
                "router_groups and router_group_topk go together (group-limited routing): set both or neither"};
    if (m.experts % groups != 0)
        return {"router_groups", "router_groups (" + std::to_string(groups) + ") must divide experts (" +
                                     std::to_string(m.experts) + ")"};
    if (chosen > groups)
        return {"router_group_topk", "router_group_topk (" + std::to_string(chosen) +
                                         ") must not exceed router_groups (" + std::to_string(groups) + ")"};
    if (static_cast<long long>(chosen) * (m.experts / groups) < m.topK)
        return {"router_group_topk", "router_group_topk (" + std::to_string(chosen) + ") groups of " +
                                         std::to_string(m.experts / groups) + " experts hold fewer than top_k (" +
                                         std::to_string(m.topK) + ")"};
    return {};
}

} // namespace

const LayerKindSpec *ModelConfig::findLayerKind(const std::string &name) const
{
    for (const auto &k : layerKinds)
        if (k.name == name)
            return &k;
    static const std::vector<std::vector<LayerKindSpec>> builtins = [] {
        std::vector<std::vector<LayerKindSpec>> all;
        for (const AttentionKind a : {AttentionKind::Full, AttentionKind::Mla})
            for (const MlpKind mlp : {MlpKind::Dense, MlpKind::Moe})
                all.push_back(builtinLayerKinds(a, mlp));
        return all;
    }();  // immutable after init
    const auto &table = builtins[(defaultAttention() == AttentionKind::Mla ? 2 : 0) +
                                 (defaultMlp() == MlpKind::Moe ? 1 : 0)];
    for (const auto &k : table)
        if (k.name == name)
            return &k;
    return nullptr;
}

std::vector<LayerKindSpec> ModelConfig::layerStack() const
{
    std::vector<LayerKindSpec> stack;
    stack.reserve(static_cast<size_t>(std::max(0, layers)));
    const auto resolved = [this](const LayerKindSpec &k) {
        LayerKindSpec r = k;
        if (r.window == 0)
            r.window = slidingWindow;
        if (r.ffnHidden == 0)
            r.ffnHidden = ffnHidden;
        return r;
    };
    if (pattern.empty()) {
        const LayerKindSpec *k = findLayerKind(defaultMlp() == MlpKind::Moe ? "moe" : "dense");
        stack.assign(static_cast<size_t>(std::max(0, layers)), resolved(*k));
        return stack;
    }
    while (static_cast<int>(stack.size()) < layers) {
        for (const LayerRun &r : pattern) {
            const LayerKindSpec k = resolved(*findLayerKind(r.kind));
            for (int i = 0; i < r.count && static_cast<int>(stack.size()) < layers; ++i)
                stack.push_back(k);
        }
    }
    return stack;
}

const char *toString(ModelConfig::NormPlacement p)
{
    switch (p) {
    case ModelConfig::NormPlacement::Pre: return "pre";
    case ModelConfig::NormPlacement::Parallel: return "parallel";
    case ModelConfig::NormPlacement::Sandwich: return "sandwich";
    }
    return "pre";
}

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
        if (value > limits::modelCountMax)
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
        if (value < 0 || value > limits::modelCountMax)
            return {key, std::string(key) + " must be between 0 and " + std::to_string(limits::modelCountMax) +
                             ", found " + std::to_string(value)};
    }
    if (ConfigProblem p = layerKindProblem(m); !p.reason.empty())
        return p;
    if (m.headDimension == 0 && m.kvLoraRank == 0 && m.hidden % m.heads != 0)
        return {"heads", "heads (" + std::to_string(m.heads) + ") must divide hidden (" +
                             std::to_string(m.hidden) + ")"};
    if (m.kvHeads > m.heads || m.heads % m.kvHeads != 0)
        return {"kv_heads", "kv_heads (" + std::to_string(m.kvHeads) + ") must divide heads (" +
                                std::to_string(m.heads) + ")"};
    if (m.topK > m.experts)
        return {"top_k", "top_k (" + std::to_string(m.topK) + ") must not exceed experts (" +
                             std::to_string(m.experts) + ")"};
    if (ConfigProblem p = routerGroupProblem(m); !p.reason.empty())
        return p;
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
        "causal", "seq_length", "global_batch", "source", "comment",
        // issue 45: layer kinds (and kSizeFields, kFlagFields below)
        "attention_bias", "mlp_bias", "norm_placement", "layer_kinds", "layer_pattern", "hybrid_pattern"};
    static const std::set<std::string> all = [] {
        std::set<std::string> out = keys;
        for (const SizeField &f : kSizeFields)
            out.insert(f.key);
        for (const FlagField &f : kFlagFields)
            out.insert(f.key);
        return out;
    }();  // immutable after init
    return all;
}

int readSize(const Json &j, const char *key, const std::string &path, int fallback, long long min = 1)
{
    return static_cast<int>(getInt(j, key, path, min, limits::modelCountMax, fallback));
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
        m.setLinearBias(false);
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
    static const std::vector<ModelConfig> presets = makeModelPresets();  // immutable after init
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
    std::string key = presetKey(name);
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
    // The layer count follows from a pattern that does not repeat.
    const bool patterned = has(j, "layer_pattern") || has(j, "hybrid_pattern");
    for (const char *key : {"layers", "hidden", "heads", "vocab"})
        if (!(patterned && std::string_view(key) == "layers"))
            requireKey(j, key, path);
    if (family == "llama" || family == "mixtral")
        requireKey(j, "ffn_hidden", path);
    return m;
}

LayerKindSpec readLayerKind(const Json &j, const std::string &name, const std::string &path)
{
    requireObject(j, path);
    static const std::set<std::string> keys = {"mixer", "attention", "mlp", "window", "ffn_hidden", "comment"};
    for (const auto &[key, value] : j.items())
        if (!keys.count(key))
            throw JsonError(childPath(path, key), "unknown key (known: attention, comment, ffn_hidden, mixer, mlp, window)");
    LayerKindSpec k;
    k.name = name;
    if (has(j, "mixer")) {
        const auto v = mixerKindFromString(getString(j, "mixer", path));
        if (!v)
            throw JsonError(childPath(path, "mixer"), "expected \"attention\", \"mamba\" or \"none\"");
        k.mixer = *v;
    }
    if (has(j, "attention")) {
        const std::string a = getString(j, "attention", path);
        if (a == "none") {
            k.mixer = MixerKind::None;
        } else {
            const auto v = attentionKindFromString(a);
            if (!v)
                throw JsonError(childPath(path, "attention"),
                                "expected \"full\" (or \"mha\", \"gqa\"), \"sliding\", \"mla\" or \"none\", found \"" + a + "\"");
            k.attention = *v;
        }
    }
    if (has(j, "mlp")) {
        const auto v = mlpKindFromString(getString(j, "mlp", path));
        if (!v)
            throw JsonError(childPath(path, "mlp"), "expected \"dense\", \"moe\" or \"none\"");
        k.mlp = *v;
    }
    k.window = readSize(j, "window", path, 0, 0);
    k.ffnHidden = readSize(j, "ffn_hidden", path, 0, 0);
    return k;
}

// The pattern: a string ("3*dense, 58*moe") or an array of such items; or NemotronH's
// hybrid string. Unknown kind names are reported at the item that names them.
void readPattern(const Json &j, const std::string &path, ModelConfig &m)
{
    if (has(j, "layer_pattern") && has(j, "hybrid_pattern"))
        throw JsonError(childPath(path, "hybrid_pattern"), "give layer_pattern or hybrid_pattern, not both");
    std::vector<LayerRun> runs;
    std::string error;
    const auto checkKinds = [&m](const std::vector<LayerRun> &items, const std::string &where) {
        for (const auto &r : items)
            if (!m.findLayerKind(r.kind))
                throw JsonError(where, "unknown layer kind '" + r.kind + "' (known: " + knownLayerKindNames(m) + ")");
    };
    if (has(j, "hybrid_pattern")) {
        const auto parsed = parseHybridPattern(getString(j, "hybrid_pattern", path), error);
        if (!parsed)
            throw JsonError(childPath(path, "hybrid_pattern"), error);
        runs = *parsed;
    } else if (has(j, "layer_pattern")) {
        const Json &p = j.at("layer_pattern");
        const std::string where = childPath(path, "layer_pattern");
        if (p.is_string()) {
            const auto parsed = parseLayerPattern(p.get<std::string>(), error);
            if (!parsed)
                throw JsonError(where, error);
            checkKinds(*parsed, where);
            runs = *parsed;
        } else if (p.is_array()) {
            if (p.empty())
                throw JsonError(where, "the pattern is empty");
            for (size_t i = 0; i < p.size(); ++i) {
                const std::string item = childPath(where, i);
                if (!p[i].is_string())
                    throw JsonError(item, "expected a string such as \"3*dense\"");
                const auto parsed = parseLayerPattern(p[i].get<std::string>(), error);
                if (!parsed)
                    throw JsonError(item, error);
                checkKinds(*parsed, item);
                for (const auto &r : *parsed)
                    runs.push_back(r);
            }
        } else {
            throw JsonError(where, "expected a string (\"3*dense, 58*moe\") or an array of strings");
        }
    } else {
        return;
    }
    m.pattern = runs;
    const long long n = patternLength(runs);
    if (!has(j, "layers")) {
        if (n > limits::layers.max)
            throw JsonError(childPath(path, has(j, "layer_pattern") ? "layer_pattern" : "hybrid_pattern"),
                            "the pattern holds " + std::to_string(n) + " layers, more than " +
                                std::to_string(static_cast<long long>(limits::layers.max)));
        m.layers = static_cast<int>(n);
    }
}

// The stack's own keys: sizes of each part, the file's kinds and the pattern.
void readLayerKinds(const Json &j, const std::string &path, ModelConfig &m)
{
    for (const SizeField &f : kSizeFields)
        m.*f.member = readSize(j, f.key, path, m.*f.member, f.min);
    for (const FlagField &f : kFlagFields)
        m.*f.member = getBool(j, f.key, path, m.*f.member);
    m.attentionBias = getBool(j, "attention_bias", path, m.attentionBias);
    m.mlpBias = getBool(j, "mlp_bias", path, m.mlpBias);
    if (has(j, "norm_placement")) {
        const std::string v = getString(j, "norm_placement", path);
        if (v == "pre")
            m.normPlacement = ModelConfig::NormPlacement::Pre;
        else if (v == "parallel")
            m.normPlacement = ModelConfig::NormPlacement::Parallel;
        else if (v == "sandwich")
            m.normPlacement = ModelConfig::NormPlacement::Sandwich;
        else
            throw JsonError(childPath(path, "norm_placement"),
                            "expected \"pre\", \"parallel\" or \"sandwich\", found \"" + v + "\"");
    }
    if (has(j, "layer_kinds")) {
        const Json &kinds = j.at("layer_kinds");
        const std::string where = childPath(path, "layer_kinds");
        requireObject(kinds, where);
        m.layerKinds.clear();
        for (const auto &[name, spec] : kinds.items()) {
            const std::string lower = lowerKindName(name);
            std::string error;
            const auto parsed = parseLayerPattern(lower, error);
            if (!parsed || parsed->size() != 1 || parsed->front().count != 1 || parsed->front().kind != lower)
                throw JsonError(childPath(where, name), "'" + name + "' is not a layer kind name (letters, digits, '_', '-', '.')");
            for (const auto &k : m.layerKinds)
                if (k.name == lower)
                    throw JsonError(childPath(where, name), "layer kind '" + lower + "' is defined twice");
            m.layerKinds.push_back(readLayerKind(spec, lower, childPath(where, name)));
        }
    }
    readPattern(j, path, m);
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
    if (has(j, "linear_bias"))
        m.setLinearBias(getBool(j, "linear_bias", path, m.linearBias()));
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
    readLayerKinds(j, path, m);
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

namespace {

// The stack's keys, each only where it departs from the default (a model of 2022 writes
// exactly the keys it always did).
void writeLayerKinds(const ModelConfig &m, Json &j)
{
    const ModelConfig d = familyDefaults(m.family);
    if (m.attentionBias != m.mlpBias) {
        j["attention_bias"] = m.attentionBias;
        j["mlp_bias"] = m.mlpBias;
    }
    for (const SizeField &f : kSizeFields)
        if (m.*f.member != d.*f.member)
            j[f.key] = m.*f.member;
    for (const FlagField &f : kFlagFields)
        if (m.*f.member != d.*f.member)
            j[f.key] = m.*f.member;
    if (m.normPlacement != d.normPlacement)
        j["norm_placement"] = toString(m.normPlacement);
    if (!m.layerKinds.empty()) {
        Json kinds = Json::object();
        for (const auto &k : m.layerKinds) {
            Json e = {{"mixer", toString(k.mixer)}, {"attention", toString(k.attention)}, {"mlp", toString(k.mlp)}};
            if (k.window > 0)
                e["window"] = k.window;
            if (k.ffnHidden > 0)
                e["ffn_hidden"] = k.ffnHidden;
            kinds[k.name] = e;
        }
        j["layer_kinds"] = kinds;
    }
    if (!m.pattern.empty())
        j["layer_pattern"] = formatLayerPattern(m.pattern);
}

} // namespace

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
              {"linear_bias", m.linearBias()},
              {"norm", m.rmsNorm ? "rmsnorm" : "layernorm"},
              {"dropout", m.dropout},
              {"flash_attention", m.flashAttention},
              {"causal", m.causal},
              {"seq_length", m.seqLength},
              {"global_batch", m.globalBatch}};
    writeLayerKinds(m, j);
    if (!m.source.empty())
        j["source"] = m.source;
    return j;
}

} // namespace nest
