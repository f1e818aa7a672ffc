#pragma once
// The mixed-precision settings each framework's launch files carry, one function per
// framework (issue 47). Every plan trains in BF16 today; a plan's precision (FP8 recipes,
// MXFP8, NVFP4) extends these functions and nothing else: the writers emit what they return.
#include "JsonUtil.h"
#include "Plan.h"

#include <string>
#include <vector>

namespace nest {

// Megatron-LM training flags ("--bf16"); Megatron-DeepSpeed takes the same.
std::vector<std::string> megatronPrecisionFlags(const Plan &plan);

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

// torchtitan: the [training] keys (mixed_precision_param, mixed_precision_reduce); tables and
// keys of other sections (a float8 converter) would join here.
Json torchtitanPrecision(const Plan &plan);

// "BF16 (parameters and activations in bfloat16, FP32 master weights and gradient reduction)":
// the header line every export carries.
std::string precisionDescription(const Plan &plan);

} // namespace nest
