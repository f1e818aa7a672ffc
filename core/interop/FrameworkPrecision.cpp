#include "FrameworkPrecision.h"

namespace nest {

std::vector<std::string> megatronPrecisionFlags(const Plan &)
{
    return {"--bf16"};
}

NemoPrecision nemoPrecision(const Plan &)
{
    NemoPrecision p;
    p.trainer["precision"] = "bf16";
    // O2: BF16 parameters with FP32 main parameters in the optimizer (Megatron's --bf16).
    p.model["megatron_amp_O2"] = true;
    return p;
}

DeepSpeedPrecision deepSpeedPrecision(const Plan &plan)
{
    DeepSpeedPrecision p;
    p.config["bf16"] = {{"enabled", true}};
    p.flags = megatronPrecisionFlags(plan);
    return p;
}

Json torchtitanPrecision(const Plan &)
{
    // FSDP's MixedPrecisionPolicy (param_dtype bfloat16, reduce_dtype float32); without FSDP
    // torch.autocast (torchtitan/distributed/utils.py maybe_enable_amp).
    return {{"mixed_precision_param", "bfloat16"}, {"mixed_precision_reduce", "float32"}};
}

std::string precisionDescription(const Plan &)
{
    return "BF16 (bfloat16 parameters and activations, FP32 main weights and gradient reduction)";
}

} // namespace nest
