#pragma once
// The architecture hyperparameters of a transformer (what a Hugging Face config.json or a
// paper's model table says), from which ModelBuilder derives the per-layer ModelProfile.
// Presets carry published numbers with their sources (see ModelConfig.cpp and
// docs/formats.md (Model inputs)).
#include "ExpertRouting.h"
#include "JsonUtil.h"
#include "LayerStack.h"
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
    bool attentionBias = true; // biases on the attention linears (Q, K, V, output)
    bool mlpBias = true;       // biases on the MLP linears (experts' too)
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

    // --- Layer kinds (issue 45; docs/formats.md (Model inputs)) ---------------------------
    int headDimension = 0;     // attention head width; 0 = hidden / heads
    bool qkvBias = false;      // biases on Q, K, V alone (Qwen2); attentionBias implies them
    bool headBias = false;     // a bias on the output projection (phi, GPT-J)
    bool qkNorm = false;       // per-head norms on Q and K (Qwen3, Gemma 3)
    bool attentionSinks = false;  // one learned sink logit per head (gpt-oss)
    // Norms per block: Pre = one before each sublayer (attention, MLP); Parallel = one for
    // both (GPT-J, phi, Falcon-7B: attention and MLP read the same normed input); Sandwich =
    // one before and one after each sublayer (Gemma 2 and 3).
    enum class NormPlacement { Pre, Parallel, Sandwich };
    NormPlacement normPlacement = NormPlacement::Pre;
    int slidingWindow = 0;     // keys a sliding-window query sees (0: no sliding layers)
    // Multi-head latent attention (DeepSeek-V2/V3): kvLoraRank > 0 makes MLA the default
    // attention. qLoraRank 0 = Q projected directly (V2-Lite).
    int qLoraRank = 0, kvLoraRank = 0, qkRopeHeadDim = 0, qkNopeHeadDim = 0, vHeadDim = 0;
    // Mixture of experts beyond Mixtral: routed experts of their own width, shared experts
    // (each `sharedFfnHidden` wide) every token passes, a sigmoid gate on the shared expert's
    // output (Qwen2-MoE), a bias on the router (gpt-oss; DeepSeek-V3's correction bias).
    int expertFfnHidden = 0;   // 0 = ffnHidden
    int sharedExperts = 0;
    int sharedFfnHidden = 0;   // 0 = the routed experts' width
    bool sharedExpertGate = false;
    bool routerBias = false;
    // Group-limited routing (DeepSeek-V2/V3's n_group / topk_group; Megatron-Core's
    // --moe-router-num-groups / --moe-router-group-topk): the experts form `routerGroups`
    // contiguous groups and a token's top-k experts come from `routerGroupTopK` of them.
    // 0 = unlimited routing.
    int routerGroups = 0, routerGroupTopK = 0;
    // Mamba-2 mixers (NemotronH): heads x head width = the inner width; state size per
    // group, groups of B/C, the causal conv's width, the SSD chunk length.
    int mambaHeads = 0, mambaHeadDim = 0, ssmState = 0, mambaGroups = 1, convKernel = 4, mambaChunk = 256;
    bool mambaBias = false, mambaConvBias = true;
    // The stack: kinds defined by the file (beside builtinLayerKinds()) and the pattern of
    // runs that repeats to `layers` (empty: every layer the default kind).
    std::vector<LayerKindSpec> layerKinds;
    std::vector<LayerRun> pattern;
    int mtpLayers = 0;         // multi-token-prediction modules after the last block (DeepSeek-V3)

    int seqLength = 2048;      // tokens per sample (training sequence length)
    int globalBatch = 4096;    // samples per iteration (default for plans)
    std::string source;        // citation of the published numbers (presets)

    int headDim() const { return headDimension > 0 ? headDimension : heads > 0 ? hidden / heads : 0; }
    // Width of the K (or V) projection: headDim * kvHeads (hidden * kvHeads / heads).
    long long kvHidden() const
    {
        if (headDimension > 0)
            return static_cast<long long>(headDimension) * kvHeads;
        return heads > 0 ? static_cast<long long>(hidden) / heads * kvHeads : 0;
    }
    // Width of Q and of the attention output: headDim * heads (= hidden without head_dim).
    long long qHidden() const
    {
        return headDimension > 0 ? static_cast<long long>(headDimension) * heads : hidden;
    }
    bool linearBias() const { return attentionBias && mlpBias; }
    void setLinearBias(bool on) { attentionBias = mlpBias = on; }
    AttentionKind defaultAttention() const { return kvLoraRank > 0 ? AttentionKind::Mla : AttentionKind::Full; }
    MlpKind defaultMlp() const { return experts > 1 ? MlpKind::Moe : MlpKind::Dense; }
    int routedFfn() const { return expertFfnHidden > 0 ? expertFfnHidden : ffnHidden; }
    ExpertRouting routing() const { return {experts, topK, routerGroups, routerGroupTopK}; }
    int sharedFfn() const { return sharedFfnHidden > 0 ? sharedFfnHidden : routedFfn(); }
    // The kind called `name` (the file's own first, then the built-in ones); nullptr if none.
    const LayerKindSpec *findLayerKind(const std::string &name) const;
    // One resolved kind per block (window and dense width filled from the model), `layers`
    // entries: the pattern repeated and cut at the layer count. Assumes findProblem() passed.
    std::vector<LayerKindSpec> layerStack() const;
    bool operator==(const ModelConfig &) const = default;
};

const char *toString(ModelConfig::NormPlacement p);  // "pre", "parallel", "sandwich"

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
