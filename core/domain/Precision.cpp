#include "Precision.h"

#include "TextCase.h"

#include <algorithm>

namespace nest {

const char *toString(NumberFormat f)
{
    switch (f) {
    case NumberFormat::Bf16: return "bf16";
    case NumberFormat::Fp8: return "fp8";
    case NumberFormat::Mxfp8: return "mxfp8";
    case NumberFormat::Nvfp4: return "nvfp4";
    }
    return "bf16";
}

const char *toString(Fp8Recipe r)
{
    switch (r) {
    case Fp8Recipe::Delayed: return "delayed";
    case Fp8Recipe::Current: return "current";
    case Fp8Recipe::Blockwise: return "blockwise";
    }
    return "delayed";
}

bool numberFormatFromString(const std::string &text, NumberFormat &out)
{
    const std::string key = asciiLower(text);
    for (NumberFormat f : kNumberFormats)
        if (key == toString(f)) {
            out = f;
            return true;
        }
    return false;
}

bool fp8RecipeFromString(const std::string &text, Fp8Recipe &out)
{
    const std::string key = asciiLower(text);
    for (Fp8Recipe r : kFp8Recipes)
        if (key == toString(r)) {
            out = r;
            return true;
        }
    return false;
}

std::string numberFormatNames()
{
    std::string s;
    for (NumberFormat f : kNumberFormats)
        s += (s.empty() ? "" : ", ") + std::string(toString(f));
    return s;
}

std::string fp8RecipeNames()
{
    std::string s;
    for (Fp8Recipe r : kFp8Recipes)
        s += (s.empty() ? "" : ", ") + std::string(toString(r));
    return s;
}

std::string precisionLabel(const Precision &p)
{
    if (p.format == NumberFormat::Fp8)
        return std::string("fp8-") + toString(p.recipe);
    return toString(p.format);
}

std::vector<Precision> precisionsOf(const std::vector<NumberFormat> &formats, Fp8Recipe recipe)
{
    std::vector<Precision> out;
    for (NumberFormat f : formats)
        out.push_back({f, f == NumberFormat::Fp8 ? recipe : Fp8Recipe::Delayed});
    return out;
}

void writePrecision(Json &obj, const Precision &p)
{
    if (!p.lowPrecision())
        return;
    obj["precision"] = toString(p.format);
    if (p.format == NumberFormat::Fp8)
        obj["fp8_recipe"] = toString(p.recipe);
}

Precision readPrecision(const Json &obj, const std::string &path)
{
    Precision p;
    const std::string format = getString(obj, "precision", path, "bf16");
    if (!numberFormatFromString(format, p.format))
        throw JsonError(childPath(path, "precision"),
                        "unknown precision \"" + format + "\" (use " + numberFormatNames() + ")");
    if (has(obj, "fp8_recipe")) {
        const std::string recipe = getString(obj, "fp8_recipe", path);
        if (p.format != NumberFormat::Fp8)
            throw JsonError(childPath(path, "fp8_recipe"), "is for precision fp8 only, the precision is " + format);
        if (!fp8RecipeFromString(recipe, p.recipe))
            throw JsonError(childPath(path, "fp8_recipe"),
                            "unknown FP8 recipe \"" + recipe + "\" (use " + fp8RecipeNames() + ")");
    }
    return p;
}

bool precisionFromString(const std::string &text, Fp8Recipe recipe, Precision &out)
{
    const std::string key = asciiLower(text);
    if (key.rfind("fp8-", 0) == 0) {
        Fp8Recipe r;
        if (!fp8RecipeFromString(key.substr(4), r))
            return false;
        out = {NumberFormat::Fp8, r};
        return true;
    }
    NumberFormat f;
    if (!numberFormatFromString(key, f))
        return false;
    out = {f, f == NumberFormat::Fp8 ? recipe : Fp8Recipe::Delayed};
    return true;
}

std::string precisionNames()
{
    std::string s = numberFormatNames();
    for (Fp8Recipe r : kFp8Recipes)
        s += std::string(", fp8-") + toString(r);
    return s;
}

FormatBytes formatBytes(const Precision &p)
{
    switch (p.format) {
    case NumberFormat::Bf16:
        return {2, 0, false};
    case NumberFormat::Fp8:
        // Per-tensor scales: one FP32 per tensor (negligible per element). Blockwise: one
        // FP32 scale per 128 elements (1x128 activation tiles; 128x128 weight blocks are
        // 128 times fewer, the activation figure bounds both).
        return {1, p.recipe == Fp8Recipe::Blockwise ? 4.0 / 128 : 0.0, true};
    case NumberFormat::Mxfp8:
        return {1, 1.0 / 32, true};  // one E8M0 byte per 32 elements
    case NumberFormat::Nvfp4:
        return {0.5, 1.0 / 16, true};  // 4-bit elements, one E4M3 byte per 16
    }
    return {};
}

double weightCopyBytes(const Precision &p)
{
    if (!p.lowPrecision())
        return 0;
    const FormatBytes b = formatBytes(p);
    return (b.operand + b.scale) * (b.secondCopy ? 2 : 1);
}

bool allowsFp8Attention(const Precision &p)
{
    return p.format == NumberFormat::Fp8 || p.format == NumberFormat::Mxfp8;
}

bool needsAmaxPass(const Precision &p)
{
    return (p.format == NumberFormat::Fp8 && p.recipe == Fp8Recipe::Current) || p.format == NumberFormat::Nvfp4;
}

double quantizeBytes(const Precision &p)
{
    if (!p.lowPrecision())
        return 0;
    return 2 + weightCopyBytes(p) + (needsAmaxPass(p) ? 2 : 0);
}

} // namespace nest
