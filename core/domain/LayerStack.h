#pragma once
// A model's stack of layers as kinds (issue 45): each layer has a mixer (attention, Mamba-2 or
// none), an attention kind (full MHA/GQA, sliding window, MLA) and an MLP kind (dense, MoE or
// none). A model names the kinds it uses and writes its stack as a compact pattern of runs
// ("3*dense, 58*moe", "5*sliding, global", NemotronH's "M-M-M*-...") that repeats to the layer
// count. The sizes of each part (heads, MLA ranks, Mamba state, expert widths) are the model's
// (ModelConfig); a kind picks the parts and may override the window and the dense MLP width.
// docs/formats.md (Model inputs) has the file form.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nest {

enum class MixerKind { Attention, Mamba, None };
enum class AttentionKind { Full, Sliding, Mla };
enum class MlpKind { Dense, Moe, None };

const char *toString(MixerKind k);      // "attention", "mamba", "none"
const char *toString(AttentionKind k);  // "full", "sliding", "mla"
const char *toString(MlpKind k);        // "dense", "moe", "none"
std::optional<MixerKind> mixerKindFromString(std::string_view s);
std::optional<AttentionKind> attentionKindFromString(std::string_view s);  // also "mha", "gqa" = full
std::optional<MlpKind> mlpKindFromString(std::string_view s);

// One kind of layer. `name` is what the pattern writes.
struct LayerKindSpec {
    std::string name;
    MixerKind mixer = MixerKind::Attention;
    AttentionKind attention = AttentionKind::Full;
    MlpKind mlp = MlpKind::Dense;
    int window = 0;     // sliding attention: keys each query sees; 0 = the model's sliding_window
    int ffnHidden = 0;  // dense MLP width; 0 = the model's ffn_hidden
    bool operator==(const LayerKindSpec &) const = default;
};

// One run of a pattern: `count` layers of kind `kind`.
struct LayerRun {
    std::string kind;
    int count = 1;
    bool operator==(const LayerRun &) const = default;
};

// The kinds every model knows without defining them, given its default attention (full, or
// MLA when the model has MLA ranks) and its default MLP (MoE when it has experts, else dense):
//   dense    default attention + dense MLP       moe       default attention + MoE MLP
//   sliding  sliding window + default MLP        global    full attention + default MLP
//   mla      MLA + default MLP                   mamba     Mamba-2 mixer, no MLP
//   attention default attention, no MLP         mlp       dense MLP only
//   moe_mlp  MoE MLP only                        mamba_mlp Mamba-2 + default MLP
// A model's own "layer_kinds" may redefine any of these names.
std::vector<LayerKindSpec> builtinLayerKinds(AttentionKind defaultAttention, MlpKind defaultMlp);
// "dense, moe, sliding, global, mla, mamba, attention, mlp, moe_mlp, mamba_mlp"
std::string builtinLayerKindNames();

// Parses a pattern string: items separated by "," or " then ", each "NAME", "N*NAME", "N NAME"
// or "N x NAME" (N >= 1). nullopt with `error` set ("item 3: ...") on a malformed item.
std::optional<std::vector<LayerRun>> parseLayerPattern(std::string_view text, std::string &error);
// NemotronH's hybrid_override_pattern: one character per layer, M = mamba, * = attention,
// - = mlp, E = moe_mlp. nullopt with `error` naming the first other character.
std::optional<std::vector<LayerRun>> parseHybridPattern(std::string_view text, std::string &error);
// The compact text of runs: "3*dense, 58*moe" (a count of 1 is left out).
std::string formatLayerPattern(const std::vector<LayerRun> &runs);
// Kind names compare case-insensitively: "MoE" is "moe".
std::string lowerKindName(std::string_view name);
// Layers the runs hold once (the pattern's period).
long long patternLength(const std::vector<LayerRun> &runs);

} // namespace nest
