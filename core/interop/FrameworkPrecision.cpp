#include "FrameworkPrecision.h"

namespace nest {

namespace {

// The distributed optimizer (ZeRO-1 and up): what Megatron's --fp8-param-gather and NeMo's
// fp8_params need, and what the cost model's low-precision gathers assume (Evaluator.cpp).
bool shardedOptimizer(const Plan &plan)
{
    return !plan.stages.empty() && plan.stages.front().zero >= 1;
}

} // namespace

std::vector<std::string> megatronPrecisionFlags(const Plan &plan, bool lowPrecisionParamGather)
{
    // Megatron-LM's Transformer-Engine arguments (megatron/training/arguments.py,
    // _add_transformer_engine_args): hybrid = E4M3 forward, E5M2 gradients.
    std::vector<std::string> flags{"--bf16"};
    const Precision &p = plan.precision;
    switch (p.format) {
    case NumberFormat::Bf16:
        return flags;
    case NumberFormat::Fp8:
        switch (p.recipe) {
        case Fp8Recipe::Delayed:
            flags.insert(flags.end(), {"--fp8-format", "hybrid", "--fp8-recipe", "delayed", "--fp8-amax-history-len",
                                       "1024", "--fp8-amax-compute-algo", "max"});
            break;
        case Fp8Recipe::Current:
            flags.insert(flags.end(), {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"});
            break;
        case Fp8Recipe::Blockwise:
            flags.insert(flags.end(), {"--fp8-format", "e4m3", "--fp8-recipe", "blockwise"});
            break;
        }
        break;
    case NumberFormat::Mxfp8:
        flags.insert(flags.end(), {"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"});
        break;
    case NumberFormat::Nvfp4:
        flags.insert(flags.end(), {"--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"});
        break;
    }
    if (lowPrecisionParamGather && shardedOptimizer(plan))
        flags.push_back(p.format == NumberFormat::Nvfp4 ? "--fp4-param-gather" : "--fp8-param-gather");
    return flags;
}

NemoPrecision nemoPrecision(const Plan &plan)
{
    NemoPrecision p;
    p.trainer["precision"] = "bf16";
    // O2: BF16 parameters with FP32 main parameters in the optimizer (Megatron's --bf16).
    p.model["megatron_amp_O2"] = true;
    if (plan.precision == Precision{NumberFormat::Fp8, Fp8Recipe::Delayed}) {
        // NeMo 1.x megatron_gpt_config.yaml: Transformer Engine's DelayedScaling.
        p.model["fp8"] = true;
        p.model["fp8_e4m3"] = false;
        p.model["fp8_hybrid"] = true;
        p.model["fp8_margin"] = 0;
        p.model["fp8_amax_history_len"] = 1024;
        p.model["fp8_amax_compute_algo"] = "max";
        // No fp8_params: the pinned NeMo's configs and Megatron-Core's TransformerConfig do
        // not declare it (../shared/export-check rejects the key), so the BF16 weights stay.
    }
    return p;
}

DeepSpeedPrecision deepSpeedPrecision(const Plan &plan)
{
    DeepSpeedPrecision p;
    p.config["bf16"] = {{"enabled", true}};
    p.flags = {"--bf16"};  // Megatron-DeepSpeed trains in BF16 only (FrameworkRules::precisions)
    (void)plan;
    return p;
}

TorchtitanPrecision torchtitanPrecision(const Plan &plan)
{
    // FSDP's MixedPrecisionPolicy (param_dtype bfloat16, reduce_dtype float32); without FSDP
    // torch.autocast (torchtitan/distributed/utils.py maybe_enable_amp).
    TorchtitanPrecision p;
    p.training = {{"mixed_precision_param", "bfloat16"}, {"mixed_precision_reduce", "float32"}};
    const bool fsdp = !plan.stages.empty() && plan.stages.front().zero >= 2;
    if (plan.precision == Precision{NumberFormat::Fp8, Fp8Recipe::Current}) {
        // torchao float8 training, tensorwise dynamic scaling; the output layer stays BF16.
        p.converters = {"float8"};
        p.float8 = {{"recipe_name", "tensorwise"},
                    {"enable_fsdp_float8_all_gather", fsdp},
                    {"precompute_float8_dynamic_scale_for_fsdp", fsdp},
                    {"filter_fqns", Json::array({"output"})}};
    } else if (plan.precision.format == NumberFormat::Mxfp8) {
        p.converters = {"mx"};
        p.mx = {{"recipe_name", "mxfp8_cublas"}, {"filter_fqns", Json::array({"output"})}};
    }
    return p;
}

std::string precisionDescription(const Plan &plan)
{
    const char *const bf16 = "BF16 (bfloat16 parameters and activations, FP32 main weights and gradient reduction)";
    if (!plan.precision.lowPrecision())
        return bf16;
    return precisionLabel(plan.precision) + " linear layers (attention core, router, norms, embedding and output " +
           "layer in BF16) over " + bf16;
}

} // namespace nest
