#include "RecomputeModules.h"

#include "ModelProfile.h"

#include <array>
#include <utility>

namespace nest {

namespace {

constexpr std::array<std::pair<const char *, RecomputeModule>, 4> kModules = {{
    {"core_attn", RecomputeModule::CoreAttn},
    {"moe_act", RecomputeModule::MoeAct},
    {"layernorm", RecomputeModule::LayerNorm},
    {"mla_up_proj", RecomputeModule::MlaUpProj},
}};

// Megatron-Core's whole-submodule checkpoints, which the model does not price.
constexpr std::array<const char *, 3> kUnmodelled = {"mlp", "moe", "shared_experts"};

} // namespace

std::vector<std::string> recomputeModuleNames(RecomputeModules modules)
{
    std::vector<std::string> out;
    for (const auto &[name, m] : kModules)
        if (modules.has(m))
            out.emplace_back(name);
    return out;
}

std::string recomputeModulesText(RecomputeModules modules, const std::string &separator)
{
    std::string out;
    for (const std::string &name : recomputeModuleNames(modules))
        out += (out.empty() ? "" : separator) + name;
    return out;
}

std::optional<RecomputeModules> parseRecomputeModules(const std::vector<std::string> &names, std::string *error)
{
    RecomputeModules out;
    out.mask = 0;
    for (const std::string &name : names) {
        bool known = false;
        for (const auto &[n, m] : kModules)
            if (name == n) {
                out.mask |= static_cast<unsigned>(m);
                known = true;
            }
        if (known)
            continue;
        if (error) {
            bool megatron = false;
            for (const char *n : kUnmodelled)
                megatron = megatron || name == n;
            *error = megatron ? "recompute module '" + name +
                                    "' checkpoints a whole submodule, which the cost model does not price "
                                    "(modelled: core_attn, moe_act, layernorm, mla_up_proj)"
                              : "unknown recompute module '" + name +
                                    "' (one of core_attn, moe_act, layernorm, mla_up_proj)";
        }
        return std::nullopt;
    }
    return out;
}

std::optional<RecomputeModules> parseRecomputeModules(const std::string &list, std::string *error)
{
    std::vector<std::string> names;
    std::string cur;
    for (const char ch : list + ",") {
        if (ch == ',' || ch == ' ' || ch == '\t') {
            if (!cur.empty())
                names.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    return parseRecomputeModules(names, error);
}

std::string recomputeModulesProblem(RecomputeModules modules, const ModelProfile &model)
{
    bool moe = false, mla = false;
    for (const LayerProfile &l : model.layers) {
        moe = moe || l.expertActivationStashTpBytes > 0;
        mla = mla || l.mlaUpStashTpBytes > 0;
    }
    if (modules.has(RecomputeModule::MoeAct) && !moe)
        return "moe_act recomputes the experts' activation, and the model '" + model.name +
               "' has no MoE layers built from shapes";
    if (modules.has(RecomputeModule::MlaUpProj) && !mla)
        return "mla_up_proj recomputes multi-latent attention's up projections, and the model '" + model.name +
               "' has no multi-latent attention built from shapes";
    return "";
}

} // namespace nest
