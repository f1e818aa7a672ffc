#include "ModelErrorBand.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace nest {

namespace {

// One cell of the generated table: "" matches any framework, stack or scale (the fallbacks).
struct BandCell {
    std::string_view framework, stack, scale;
    int rows;
    double low, high;
};

#include "ModelErrorBandTable.inc"

std::string threeDigits(double seconds)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", seconds);
    return buf;
}

std::string signedPercent(double ratio)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.0f %%", 100 * (ratio - 1));
    return buf;
}

struct Found {
    const BandCell *cell = nullptr;
    int level = 0;   // 0: the cell itself, 1: framework + stack, 2: stack, 3: all rows
};

Found findCell(Framework framework, Stack stack, int gpus)
{
    const std::string_view fw = toString(framework), st = toString(stack), sc = scaleBucket(gpus);
    const std::string_view keys[4][3] = {{fw, st, sc}, {fw, st, ""}, {"", st, ""}, {"", "", ""}};
    for (int level = 0; level < 4; ++level)
        for (const BandCell &c : kBandCells)
            if (c.framework == keys[level][0] && c.stack == keys[level][1] && c.scale == keys[level][2])
                return {&c, level};
    return {};
}

} // namespace

std::string ErrorBand::bounds(double seconds) const
{
    // Both bounds with the decimals that give the upper one 3 significant digits: "14.0-30.2 s".
    const double lo = lowSeconds(seconds), hi = highSeconds(seconds);
    const int decimals = hi > 0 && std::isfinite(hi) ? std::clamp(2 - static_cast<int>(std::floor(std::log10(hi))), 0, 9) : 3;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.*f-%.*f s", decimals, lo, decimals, hi);
    return buf;
}

std::string ErrorBand::text() const
{
    return signedPercent(low) + " to " + signedPercent(high) + ", " + basis;
}

std::string ErrorBand::text(double seconds) const
{
    return bounds(seconds) + ", " + basis;
}

std::string ErrorBand::describe(double seconds) const
{
    return threeDigits(seconds) + " s (" + text(seconds) + ")";
}

std::optional<ErrorBand> conformalBand(std::vector<double> residuals, std::string basis)
{
    const size_t n = residuals.size();
    const size_t k = (9 * (n + 1) + 9) / 10;   // ceil(0.9 (n + 1)) in integers
    if (n == 0 || k > n)
        return std::nullopt;
    std::sort(residuals.begin(), residuals.end());
    return ErrorBand{residuals[n - k], residuals[k - 1], std::move(basis)};
}

const char *scaleBucket(int gpus)
{
    return gpus <= 64 ? "<=64" : gpus <= 512 ? "65-512" : ">512";
}

ErrorBand validationErrorBand(Framework framework, Stack stack, int gpus)
{
    std::string basis = std::string(toString(framework)) + " " + toString(stack) + ", " + scaleBucket(gpus) +
                        " GPUs, uncalibrated";
    const Found f = findCell(framework, stack, gpus);
    if (!f.cell)
        return {1, 1, basis + ", no validation rows"};
    const std::string fw = toString(framework), st = toString(stack);
    if (f.level == 1)
        basis += ", band of all " + fw + " " + st + " rows";
    else if (f.level == 2)
        basis += ", band of all " + st + " rows";
    else if (f.level == 3)
        basis += ", band of all rows";
    return {f.cell->low, f.cell->high, basis};
}

int validationRows(Framework framework, Stack stack, int gpus)
{
    const Found f = findCell(framework, stack, gpus);
    return f.cell ? f.cell->rows : 0;
}

ErrorBand withinSourceBand()
{
    return {kWithinSource.low, kWithinSource.high, "band of one source's scatter"};
}

bool withinModelError(double secondsA, const ErrorBand &a, double secondsB, const ErrorBand &b)
{
    if (!(secondsA > 0) || !(secondsB > 0))
        return false;
    return std::max(a.lowSeconds(secondsA), b.lowSeconds(secondsB)) <=
           std::min(a.highSeconds(secondsA), b.highSeconds(secondsB));
}

} // namespace nest
