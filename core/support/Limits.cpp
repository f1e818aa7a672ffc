#include "Limits.h"

#include <cmath>
#include <cstdio>

namespace nest {

namespace {

std::string rangeNumber(double x)
{
    if (std::isnan(x))
        return "NaN";
    if (std::isinf(x))
        return x > 0 ? "inf" : "-inf";
    if (std::floor(x) == x && std::fabs(x) < 1e15)
        return std::to_string(static_cast<long long>(x));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

std::string withUnit(double x, const Range &r)
{
    return *r.unit ? rangeNumber(x) + " " + r.unit : rangeNumber(x);
}

} // namespace

std::string describeRange(const Range &r)
{
    if (r.minExclusive)
        return "range (" + rangeNumber(r.min) + ", " + rangeNumber(r.max) + "]" + (*r.unit ? std::string(" ") + r.unit : "");
    return "range " + rangeNumber(r.min) + " to " + withUnit(r.max, r);
}

std::optional<std::string> rangeProblem(double value, const Range &r)
{
    const std::string tail = ", found " + rangeNumber(value) + " (" + describeRange(r) + ")";
    if (!std::isfinite(value))
        return "must be a finite number" + tail;
    if (r.integer && std::floor(value) != value)
        return "must be a whole number" + tail;
    if (value > r.max)
        return "must be at most " + withUnit(r.max, r) + tail;
    if (!r.contains(value))
        return (r.minExclusive ? "must be above " : "must be at least ") + withUnit(r.min, r) + tail;
    return std::nullopt;
}

std::optional<std::string> checkRange(double value, const Range &r, std::string_view what)
{
    auto problem = rangeProblem(value, r);
    if (!problem || what.empty())
        return problem;
    return std::string(what) + ": " + *problem;
}

} // namespace nest
