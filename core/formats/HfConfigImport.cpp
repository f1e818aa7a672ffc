#include "HfConfigImport.h"

#include "Limits.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

namespace nest {

namespace {

constexpr int DEFAULT_MAX_SEQ = 4096;

} // namespace

std::string hfModelName(const Json &j, const std::string &origin)
{
    if (has(j, "_name_or_path") && j.at("_name_or_path").is_string()) {
        std::string n = j.at("_name_or_path").get<std::string>();
        const auto slash = n.find_last_of('/');
        if (slash != std::string::npos)
            n = n.substr(slash + 1);
        if (!n.empty())
            return n;
    }
    const std::filesystem::path p(origin);
    if (p.filename() == "config.json" && p.has_parent_path() && !p.parent_path().filename().empty())
        return p.parent_path().filename().string();
    const std::string stem = p.stem().string();
    return stem.empty() ? "hf-model" : stem;
}

namespace {

// The keys of one config: the language model's own object (`text_config` of multimodal
// configs such as Gemma 3 and Llama 4, else the whole file), falling back to the file's top
// level for keys the text part leaves out (Llama 4's tie_word_embeddings). Errors name the
// key as the file writes it ("text_config.hidden_size"). null reads as absent, as
// transformers reads it.
class HfKeys {
public:
    explicit HfKeys(const Json &top) : m_top(top)
    {
        if (has(top, "text_config") && top.at("text_config").is_object()) {
            m_text = &top.at("text_config");
            m_path = "text_config";
        }
    }
    const Json &text() const { return m_text ? *m_text : m_top; }
    bool present(const char *key) const { return where(key) != nullptr; }
    std::string pathOf(const char *key) const
    {
        return m_text && !(has(*m_text, key) && !m_text->at(key).is_null()) && present(key) ? key
               : m_path.empty() ? std::string(key)
                                : childPath(m_path, key);
    }
    int size(const char *key) const
    {
        const Json *o = where(key);
        if (!o)
            throw JsonError(pathOf(key), "required field is missing");
        return static_cast<int>(getInt(*o, key, parentOf(key), 1, limits::modelCountMax));
    }
    // A layer count: within limits::layers before anything is sized by it.
    int layers(const char *key) const
    {
        const Json *o = where(key);
        if (!o)
            throw JsonError(pathOf(key), "required field is missing");
        const long long n = getInt(*o, key, parentOf(key), 1, limits::modelCountMax);
        requireInRange(static_cast<double>(n), limits::layers, pathOf(key));
        return static_cast<int>(n);
    }
    int size(const char *key, int fallback, long long min = 1) const
    {
        const Json *o = where(key);
        return o ? static_cast<int>(getInt(*o, key, parentOf(key), min, limits::modelCountMax)) : fallback;
    }
    bool flag(const char *key, bool fallback) const
    {
        const Json *o = where(key);
        return o ? getBool(*o, key, parentOf(key), fallback) : fallback;
    }
    double number(const char *key, double fallback) const
    {
        const Json *o = where(key);
        return o ? getNonNegative(*o, key, parentOf(key)) : fallback;
    }
    std::string string(const char *key, const std::string &fallback) const
    {
        const Json *o = where(key);
        return o ? getString(*o, key, parentOf(key)) : fallback;
    }
    const Json *value(const char *key) const { return where(key) ? &where(key)->at(key) : nullptr; }

private:
    const Json *where(const char *key) const
    {
        if (m_text && has(*m_text, key) && !m_text->at(key).is_null())
            return m_text;
        if (has(m_top, key) && !m_top.at(key).is_null())
            return &m_top;
        return nullptr;
    }
    std::string parentOf(const char *key) const { return where(key) == m_text ? m_path : std::string(); }

    const Json &m_top;
    const Json *m_text = nullptr;
    std::string m_path;
};

// Dropout is present when any of the listed probabilities is positive; `fallback` when none
// of the keys is there.
bool anyDropout(const HfKeys &k, std::initializer_list<const char *> keys, bool fallback)
{
    bool seen = false, positive = false;
    for (const char *key : keys) {
        if (!k.present(key))
            continue;
        seen = true;
        const double p = k.number(key, 0);
        if (p >= 1)
            throw JsonError(k.pathOf(key), "a dropout probability must be below 1");
        positive = positive || p > 0;
    }
    return seen ? positive : fallback;
}

// The activation of the MLP: one of `accepted`, else an error naming the key.
void checkActivation(const HfKeys &k, const char *key, std::initializer_list<const char *> accepted)
{
    if (!k.present(key))
        return;
    const std::string act = k.string(key, "");
    for (const char *a : accepted)
        if (act == a)
            return;
    std::string list;
    for (const char *a : accepted)
        list += (list.empty() ? "" : ", ") + std::string(a);
    throw JsonError(k.pathOf(key), "activation '" + act + "' is not modelled (expected " + list + ")");
}

constexpr std::initializer_list<const char *> kGated = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new"};
constexpr std::initializer_list<const char *> kPlain = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu", "relu2", "silu"};

// A per-layer list ("layer_types": ["sliding_attention", "full_attention", ...]) as kinds.
std::vector<std::string> layerTypes(const HfKeys &k, int layers)
{
    std::vector<std::string> out;
    const Json *types = k.value("layer_types");
    if (!types)
        return out;
    const std::string path = k.pathOf("layer_types");
    if (!types->is_array())
        throw JsonError(path, "expected an array of layer types");
    if (static_cast<int>(types->size()) != layers)
        throw JsonError(path, "lists " + std::to_string(types->size()) + " layers, the model has " +
                                  std::to_string(layers) + " (num_hidden_layers)");
    for (size_t i = 0; i < types->size(); ++i) {
        const Json &t = (*types)[i];
        const std::string s = t.is_string() ? t.get<std::string>() : std::string();
        if (s == "sliding_attention" || s == "chunked_attention")
            out.push_back("sliding");
        else if (s == "full_attention")
            out.push_back("global");
        else
            throw JsonError(childPath(path, i), "unknown layer type '" + (t.is_string() ? s : t.dump()) +
                                                    "' (known: full_attention, sliding_attention)");
    }
    return out;
}

// One kind name per layer -> the compact runs of the model's pattern.
std::vector<LayerRun> runsOf(const std::vector<std::string> &perLayer)
{
    std::vector<LayerRun> runs;
    for (const auto &name : perLayer) {
        if (!runs.empty() && runs.back().kind == name)
            ++runs.back().count;
        else
            runs.push_back({name, 1});
    }
    return runs;
}

// Shortens runs that repeat a period: [s, s, g, s, s, g] -> [2*s, g] when the whole list is
// that period repeated (and cut at the end). The least period is n - pi[n-1] of the prefix
// function (Knuth-Morris-Pratt), linear in the layers.
std::vector<LayerRun> compact(const std::vector<std::string> &perLayer)
{
    const size_t n = perLayer.size();
    if (n == 0)
        return {};
    std::vector<size_t> pi(n, 0);
    for (size_t i = 1; i < n; ++i) {
        size_t k = pi[i - 1];
        while (k > 0 && perLayer[i] != perLayer[k])
            k = pi[k - 1];
        pi[i] = perLayer[i] == perLayer[k] ? k + 1 : k;
    }
    const size_t period = n - pi[n - 1];
    return runsOf(std::vector<std::string>(perLayer.begin(), perLayer.begin() + static_cast<long>(period)));
}

// The attention, MLP width and vocabulary that llama-like configs share.
ModelConfig decoderBase(const HfKeys &k, const std::string &family, bool tiedDefault, int vocabDefault = 0)
{
    ModelConfig m = familyDefaults(family);
    m.layers = k.layers("num_hidden_layers");
    m.hidden = k.size("hidden_size");
    m.heads = k.size("num_attention_heads");
    m.kvHeads = k.size("num_key_value_heads", m.heads);
    m.ffnHidden = k.size("intermediate_size", 4 * m.hidden);
    m.vocab = vocabDefault > 0 ? k.size("vocab_size", vocabDefault) : k.size("vocab_size");
    m.maxPositions = k.size("max_position_embeddings", DEFAULT_MAX_SEQ);
    m.tiedEmbeddings = k.flag("tie_word_embeddings", tiedDefault);
    m.attentionBias = k.flag("attention_bias", false);
    m.mlpBias = k.flag("mlp_bias", false);
    m.dropout = anyDropout(k, {"attention_dropout"}, false);
    if (k.present("head_dim"))
        m.headDimension = k.size("head_dim");
    return m;
}

// Every layer sliding when the config has a window shorter than its context (Mistral v0.1,
// Phi-3, StarCoder2); configs that switch it off (`use_sliding_window: false`) stay full.
void uniformWindow(const HfKeys &k, ModelConfig &m)
{
    if (!k.present("sliding_window") || !k.flag("use_sliding_window", true))
        return;
    m.slidingWindow = k.size("sliding_window");
    if (m.slidingWindow >= m.maxPositions && m.maxPositions > 0)
        m.slidingWindow = 0;  // a window as long as the context is full attention
    if (m.slidingWindow > 0)
        m.pattern = {{"sliding", 1}};
}

// Qwen2 / Qwen2-MoE / Qwen3: use_sliding_window turns on the window for the layers from
// max_window_layers on (transformers' configuration_qwen2.py layer_types).
std::vector<std::string> qwenWindows(const HfKeys &k, ModelConfig &m, const std::string &full)
{
    std::vector<std::string> kinds(static_cast<size_t>(m.layers), full);
    if (!k.flag("use_sliding_window", false) || !k.present("sliding_window"))
        return kinds;
    m.slidingWindow = k.size("sliding_window");
    const int from = k.size("max_window_layers", m.layers, 0);
    for (int i = from; i < m.layers; ++i)
        kinds[static_cast<size_t>(i)] = "sliding";
    return kinds;
}

ModelConfig fromGpt2(const HfKeys &k)
{
    ModelConfig m = familyDefaults("gpt");
    m.layers = k.layers("n_layer");
    m.hidden = k.size("n_embd");
    m.heads = k.size("n_head");
    m.kvHeads = m.heads;
    m.ffnHidden = k.size("n_inner", 4 * m.hidden);  // null in GPT-2's config: 4h
    m.vocab = k.size("vocab_size");
    m.maxPositions = k.size("n_positions", k.size("n_ctx", 1024));
    m.tiedEmbeddings = k.flag("tie_word_embeddings", true);
    m.dropout = anyDropout(k, {"resid_pdrop", "embd_pdrop", "attn_pdrop"}, true);
    checkActivation(k, "activation_function", {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh", "relu"});
    return m;
}

ModelConfig fromBert(const HfKeys &k)
{
    ModelConfig m = familyDefaults("bert");
    m.layers = k.layers("num_hidden_layers");
    m.hidden = k.size("hidden_size");
    m.heads = k.size("num_attention_heads");
    m.kvHeads = m.heads;
    m.ffnHidden = k.size("intermediate_size", 4 * m.hidden);
    m.vocab = k.size("vocab_size");
    m.maxPositions = k.size("max_position_embeddings", 512);
    m.typeVocab = k.size("type_vocab_size", 2, 0);
    checkActivation(k, "hidden_act", {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"});
    m.dropout = anyDropout(k, {"hidden_dropout_prob", "attention_probs_dropout_prob"}, true);
    return m;
}

// llama, mistral, mixtral, minicpm, phi3 (fused QKV and gate/up: the same matrices).
ModelConfig fromLlama(const HfKeys &k, const std::string &type)
{
    const bool moe = type == "mixtral" || (type == "minicpm" && k.present("num_experts"));
    ModelConfig m = decoderBase(k, moe ? "mixtral" : "llama", type == "minicpm");
    checkActivation(k, "hidden_act", {"silu", "swish"});
    if (type == "phi3")
        m.dropout = anyDropout(k, {"attention_dropout", "resid_pdrop", "embd_pdrop"}, false);
    if (type == "mixtral") {
        m.experts = k.size("num_local_experts", 8);
        m.topK = k.size("num_experts_per_tok", 2);
    } else if (moe) {
        m.experts = k.size("num_experts");
        m.topK = k.size("num_experts_per_tok", 2);
    }
    uniformWindow(k, m);
    return m;
}

// Qwen2 (biases on Q, K, V), Qwen3 (per-head Q/K norms, its own head_dim), and their MoE:
// routed experts of moe_intermediate_size on the layers decoder_sparse_step picks and not in
// mlp_only_layers; Qwen2-MoE adds a gated shared expert.
ModelConfig fromQwen(const HfKeys &k, const std::string &type)
{
    const bool v3 = type == "qwen3" || type == "qwen3_moe";
    const bool moe = type == "qwen2_moe" || type == "qwen3_moe";
    ModelConfig m = decoderBase(k, moe ? "mixtral" : "llama", false);
    checkActivation(k, "hidden_act", {"silu", "swish"});
    m.qkvBias = !v3;
    m.qkNorm = v3;
    if (v3 && !k.present("head_dim"))
        m.headDimension = 128;  // Qwen3Config's default
    std::vector<std::string> kinds = qwenWindows(k, m, moe ? "moe" : "dense");
    if (moe) {
        m.experts = k.size("num_experts");
        m.topK = k.size("num_experts_per_tok");
        m.expertFfnHidden = k.size("moe_intermediate_size");
        if (type == "qwen2_moe" && k.size("shared_expert_intermediate_size", 0, 0) > 0) {
            m.sharedExperts = 1;
            m.sharedFfnHidden = k.size("shared_expert_intermediate_size");
            m.sharedExpertGate = true;
        }
        const int step = k.size("decoder_sparse_step", 1);
        std::set<long long> mlpOnly;
        if (const Json *list = k.value("mlp_only_layers")) {
            if (!list->is_array())
                throw JsonError(k.pathOf("mlp_only_layers"), "expected an array of layer indices");
            for (size_t i = 0; i < list->size(); ++i) {
                if (!(*list)[i].is_number_integer())
                    throw JsonError(childPath(k.pathOf("mlp_only_layers"), i), "expected a layer index");
                mlpOnly.insert((*list)[i].get<long long>());
            }
        }
        for (int i = 0; i < m.layers; ++i) {
            const bool sparse = !mlpOnly.count(i) && (i + 1) % step == 0;
            if (!sparse)
                kinds[static_cast<size_t>(i)] = kinds[static_cast<size_t>(i)] == "sliding" ? "sliding_dense" : "dense";
        }
        if (std::count(kinds.begin(), kinds.end(), "sliding_dense") > 0)
            m.layerKinds.push_back({"sliding_dense", MixerKind::Attention, AttentionKind::Sliding, MlpKind::Dense});
    }
    if (std::any_of(kinds.begin(), kinds.end(), [&](const std::string &s) { return s != kinds.front(); }) ||
        kinds.front() != (moe ? "moe" : "dense"))
        m.pattern = compact(kinds);
    return m;
}

// Group-limited routing: V2's topk_method "group_limited_greedy" and V3's "noaux_tc" pick
// topk_group of n_group expert groups first, then the top-k experts inside them (the
// reference modeling code's MoEGate); V2's "greedy" ignores the groups.
void readRouterGroups(const HfKeys &k, const std::string &type, ModelConfig &m)
{
    const std::string method = k.string("topk_method", type == "deepseek_v3" ? "noaux_tc" : "greedy");
    if (method != "group_limited_greedy" && method != "noaux_tc")
        return;
    const int groups = k.size("n_group", 1);
    const int picked = k.size("topk_group", groups);
    if (!ExpertRouting{m.experts, m.topK, groups, picked}.groupLimited())
        return;
    if (m.experts % groups != 0)
        throw JsonError(k.pathOf("n_group"), "n_group (" + std::to_string(groups) + ") must divide n_routed_experts (" +
                                                 std::to_string(m.experts) + ")");
    if (static_cast<long long>(picked) * (m.experts / groups) < m.topK)
        throw JsonError(k.pathOf("topk_group"), "topk_group (" + std::to_string(picked) + ") groups of " +
                                                    std::to_string(m.experts / groups) +
                                                    " experts hold fewer than num_experts_per_tok (" +
                                                    std::to_string(m.topK) + ")");
    m.routerGroups = groups;
    m.routerGroupTopK = picked;
}

// DeepSeek (V1 MoE), V2 and V3: dense first layers (first_k_dense_replace), then MoE every
// moe_layer_freq layers with shared experts as one MLP of n_shared x moe_intermediate_size;
// V2/V3 attention is MLA; V3 adds the router's correction bias (noaux_tc) and MTP modules.
ModelConfig fromDeepseek(const HfKeys &k, const std::string &type)
{
    ModelConfig m = decoderBase(k, "mixtral", false);
    checkActivation(k, "hidden_act", {"silu", "swish"});
    const int routed = k.size("n_routed_experts", 0, 0);
    m.experts = std::max(routed, 1);
    m.topK = routed > 0 ? k.size("num_experts_per_tok") : 1;
    m.expertFfnHidden = k.size("moe_intermediate_size", 0, 0);
    const int shared = k.size("n_shared_experts", 0, 0);
    if (shared > 0) {
        m.sharedExperts = shared;
        m.sharedFfnHidden = m.expertFfnHidden;
    }
    if (type != "deepseek") {
        m.qLoraRank = k.size("q_lora_rank", 0, 0);
        m.kvLoraRank = k.size("kv_lora_rank");
        m.qkRopeHeadDim = k.size("qk_rope_head_dim");
        m.qkNopeHeadDim = k.size("qk_nope_head_dim");
        m.vHeadDim = k.size("v_head_dim");
        m.headDimension = 0;
    }
    if (type == "deepseek_v3") {
        m.routerBias = k.string("topk_method", "noaux_tc") == "noaux_tc";
        m.mtpLayers = k.size("num_nextn_predict_layers", 0, 0);
    }
    if (routed == 0) {
        m.experts = 1;
        return m;
    }
    readRouterGroups(k, type, m);
    const int dense = k.size("first_k_dense_replace", 0, 0);
    const int freq = k.size("moe_layer_freq", 1);
    std::vector<std::string> kinds;
    for (int i = 0; i < m.layers; ++i)
        kinds.push_back(i >= dense && i % freq == 0 ? "moe" : "dense");
    if (std::count(kinds.begin(), kinds.end(), "dense") > 0)
        m.pattern = runsOf(kinds);
    return m;
}

// Gemma: GeGLU, head_dim of its own, tied embeddings. Gemma 2: norms before and after each
// sublayer, every other layer sliding (even ones). Gemma 3: Q/K norms, five sliding layers
// for one global (sliding_window_pattern, or layer_types).
ModelConfig fromGemma(const HfKeys &k, const std::string &type)
{
    // Gemma3TextConfig's default vocabulary (the 4B-27B text_configs leave it out).
    ModelConfig m = decoderBase(k, "llama", true, type == "gemma" ? 0 : type == "gemma2" ? 256000 : 262208);
    checkActivation(k, "hidden_activation", kGated);
    checkActivation(k, "hidden_act", kGated);
    if (!k.present("head_dim") && type != "gemma")
        m.headDimension = 256;
    if (type == "gemma")
        return m;
    m.normPlacement = ModelConfig::NormPlacement::Sandwich;
    m.qkNorm = type != "gemma2";
    std::vector<std::string> kinds = layerTypes(k, m.layers);
    if (kinds.empty()) {
        const int period = type == "gemma2" ? 2 : k.size("sliding_window_pattern", 6);
        for (int i = 0; i < m.layers; ++i)
            kinds.push_back(type == "gemma2" ? (i % 2 == 0 ? "sliding" : "global")
                                             : ((i + 1) % period != 0 ? "sliding" : "global"));
    }
    m.slidingWindow = k.size("sliding_window", 4096);  // Gemma2Config's and Gemma3TextConfig's default
    m.pattern = compact(kinds);
    return m;
}

// Phi (phi-1/1.5/2): attention and MLP in parallel on one LayerNorm, biases everywhere,
// GeLU MLP, a biased output projection.
ModelConfig fromPhi(const HfKeys &k)
{
    ModelConfig m = decoderBase(k, "llama", false);
    checkActivation(k, "hidden_act", kPlain);
    m.gatedMlp = false;
    m.rmsNorm = false;
    m.setLinearBias(true);
    m.headBias = true;
    m.normPlacement = ModelConfig::NormPlacement::Parallel;
    m.qkNorm = k.flag("qk_layernorm", false);
    m.dropout = anyDropout(k, {"attention_dropout", "resid_pdrop", "embd_pdrop"}, false);
    return m;
}

// GPT-NeoX (Pythia): LayerNorms, fused biased QKV, GeLU MLP with biases, untied output.
ModelConfig fromGptNeox(const HfKeys &k)
{
    ModelConfig m = decoderBase(k, "llama", false);
    checkActivation(k, "hidden_act", kPlain);
    m.gatedMlp = false;
    m.rmsNorm = false;
    m.attentionBias = k.flag("attention_bias", true);
    m.mlpBias = true;
    m.dropout = anyDropout(k, {"attention_dropout", "hidden_dropout"}, false);
    return m;
}

// GPT-J: one LayerNorm per block (attention and MLP in parallel), attention without biases,
// biased GeLU MLP, a biased untied output projection.
ModelConfig fromGptj(const HfKeys &k)
{
    ModelConfig m = familyDefaults("llama");
    m.layers = k.layers("n_layer");
    m.hidden = k.size("n_embd");
    m.heads = k.size("n_head");
    m.kvHeads = m.heads;
    m.ffnHidden = k.size("n_inner", 4 * m.hidden);
    m.vocab = k.size("vocab_size");
    m.maxPositions = k.size("n_positions", 2048);
    m.tiedEmbeddings = k.flag("tie_word_embeddings", false);
    checkActivation(k, "activation_function", kPlain);
    m.gatedMlp = false;
    m.rmsNorm = false;
    m.attentionBias = false;
    m.mlpBias = true;
    m.headBias = true;
    m.normPlacement = ModelConfig::NormPlacement::Parallel;
    m.dropout = anyDropout(k, {"resid_pdrop", "embd_pdrop", "attn_pdrop"}, false);
    return m;
}

// Falcon: multi-query (one K/V head) or num_kv_heads groups (new_decoder_architecture),
// attention and MLP in parallel on one LayerNorm (two with the new architecture), 4h GeLU MLP.
ModelConfig fromFalcon(const HfKeys &k)
{
    ModelConfig m = familyDefaults("llama");
    m.layers = k.present("num_hidden_layers") ? k.layers("num_hidden_layers") : k.layers("n_layer");
    m.hidden = k.size("hidden_size");
    m.heads = k.present("num_attention_heads") ? k.size("num_attention_heads") : k.size("n_head");
    const bool newArch = k.flag("new_decoder_architecture", false);
    m.kvHeads = newArch ? k.size("num_kv_heads", m.heads) : k.flag("multi_query", true) ? 1 : m.heads;
    m.ffnHidden = k.size("ffn_hidden_size", 4 * m.hidden);
    m.vocab = k.size("vocab_size");
    m.maxPositions = k.size("max_position_embeddings", 2048);
    m.tiedEmbeddings = k.flag("tie_word_embeddings", true);
    m.gatedMlp = false;
    m.rmsNorm = false;
    m.setLinearBias(k.flag("bias", false));
    if (k.flag("alibi", false))
        throw JsonError(k.pathOf("alibi"), "ALiBi positions are not modelled (rotary Falcon configs are)");
    const bool parallel = k.flag("parallel_attn", true);
    m.normPlacement = parallel && !newArch ? ModelConfig::NormPlacement::Parallel : ModelConfig::NormPlacement::Pre;
    if (newArch && k.size("num_ln_in_parallel_attn", 2) == 1)
        m.normPlacement = ModelConfig::NormPlacement::Parallel;
    m.dropout = anyDropout(k, {"attention_dropout", "hidden_dropout"}, false);
    return m;
}

// StarCoder2: GQA with biases everywhere (use_bias), LayerNorms, GeLU MLP, a window on every
// layer.
ModelConfig fromStarcoder2(const HfKeys &k)
{
    ModelConfig m = decoderBase(k, "llama", true);
    checkActivation(k, "hidden_act", kPlain);
    m.gatedMlp = false;
    m.rmsNorm = k.string("norm_type", "layer_norm") == "rms_norm";
    m.setLinearBias(k.flag("use_bias", true));
    m.dropout = anyDropout(k, {"attention_dropout", "residual_dropout", "embedding_dropout"}, false);
    uniformWindow(k, m);
    return m;
}

// gpt-oss: biased attention with a learned sink per head, its own head_dim, every layer MoE
// (biased router, experts with biases), alternating sliding and full attention.
ModelConfig fromGptOss(const HfKeys &k)
{
    ModelConfig m = decoderBase(k, "mixtral", false);
    m.attentionBias = k.flag("attention_bias", true);
    m.mlpBias = true;
    m.attentionSinks = true;
    m.routerBias = true;
    m.experts = k.size("num_local_experts");
    m.topK = k.present("num_experts_per_tok") ? k.size("num_experts_per_tok") : k.size("experts_per_token");
    m.slidingWindow = k.size("sliding_window", 128);
    std::vector<std::string> kinds = layerTypes(k, m.layers);
    if (kinds.empty())
        for (int i = 0; i < m.layers; ++i)
            kinds.push_back(i % 2 == 0 ? "sliding" : "global");
    m.pattern = compact(kinds);
    return m;
}

// NemotronH: one sublayer per layer as hybrid_override_pattern says (M Mamba-2, * attention,
// - a squared-ReLU MLP, E MoE), RMSNorm before each.
ModelConfig fromNemotronH(const HfKeys &k)
{
    ModelConfig m = familyDefaults("llama");
    m.layers = k.layers("num_hidden_layers");
    m.hidden = k.size("hidden_size");
    m.heads = k.size("num_attention_heads");
    m.kvHeads = k.size("num_key_value_heads", m.heads);
    m.ffnHidden = k.size("intermediate_size");
    m.vocab = k.size("vocab_size");
    m.maxPositions = k.size("max_position_embeddings", DEFAULT_MAX_SEQ);
    m.tiedEmbeddings = k.flag("tie_word_embeddings", false);
    m.gatedMlp = false;
    m.attentionBias = k.flag("attention_bias", false);
    m.mlpBias = k.flag("mlp_bias", false);
    checkActivation(k, "mlp_hidden_act", kPlain);
    if (k.present("attention_head_dim") || k.present("head_dim"))
        m.headDimension = k.present("attention_head_dim") ? k.size("attention_head_dim") : k.size("head_dim");
    m.mambaHeads = k.size("mamba_num_heads");
    m.mambaHeadDim = k.size("mamba_head_dim");
    m.ssmState = k.size("ssm_state_size");
    m.mambaGroups = k.size("n_groups", 1);
    m.convKernel = k.size("conv_kernel", 4);
    m.mambaChunk = k.size("chunk_size", 256);
    m.mambaBias = k.flag("use_bias", false);
    m.mambaConvBias = k.flag("use_conv_bias", true);
    if (k.present("n_routed_experts")) {
        m.family = "mixtral";
        m.experts = k.size("n_routed_experts");
        m.topK = k.size("num_experts_per_tok");
        m.expertFfnHidden = k.size("moe_intermediate_size");
        m.sharedExperts = k.size("n_shared_experts", 0, 0);
        m.sharedFfnHidden = k.size("moe_shared_expert_intermediate_size", m.expertFfnHidden);
        m.sharedExperts = m.sharedExperts > 0 ? 1 : 0;
    }
    std::string error;
    const std::string pattern = k.string("hybrid_override_pattern", "");
    const auto runs = parseHybridPattern(pattern, error);
    if (!runs)
        throw JsonError(k.pathOf("hybrid_override_pattern"), error);
    if (patternLength(*runs) != m.layers)
        throw JsonError(k.pathOf("hybrid_override_pattern"),
                        "has " + std::to_string(pattern.size()) + " layers, the model " + std::to_string(m.layers) +
                            " (num_hidden_layers)");
    m.pattern = *runs;
    return m;
}

// Llama 4 (text model): MoE every interleave_moe_layer_step layers with one shared expert
// of the experts' width, dense layers of intermediate_size_mlp between; QK norms without
// weights. Chunked attention (attention_chunk_size) is modelled as full attention.
ModelConfig fromLlama4(const HfKeys &k)
{
    ModelConfig m = decoderBase(k, "mixtral", false);
    checkActivation(k, "hidden_act", {"silu", "swish"});
    m.experts = k.size("num_local_experts");
    m.topK = k.size("num_experts_per_tok", 1);
    m.expertFfnHidden = k.size("intermediate_size");
    m.ffnHidden = k.size("intermediate_size_mlp", m.expertFfnHidden);
    m.sharedExperts = 1;
    const int step = k.size("interleave_moe_layer_step", 1);
    std::vector<std::string> kinds;
    for (int i = 0; i < m.layers; ++i)
        kinds.push_back((i + 1) % step == 0 ? "moe" : "dense");
    if (step > 1)
        m.pattern = compact(kinds);
    return m;
}

struct HfFamily {
    const char *type;
    std::function<ModelConfig(const HfKeys &, const std::string &)> read;
};

const std::vector<HfFamily> &families()
{
    static const std::vector<HfFamily> list = {
        {"gpt2", [](const HfKeys &k, const std::string &) { return fromGpt2(k); }},
        {"bert", [](const HfKeys &k, const std::string &) { return fromBert(k); }},
        {"llama", fromLlama},
        {"mistral", fromLlama},
        {"mixtral", fromLlama},
        {"minicpm", fromLlama},
        {"phi3", fromLlama},
        {"qwen2", fromQwen},
        {"qwen2_moe", fromQwen},
        {"qwen3", fromQwen},
        {"qwen3_moe", fromQwen},
        {"deepseek", fromDeepseek},
        {"deepseek_v2", fromDeepseek},
        {"deepseek_v3", fromDeepseek},
        {"gemma", fromGemma},
        {"gemma2", fromGemma},
        {"gemma3", fromGemma},
        {"gemma3_text", fromGemma},
        {"phi", [](const HfKeys &k, const std::string &) { return fromPhi(k); }},
        {"gpt_neox", [](const HfKeys &k, const std::string &) { return fromGptNeox(k); }},
        {"gptj", [](const HfKeys &k, const std::string &) { return fromGptj(k); }},
        {"falcon", [](const HfKeys &k, const std::string &) { return fromFalcon(k); }},
        {"starcoder2", [](const HfKeys &k, const std::string &) { return fromStarcoder2(k); }},
        {"gpt_oss", [](const HfKeys &k, const std::string &) { return fromGptOss(k); }},
        {"nemotron_h", [](const HfKeys &k, const std::string &) { return fromNemotronH(k); }},
        {"llama4", [](const HfKeys &k, const std::string &) { return fromLlama4(k); }},
        {"llama4_text", [](const HfKeys &k, const std::string &) { return fromLlama4(k); }}};
    return list;
}

// The config.json key behind a model-file key, for messages.
std::string hfKey(const std::string &type, const std::string &key)
{
    static const std::pair<const char *, const char *> gpt2[] = {
        {"layers", "n_layer"}, {"hidden", "n_embd"}, {"heads", "n_head"}, {"kv_heads", "n_head"},
        {"ffn_hidden", "n_inner"}, {"vocab", "vocab_size"}, {"max_positions", "n_positions"},
        {"seq_length", "n_positions"}};
    static const std::pair<const char *, const char *> other[] = {
        {"layers", "num_hidden_layers"}, {"hidden", "hidden_size"},
        {"heads", "num_attention_heads"}, {"kv_heads", "num_key_value_heads"},
        {"ffn_hidden", "intermediate_size"}, {"vocab", "vocab_size"},
        {"max_positions", "max_position_embeddings"}, {"seq_length", "max_position_embeddings"},
        {"experts", "num_local_experts"}, {"top_k", "num_experts_per_tok"},
        {"type_vocab", "type_vocab_size"}, {"expert_ffn_hidden", "moe_intermediate_size"},
        {"head_dim", "head_dim"}, {"layer_pattern", "num_hidden_layers"},
        {"mamba_heads", "mamba_num_heads"}, {"ssm_state", "ssm_state_size"}, {"mamba_groups", "n_groups"}};
    if (type == "gpt2" || type == "gptj") {
        for (const auto &[k, v] : gpt2)
            if (key == k)
                return v;
    }
    for (const auto &[k, v] : other)
        if (key == k)
            return v;
    return key;
}

} // namespace

std::string hfModelSource(const std::string &origin)
{
    return "Hugging Face config.json (" + origin + ")";
}

std::string hfSupportedModelTypes()
{
    std::string out;
    for (const auto &f : families())
        out += (out.empty() ? "" : ", ") + std::string(f.type);
    return out;
}

Result<ModelConfig> importHfConfig(const Json &j, const std::string &origin)
{
    try {
        requireObject(j, "");
        if (!has(j, "model_type"))
            throw JsonError("model_type", "required field is missing (a Hugging Face config.json "
                                          "names its model_type; supported: " +
                                              hfSupportedModelTypes() + ")");
        const std::string type = getString(j, "model_type", "");
        const HfKeys keys(j);
        if (has(j, "text_config") && !j.at("text_config").is_null() && !j.at("text_config").is_object())
            throw JsonError("text_config", "expected an object");
        const auto family = std::find_if(families().begin(), families().end(),
                                         [&](const HfFamily &f) { return type == f.type; });
        if (family == families().end())
            throw JsonError("model_type", "unsupported model_type '" + type +
                                              "' (supported: " + hfSupportedModelTypes() + ")");
        ModelConfig m = family->read(keys, type);
        // A head_dim of the usual width is written as hidden / heads (no head_dim key).
        if (m.headDimension > 0 && static_cast<long long>(m.headDimension) * m.heads == m.hidden)
            m.headDimension = 0;
        m.name = hfModelName(j, origin);
        m.seqLength = std::min(m.maxPositions > 0 ? m.maxPositions : DEFAULT_MAX_SEQ, DEFAULT_MAX_SEQ);
        m.globalBatch = 4096;
        // config.json does not say how the model is trained (`_attn_implementation` is a
        // load-time choice of transformers, rarely saved): flash attention stays the family
        // default that the family's reader took from familyDefaults().
        m.flashAttention = familyDefaults(m.family).flashAttention;
        m.source = hfModelSource(origin);
        if (const ConfigProblem p = findProblem(m); !p.reason.empty()) {
            const std::string key = hfKey(type, p.key);
            throw JsonError(keys.present(key.c_str()) ? keys.pathOf(key.c_str()) : key, p.reason);
        }
        return m;
    } catch (const JsonError &e) {
        return Result<ModelConfig>::failure(formatError(origin, e.path(), e.reason()));
    }
}

} // namespace nest
