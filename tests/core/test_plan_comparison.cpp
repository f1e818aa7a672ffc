// core/PlanComparison: the iteration split against the evaluator's stage terms, the metric
// rows against the Report's fields, differences / ratios / best by hand, infeasible plans,
// and the CSV / JSON exports read back.
#include "ClusterIO.h"
#include "Evaluator.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "PlanComparison.h"
#include "PlanShape.h"

#include <QtTest>

#include <cmath>
#include <sstream>

using namespace nest;

namespace {

struct Evaluated {
    Plan plan;
    Report report;
};

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
    return {label, "manual", &e.plan, &e.report, searchSeconds};
}

const MetricRow &row(const std::vector<MetricRow> &rows, const std::string &key)
{
    for (const MetricRow &r : rows)
        if (r.key == key)
            return r;
    qFatal("no row %s", key.c_str());
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

const std::vector<std::string> kKeys = {"throughput", "tokens_per_s", "mfu", "iteration_time", "peak_memory",
                                        "comm_share", "bubble_share", "shape", "search_time"};

} // namespace

class TestPlanComparison : public QObject {
    Q_OBJECT
private slots:
    void splitAddsUpToIteration_data()
    {
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("schedule");
        QTest::addColumn<int>("virtualStages");
        QTest::newRow("1f1b pp2") << 2 << int(Schedule::OneFOneB) << 1;
        QTest::newRow("gpipe pp4") << 4 << int(Schedule::GPipe) << 1;
        QTest::newRow("interleaved pp2 x2") << 2 << int(Schedule::Interleaved) << 2;
        QTest::newRow("interleaved pp4 x2") << 4 << int(Schedule::Interleaved) << 2;
    }
    void splitAddsUpToIteration()
    {
        QFETCH(int, pp);
        QFETCH(int, schedule);
        QFETCH(int, virtualStages);
        UniformLayout u{.tp = 2, .pp = pp, .dp = 8 / pp, .zero = 1};
        u.schedule = static_cast<Schedule>(schedule);
        u.virtualStages = virtualStages;
        const Evaluated e = evaluated(u);
        QVERIFY(e.report.feasible);
        const IterationSplit s = iterationSplit(e.plan, e.report);
        const double t = e.report.iterationTime;
        QVERIFY(t > 0);
        QVERIFY2(std::abs(s.total() - t) <= 1e-9 * t, qPrintable(QString("%1 vs %2").arg(s.total()).arg(t)));
        // Each category by hand from the stage terms: compute over all stages / depth.
        const double m = e.plan.numMicroBatches();
        double compute = 0, tp = 0, bubble = 0;
        for (const StageReport &st : e.report.stages) {
            compute += m * (st.cost.forward + st.cost.backward);
            tp += m * st.cost.tpComm;
            if (st.index < pp)
                bubble += st.bubble;
        }
        QVERIFY(std::abs(s.compute - compute / pp) <= 1e-12 * t);
        QVERIFY(std::abs(s.tp - tp / pp) <= 1e-12 * t);
        QVERIFY(std::abs(s.bubble - bubble / pp) <= 1e-12 * t);
        QVERIFY(s.compute > 0 && s.tp > 0 && s.bubble > 0);
        QCOMPARE(s.communication(), s.tp + s.ep + s.cp + s.p2p + s.gradientSync + s.zero);
    }

    void emptyReportSplitsToZero()
    {
        const IterationSplit s = iterationSplit(Plan{}, Report{});
        QCOMPARE(s.total(), 0.0);
    }

    void valuesAreTheReportFields()
    {
        const Evaluated a = evaluated({.tp = 2, .pp = 2, .dp = 4});
        const Evaluated b = evaluated({.tp = 4, .pp = 4, .dp = 1, .recompute = Recompute::Full});
        QVERIFY(a.report.feasible && b.report.feasible);
        const std::vector<MetricRow> rows = compareMetrics({compared(a, "A", 2.5), compared(b, "B")}, 0);
        QCOMPARE(rows.size(), kKeys.size());
        for (size_t i = 0; i < rows.size(); ++i)
            QCOMPARE(rows[i].key, kKeys[i]);
        const Evaluated *plans[] = {&a, &b};
        for (int i = 0; i < 2; ++i) {
            const Report &r = plans[i]->report;
            QCOMPARE(row(rows, "throughput").values[i], r.samplesPerSecond);
            QCOMPARE(row(rows, "tokens_per_s").values[i], r.tokensPerSecond);
            QCOMPARE(row(rows, "mfu").values[i], r.mfu);
            QCOMPARE(row(rows, "iteration_time").values[i], r.iterationTime);
            QCOMPARE(row(rows, "peak_memory").values[i], r.peakMemoryBytes);
            const IterationSplit s = iterationSplit(plans[i]->plan, r);
            QCOMPARE(row(rows, "comm_share").values[i], s.communication() / r.iterationTime);
            QCOMPARE(row(rows, "bubble_share").values[i], s.bubble / r.iterationTime);
            QVERIFY(std::isnan(row(rows, "shape").values[i]));
        }
        QCOMPARE(row(rows, "shape").texts[0].rfind("tp 2, pp 2, dp 4", 0), size_t(0));
        QVERIFY(row(rows, "shape").texts[1].find("recompute full") != std::string::npos);
        QCOMPARE(row(rows, "search_time").values[0], 2.5);
        QVERIFY(std::isnan(row(rows, "search_time").values[1]));
        QCOMPARE(row(rows, "search_time").texts[1], std::string("n/a"));
        // Display texts in the row's unit.
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1f", 100 * a.report.mfu);
        QCOMPARE(row(rows, "mfu").texts[0], std::string(buf));
        std::snprintf(buf, sizeof buf, "%.2f", a.report.peakMemoryBytes / 1e9);
        QCOMPARE(row(rows, "peak_memory").texts[0], std::string(buf));
    }

    void differenceRatioAndBestByHand()
    {
        const Evaluated a = evaluated({.tp = 2, .pp = 2, .dp = 4});
        const Evaluated b = evaluated({.tp = 4, .pp = 4, .dp = 1, .recompute = Recompute::Full});
        const double ta = a.report.samplesPerSecond, tb = b.report.samplesPerSecond;
        QVERIFY(ta != tb);
        for (int ref : {0, 1}) {
            const std::vector<MetricRow> rows = compareMetrics({compared(a, "A", 4), compared(b, "B", 1)}, ref);
            const MetricRow &t = row(rows, "throughput");
            const double r = ref == 0 ? ta : tb;
            QCOMPARE(t.difference[0], ta - r);
            QCOMPARE(t.difference[1], tb - r);
            QCOMPARE(t.ratio[0], ta / r);
            QCOMPARE(t.ratio[1], tb / r);
            QCOMPARE(t.difference[ref], 0.0);
            QCOMPARE(t.ratio[ref], 1.0);
            QCOMPARE(t.best, ta > tb ? 0 : 1);  // higher is better
            const MetricRow &it = row(rows, "iteration_time");
            QCOMPARE(it.best, a.report.iterationTime < b.report.iterationTime ? 0 : 1);
            const MetricRow &mem = row(rows, "peak_memory");
            QCOMPARE(mem.best, a.report.peakMemoryBytes < b.report.peakMemoryBytes ? 0 : 1);
            QCOMPARE(row(rows, "search_time").best, 1);  // 1 s < 4 s
            QCOMPARE(row(rows, "shape").best, -1);
            QVERIFY(std::isnan(row(rows, "shape").difference[0]));
        }
        // A tie has no best; a single plan has no best.
        const std::vector<MetricRow> same = compareMetrics({compared(a, "A"), compared(a, "A'")}, 0);
        QCOMPARE(row(same, "throughput").best, -1);
        QCOMPARE(row(same, "throughput").ratio[1], 1.0);
        QCOMPARE(row(compareMetrics({compared(a, "A")}, 0), "throughput").best, -1);
        // An out-of-range reference is clamped.
        QCOMPARE(row(compareMetrics({compared(a, "A"), compared(b, "B")}, 7), "throughput").ratio[1], 1.0);
    }

    void infeasiblePlanIsNaNAndNeverBest()
    {
        const Evaluated ok = evaluated({.tp = 2, .pp = 2, .dp = 4});
        // llama2-7b unsharded on one 32 GB V100 per replica: weights + Adam state do not fit.
        const Evaluated bad = evaluated({.tp = 1, .pp = 1, .dp = 16}, "llama2-7b");
        QVERIFY(ok.report.feasible);
        QVERIFY(!bad.report.feasible && !bad.report.reasons.empty());
        // Lower is better for peak memory; the infeasible plan's is NaN, not smaller.
        for (int ref : {0, 1}) {
            const std::vector<MetricRow> rows =
                compareMetrics({compared(bad, "bad", 0.5), compared(ok, "ok", 3)}, ref);
            for (const MetricRow &r : rows) {
                QVERIFY2(r.best != 0, r.key.c_str());
                if (r.key == "shape" || r.key == "search_time")
                    continue;
                QVERIFY2(std::isnan(r.values[0]) && std::isnan(r.difference[0]) && std::isnan(r.ratio[0]), r.key.c_str());
                QCOMPARE(r.texts[0], std::string("infeasible"));
                QCOMPARE(r.best, 1);
                QCOMPARE(std::isnan(r.difference[1]), ref == 0);
            }
            // Search time is known for both, but the infeasible plan is never best.
            QCOMPARE(row(rows, "search_time").values[0], 0.5);
            QCOMPARE(row(rows, "search_time").best, 1);
        }
    }

    void csvReadsBack()
    {
        const Evaluated a = evaluated({.tp = 2, .pp = 2, .dp = 4});
        const Evaluated b = evaluated({.tp = 4, .pp = 2, .dp = 2});
        const std::vector<ComparedPlan> plans = {compared(a, "nest, 14:02"), compared(b, "megatron \"x\"", 1.25)};
        const std::vector<MetricRow> rows = compareMetrics(plans, 1);
        std::istringstream in(comparisonCsv(plans, rows, 1));
        std::string line;
        std::vector<std::vector<std::string>> lines;
        while (std::getline(in, line))
            lines.push_back(splitLine(line));
        QCOMPARE(lines.size(), rows.size() + 1);
        const std::vector<std::string> header = {"key", "name", "unit", "value_unit", "better", "best",
                                                 "nest, 14:02", "megatron \"x\"", "nest, 14:02 diff",
                                                 "megatron \"x\" diff", "nest, 14:02 ratio", "megatron \"x\" ratio"};
        QCOMPARE(lines[0], header);
        for (size_t i = 0; i < rows.size(); ++i) {
            const std::vector<std::string> &f = lines[i + 1];
            QCOMPARE(f.size(), header.size());
            QCOMPARE(f[0], kKeys[i]);
            if (rows[i].key == "shape") {
                QCOMPARE(f[6], rows[i].texts[0]);
                continue;
            }
            for (int p = 0; p < 2; ++p) {
                const double v = rows[i].values[static_cast<size_t>(p)];
                if (std::isnan(v))
                    QVERIFY(f[6 + p].empty());
                else
                    QCOMPARE(std::stod(f[6 + static_cast<size_t>(p)]), v);  // exact round trip
            }
        }
        QCOMPARE(std::stod(lines[1][6]), a.report.samplesPerSecond);
        QCOMPARE(std::stod(lines[1][10]), a.report.samplesPerSecond / b.report.samplesPerSecond);
        QCOMPARE(lines[1][5], a.report.samplesPerSecond > b.report.samplesPerSecond ? plans[0].label : plans[1].label);
    }

    void jsonReadsBack()
    {
        const Evaluated a = evaluated({.tp = 2, .pp = 2, .dp = 4});
        const Evaluated bad = evaluated({.tp = 1, .pp = 1, .dp = 16}, "llama2-7b");
        const std::vector<ComparedPlan> plans = {compared(a, "A", 2), compared(bad, "B")};
        const std::vector<MetricRow> rows = compareMetrics(plans, 0);
        const Json j = Json::parse(comparisonJson(plans, rows, 0).dump());
        QCOMPARE(j.at("reference").get<int>(), 0);
        QCOMPARE(j.at("plans").size(), size_t(2));
        QCOMPARE(j.at("plans")[1].at("feasible").get<bool>(), false);
        QVERIFY(!j.at("plans")[1].at("reasons").empty());
        QCOMPARE(j.at("metrics").size(), kKeys.size());
        for (size_t i = 0; i < kKeys.size(); ++i) {
            const Json &m = j.at("metrics")[i];
            QCOMPARE(m.at("key").get<std::string>(), kKeys[i]);
            for (const char *k : {"name", "unit", "value_unit", "better", "best", "values", "texts", "difference", "ratio"})
                QVERIFY2(m.contains(k), k);
        }
        const Json &t = j.at("metrics")[0];
        QCOMPARE(t.at("values")[0].get<double>(), a.report.samplesPerSecond);
        QVERIFY(t.at("values")[1].is_null());
        QCOMPARE(t.at("best").get<int>(), 0);
        QCOMPARE(t.at("better").get<std::string>(), std::string("higher"));
    }
};

QTEST_APPLESS_MAIN(TestPlanComparison)
#include "test_plan_comparison.moc"
