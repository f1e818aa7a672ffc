#include "ClusterSweep.h"

#include "Csv.h"
#include "Limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>

namespace nest {

namespace {

double &fieldOf(LinkParams &link, LinkField f)
{
    switch (f) {
    case LinkField::Bandwidth:
        return link.bandwidth;
    case LinkField::Latency:
        return link.latency;
    case LinkField::Oversubscription:
        break;
    }
    return link.oversubscription;
}

// Does any traffic cross `level`: a group there with two or more children (devices for a
// node)?
bool levelIsCrossed(const Topology &topo, int level)
{
    return std::any_of(topo.groups.begin(), topo.groups.end(), [level](const TopoGroup &g) {
        return g.level == level && (level == 0 ? g.devices.size() : g.children.size()) >= 2;
    });
}

// The documented range (core/support/Limits.h) in display units.
const Range &rangeOf(LinkField f)
{
    switch (f) {
    case LinkField::Bandwidth:
        return limits::bandwidthGBps;
    case LinkField::Latency:
        return limits::latencyUs;
    case LinkField::Oversubscription:
        break;
    }
    return limits::oversubscription;
}

std::string csvNumber(double x)
{
    if (!std::isfinite(x))
        return {};
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.12g", x);
    return buf;
}


} // namespace

const char *toString(LinkField f)
{
    switch (f) {
    case LinkField::Bandwidth:
        return "bandwidth";
    case LinkField::Latency:
        return "latency";
    case LinkField::Oversubscription:
        break;
    }
    return "oversubscription";
}

const char *displayUnit(LinkField f)
{
    return rangeOf(f).unit;
}

double displayValue(LinkField f, double value)
{
    switch (f) {
    case LinkField::Bandwidth:
        return value / 1e9;
    case LinkField::Latency:
        return value * 1e6;
    case LinkField::Oversubscription:
        break;
    }
    return value;
}

double fromDisplayValue(LinkField f, double display)
{
    switch (f) {
    case LinkField::Bandwidth:
        return display * 1e9;
    case LinkField::Latency:
        return display * 1e-6;
    case LinkField::Oversubscription:
        break;
    }
    return display;
}

double linkValue(const LinkParams &link, LinkField f)
{
    LinkParams copy = link;
    return fieldOf(copy, f);
}

std::string SweepParameter::label(const Topology &topo) const
{
    const std::string tier = level >= 0 && level < topo.levelCount() && !topo.levels[level].name.empty()
                                 ? topo.levels[level].name
                                 : "level " + std::to_string(level);
    const std::string unit = displayUnit(field);
    return tier + " " + toString(field) + (unit.empty() ? "" : " (" + unit + ")");
}

std::vector<std::pair<SweepParameter, double>> sweepParameters(const Topology &topo)
{
    std::vector<std::pair<SweepParameter, double>> out;
    for (int level = 0; level < topo.levelCount(); ++level) {
        if (!levelIsCrossed(topo, level))
            continue;
        for (LinkField f : {LinkField::Bandwidth, LinkField::Latency, LinkField::Oversubscription}) {
            if (level == 0 && f == LinkField::Oversubscription)
                continue;
            out.emplace_back(SweepParameter{level, f}, linkValue(topo.levels[level].link, f));
        }
    }
    return out;
}

Result<Topology> withParameter(const Topology &topo, const SweepParameter &p, double value)
{
    if (p.level < 0 || p.level >= topo.levelCount())
        return Result<Topology>::failure("level " + std::to_string(p.level) + " does not exist (the cluster has " +
                                         std::to_string(topo.levelCount()) + " levels)");
    const std::string what = p.label(topo);
    if (p.level == 0 && p.field == LinkField::Oversubscription)
        return Result<Topology>::failure(what + ": level 0 (inside a node) has no oversubscription to sweep");
    if (const auto problem = checkRange(displayValue(p.field, value), rangeOf(p.field), what))
        return Result<Topology>::failure(*problem);
    Topology out = topo;
    fieldOf(out.levels[p.level].link, p.field) = value;
    for (TopoGroup &g : out.groups)
        if (g.level == p.level && g.linkOverride)
            fieldOf(*g.linkOverride, p.field) = value;
    if (const std::string why = out.validate(); !why.empty())
        return Result<Topology>::failure(what + " = " + csvNumber(displayValue(p.field, value)) + ": " + why);
    return out;
}

std::vector<double> sweepValues(double from, double to, int steps, bool geometric)
{
    if (steps < 1)
        return {};
    if (steps == 1)
        return {from};
    if (geometric && !(from > 0 && to > 0))
        return {};
    std::vector<double> out(static_cast<size_t>(steps));
    const double last = steps - 1;
    for (int i = 0; i < steps; ++i) {
        const double t = i / last;
        out[static_cast<size_t>(i)] = geometric ? from * std::pow(to / from, t) : from + (to - from) * t;
    }
    out.front() = from;
    out.back() = to;
    return out;
}

SweepResult runSweep(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                     const SweepParameter &p, const std::vector<double> &values,
                     const std::vector<std::string> &planners, int threads,
                     const SweepProgressFn &progress, const CancelToken &cancel)
{
    SweepResult result;
    result.parameter = p;
    result.planners = planners;
    result.values = values;
    const double pointCount = static_cast<double>(std::max<size_t>(values.size(), 1));
    const double plannerCount = static_cast<double>(std::max<size_t>(planners.size(), 1));
    std::mutex mutex;          // guards the fractions below and serialises progress calls
    std::vector<double> fractions;
    double reported = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        if (cancel.cancelled()) {
            result.cancelled = true;
            break;
        }
        SweepPoint point;
        point.value = values[i];
        const Result<Topology> cluster = withParameter(topo, p, values[i]);
        if (!cluster) {
            for (const std::string &name : planners) {
                PlannerRun run;
                run.planner = name;
                run.result.message = cluster.error();
                point.runs.push_back(std::move(run));
            }
        } else {
            fractions.assign(planners.size(), 0.0);
            const int pointIndex = static_cast<int>(i);
            ComparisonProgressFn perPlanner;
            if (progress)
                perPlanner = [&, pointIndex](int planner, double fraction, double) {
                    const std::lock_guard<std::mutex> lock(mutex);
                    fractions[static_cast<size_t>(planner)] = std::clamp(fraction, 0.0, 1.0);
                    double sum = 0;
                    for (double f : fractions)
                        sum += f;
                    reported = std::max(reported, (pointIndex + sum / plannerCount) / pointCount);
                    progress(pointIndex, planner, std::min(reported, 1.0));
                };
            point.runs = runPlanners(*cluster, model, options, planners, threads, perPlanner, cancel);
        }
        if (cancel.cancelled()) {  // the point may hold cancelled runs: drop it whole
            result.cancelled = true;
            break;
        }
        result.points.push_back(std::move(point));
    }
    return result;
}

double sweepSamplesPerSecond(const PlannerRun &run)
{
    const PlanResult &r = run.result;
    if (!r.found || !r.report.feasible)
        return std::numeric_limits<double>::quiet_NaN();
    return r.report.samplesPerSecond;
}

std::string sweepCsv(const SweepResult &result, const Topology &topo)
{
    const std::string parameter = csvField(result.parameter.label(topo));
    std::string out = "value,planner,feasible,samples_per_s,iteration_s,tokens_per_s,mfu,peak_memory_GB,parameter,message\n";
    for (const SweepPoint &point : result.points) {
        for (const PlannerRun &run : point.runs) {
            const PlanResult &r = run.result;
            const bool feasible = r.found && r.report.feasible;
            const auto value = [feasible](double x) { return feasible ? csvNumber(x) : std::string(); };
            std::string message = r.message;
            if (r.found && !r.report.feasible && !r.report.reasons.empty())
                message = r.report.reasons.front();
            out += csvNumber(displayValue(result.parameter.field, point.value)) + ',' + csvField(run.planner) + ',' +
                   (feasible ? "true" : "false") + ',' + value(r.report.samplesPerSecond) + ',' +
                   value(r.report.iterationTime) + ',' + value(r.report.tokensPerSecond) + ',' + value(r.report.mfu) +
                   ',' + value(r.report.peakMemoryBytes / 1e9) + ',' + parameter + ',' + csvField(message) + '\n';
        }
    }
    return out;
}

} // namespace nest
