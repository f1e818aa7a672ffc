#pragma once
// Architecture hyperparameters -> the per-layer chain the cost model reads: an embedding
// layer, one layer per transformer block (kind Moe for mixture-of-experts blocks) and a
// head/loss layer. Every quantity is per ONE SAMPLE (one sequence of seqLength tokens) for
// the unsharded layer; formulas and sources in docs/formats.md (Model inputs):
//  - FLOPs: 2 per multiply-add; attention scores and values 2*s*s*h each (full s^2, as
//    Narayanan et al. SC'21); backward = 2 x forward. Norms, biases, softmax and
//    element-wise work are not counted (model FLOPs).
//  - Activations: Korthikanti et al. (MLSys'23) Sec. 4.1 / Table 2, every saved tensor
//    counted, extended to grouped-query attention, SwiGLU, MoE and dropout-free models;
//    with ModelConfig::flashAttention the s x s attention tensors are replaced by the
//    per-row FP32 logsumexp (Dao et al. 2022).
//  - Communication: Megatron-LM tensor parallelism (two all-reduces of s*h per block),
//    MoE all-to-all dispatch + combine, ring exchange of K and V for context parallelism.
#include "ModelConfig.h"
#include "ModelProfile.h"

namespace nest {

// Assumes validate(config) is empty (loaders guarantee it); never throws.
ModelProfile buildProfile(const ModelConfig &config);

// validate() first; the error names the model.
Result<ModelProfile> buildValidatedProfile(const ModelConfig &config);

} // namespace nest
