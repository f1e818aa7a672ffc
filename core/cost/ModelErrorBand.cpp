#include "ModelErrorBand.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nest {

namespace {

// p90 |error| per framework on the validation rows of tests/validation/runs.json
// (docs/validation.md, "Validation set"; nearest rank: the ceil(0.9 n)-th smallest |error|).
struct BandRow {
    Framework framework;
    double p90;
    int rows;
};
constexpr BandRow kBands[] = {
    {Framework::MegatronCore, 0.040, 15},
    {Framework::MegatronLM, 0.126, 6},
    {Framework::DeepSpeed, 0.174, 4},
    {Framework::Fsdp, 0.104, 12},
};
constexpr double kAllRows = 0.152;   // all 37 validation rows

std::string percent(double fraction)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", 100 * fraction);
    return buf;
}

} // namespace

std::string ErrorBand::text() const
{
    return "±" + percent(fraction) + " %, " + basis;
}

std::string ErrorBand::describe(double seconds) const
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
    return std::string(buf) + " (" + text() + ")";
}

ErrorBand validationErrorBand(Framework framework)
{
    for (const BandRow &b : kBands)
        if (b.framework == framework)
            return {b.p90, std::string(toString(framework)) + ", uncalibrated"};
    return {kAllRows, std::string(toString(framework)) + ", uncalibrated, no validation rows of its own"};
}

int validationRows(Framework framework)
{
    for (const BandRow &b : kBands)
        if (b.framework == framework)
            return b.rows;
    return 0;
}

bool withinModelError(double secondsA, const ErrorBand &a, double secondsB, const ErrorBand &b)
{
    const double faster = std::min(secondsA, secondsB);
    if (!(faster > 0))
        return false;
    return std::abs(secondsA - secondsB) <= std::max(a.fraction, b.fraction) * faster;
}

} // namespace nest
