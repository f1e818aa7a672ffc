#pragma once
// Selective recomputation by module, as Megatron-Core runs it (`--recompute-granularity
// selective --recompute-modules ...`; megatron/core/transformer/transformer_config.py,
// `recompute_modules`, default ["core_attn"]): which parts of a block a stage with
// Recompute::Selective reruns in backward instead of keeping their outputs
// (docs/cost-model.md, "Recomputation by module").
//   core_attn    the core attention (Korthikanti et al.'s selective recomputation: the saved
//                softmax, or with a fused kernel only its statistics; rerun in backward);
//   layernorm    the block's input and pre-MLP norms: their outputs are discarded after the
//                linear layers read them and rebuilt from the kept inputs;
//   moe_act      the routed experts' activation function: its output (the down projections'
//                input) is discarded and recomputed from the kept up-projection output;
//   mla_up_proj  multi-latent attention's up projections and RoPE: Q, K and V are discarded
//                after the core attention and rebuilt from the kept down-projection outputs.
// Megatron-Core's other modules (mlp, moe, shared_experts) checkpoint whole submodules; the
// model has no form for them and refuses them by name.
#include <optional>
#include <string>
#include <vector>

namespace nest {

struct ModelProfile;

enum class RecomputeModule : unsigned { CoreAttn = 1u, LayerNorm = 2u, MoeAct = 4u, MlaUpProj = 8u };

// Every module, in Megatron-Core's order.
inline constexpr RecomputeModule kRecomputeModules[] = {RecomputeModule::CoreAttn, RecomputeModule::MoeAct,
                                                        RecomputeModule::LayerNorm, RecomputeModule::MlaUpProj};

struct RecomputeModules {
    unsigned mask = static_cast<unsigned>(RecomputeModule::CoreAttn);  // Megatron-Core's default

    bool has(RecomputeModule m) const { return (mask & static_cast<unsigned>(m)) != 0; }
    bool isDefault() const { return mask == static_cast<unsigned>(RecomputeModule::CoreAttn); }
    bool operator==(const RecomputeModules &) const = default;
};

// Megatron-Core's names, in its order: "core_attn", "moe_act", "layernorm", "mla_up_proj".
std::vector<std::string> recomputeModuleNames(RecomputeModules modules);
// "core_attn,layernorm": the names joined by `separator` ("" for none).
std::string recomputeModulesText(RecomputeModules modules, const std::string &separator = ",");
// From a list of names (commas or spaces between them; an empty list means none). A name
// Megatron-Core has but the model does not (mlp, moe, shared_experts) or an unknown name:
// nullopt, with the reason in `error`.
std::optional<RecomputeModules> parseRecomputeModules(const std::vector<std::string> &names, std::string *error);
std::optional<RecomputeModules> parseRecomputeModules(const std::string &list, std::string *error);
// Why `modules` cannot apply to `model` ("" when they can), as Megatron-Core refuses them
// (TransformerConfig.__post_init__): moe_act without MoE layers (it needs the grouped-GEMM
// experts), mla_up_proj without multi-latent attention.
std::string recomputeModulesProblem(RecomputeModules modules, const ModelProfile &model);

} // namespace nest
