#include "PlanComparison.h"

#include "Csv.h"
#include "MeasuredDevice.h"
#include "PlanShape.h"
#include "TextCase.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

namespace nest {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool feasible(const ComparedPlan &p)
{
    return p.plan && p.report && p.report->feasible;
}

std::string printf1(const char *format, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// About four significant digits without exponent: 412.3, 12346, 0.01234.
std::string significant(double v)
{
    const int magnitude = v == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::abs(v))));
    return fixedDecimals(v, std::clamp(3 - magnitude, 0, 9));
}

// Shortest text that reads back as the same double; empty for NaN.
std::string exact(double v)
{
    if (std::isnan(v))
        return {};
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string shapeText(const Plan &plan)
{
    const PlanShape s = shapeOf(plan);
    return widthsText(s) + "; " + scheduleText(s) + "; mb " + std::to_string(s.microBatch) + "; zero " +
           rangeText(s.least.zero, s.most.zero) + "; recompute " + s.recompute;
}

struct RowSpec {
    const char *key, *name, *unit, *valueUnit;
    Better better;
    std::function<double(const ComparedPlan &)> value;  // for feasible plans
    std::function<std::string(double)> text;
};

void fillComparisons(MetricRow &row, int ref)
{
    const size_t n = row.values.size();
    row.difference.assign(n, kNaN);
    row.ratio.assign(n, kNaN);
    const double r = row.values[static_cast<size_t>(ref)];
    for (size_t i = 0; i < n; ++i) {
        const double v = row.values[i];
        if (std::isnan(v) || std::isnan(r))
            continue;
        row.difference[i] = v - r;
        if (r != 0)
            row.ratio[i] = v / r;
    }
}

// The index of the strictly best finite value among feasible plans; -1 on a tie for the
// best, for text rows and when fewer than two plans are compared.
int bestOf(const MetricRow &row, const std::vector<ComparedPlan> &plans)
{
    if (row.better == Better::None || plans.size() < 2)
        return -1;
    int best = -1;
    bool tie = false;
    for (size_t i = 0; i < row.values.size(); ++i) {
        const double v = row.values[i];
        if (std::isnan(v) || !feasible(plans[i]))
            continue;
        if (best < 0) {
            best = static_cast<int>(i);
            continue;
        }
        const double b = row.values[static_cast<size_t>(best)];
        if (v == b)
            tie = true;
        else if (row.better == Better::Higher ? v > b : v < b) {
            best = static_cast<int>(i);
            tie = false;
        }
    }
    return tie ? -1 : best;
}


Json numbers(const std::vector<double> &v)
{
    Json a = Json::array();
    for (double x : v)
        a.push_back(std::isfinite(x) ? Json(x) : Json(nullptr));
    return a;
}

} // namespace

double IterationSplit::communication() const
{
    return tp + ep + cp + p2p + gradientSync + zero;
}

double IterationSplit::total() const
{
    return compute + recompute + communication() + optimizer + bubble;
}

IterationSplit iterationSplit(const Plan &plan, const Report &report)
{
    IterationSplit s;
    if (report.stages.empty())
        return s;
    const double m = plan.numMicroBatches();
    const int depth = std::clamp(plan.pipelineDepth(), 1, static_cast<int>(report.stages.size()));
    for (const StageReport &st : report.stages) {
        const StageCost &c = st.cost;
        s.compute += m * (c.forward + c.backward) / depth;
        s.recompute += m * c.recompute / depth;
        s.tp += m * c.tpComm / depth;
        s.ep += (m * c.epComm + c.epUnpaired) / depth;  // the overlap's unpaired all-to-all: once
        s.cp += m * c.cpComm / depth;
        s.p2p += m * c.p2p / depth;
        s.gradientSync += c.dpSync / depth;
        s.zero += (m * c.zeroComm + c.zeroGather) / depth;
        s.optimizer += c.optimizer / depth;
        if (st.index < depth)  // one bubble per physical position
            s.bubble += st.bubble / depth;
    }
    return s;
}

const char *toString(Better b)
{
    switch (b) {
    case Better::Higher: return "higher";
    case Better::Lower: return "lower";
    case Better::None: break;
    }
    return "none";
}

namespace {

double clusterMfu(const ComparedPlan &p)
{
    if (p.clusterDevices <= 0 || p.report->devicesUsed <= 0 || !mfuKnown(*p.report))
        return kNaN;
    return p.report->mfu * p.report->devicesUsed / p.clusterDevices;
}

} // namespace

std::vector<MetricRow> compareMetrics(const std::vector<ComparedPlan> &plans, int reference)
{
    const auto share = [](double part, const Report &r) { return r.iterationTime > 0 ? part / r.iterationTime : kNaN; };
    const auto percent = [](double v) { return printf1("%.1f", 100 * v); };
    const std::vector<RowSpec> specs = {
        {"throughput", "Throughput", "samples/s", "samples/s", Better::Higher,
         [](const ComparedPlan &p) { return p.report->samplesPerSecond; }, significant},
        {"tokens_per_s", "Token throughput", "tokens/s", "tokens/s", Better::Higher,
         [](const ComparedPlan &p) { return p.report->tokensPerSecond; }, significant},
        {"mfu", "MFU of the devices used", "%", "fraction", Better::Higher,
         [](const ComparedPlan &p) { return mfuKnown(*p.report) ? p.report->mfu : kNaN; }, percent},
        {"cluster_mfu", "MFU over the cluster", "%", "fraction", Better::Higher,
         [](const ComparedPlan &p) { return clusterMfu(p); }, percent},
        {"iteration_time", "Iteration time", "s", "s", Better::Lower,
         [](const ComparedPlan &p) { return p.report->iterationTime; }, significant},
        {"peak_memory", "Peak memory", "GB", "bytes", Better::Lower,
         [](const ComparedPlan &p) { return p.report->peakMemoryBytes; },
         [](double v) { return printf1("%.2f", v / 1e9); }},
        {"comm_share", "Communication share", "%", "fraction", Better::Lower,
         [&](const ComparedPlan &p) { return share(iterationSplit(*p.plan, *p.report).communication(), *p.report); },
         percent},
        {"bubble_share", "Bubble share", "%", "fraction", Better::Lower,
         [&](const ComparedPlan &p) { return share(iterationSplit(*p.plan, *p.report).bubble, *p.report); }, percent},
    };
    const size_t n = plans.size();
    const int ref = n == 0 ? 0 : std::clamp(reference, 0, static_cast<int>(n) - 1);
    std::vector<MetricRow> rows;
    for (const RowSpec &spec : specs) {
        MetricRow row{spec.key, spec.name, spec.unit, spec.valueUnit, spec.better, {}, {}, {}, {}, -1};
        for (const ComparedPlan &p : plans) {
            const double v = feasible(p) ? spec.value(p) : kNaN;
            row.values.push_back(v);
            row.texts.push_back(!feasible(p) ? (p.report ? "infeasible" : "n/a") : std::isnan(v) ? "n/a" : spec.text(v));
        }
        rows.push_back(std::move(row));
    }
    for (MetricRow &row : rows)
        if (row.key == "cluster_mfu")
            for (size_t i = 0; i < plans.size(); ++i)
                if (!std::isnan(row.values[i]))
                    row.texts[i] += " (" + std::to_string(plans[i].report->devicesUsed) + " of " +
                                    std::to_string(plans[i].clusterDevices) + " devices)";
    MetricRow shape{"shape", "Shape", "", "", Better::None, {}, {}, {}, {}, -1};
    for (const ComparedPlan &p : plans) {
        shape.values.push_back(kNaN);
        shape.texts.push_back(p.plan ? shapeText(*p.plan) : "n/a");
    }
    rows.push_back(std::move(shape));
    MetricRow search{"search_time", "Search time", "s", "s", Better::Lower, {}, {}, {}, {}, -1};
    for (const ComparedPlan &p : plans) {
        const bool known = p.searchSeconds > 0 && std::isfinite(p.searchSeconds);
        search.values.push_back(known ? p.searchSeconds : kNaN);
        search.texts.push_back(known ? significant(p.searchSeconds) : "n/a");
    }
    rows.push_back(std::move(search));
    MetricRow band{"model_error", "Model error", "", "", Better::None, {}, {}, {}, {}, -1};
    for (const ComparedPlan &p : plans) {
        band.values.push_back(kNaN);
        // The bounds of the plan's time, "18.9-23.4 s, megatron-core tuned, 65-512 GPUs, uncalibrated".
        band.texts.push_back(p.band.basis.empty() ? "n/a"
                             : p.report && p.report->iterationTime > 0 ? p.band.text(p.report->iterationTime)
                                                                       : p.band.text());
    }
    rows.push_back(std::move(band));
    // The MFU of the devices used ranks nothing when the plans use different numbers of
    // devices: the cluster-wide row does.
    bool sameDevices = true;
    for (const ComparedPlan &p : plans)
        if (feasible(p) && feasible(plans.front()) && p.report->devicesUsed != plans.front().report->devicesUsed)
            sameDevices = false;
    for (MetricRow &row : rows) {
        if (n > 0)
            fillComparisons(row, ref);
        row.best = row.key == "mfu" && !sameDevices ? -1 : bestOf(row, plans);
        row.withinModelError.assign(n, false);
        if (row.key != "throughput" && row.key != "tokens_per_s" && row.key != "iteration_time")
            continue;
        for (size_t i = 0; i < n; ++i)
            if (static_cast<int>(i) != ref && feasible(plans[i]) && feasible(plans[static_cast<size_t>(ref)]))
                row.withinModelError[i] = withinModelError(plans[i].report->iterationTime, plans[i].band,
                                                           plans[static_cast<size_t>(ref)].report->iterationTime,
                                                           plans[static_cast<size_t>(ref)].band);
    }
    return rows;
}

std::string comparisonCsv(const std::vector<ComparedPlan> &plans, const std::vector<MetricRow> &rows, int)
{
    std::string out = "key,name,unit,value_unit,better,best";
    for (const char *suffix : {"", " diff", " ratio"})
        for (const ComparedPlan &p : plans)
            out += "," + csvField(p.label + suffix);
    out += "\n";
    for (const MetricRow &row : rows) {
        out += csvField(row.key) + "," + csvField(row.name) + "," + csvField(row.unit) + "," +
               csvField(row.valueUnit) + "," + toString(row.better) + "," +
               (row.best >= 0 ? csvField(plans[static_cast<size_t>(row.best)].label) : std::string());
        for (size_t i = 0; i < row.values.size(); ++i)
            out += "," + (row.key == "shape" || row.key == "model_error" ? csvField(row.texts[i]) : exact(row.values[i]));
        for (const auto *column : {&row.difference, &row.ratio})
            for (size_t i = 0; i < row.values.size(); ++i)
                out += "," + (i < column->size() ? exact((*column)[i]) : std::string());
        out += "\n";
    }
    return out;
}

Json comparisonJson(const std::vector<ComparedPlan> &plans, const std::vector<MetricRow> &rows, int reference)
{
    Json j;
    j["reference"] = reference;
    j["plans"] = Json::array();
    for (const ComparedPlan &p : plans) {
        Json reasons = Json::array();
        if (p.report)
            for (const std::string &r : p.report->reasons)
                reasons.push_back(r);
        j["plans"].push_back({{"label", p.label}, {"planner", p.planner}, {"feasible", feasible(p)},
                              {"reasons", reasons}, {"search_time_s", p.searchSeconds}});
    }
    j["metrics"] = Json::array();
    for (const MetricRow &row : rows)
        j["metrics"].push_back({{"key", row.key},
                                {"name", row.name},
                                {"unit", row.unit},
                                {"value_unit", row.valueUnit},
                                {"better", toString(row.better)},
                                {"best", row.best},
                                {"values", numbers(row.values)},
                                {"texts", row.texts},
                                {"difference", numbers(row.difference)},
                                {"ratio", numbers(row.ratio)},
                                {"within_model_error", row.withinModelError}});
    return j;
}

} // namespace nest
