#pragma once
// The architecture hyperparameters of a transformer (what a Hugging Face config.json or a
// paper's model table says), from which ModelBuilder derives the per-layer ModelProfile.
// Presets carry published numbers with their sources (see ModelConfig.cpp and
// docs/formats.md (Model inputs)).
#include "JsonUtil.h"
#include "Result.h"

#include <string>
#include <vector>

namespace nest {

struct ModelConfig {
    std::string name;
    // "gpt" (pre-LN, learned positions, GeLU MLP, biases, tied embeddings),
    // "llama" (RMSNorm, rotary positions, SwiGLU, no biases, untied output),
    // "mixtral" (llama with mixture-of-experts MLPs), "bert" (post-LN encoder, MLM head).
    std::string family = "gpt";
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kvHeads = 0;           // grouped-query attention; == heads for multi-head attention
    int ffnHidden = 0;         // MLP inner size (per expert for MoE)
    int vocab = 0;
    int maxPositions = 0;      // learned position embeddings (gpt, bert); 0 = none (rotary)
    int typeVocab = 0;         // BERT token-type (segment) embeddings; 0 = none
    int experts = 1;           // MoE experts per block (1 = dense)
    int topK = 1;              // experts active per token
    bool tiedEmbeddings = true;// output projection shares the input embedding matrix
    bool gatedMlp = false;     // SwiGLU: three matrices (gate, up, down) instead of two
    bool linearBias = true;    // biases on the attention and MLP linears
    bool rmsNorm = false;      // RMSNorm (weight only) instead of LayerNorm (weight + bias)
    bool dropout = true;       // dropout layers present (their masks are stashed)
    // Fused attention (FlashAttention, Dao et al. 2022): the s x s scores, softmax and
    // dropout tensors are never materialised; backward keeps the output and a per-row FP32
    // logsumexp instead. Family default: true for llama and mixtral (their training stacks:
    // Megatron-Core + Transformer Engine, NeMo), false for gpt and bert (the published
    // measurements we validate against predate FlashAttention).
    bool flashAttention = false;
    // Causal (decoder) self-attention: the kernels skip the masked half of the s x s work
    // (the executed attention FLOPs halve; model FLOPs for MFU keep the full s^2 count, as
    // Narayanan et al.). Family default: true except bert (bidirectional encoder).
    bool causal = true;
    int seqLength = 2048;      // tokens per sample (training sequence length)
    int globalBatch = 4096;    // samples per iteration (default for plans)
    std::string source;        // citation of the published numbers (presets)

    int headDim() const { return heads > 0 ? hidden / heads : 0; }
    // Width of the K (or V) projection: hidden * kvHeads / heads.
    long long kvHidden() const
    {
        return heads > 0 ? static_cast<long long>(hidden) / heads * kvHeads : 0;
    }
    bool operator==(const ModelConfig &) const = default;
};

// Family names accepted in files: gpt, llama, mixtral, bert.
const std::vector<std::string> &modelFamilies();
// A config with the family's structural defaults (norm, bias, gating, tying, dropout,
// flash attention, experts, sequence length); the sizes are left 0. Unknown family: the "gpt" defaults.
ModelConfig familyDefaults(const std::string &family);

// Presets: gpt3-175b, gpt3-35b, llama2-7b, llama3-70b, bert-large, mixtral-8x7b.
const std::vector<ModelConfig> &modelPresets();
// Case-insensitive; '_' and ' ' are read as '-'. Error lists the known names.
Result<ModelConfig> modelPreset(const std::string &name);
// "gpt3-175b, gpt3-35b, ..." for messages.
std::string modelPresetNames();

// The first problem of a config: `key` is the model-file key of the offending field
// ("heads", "kv_heads", ...), both empty when the config is valid.
struct ConfigProblem {
    std::string key;
    std::string reason;
};
ConfigProblem findProblem(const ModelConfig &m);

// Empty when valid, otherwise one sentence naming the first problem (e.g. "heads (96) must
// divide hidden (1000)").
std::string validate(const ModelConfig &m);

// Our model file (docs/formats.md (Model inputs)): {"preset": NAME, ...overrides} or the full
// hyperparameters {"family", "layers", "hidden", ...}. Unknown keys are rejected so that
// typos never pass silently. Throws JsonError(path, reason), including for validate().
ModelConfig modelConfigFromJson(const Json &j, const std::string &path);
// The full hyperparameters (every key written), loadable by modelConfigFromJson.
Json modelConfigToJson(const ModelConfig &m);

} // namespace nest
