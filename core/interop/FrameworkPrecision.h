#pragma once
// The mixed-precision settings each framework's launch files carry, one function per
// framework (issue 47), from the plan's precision (issue 46; docs/interop.md, "Precision"):
// BF16 always, and the low-precision recipe on top where the plan has one. The writers emit
// what these return. A precision the framework version does not train in never reaches them:
// nearestRunnablePlan() falls back to BF16 first (FrameworkRules::precisions).
#include "JsonUtil.h"
#include "Plan.h"

#include <string>
#include <vector>

namespace nest {

// Megatron-LM training flags ("--bf16"); Megatron-DeepSpeed takes the same. The parameter
// gather in the low precision (--fp8-param-gather) only where the priced stack gathers so
// (FrameworkProfile::gathersLowPrecision).
std::vector<std::string> megatronPrecisionFlags(const Plan &plan, bool lowPrecisionParamGather);

// NeMo 1.x keys: `trainer` and `model` maps of scalar values (trainer.precision "bf16",
// model.megatron_amp_O2 true), written in this order under those sections.
struct NemoPrecision {
    Json trainer = Json::object();
    Json model = Json::object();
};
NemoPrecision nemoPrecision(const Plan &plan);

// DeepSpeed: the config's top-level keys ({"bf16": {"enabled": true}}) and the Megatron-DeepSpeed
// flags of the launch script.
struct DeepSpeedPrecision {
    Json config = Json::object();
    std::vector<std::string> flags;
};
DeepSpeedPrecision deepSpeedPrecision(const Plan &plan);

// torchtitan: the [training] keys (mixed_precision_param, mixed_precision_reduce), the model
// converters ("float8" or "mx") and their tables ([float8] / [mx]), empty in BF16.
struct TorchtitanPrecision {
    Json training = Json::object();
    std::vector<std::string> converters;
    Json float8 = Json::object();
    Json mx = Json::object();
};
TorchtitanPrecision torchtitanPrecision(const Plan &plan);

// "BF16 (parameters and activations in bfloat16, FP32 master weights and gradient reduction)":
// the header line every export carries.
std::string precisionDescription(const Plan &plan);

} // namespace nest
