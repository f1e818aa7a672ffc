// core/PlanComparison: the iteration split against the evaluator's stage terms, the metric
// rows against the Report's fields, differences / ratios / best by hand, infeasible plans,
// and the CSV / JSON exports read back.
#include "ClusterIO.h"
#include "Evaluator.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "PlanComparison.h"
#include "PlanShape.h"

#include "CoreTestSupport.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

using namespace nest;

namespace {

struct Evaluated {
    Plan plan;
    Report report;
};

// A uniform layout of `stage` with pp stages and dp replicas (UniformLayout derives from
// StageConfig, so designated initializers cannot name both).
UniformLayout layout(const StageConfig &stage, int pp, int dp)
{
    UniformLayout u;
    static_cast<StageConfig &>(u) = stage;
    u.pp = pp;
    u.dp = dp;
    return u;
}

// A model (global batch 64) on 16 V100 with a uniform layout: bert-large fits every layout
// used here, llama2-7b unsharded does not.
Evaluated evaluated(UniformLayout u, const char *modelName = "bert-large")
{
    const Topology topo = resolveCluster("paper-v100-16").value();
    ModelOptions options;
    options.globalBatch = 64;
    const ModelProfile model = resolveModel(modelName, options).value();
    u.globalBatch = 64;
    u.seqLength = model.seqLength;
    Evaluated e{buildUniformPlan(u, topo, model).value(), {}};
    e.report = evaluate(e.plan, topo, model);
    return e;
}

ComparedPlan compared(const Evaluated &e, const char *label, double searchSeconds = 0)
{
    return {label, "manual", &e.plan, &e.report, searchSeconds, {}, 16};   // paper-v100-16
}

const MetricRow &row(const std::vector<MetricRow> &rows, const std::string &key)
{
    for (const MetricRow &r : rows)
        if (r.key == key)
            return r;
    throw std::logic_error("no row " + key);
}

std::vector<std::string> splitLine(const std::string &line)
{
    std::vector<std::string> out;
    std::string field;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
            field += line[++i];
        else if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted) {
            out.push_back(field);
            field.clear();
        } else
            field += c;
    }
    out.push_back(field);
    return out;
}

const std::vector<std::string> kKeys = {"throughput", "tokens_per_s", "mfu", "cluster_mfu", "iteration_time", "peak_memory",
                                        "comm_share", "bubble_share", "shape", "search_time",
                                        "model_error"};

} // namespace

TEST(PlanComparison, splitAddsUpToIteration)
{
    struct Row {
        const char *name;
        int pp;
        Schedule schedule;
        int virtualStages;
    };
    const Row rows[] = {
        {"1f1b pp2", 2, Schedule::OneFOneB, 1},
        {"gpipe pp4", 4, Schedule::GPipe, 1},
        {"interleaved pp2 x2", 2, Schedule::Interleaved, 2},
        {"interleaved pp4 x2", 4, Schedule::Interleaved, 2},
    };
    for (const Row &data : rows) {
        SCOPED_TRACE(data.name);
        [&] {
            const int pp = data.pp;
            UniformLayout u = layout({.tp = 2, .zero = 1}, pp, 8 / pp);
            u.schedule = data.schedule;
            u.virtualStages = data.virtualStages;
            const Evaluated e = evaluated(u);
            ASSERT_TRUE(e.report.feasible);
            const IterationSplit s = iterationSplit(e.plan, e.report);
            const double t = e.report.iterationTime;
            ASSERT_TRUE(t > 0);
            ASSERT_TRUE(std::abs(s.total() - t) <= 1e-9 * t) << s.total() << " vs " << t;
            // Each category by hand from the stage terms: compute over all stages / depth.
            const double m = e.plan.numMicroBatches();
            double compute = 0, tp = 0, bubble = 0;
            for (const StageReport &st : e.report.stages) {
                compute += m * (st.cost.forward + st.cost.backward);
                tp += m * st.cost.tpComm;
                if (st.index < pp)
                    bubble += st.bubble;
            }
            ASSERT_TRUE(std::abs(s.compute - compute / pp) <= 1e-12 * t);
            ASSERT_TRUE(std::abs(s.tp - tp / pp) <= 1e-12 * t);
            ASSERT_TRUE(std::abs(s.bubble - bubble / pp) <= 1e-12 * t);
            ASSERT_TRUE(s.compute > 0 && s.tp > 0 && s.bubble > 0);
            ASSERT_QFUZZY_EQ(s.communication(), s.tp + s.ep + s.cp + s.p2p + s.gradientSync + s.zero);
        }();
    }
}

TEST(PlanComparison, emptyReportSplitsToZero)
{
    const IterationSplit s = iterationSplit(Plan{}, Report{});
    ASSERT_QFUZZY_EQ(s.total(), 0.0);
}

TEST(PlanComparison, valuesAreTheReportFields)
{
    const Evaluated a = evaluated(layout({.tp = 2}, 2, 4));
    const Evaluated b = evaluated(layout({.tp = 4, .recompute = Recompute::Full}, 4, 1));
    ASSERT_TRUE(a.report.feasible && b.report.feasible);
    const std::vector<MetricRow> rows = compareMetrics({compared(a, "A", 2.5), compared(b, "B")}, 0);
    ASSERT_EQ(rows.size(), kKeys.size());
    for (size_t i = 0; i < rows.size(); ++i)
        ASSERT_EQ(rows[i].key, kKeys[i]);
    const Evaluated *plans[] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
        const Report &r = plans[i]->report;
        ASSERT_QFUZZY_EQ(row(rows, "throughput").values[i], r.samplesPerSecond);
        ASSERT_QFUZZY_EQ(row(rows, "tokens_per_s").values[i], r.tokensPerSecond);
        ASSERT_QFUZZY_EQ(row(rows, "mfu").values[i], r.mfu);
        ASSERT_QFUZZY_EQ(row(rows, "cluster_mfu").values[i], r.mfu * r.devicesUsed / 16);
        ASSERT_QFUZZY_EQ(row(rows, "iteration_time").values[i], r.iterationTime);
        ASSERT_QFUZZY_EQ(row(rows, "peak_memory").values[i], r.peakMemoryBytes);
        const IterationSplit s = iterationSplit(plans[i]->plan, r);
        ASSERT_QFUZZY_EQ(row(rows, "comm_share").values[i], s.communication() / r.iterationTime);
        ASSERT_QFUZZY_EQ(row(rows, "bubble_share").values[i], s.bubble / r.iterationTime);
        ASSERT_TRUE(std::isnan(row(rows, "shape").values[i]));
    }
    ASSERT_EQ(row(rows, "shape").texts[0].rfind("tp 2, pp 2, dp 4", 0), size_t(0));
    ASSERT_TRUE(row(rows, "shape").texts[1].find("recompute full") != std::string::npos);
    ASSERT_QFUZZY_EQ(row(rows, "search_time").values[0], 2.5);
    ASSERT_TRUE(std::isnan(row(rows, "search_time").values[1]));
    ASSERT_EQ(row(rows, "search_time").texts[1], std::string("n/a"));
    // Display texts in the row's unit.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", 100 * a.report.mfu);
    ASSERT_EQ(row(rows, "mfu").texts[0], std::string(buf));
    std::snprintf(buf, sizeof buf, "%.2f", a.report.peakMemoryBytes / 1e9);
    ASSERT_EQ(row(rows, "peak_memory").texts[0], std::string(buf));
}

TEST(PlanComparison, differenceRatioAndBestByHand)
{
    const Evaluated a = evaluated(layout({.tp = 2}, 2, 4));
    const Evaluated b = evaluated(layout({.tp = 4, .recompute = Recompute::Full}, 4, 1));
    const double ta = a.report.samplesPerSecond, tb = b.report.samplesPerSecond;
    ASSERT_TRUE(ta != tb);
    for (int ref : {0, 1}) {
        const std::vector<MetricRow> rows = compareMetrics({compared(a, "A", 4), compared(b, "B", 1)}, ref);
        const MetricRow &t = row(rows, "throughput");
        const double r = ref == 0 ? ta : tb;
        ASSERT_QFUZZY_EQ(t.difference[0], ta - r);
        ASSERT_QFUZZY_EQ(t.difference[1], tb - r);
        ASSERT_QFUZZY_EQ(t.ratio[0], ta / r);
        ASSERT_QFUZZY_EQ(t.ratio[1], tb / r);
        ASSERT_QFUZZY_EQ(t.difference[ref], 0.0);
        ASSERT_QFUZZY_EQ(t.ratio[ref], 1.0);
        ASSERT_EQ(t.best, ta > tb ? 0 : 1);  // higher is better
        const MetricRow &it = row(rows, "iteration_time");
        ASSERT_EQ(it.best, a.report.iterationTime < b.report.iterationTime ? 0 : 1);
        const MetricRow &mem = row(rows, "peak_memory");
        ASSERT_EQ(mem.best, a.report.peakMemoryBytes < b.report.peakMemoryBytes ? 0 : 1);
        ASSERT_EQ(row(rows, "search_time").best, 1);  // 1 s < 4 s
        ASSERT_EQ(row(rows, "shape").best, -1);
        ASSERT_TRUE(std::isnan(row(rows, "shape").difference[0]));
    }
    // A tie has no best; a single plan has no best.
    const std::vector<MetricRow> same = compareMetrics({compared(a, "A"), compared(a, "A'")}, 0);
    ASSERT_EQ(row(same, "throughput").best, -1);
    ASSERT_QFUZZY_EQ(row(same, "throughput").ratio[1], 1.0);
    ASSERT_EQ(row(compareMetrics({compared(a, "A")}, 0), "throughput").best, -1);
    // An out-of-range reference is clamped.
    ASSERT_QFUZZY_EQ(row(compareMetrics({compared(a, "A"), compared(b, "B")}, 7), "throughput").ratio[1], 1.0);
}

// Issue 25 point 5: a plan that leaves devices idle may have the higher MFU of its own
// devices; the cluster-wide MFU (mfu x used / cluster, by hand) ranks the plans, and the
// per-device row marks no best.
TEST(PlanComparison, clusterMfuCountsIdleDevices)
{
    const Evaluated all = evaluated(layout({.tp = 2}, 2, 4));    // 16 of 16 devices
    const Evaluated half = evaluated(layout({.tp = 2}, 2, 2));   // 8 of 16
    ASSERT_EQ(all.report.devicesUsed, 16);
    ASSERT_EQ(half.report.devicesUsed, 8);
    const ComparedPlan a = compared(all, "all"), h = compared(half, "half");   // a 16-device cluster
    const std::vector<MetricRow> rows = compareMetrics({a, h}, 0);
    const MetricRow &cluster = row(rows, "cluster_mfu");
    ASSERT_QFUZZY_EQ(cluster.values[0], all.report.mfu);
    ASSERT_QFUZZY_EQ(cluster.values[1], half.report.mfu * 8 / 16);
    ASSERT_EQ(cluster.best, all.report.mfu > half.report.mfu / 2 ? 0 : 1);
    ASSERT_TRUE(cluster.texts[1].find("(8 of 16 devices)") != std::string::npos);
    ASSERT_EQ(row(rows, "mfu").best, -1);
    // Same device count: the per-device row ranks again; unknown cluster size: NaN.
    ComparedPlan a2 = compared(all, "all'");
    a2.clusterDevices = 0;
    const std::vector<MetricRow> same = compareMetrics({a2, compared(all, "all")}, 0);
    ASSERT_TRUE(std::isnan(row(same, "cluster_mfu").values[0]));
    ASSERT_EQ(row(same, "mfu").best, -1);   // a tie
    const Evaluated other = evaluated(layout({.tp = 4}, 2, 2));  // 16 devices, another shape
    ASSERT_EQ(other.report.devicesUsed, 16);
    ASSERT_TRUE(other.report.mfu != all.report.mfu);
    ASSERT_EQ(row(compareMetrics({compared(all, "a"), compared(other, "o")}, 0), "mfu").best,
              all.report.mfu > other.report.mfu ? 0 : 1);
}

TEST(PlanComparison, infeasiblePlanIsNaNAndNeverBest)
{
    const Evaluated ok = evaluated(layout({.tp = 2}, 2, 4));
    // llama2-7b unsharded on one 32 GB V100 per replica: weights + Adam state do not fit.
    const Evaluated bad = evaluated(layout({.tp = 1}, 1, 16), "llama2-7b");
    ASSERT_TRUE(ok.report.feasible);
    ASSERT_TRUE(!bad.report.feasible && !bad.report.reasons.empty());
    // Lower is better for peak memory; the infeasible plan's is NaN, not smaller.
    for (int ref : {0, 1}) {
        const std::vector<MetricRow> rows =
            compareMetrics({compared(bad, "bad", 0.5), compared(ok, "ok", 3)}, ref);
        for (const MetricRow &r : rows) {
            ASSERT_TRUE(r.best != 0) << r.key.c_str();
            if (r.key == "shape" || r.key == "search_time" || r.key == "model_error")
                continue;
            ASSERT_TRUE(std::isnan(r.values[0]) && std::isnan(r.difference[0]) && std::isnan(r.ratio[0])) << r.key.c_str();
            ASSERT_EQ(r.texts[0], std::string("infeasible"));
            ASSERT_EQ(r.best, 1);
            ASSERT_EQ(std::isnan(r.difference[1]), ref == 0);
        }
        // Search time is known for both, but the infeasible plan is never best.
        ASSERT_QFUZZY_EQ(row(rows, "search_time").values[0], 0.5);
        ASSERT_EQ(row(rows, "search_time").best, 1);
    }
}

TEST(PlanComparison, csvReadsBack)
{
    const Evaluated a = evaluated(layout({.tp = 2}, 2, 4));
    const Evaluated b = evaluated(layout({.tp = 4}, 2, 2));
    const std::vector<ComparedPlan> plans = {compared(a, "nest, 14:02"), compared(b, "megatron \"x\"", 1.25)};
    const std::vector<MetricRow> rows = compareMetrics(plans, 1);
    std::istringstream in(comparisonCsv(plans, rows, 1));
    std::string line;
    std::vector<std::vector<std::string>> lines;
    while (std::getline(in, line))
        lines.push_back(splitLine(line));
    ASSERT_EQ(lines.size(), rows.size() + 1);
    const std::vector<std::string> header = {"key", "name", "unit", "value_unit", "better", "best",
                                             "nest, 14:02", "megatron \"x\"", "nest, 14:02 diff",
                                             "megatron \"x\" diff", "nest, 14:02 ratio", "megatron \"x\" ratio"};
    ASSERT_EQ(lines[0], header);
    for (size_t i = 0; i < rows.size(); ++i) {
        const std::vector<std::string> &f = lines[i + 1];
        ASSERT_EQ(f.size(), header.size());
        ASSERT_EQ(f[0], kKeys[i]);
        if (rows[i].key == "shape" || rows[i].key == "model_error") {
            ASSERT_EQ(f[6], rows[i].texts[0]);
            continue;
        }
        for (int p = 0; p < 2; ++p) {
            const double v = rows[i].values[static_cast<size_t>(p)];
            if (std::isnan(v)) {
                ASSERT_TRUE(f[6 + p].empty());
            } else {
                ASSERT_QFUZZY_EQ(std::stod(f[6 + static_cast<size_t>(p)]), v);  // exact round trip
            }
        }
    }
    ASSERT_QFUZZY_EQ(std::stod(lines[1][6]), a.report.samplesPerSecond);
    ASSERT_QFUZZY_EQ(std::stod(lines[1][10]), a.report.samplesPerSecond / b.report.samplesPerSecond);
    ASSERT_EQ(lines[1][5], a.report.samplesPerSecond > b.report.samplesPerSecond ? plans[0].label : plans[1].label);
}

TEST(PlanComparison, withinModelErrorWhenTheBandsIntersect)
{
    const Evaluated a = evaluated(layout({.tp = 2}, 2, 4));
    const Evaluated b = evaluated(layout({.tp = 4, .recompute = Recompute::Full}, 4, 1));
    ASSERT_TRUE(a.report.feasible && b.report.feasible);
    const double ta = a.report.iterationTime, tb = b.report.iterationTime;
    ASSERT_NE(ta, tb);
    // The relative difference to the faster, by hand. The faster plan's band reaches up by
    // just more or just less than it, the slower's is its time alone: the bands
    // [tf, tf (1 + gap x scale)] and [ts, ts] meet exactly when scale >= 1.
    const double gap = std::abs(ta - tb) / std::min(ta, tb);
    for (const double scale : {1.01, 0.99}) {
        ComparedPlan pa = compared(a, "A"), pb = compared(b, "B");
        const ErrorBand reaching{1.0, 1.0 + gap * scale, "megatron-core tuned, <=64 GPUs, uncalibrated"};
        const ErrorBand point{1.0, 1.0, "megatron-core tuned, <=64 GPUs, uncalibrated"};
        pa.band = ta < tb ? reaching : point;
        pb.band = ta < tb ? point : reaching;
        const std::vector<MetricRow> rows = compareMetrics({pa, pb}, 0);
        for (const char *key : {"throughput", "tokens_per_s", "iteration_time"}) {
            ASSERT_EQ(row(rows, key).withinModelError.size(), size_t(2));
            EXPECT_FALSE(row(rows, key).withinModelError[0]) << key;   // the reference itself
            EXPECT_EQ(row(rows, key).withinModelError[1], scale > 1) << key;
        }
        EXPECT_FALSE(row(rows, "peak_memory").withinModelError[1]);   // not a time
        // The model error row gives each plan's bounds on its own time.
        EXPECT_EQ(row(rows, "model_error").texts[0], pa.band.text(ta));
        EXPECT_EQ(row(rows, "model_error").texts[1].find(pb.band.bounds(tb)), 0u);
    }
}

TEST(PlanComparison, jsonReadsBack)
{
    const Evaluated a = evaluated(layout({.tp = 2}, 2, 4));
    const Evaluated bad = evaluated(layout({.tp = 1}, 1, 16), "llama2-7b");
    const std::vector<ComparedPlan> plans = {compared(a, "A", 2), compared(bad, "B")};
    const std::vector<MetricRow> rows = compareMetrics(plans, 0);
    const Json j = Json::parse(comparisonJson(plans, rows, 0).dump());
    ASSERT_EQ(j.at("reference").get<int>(), 0);
    ASSERT_EQ(j.at("plans").size(), size_t(2));
    ASSERT_EQ(j.at("plans")[1].at("feasible").get<bool>(), false);
    ASSERT_TRUE(!j.at("plans")[1].at("reasons").empty());
    ASSERT_EQ(j.at("metrics").size(), kKeys.size());
    for (size_t i = 0; i < kKeys.size(); ++i) {
        const Json &m = j.at("metrics")[i];
        ASSERT_EQ(m.at("key").get<std::string>(), kKeys[i]);
        for (const char *k : {"name", "unit", "value_unit", "better", "best", "values", "texts", "difference", "ratio"})
            ASSERT_TRUE(m.contains(k)) << k;
    }
    const Json &t = j.at("metrics")[0];
    ASSERT_QFUZZY_EQ(t.at("values")[0].get<double>(), a.report.samplesPerSecond);
    ASSERT_TRUE(t.at("values")[1].is_null());
    ASSERT_EQ(t.at("best").get<int>(), 0);
    ASSERT_EQ(t.at("better").get<std::string>(), std::string("higher"));
}
