#include "HfConfigImport.h"

#include <algorithm>
#include <filesystem>

namespace nest {

namespace {

constexpr long long MAX_SIZE = 100'000'000;
constexpr int DEFAULT_MAX_SEQ = 4096;

int size(const Json &j, const char *key)
{
    return static_cast<int>(getInt(j, key, "", 1, MAX_SIZE));
}

int size(const Json &j, const char *key, int fallback)
{
    return static_cast<int>(getInt(j, key, "", 1, MAX_SIZE, fallback));
}

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

// Dropout is present when any of the listed probabilities is positive; `fallback` when none
// of the keys is there.
bool anyDropout(const Json &j, std::initializer_list<const char *> keys, bool fallback)
{
    bool seen = false, positive = false;
    for (const char *k : keys) {
        if (!has(j, k))
            continue;
        seen = true;
        const double p = getNonNegative(j, k, "");
        if (p >= 1)
            throw JsonError(k, "a dropout probability must be below 1");
        positive = positive || p > 0;
    }
    return seen ? positive : fallback;
}

// Activations the gated (SwiGLU/GeGLU) MLP of llama-like models uses.
void checkActivation(const Json &j, const char *key, std::initializer_list<const char *> accepted)
{
    if (!has(j, key))
        return;
    const std::string act = getString(j, key, "");
    for (const char *a : accepted)
        if (act == a)
            return;
    std::string list;
    for (const char *a : accepted)
        list += (list.empty() ? "" : ", ") + std::string(a);
    throw JsonError(key, "activation '" + act + "' is not modelled (expected " + list + ")");
}

ModelConfig fromGpt2(const Json &j)
{
    ModelConfig m = familyDefaults("gpt");
    m.layers = size(j, "n_layer");
    m.hidden = size(j, "n_embd");
    m.heads = size(j, "n_head");
    m.kvHeads = m.heads;
    m.ffnHidden = size(j, "n_inner", 4 * m.hidden);  // null in GPT-2's config: 4h
    m.vocab = size(j, "vocab_size");
    m.maxPositions = size(j, "n_positions", size(j, "n_ctx", 1024));
    m.tiedEmbeddings = getBool(j, "tie_word_embeddings", "", true);
    m.dropout = anyDropout(j, {"resid_pdrop", "embd_pdrop", "attn_pdrop"}, true);
    checkActivation(j, "activation_function", {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh", "relu"});
    return m;
}

ModelConfig fromLlama(const Json &j, const std::string &family)
{
    ModelConfig m = familyDefaults(family);
    m.layers = size(j, "num_hidden_layers");
    m.hidden = size(j, "hidden_size");
    m.heads = size(j, "num_attention_heads");
    m.kvHeads = size(j, "num_key_value_heads", m.heads);
    m.ffnHidden = size(j, "intermediate_size");
    m.vocab = size(j, "vocab_size");
    m.maxPositions = size(j, "max_position_embeddings", DEFAULT_MAX_SEQ);
    m.tiedEmbeddings = getBool(j, "tie_word_embeddings", "", false);
    m.linearBias = getBool(j, "attention_bias", "", false) || getBool(j, "mlp_bias", "", false);
    checkActivation(j, "hidden_act", {"silu", "swish"});
    m.dropout = anyDropout(j, {"attention_dropout"}, false);
    if (has(j, "head_dim")) {
        const long long headDim = getInt(j, "head_dim", "", 1, MAX_SIZE);
        if (headDim * m.heads != m.hidden)
            throw JsonError("head_dim", "head_dim * num_attention_heads (" +
                                            std::to_string(headDim * m.heads) +
                                            ") differs from hidden_size (" +
                                            std::to_string(m.hidden) + "): not modelled");
    }
    if (family == "mixtral") {
        m.experts = size(j, "num_local_experts", 8);
        m.topK = size(j, "num_experts_per_tok", 2);
    }
    return m;
}

ModelConfig fromBert(const Json &j)
{
    ModelConfig m = familyDefaults("bert");
    m.layers = size(j, "num_hidden_layers");
    m.hidden = size(j, "hidden_size");
    m.heads = size(j, "num_attention_heads");
    m.kvHeads = m.heads;
    m.ffnHidden = size(j, "intermediate_size", 4 * m.hidden);
    m.vocab = size(j, "vocab_size");
    m.maxPositions = size(j, "max_position_embeddings", 512);
    m.typeVocab = static_cast<int>(getInt(j, "type_vocab_size", "", 0, MAX_SIZE, 2));
    checkActivation(j, "hidden_act", {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"});
    m.dropout = anyDropout(j, {"hidden_dropout_prob", "attention_probs_dropout_prob"}, true);
    return m;
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
        {"type_vocab", "type_vocab_size"}};
    if (type == "gpt2") {
        for (const auto &[k, v] : gpt2)
            if (key == k)
                return v;
    } else {
        for (const auto &[k, v] : other)
            if (key == k)
                return v;
    }
    return key;
}

} // namespace

std::string hfModelSource(const std::string &origin)
{
    return "Hugging Face config.json (" + origin + ")";
}

std::string hfSupportedModelTypes()
{
    return "gpt2, llama, mistral, mixtral, bert";
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
        ModelConfig m;
        if (type == "gpt2")
            m = fromGpt2(j);
        else if (type == "llama" || type == "mistral")
            m = fromLlama(j, "llama");
        else if (type == "mixtral")
            m = fromLlama(j, "mixtral");
        else if (type == "bert")
            m = fromBert(j);
        else
            throw JsonError("model_type", "unsupported model_type '" + type +
                                              "' (supported: " + hfSupportedModelTypes() + ")");
        m.name = hfModelName(j, origin);
        m.seqLength = std::min(m.maxPositions > 0 ? m.maxPositions : DEFAULT_MAX_SEQ, DEFAULT_MAX_SEQ);
        m.globalBatch = 4096;
        // config.json does not say how the model is trained (`_attn_implementation` is a
        // load-time choice of transformers, rarely saved): flash attention stays the family
        // default that fromGpt2/fromLlama/fromBert took from familyDefaults().
        m.flashAttention = familyDefaults(m.family).flashAttention;
        m.source = hfModelSource(origin);
        if (const ConfigProblem p = findProblem(m); !p.reason.empty())
            throw JsonError(hfKey(type, p.key), p.reason);
        return m;
    } catch (const JsonError &e) {
        return Result<ModelConfig>::failure(formatError(origin, e.path(), e.reason()));
    }
}

} // namespace nest
