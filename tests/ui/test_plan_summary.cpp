// PlanSummaryView: every number it shows is the Report's (or the simulator's, or the
// search's), formatted with the precision documented in PlanSummaryView.h; the shape,
// ZeRO and recompute texts of uniform and mixed plans; infeasible plans in red with their
// reasons; the delta line; the plan JSON; exports that decode.
#include "PlanSummaryView.h"

#include "ClusterIO.h"
#include "ModelIO.h"
#include "PlanAnalysis.h"
#include "PlanBuilder.h"
#include "PlanIO.h"
#include "SearchSettings.h"

#include <QFontDatabase>
#include <QFontInfo>
#include <QImage>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProcess>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTextDocument>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;

namespace {

struct Inputs {
    Topology topology;
    ModelProfile model;
};

Inputs inputs(const std::string &cluster, const std::string &model, int globalBatch)
{
    Inputs in;
    auto topo = resolveCluster(cluster);
    auto m = resolveModel(model, ModelOptions{std::nullopt, globalBatch});
    if (!topo || !m)
        qFatal("test inputs do not load: %s %s", topo ? "" : topo.error().c_str(), m ? "" : m.error().c_str());
    in.topology = *topo;
    in.model = *m;
    return in;
}

Plan uniformPlan(const Inputs &in, UniformLayout u)
{
    u.globalBatch = in.model.globalBatch;
    u.seqLength = in.model.seqLength;
    auto plan = buildUniformPlan(u, in.topology, in.model);
    if (!plan)
        qFatal("test plan does not build: %s", plan.error().c_str());
    return *plan;
}

PlanSnapshotPtr snapshotOf(const Inputs &in, const Plan &plan, const std::string &label)
{
    auto s = std::make_shared<PlanSnapshot>();
    s->label = label;
    s->planner = "file";
    s->topology = in.topology;
    s->model = in.model;
    s->analysis = analyzePlan(plan, in.topology, in.model);
    return s;
}

// BERT-Large (24 blocks) on the 16 V100s, global batch 64: tp 2, pp 2, dp 4, micro-batch 2.
Inputs bertInputs() { return inputs("paper-v100-16", "bert-large", 64); }

UniformLayout tp2pp2dp4()
{
    UniformLayout u;
    u.tp = 2;
    u.pp = 2;
    u.dp = 4;
    u.microBatch = 2;
    return u;
}

QString fixed(double v, int decimals) { return QString::number(v, 'f', decimals); }

QString pdfText(const QString &pdf)
{
    QProcess p;
    p.start(QStringLiteral("pdftotext"), {pdf, QStringLiteral("-")});
    if (!p.waitForFinished(30000))
        return QString();
    return QString::fromUtf8(p.readAllStandardOutput());
}

} // namespace

class TestPlanSummary : public QObject {
    Q_OBJECT
private slots:
    void placeholderWithoutPlan()
    {
        PlanSummaryView view;
        view.resize(800, 600);
        view.show();
        QVERIFY(view.placeholder()->isVisible());
        QCOMPARE(view.placeholder()->text(), QStringLiteral("No plan yet: press Run (Ctrl+R)"));
        QVERIFY(!view.stageTable()->isVisible());
        QCOMPARE(view.valueText("throughput"), QString());
        QTemporaryDir dir;
        QString error;
        QVERIFY(!view.exportTo(dir.filePath("none.png"), &error));
        QVERIFY2(error.startsWith(dir.filePath("none.png") + ":"), qPrintable(error));
    }

    void valuesAreTheReportsNumbers()
    {
        const Inputs in = bertInputs();
        const PlanSnapshotPtr s = snapshotOf(in, uniformPlan(in, tp2pp2dp4()), "bert tp2");
        const Report &r = s->report();
        QVERIFY2(r.feasible, r.reasons.empty() ? "" : r.reasons.front().c_str());
        QVERIFY(r.samplesPerSecond > 0 && r.iterationTime > 0 && r.mfu > 0);
        QVERIFY(s->simulation().error.empty());

        PlanSummaryView view;
        view.setSnapshot(s);
        QCOMPARE(view.snapshot(), s);
        QCOMPARE(view.valueText("throughput"), fixed(r.samplesPerSecond, 2) + " samples/s");
        QCOMPARE(view.valueText("tokens"), fixed(r.tokensPerSecond, 0) + " tokens/s");
        QCOMPARE(view.valueText("mfu"), fixed(100 * r.mfu, 1) + " %");
        QCOMPARE(view.valueText("iteration"), fixed(r.iterationTime, 4) + " s");
        {
            // With the model's error band: the bounds of the time, the upper one to 3
            // significant digits and the lower one to the same decimals, then the basis.
            auto banded = std::make_shared<PlanSnapshot>(*s);
            banded->band = {0.94, 1.164, "megatron-core tuned, <=64 GPUs, uncalibrated"};
            const double high = 1.164 * r.iterationTime;
            const int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(high))));
            PlanSummaryView withBand;
            withBand.setSnapshot(banded);
            QCOMPARE(withBand.valueText("iteration"),
                     fixed(r.iterationTime, 4) + " s (" + fixed(0.94 * r.iterationTime, decimals) + "-" +
                         fixed(high, decimals) + " s, megatron-core tuned, <=64 GPUs, uncalibrated)");
        }
        double smallest = std::numeric_limits<double>::infinity();
        for (const DeviceReport &d : r.devices)
            if (d.stage >= 0)
                smallest = std::min(smallest, d.capacity);
        const double v100 = 32.0 * 1024 * 1024 * 1024;  // V100-32GB (32 GiB), no headroom
        QCOMPARE(smallest, v100);
        QCOMPARE(view.valueText("memory"), fixed(r.peakMemoryBytes / 1e9, 2) + " GB of 34.36 GB (" +
                                               fixed(100 * r.peakMemoryBytes / v100, 1) + " %)");
        QCOMPARE(view.valueText("shape"), QStringLiteral("tp 2, pp 2, dp 4, ep 1, cp 1"));
        QCOMPARE(view.valueText("zero"), QStringLiteral("off"));
        QCOMPARE(view.valueText("recompute"), QStringLiteral("none"));
        QCOMPARE(view.valueText("sp"), QStringLiteral("off"));
        // 64 samples / (micro-batch 2 x dp 4) = 8 micro-batches per replica.
        QCOMPARE(view.valueText("microbatch"), QStringLiteral("8 micro-batches of 2 samples per replica (global batch 64)"));
        QCOMPARE(view.valueText("schedule"), QStringLiteral("1f1b"));
        const double gap = 100 * (s->simulation().makespan - r.iterationTime) / r.iterationTime;
        QCOMPARE(view.valueText("simulation"), fixed(s->simulation().makespan, 4) + " s simulated, " +
                                                   (gap >= 0 ? "+" : "") + fixed(gap, 2) + " % vs the evaluator");
        QCOMPARE(view.valueText("feasibility"), QStringLiteral("feasible"));
        QCOMPARE(view.valueText("search"), QStringLiteral("not searched (planner: file)"));
        QVERIFY(view.titleText().contains("bert tp2"));
        QVERIFY(view.titleText().contains("file"));
        QCOMPARE(view.valueText("no-such-key"), QString());

        // The table: one row per stage; 24 blocks split 12 + 12, embedding first, head last;
        // rank order tp-cp-ep-dp-pp puts stage 0 on devices 0-7 and stage 1 on 8-15.
        const QTableWidget *t = view.stageTable();
        QCOMPARE(t->rowCount(), 2);
        QCOMPARE(t->columnCount(), PlanSummaryView::stageColumns().size());
        const Plan &p = s->plan();
        for (int i = 0; i < 2; ++i) {
            const StagePlan &st = p.stages[static_cast<size_t>(i)];
            QCOMPARE(t->item(i, 0)->text(), QString::number(i));
            QCOMPARE(t->item(i, 1)->text(), QStringLiteral("%1-%2").arg(st.firstLayer).arg(st.endLayer - 1));
            QCOMPARE(t->item(i, 2)->text(), QStringLiteral("2"));
            QCOMPARE(t->item(i, 3)->text(), QStringLiteral("1"));
            QCOMPARE(t->item(i, 4)->text(), QStringLiteral("1"));
            QCOMPARE(t->item(i, 5)->text(), QStringLiteral("off"));
            QCOMPARE(t->item(i, 6)->text(), QStringLiteral("0"));
            QCOMPARE(t->item(i, 7)->text(), QStringLiteral("none"));
            QCOMPARE(t->item(i, 8)->text(), i == 0 ? QStringLiteral("0-7") : QStringLiteral("8-15"));
            QCOMPARE(t->item(i, 9)->text(), fixed(1e3 * r.stages[static_cast<size_t>(i)].cost.perMicroBatch, 2));
            QCOMPARE(t->item(i, 10)->text(), fixed(r.stages[static_cast<size_t>(i)].cost.memoryTotal / 1e9, 2));
        }
        QCOMPARE(p.stages[0].firstLayer, 0);
        QCOMPARE(p.stages[1].endLayer, static_cast<int>(s->model.layers.size()));
    }

    void mixedStagesShowRanges()
    {
        // tp 2 pp 2 dp 2 on devices 0-7, then stage 1 widened to tp 4 on devices 8-15 with
        // ZeRO-3 and recompute; stage 0 keeps ZeRO-1.
        const Inputs in = bertInputs();
        UniformLayout u = tp2pp2dp4();
        u.dp = 2;
        u.zero = 1;
        Plan plan = uniformPlan(in, u);
        StagePlan &second = plan.stages[1];
        second.tp = 4;
        second.zero = 3;
        second.recompute = Recompute::Full;
        second.devices = {{8, 9, 10, 11}, {12, 13, 14, 15}};
        const PlanSnapshotPtr s = snapshotOf(in, plan, "mixed");
        QVERIFY(s->analysis.errors.empty());
        PlanSummaryView view;
        view.setSnapshot(s);
        QCOMPARE(view.valueText("shape"), QStringLiteral("tp 2-4, pp 2, dp 2, ep 1, cp 1"));
        QCOMPARE(view.valueText("zero"), QStringLiteral("mixed: ZeRO-1 to ZeRO-3"));
        QCOMPARE(view.valueText("recompute"), QStringLiteral("none on 1, full on 1 (of 2 stages)"));
        QCOMPARE(view.stageTable()->item(1, 2)->text(), QStringLiteral("4"));
        QCOMPARE(view.stageTable()->item(1, 6)->text(), QStringLiteral("3"));
        QCOMPARE(view.stageTable()->item(1, 7)->text(), QStringLiteral("full"));
        QCOMPARE(view.stageTable()->item(0, 8)->text(), QStringLiteral("0-3"));

        // Interleaved: depth and chunks per device.
        UniformLayout v = tp2pp2dp4();
        v.schedule = Schedule::Interleaved;
        v.virtualStages = 2;
        v.zero = 1;
        const PlanSnapshotPtr il = snapshotOf(in, uniformPlan(in, v), "interleaved");
        view.setSnapshot(il);
        QCOMPARE(view.valueText("shape"), QStringLiteral("tp 2, pp 2 (x2 virtual), dp 4, ep 1, cp 1"));
        QCOMPARE(view.valueText("schedule"), QStringLiteral("interleaved, 2 virtual stages per device"));
        QCOMPARE(view.valueText("zero"), QStringLiteral("ZeRO-1"));
        QCOMPARE(view.stageTable()->rowCount(), 4);
    }

    void infeasiblePlanShowsReasonsInRed()
    {
        // Llama 2 7B replicated on every V100 (dp 16): ~6.7e9 x 18 bytes per device >> 32 GB.
        const Inputs in = inputs("paper-v100-16", "llama2-7b", 64);
        UniformLayout u;
        u.dp = 16;
        const PlanSnapshotPtr s = snapshotOf(in, uniformPlan(in, u), "too big");
        QVERIFY(!s->report().feasible);
        QVERIFY(!s->report().reasons.empty());
        PlanSummaryView view;
        view.resize(900, 700);
        view.show();
        view.setSnapshot(s);
        const QString text = view.valueText("feasibility");
        QVERIFY2(text.startsWith("infeasible: "), qPrintable(text));
        for (const std::string &reason : s->report().reasons)
            QVERIFY2(text.contains(QString::fromStdString(reason)), qPrintable(text));
        QVERIFY(view.feasibilityLabel()->isVisible());
        QCOMPARE(view.feasibilityLabel()->palette().color(QPalette::WindowText), PlanSummaryView::infeasibleColor());
        QVERIFY(view.feasibilityLabel()->font().bold());
        // Back to a feasible plan: no longer red.
        const Inputs bert = bertInputs();
        view.setSnapshot(snapshotOf(bert, uniformPlan(bert, tp2pp2dp4()), "ok"));
        QCOMPARE(view.valueText("feasibility"), QStringLiteral("feasible"));
        QVERIFY(view.feasibilityLabel()->palette().color(QPalette::WindowText) != PlanSummaryView::infeasibleColor());
    }

    void searchStatisticsWhenSearched()
    {
        const Inputs in = bertInputs();
        SearchSettings settings;
        settings.microBatches = {1, 2};
        const SearchOptions options = searchOptionsFrom(settings, in.model);
        const PlanResult result = makePlanner("nest")->plan(in.topology, in.model, options);
        QVERIFY(result.found);
        auto s = std::make_shared<PlanSnapshot>();
        s->label = "nest run";
        s->planner = "nest";
        s->topology = in.topology;
        s->model = in.model;
        s->settings = settings;
        s->analysis = analyzePlan(result.plan, in.topology, in.model, options.cost);
        s->searched = true;
        s->stats = result.stats;
        s->objective = result.objective;
        s->verified = result.verified;
        QVERIFY(s->verified);
        PlanSummaryView view;
        view.setSnapshot(s);
        const SearchStats &st = result.stats;
        QCOMPARE(view.valueText("search"),
                 QStringLiteral("%1 s, %2 states, %3 transitions, %4 pruned, %5 stage-cost calls, "
                                "%6 of %7 outer points searched (%8 skipped); search value matches the evaluator")
                     .arg(fixed(st.wallSeconds, 3))
                     .arg(st.states)
                     .arg(st.transitions)
                     .arg(st.pruned)
                     .arg(st.stageCostCalls)
                     .arg(st.configs)
                     .arg(st.configs + st.configsSkipped)
                     .arg(st.configsSkipped));
        QCOMPARE(view.valueText("iteration"), fixed(result.report.iterationTime, 4) + " s");

        auto wrong = std::make_shared<PlanSnapshot>(*s);
        wrong->verified = false;
        wrong->objective = s->objective * 1.5;
        view.setSnapshot(wrong);
        QVERIFY2(view.valueText("search").endsWith("search value DIFFERS from the evaluator (" +
                                                   fixed(wrong->objective, 6) + " s vs " +
                                                   fixed(s->report().iterationTime, 6) + " s)"),
                 qPrintable(view.valueText("search")));
    }

    void deltaAgainstThePreviousPlan()
    {
        const Inputs in = bertInputs();
        UniformLayout slowLayout = tp2pp2dp4();
        slowLayout.microBatch = 1;
        const PlanSnapshotPtr a = snapshotOf(in, uniformPlan(in, tp2pp2dp4()), "a");
        const PlanSnapshotPtr b = snapshotOf(in, uniformPlan(in, slowLayout), "b");
        QVERIFY(a->report().feasible && b->report().feasible);
        const double ta = a->report().samplesPerSecond, tb = b->report().samplesPerSecond;
        QVERIFY(ta != tb);
        const PlanSnapshotPtr fast = ta > tb ? a : b, slow = ta > tb ? b : a;
        const Report &f = fast->report(), &w = slow->report();

        PlanSummaryView view;
        view.setSnapshot(fast);
        QCOMPARE(view.deltaText(), QString());  // no previous plan
        view.setPrevious(slow);
        // Hand computation: (fast - slow) / slow, positive; iteration time shorter.
        const double up = 100 * (f.samplesPerSecond - w.samplesPerSecond) / w.samplesPerSecond;
        const double dt = f.iterationTime - w.iterationTime;
        QVERIFY(up > 0 && dt < 0);
        QCOMPARE(view.deltaText(), QStringLiteral("Δ throughput +%1 % (was %2 samples/s), Δ iteration time %3 s (%4 %)")
                                       .arg(fixed(up, 1), fixed(w.samplesPerSecond, 1), fixed(dt, 4),
                                            fixed(100 * dt / w.iterationTime, 1)));
        // The other way round the signs flip.
        view.setSnapshot(slow);
        view.setPrevious(fast);
        const double down = 100 * (w.samplesPerSecond - f.samplesPerSecond) / f.samplesPerSecond;
        QVERIFY2(view.deltaText().startsWith(QStringLiteral("Δ throughput -%1 % (was %2 samples/s), Δ iteration time +")
                                                 .arg(fixed(-down, 1), fixed(f.samplesPerSecond, 1))),
                 qPrintable(view.deltaText()));
        // An infeasible side: no delta.
        const Inputs big = inputs("paper-v100-16", "llama2-7b", 64);
        UniformLayout u;
        u.dp = 16;
        view.setPrevious(snapshotOf(big, uniformPlan(big, u), "too big"));
        QCOMPARE(view.deltaText(), QString());
        view.setPrevious(nullptr);
        QCOMPARE(view.deltaText(), QString());
    }

    void planJsonParsesBack()
    {
        const Inputs in = bertInputs();
        const PlanSnapshotPtr s = snapshotOf(in, uniformPlan(in, tp2pp2dp4()), "json");
        PlanSummaryView view;
        view.setSnapshot(s);
        QVERIFY(view.planJsonView()->isReadOnly());
        // A fixed-pitch font is asked for; where the machine has any monospaced family, it
        // is the one shown.
        const QFont font = view.planJsonView()->font();
        QVERIFY(font.fixedPitch());
        QCOMPARE(font.styleHint(), QFont::Monospace);
        const QStringList families = QFontDatabase::families();
        const bool anyFixed = std::any_of(families.begin(), families.end(),
                                          [](const QString &f) { return QFontDatabase::isFixedPitch(f); });
        if (anyFixed)
            QVERIFY2(QFontInfo(font).fixedPitch(), qPrintable(QFontInfo(font).family()));
        const Json j = Json::parse(view.planJsonText().toStdString(), nullptr, false);
        QVERIFY(j.is_object());
        const auto back = planFromJson(j, "view");
        QVERIFY2(back, back ? "" : back.error().c_str());
        QVERIFY(*back == s->plan());
        QCOMPARE(j, planToJson(s->plan()));
        // One line per stage (not one per device id): 2 stages + the other keys + braces.
        QCOMPARE(view.planJsonText().count(QLatin1Char('\n')) + 1, int(planToJson(s->plan()).size()) + 2 + 2 + 1);
    }

    void staleBanner()
    {
        PlanSummaryView view;
        view.resize(800, 600);
        view.show();
        const Inputs in = bertInputs();
        view.setSnapshot(snapshotOf(in, uniformPlan(in, tp2pp2dp4()), "x"));
        QVERIFY(!view.isStale());
        QVERIFY(!view.staleBanner()->isVisible());
        view.setStale(true);
        QVERIFY(view.isStale());
        QVERIFY(view.staleBanner()->isVisible());
        QCOMPARE(view.staleBanner()->text(),
                 QStringLiteral("Stale: the cluster or model changed since this plan; re-run to update"));
        view.setStale(false);
        QVERIFY(!view.staleBanner()->isVisible());
    }

    void exportsDecode()
    {
        const Inputs in = bertInputs();
        const PlanSnapshotPtr s = snapshotOf(in, uniformPlan(in, tp2pp2dp4()), "exported plan");
        PlanSummaryView view;
        view.setSnapshot(s);
        QTemporaryDir dir;
        QString error;

        const QString png = dir.filePath("summary.png");
        QVERIFY2(view.exportTo(png, &error), qPrintable(error));
        QImage image;
        QVERIFY(image.load(png));
        QVERIFY(image.width() > 100 && image.height() > 100);

        const QString svg = dir.filePath("summary.svg");
        QVERIFY2(view.exportTo(svg, &error), qPrintable(error));
        QFile svgFile(svg);
        QVERIFY(svgFile.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&svgFile);
        QString root, title;
        int texts = 0;
        while (!xml.atEnd()) {
            if (xml.readNext() != QXmlStreamReader::StartElement)
                continue;
            if (root.isEmpty())
                root = xml.name().toString();
            if (xml.name() == QLatin1String("title"))
                title = xml.readElementText();
            else if (xml.name() == QLatin1String("text"))
                ++texts;
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QCOMPARE(root, QStringLiteral("svg"));
        QVERIFY2(title.contains("exported plan"), qPrintable(title));
        QVERIFY(texts > 10);  // the labels are text, not paths

        const QString json = dir.filePath("plan.json");
        QVERIFY2(view.exportTo(json, &error), qPrintable(error));
        const auto loaded = loadPlan(json.toStdString());
        QVERIFY2(loaded, loaded ? "" : loaded.error().c_str());
        QVERIFY(*loaded == s->plan());

        const QString pdf = dir.filePath("summary.pdf");
        QVERIFY2(view.exportTo(pdf, &error), qPrintable(error));
        QVERIFY(uitest::bytesOf(pdf).startsWith("%PDF"));
        if (QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty())
            QSKIP("pdftotext is not installed (poppler-utils)");
        const QString text = pdfText(pdf);
        QVERIFY2(text.contains("Throughput"), qPrintable(text.left(400)));
        QVERIFY2(text.contains("exported plan"), qPrintable(text.left(400)));
        QVERIFY2(text.contains(fixed(s->report().samplesPerSecond, 2)), qPrintable(text.left(400)));
    }

    // Issue 49: the export was a grab of the widget (scroll bars, a stage missing, the plan
    // JSON cut after 6 lines). Now a small view exports every stage row and the whole JSON.
    void exportCarriesTheWholeContent()
    {
        const Inputs in = bertInputs();
        UniformLayout u = tp2pp2dp4();
        u.pp = 8;
        u.dp = 1;
        const Plan plan = uniformPlan(in, u);
        QCOMPARE(plan.stages.size(), size_t(8));
        PlanSummaryView view;
        view.resize(420, 320);
        view.setSnapshot(snapshotOf(in, plan, "eight stages"));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY2(view.planJsonView()->verticalScrollBar()->maximum() > 0, "the view is meant to scroll here");
        // Expected, from core alone: the plan's JSON (without its white space, which the
        // view's line breaks and the export's wrapping change) and each stage's layer range.
        const auto bare = [](QString t) { return t.remove(QRegularExpression(QStringLiteral("\\s"))); };
        const QString json = bare(QString::fromStdString(planToJson(plan).dump()));
        QStringList ranges;
        for (const StagePlan &st : plan.stages)
            ranges << QStringLiteral("%1-%2").arg(st.firstLayer).arg(st.endLayer - 1);
        QTemporaryDir dir;
        QString error;

        const QString svg = dir.filePath("whole.svg");
        QVERIFY2(view.exportTo(svg, &error), qPrintable(error));
        QFile svgFile(svg);
        QVERIFY(svgFile.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&svgFile);
        QString text;
        QStringList cells;
        while (!xml.atEnd())
            if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("text")) {
                cells << xml.readElementText(QXmlStreamReader::IncludeChildElements);
                text += cells.back();
            }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY2(bare(text).contains(json), qPrintable(bare(text).right(300)));
        for (const QString &range : ranges)
            QVERIFY2(cells.contains(range), qPrintable(range));

        // PNG: at 2x, as tall as the whole document, far taller than the view.
        const std::unique_ptr<QTextDocument> document = view.exportDocument();
        const QString png = dir.filePath("whole.png");
        QVERIFY2(view.exportTo(png, &error), qPrintable(error));
        QImage image;
        QVERIFY(image.load(png));
        QCOMPARE(image.width(), qRound(2 * document->size().width()));
        QVERIFY(std::abs(image.height() - 2 * document->size().height()) <= 1);
        QVERIFY2(image.height() > 2 * view.height(),   // a 2x grab of the view would be 2 x its height
                 qPrintable(QStringLiteral("%1 vs a view %2 px high").arg(image.height()).arg(view.height())));

        const QString pdf = dir.filePath("whole.pdf");
        QVERIFY2(view.exportTo(pdf, &error), qPrintable(error));
        if (QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty())
            QSKIP("pdftotext is not installed (poppler-utils)");
        const QString pdfWords = bare(pdfText(pdf));
        QVERIFY2(pdfWords.contains(json), qPrintable(pdfWords.right(300)));
        for (const QString &range : ranges)
            QVERIFY2(pdfWords.contains(range), qPrintable(range));
    }

    // Issue 49: the NEST artifact's Llama-2 profile (TPU v4 times, no FLOPs) planned on
    // H100s read "MFU 0.0 %" with no word on the device. Now: a visible warning naming both
    // devices, and an MFU marked unknown; on the artifact's own device, no warning.
    void measuredOnAnotherDeviceIsSaid()
    {
        const std::string file = NEST_SOURCE_DIR "/sample_configs/profiles/ilp_llama2_llama2_mbs_1_sl_4096_dev64.json";
        const Inputs h100 = inputs("superpod-h100-256", file, 4096);
        // The plan nest-cli finds there: dp 256, ZeRO-1, full recompute, micro-batch 1.
        UniformLayout u = uitest::layout(1, 1, 256, 1, Recompute::Full);
        u.microBatch = 1;
        PlanSummaryView view;
        view.setSnapshot(snapshotOf(h100, uniformPlan(h100, u), "artifact on h100"));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(view.snapshot()->report().feasible);
        QCOMPARE(view.valueText("mfu"), QStringLiteral("unknown (the model gives no FLOPs)"));
        QVERIFY(view.deviceWarningLabel()->isVisible());
        const QString warning = view.valueText("device");
        QVERIFY2(warning.startsWith(QStringLiteral("Warning: the model's times were measured on tpuv4-like, but the "
                                                   "cluster's devices are h100-sxm-80gb")),
                 qPrintable(warning));
        // The export carries it too.
        QVERIFY(view.exportDocument()->toPlainText().contains(warning));

        const Inputs own = inputs("paper-fattree-64", file, 4096);   // the artifact's TPUv4-like device
        u.dp = 64;
        view.setSnapshot(snapshotOf(own, uniformPlan(own, u), "artifact on tpuv4"));
        QVERIFY(!view.deviceWarningLabel()->isVisible());
        QCOMPARE(view.valueText("device"), QString());
        // A model built from FLOPs keeps its MFU.
        const Inputs bert = bertInputs();
        view.setSnapshot(snapshotOf(bert, uniformPlan(bert, tp2pp2dp4()), "bert"));
        QCOMPARE(view.valueText("mfu"), QStringLiteral("%1 %").arg(100 * view.snapshot()->report().mfu, 0, 'f', 1));
        QVERIFY(view.snapshot()->report().mfu > 0);
    }

    void exportErrorsNameTheFile()
    {
        const Inputs in = bertInputs();
        PlanSummaryView view;
        view.setSnapshot(snapshotOf(in, uniformPlan(in, tp2pp2dp4()), "x"));
        QTemporaryDir dir;
        QString error;
        const QString odd = dir.filePath("summary.bmpx");
        QVERIFY(!view.exportTo(odd, &error));
        QVERIFY2(error.startsWith(odd + ": ") && error.contains(".png"), qPrintable(error));
        QVERIFY(!QFile::exists(odd));
        const QString missingDir = dir.filePath("no/such/dir/summary.png");
        QVERIFY(!view.exportTo(missingDir, &error));
        QVERIFY2(error.startsWith(missingDir + ": "), qPrintable(error));
        const QString json = dir.filePath("no/such/dir/plan.json");
        QVERIFY(!view.exportTo(json, &error));
        QVERIFY2(error.startsWith(json + ": "), qPrintable(error));
    }
};

QTEST_MAIN(TestPlanSummary)
#include "test_plan_summary.moc"
