#pragma once
// The number format of a plan's linear layers (issue 46; docs/cost-model.md, "Precision").
//
// What runs in it: the GEMMs of the linear layers inside the transformer, MoE, Mamba and MTP
// blocks (Transformer Engine's Linear / LayerNormLinear / GroupedLinear: QKV and output
// projections, MLA's down and up projections, the MLP and expert FFNs, Mamba's in/out
// projections). What does not: attention's core (QK^T, softmax, PV: the fused attention
// kernel runs in BF16), the MoE router (FP32 logits in Megatron-Core), norms, element-wise
// kernels, the embedding and the output layer (Megatron-Core's output_layer is not a TE
// module), the gradient reduction and the optimizer (FP32 master weights and Adam state).
//
// Formats (NVIDIA Transformer Engine 2.x user guide, "Using FP8 and FP4 with Transformer
// Engine"; OCP Microscaling Formats spec v1.0):
//   bf16   every GEMM in BF16 (the 2022 default).
//   fp8    E4M3 forward / E5M2 gradients with one scale per tensor, from an amax history
//          ("delayed"), from the current tensor ("current"), or one FP32 scale per 1x128
//          activation tile and 128x128 weight block ("blockwise", DeepSeek-V3's recipe).
//   mxfp8  E4M3 with one E8M0 scale per 32 elements (Blackwell tensor cores).
//   nvfp4  E2M1 with one E4M3 scale per 16 elements and an FP32 scale per tensor (Blackwell).
#include "JsonUtil.h"

#include <string>
#include <vector>

namespace nest {

enum class NumberFormat { Bf16, Fp8, Mxfp8, Nvfp4 };
enum class Fp8Recipe { Delayed, Current, Blockwise };
// Every value of each, in the order names and searches list them.
inline constexpr NumberFormat kNumberFormats[] = {NumberFormat::Bf16, NumberFormat::Fp8, NumberFormat::Mxfp8,
                                                  NumberFormat::Nvfp4};
inline constexpr Fp8Recipe kFp8Recipes[] = {Fp8Recipe::Delayed, Fp8Recipe::Current, Fp8Recipe::Blockwise};

const char *toString(NumberFormat f);  // "bf16", "fp8", "mxfp8", "nvfp4"
const char *toString(Fp8Recipe r);     // "delayed", "current", "blockwise"
// Case-insensitive; false when unknown.
bool numberFormatFromString(const std::string &text, NumberFormat &out);
bool fp8RecipeFromString(const std::string &text, Fp8Recipe &out);
// The spellings, for messages ("bf16, fp8, mxfp8, nvfp4").
std::string numberFormatNames();
std::string fp8RecipeNames();

struct Precision {
    NumberFormat format = NumberFormat::Bf16;
    Fp8Recipe recipe = Fp8Recipe::Delayed;  // fp8 only; the others keep the default

    bool lowPrecision() const { return format != NumberFormat::Bf16; }
    bool operator==(const Precision &) const = default;
};
// "bf16", "fp8-delayed", "fp8-current", "fp8-blockwise", "mxfp8", "nvfp4".
std::string precisionLabel(const Precision &p);
// Transformer Engine runs the attention in FP8 (fp8_dot_product_attention) only within an FP8
// recipe: fp8 with any scaling, or mxfp8 (CostOptions::fp8Attention).
bool allowsFp8Attention(const Precision &p);
// Each precision's bit in a set of precisions (bf16 0, fp8 delayed / current / blockwise 1-3,
// mxfp8 4, nvfp4 5), for constant tables (FrameworkProfile::precisions).
constexpr unsigned precisionBit(const Precision &p)
{
    switch (p.format) {
    case NumberFormat::Bf16: return 1u;
    case NumberFormat::Fp8: return 2u << static_cast<int>(p.recipe);
    case NumberFormat::Mxfp8: return 16u;
    case NumberFormat::Nvfp4: return 32u;
    }
    return 1u;
}
constexpr unsigned kAllPrecisionBits = 63u;
// The precisions of `formats`, each fp8 with `recipe`.
std::vector<Precision> precisionsOf(const std::vector<NumberFormat> &formats, Fp8Recipe recipe);

// JSON: "precision": "fp8" and, for fp8, "fp8_recipe": "delayed" in `obj` (nothing for bf16,
// so files written before precisions read and write as they were).
void writePrecision(Json &obj, const Precision &p);
// Reads them from `obj` at `path` (absent = bf16; a recipe without fp8 is an error). Throws
// JsonError naming the key and the values allowed.
Precision readPrecision(const Json &obj, const std::string &path);
// One precision name as the CLI and the workspace lists spell it: "bf16", "fp8", "mxfp8",
// "nvfp4" (fp8 with `recipe`), or "fp8-delayed" / "fp8-current" / "fp8-blockwise". False
// when unknown.
bool precisionFromString(const std::string &text, Fp8Recipe recipe, Precision &out);
// "bf16, fp8, mxfp8, nvfp4, fp8-delayed, fp8-current, fp8-blockwise".
std::string precisionNames();

// What a format costs per element, the one definition the compute and memory models use.
struct FormatBytes {
    double operand = 2;   // bytes per element of a GEMM operand in this format
    double scale = 0;     // scale bytes per element (block scales; 0 for per-tensor scales)
    // Weights and activations are kept a second time for the backward's GEMMs: a transposed
    // copy (Hopper's FP8 tensor cores take only the TN layout) or a column-wise scaled copy
    // (microscaling blocks run along the reduction dimension, which differs between the
    // forward and the backward GEMMs).
    bool secondCopy = false;
};
FormatBytes formatBytes(const Precision &p);
// Bytes per parameter of the low-precision weight copies a layer keeps beside its BF16 (or
// FP32 master) weights: operand + scale, twice with a second copy. 0 for bf16.
double weightCopyBytes(const Precision &p);
// A per-tensor scale taken from the tensor being cast: FP8 current scaling's, and NVFP4's
// second-level FP32 scale. Its amax is a reduction over the whole tensor before the cast can
// start, one more read of the BF16 operand (Transformer Engine's GEMM profiling tutorial
// lists "the extra memory pass for per-tensor amax computation"). Delayed scaling takes its
// scale from the amax history and reduces the new amax during the cast; MXFP8's and
// blockwise FP8's block scales are local to each block.
bool needsAmaxPass(const Precision &p);
// HBM bytes per element of quantising a BF16 operand: read 2, write every copy with its
// scales (a fused cast-transpose), and read 2 more before it where needsAmaxPass(). 0 for
// bf16.
double quantizeBytes(const Precision &p);

} // namespace nest
