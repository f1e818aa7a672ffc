// Issue 45, point 2: the window shows a model as a list of layer kinds. The model panel's strip
// shows the runs and per-kind counts of DeepSeek-V3 (3 dense, 58 MoE blocks, one MTP module)
// as imported from its Hugging Face config.json; its pattern field edits the stack as one undo
// step, and a bad pattern is refused with the reason. The Memory and Breakdown views split
// each stage by layer kind, and the split adds up to what they show unsplit.
#include "SourceDir.h"
#include "BreakdownChartView.h"
#include "ClusterIO.h"
#include "LayerStripView.h"
#include "MemoryChartView.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "ModelPanel.h"
#include "PlanBuilder.h"
#include "UiTestSupport.h"
#include "WorkspaceDocument.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

using namespace nest;
using namespace nest::ui;

namespace {

const QString kDeepSeekV3 = QStringLiteral(NEST_SOURCE_DIR "/sample_configs/models/hf/deepseek-v3.json");

// The quick-start workspace in a document, a model panel on it at the dock's default width.
struct PanelFixture {
    WorkspaceDocument doc;
    ModelPanel panel{&doc};
    PanelFixture()
    {
        doc.load(loadWorkspace(uitest::kQuickstart.toStdString()).value(), QString(),
                 WorkspaceDocument::FileKind::Workspace);
        panel.resize(400, 900);
        panel.show();
    }
    QLineEdit *pattern() const { return panel.findChild<QLineEdit *>(QStringLiteral("layerPattern")); }
    QLabel *problem() const { return panel.findChild<QLabel *>(QStringLiteral("patternProblem")); }
    // Types `text` into the pattern field as a user would (select all, type, Enter).
    void typePattern(const QString &text)
    {
        QLineEdit *edit = pattern();
        edit->setFocus();
        QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
        QTest::keyClick(edit, Qt::Key_Delete);
        QTest::keyClicks(edit, text);
        QTest::keyClick(edit, Qt::Key_Return);
    }
};

std::vector<LayerRun> runs(std::initializer_list<LayerRun> r)
{
    return r;
}

QPoint at(QCustomPlot *p, double key, double value)
{
    return QPointF(p->xAxis->coordToPixel(key), p->yAxis->coordToPixel(value)).toPoint();
}

double sum(const QVector<double> &v)
{
    double s = 0;
    for (double x : v)
        s += x;
    return s;
}

// DeepSeek-V3 (imported from its config.json) on paper-spineleaf-1024: tp 4, pp 16, dp 16,
// ep 8, ZeRO-1, a plan whose first stage holds the embedding, the dense blocks and MoE
// blocks, and whose last the MTP module and the head.
PlanSnapshotPtr deepSeekPlan()
{
    const Result<Topology> topo = resolveCluster("paper-spineleaf-1024");
    const Result<ModelProfile> model = resolveModel(kDeepSeekV3.toStdString());
    if (!topo || !model)
        return nullptr;
    UniformLayout u = uitest::layout(4, 16, 16, 1);
    u.ep = 8;
    u.globalBatch = model->globalBatch;
    u.seqLength = model->seqLength;
    const Result<Plan> plan = buildUniformPlan(u, *topo, *model);
    if (!plan)
        return nullptr;
    auto s = std::make_shared<PlanSnapshot>();
    s->label = "deepseek-v3";
    s->planner = "nest";
    s->topology = *topo;
    s->model = *model;
    s->analysis = analyzePlan(*plan, *topo, *model, s->cost);
    return s;
}

} // namespace

class TestLayerKindsView : public QObject {
    Q_OBJECT
private slots:
    void stripShowsDeepSeekV3sRuns()
    {
        PanelFixture f;
        QVERIFY(f.panel.importFile(kDeepSeekV3));
        LayerStripView *strip = f.panel.layerStrip();
        QCOMPARE(strip->runs(), runs({{"dense", 3}, {"moe", 58}, {"mtp", 1}}));
        QCOMPARE(strip->counts(), runs({{"dense", 3}, {"moe", 58}, {"mtp", 1}}));
        QCOMPARE(strip->legendText(), QStringLiteral("dense 3 · moe 58 · mtp 1"));
        QVERIFY(strip->legend()->text().contains(QStringLiteral("moe&nbsp;58")));
        QCOMPARE(f.pattern()->text(), QStringLiteral("3*dense, 58*moe"));
        // The config's node-limited routing (n_group 8, topk_group 4).
        QCOMPARE(f.panel.findChild<QLabel *>(QStringLiteral("stackInfo"))->text(),
                 QStringLiteral("MTP modules: 1 · routing: top-8 inside 4 of 8 expert groups"));

        // One segment per run, in order, none thinner than the minimum (the lone MTP module
        // stays visible), filling the bar.
        const auto &segments = strip->segments();
        QCOMPARE(segments.size(), size_t{3});
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(segments[i].firstRun, i);
            QCOMPARE(segments[i].kind, i);
            QVERIFY(segments[i].x1 - segments[i].x0 >= LayerStripView::kMinRunWidth - 1e-9);
        }
        QVERIFY(segments[1].x1 - segments[1].x0 > 10 * (segments[0].x1 - segments[0].x0));
        QVERIFY(std::abs(segments.back().x1 - (strip->barRect().width() - 1)) < 1e-6);

        // Tooltips name the run under the mouse.
        const int y = strip->barRect().center().y();
        const QString moe = strip->toolTipAt(QPoint(int((segments[1].x0 + segments[1].x1) / 2), y));
        QVERIFY2(moe.contains(QStringLiteral("<b>moe</b> × 58")) && moe.contains(QStringLiteral("blocks 3–60")),
                 qPrintable(moe));
        const QString mtp = strip->toolTipAt(QPoint(int(segments[2].x0) + 1, y));
        QVERIFY2(mtp.contains(QStringLiteral("<b>mtp</b> × 1")) && mtp.contains(QStringLiteral("MTP module 0")),
                 qPrintable(mtp));
        QVERIFY(strip->toolTipAt(QPoint(5, strip->barRect().bottom() + 5)).isEmpty());
        QVERIFY(!strip->grab().isNull());
    }

    void editingThePatternIsOneUndoStep()
    {
        PanelFixture f;
        QVERIFY(f.panel.importFile(kDeepSeekV3));
        QUndoStack *undo = f.doc.undoStack();
        const int steps = undo->count();
        const ModelSource imported = f.doc.model();
        QSignalSpy changed(&f.doc, &WorkspaceDocument::modelChanged);

        // Period 6 over 61 blocks: ten periods and one more dense block.
        f.typePattern(QStringLiteral("2 dense then 4 moe"));
        QCOMPARE(undo->count(), steps + 1);
        QCOMPARE(changed.count(), 1);
        QVERIFY(f.problem()->isHidden());
        QCOMPARE(f.doc.model().config("model")->pattern, runs({{"dense", 2}, {"moe", 4}}));
        QCOMPARE(f.pattern()->text(), QStringLiteral("2*dense, 4*moe"));   // as core writes it
        QCOMPARE(f.panel.layerStrip()->counts(), runs({{"dense", 21}, {"moe", 40}, {"mtp", 1}}));
        QCOMPARE(f.panel.layerStrip()->runs().size(), size_t{22});

        // The same runs written otherwise change nothing.
        f.typePattern(QStringLiteral("2*dense,4 x moe"));
        QCOMPARE(undo->count(), steps + 1);
        QCOMPARE(f.pattern()->text(), QStringLiteral("2*dense, 4*moe"));

        undo->undo();
        QVERIFY(f.doc.model().sharesParseWith(imported));
        QCOMPARE(f.pattern()->text(), QStringLiteral("3*dense, 58*moe"));
        QCOMPARE(f.panel.layerStrip()->counts(), runs({{"dense", 3}, {"moe", 58}, {"mtp", 1}}));
        undo->redo();
        QCOMPARE(f.panel.layerStrip()->counts(), runs({{"dense", 21}, {"moe", 40}, {"mtp", 1}}));

        // Its own step: a spin-box edit after it does not merge into it.
        f.panel.findChild<QSpinBox *>(QStringLiteral("layers"))->setValue(62);
        QCOMPARE(undo->count(), steps + 2);
        undo->undo();
        QCOMPARE(f.doc.model().config("model")->pattern, runs({{"dense", 2}, {"moe", 4}}));
        QCOMPARE(f.doc.model().config("model")->layers, 61);

        // Empty: every block the model's default kind (MoE, as it has experts).
        f.typePattern(QString());
        QCOMPARE(undo->count(), steps + 2);
        QVERIFY(f.doc.model().config("model")->pattern.empty());
        QCOMPARE(f.panel.layerStrip()->counts(), runs({{"moe", 61}, {"mtp", 1}}));
        QCOMPARE(f.panel.layerStrip()->legendText(), QStringLiteral("moe 61 · mtp 1"));
        QVERIFY(f.pattern()->placeholderText().startsWith(QStringLiteral("uniform")));
    }

    void anExpertsEditTheRouterGroupsDoNotDivideIsRefused()
    {
        // DeepSeek-V3's 256 experts in 8 router groups: 100 experts would split no group
        // evenly; the edit is refused with core's reason and the model keeps its 256.
        PanelFixture f;
        QVERIFY(f.panel.importFile(kDeepSeekV3));
        QSignalSpy status(&f.panel, &ModelPanel::statusMessage);
        QSpinBox *experts = f.panel.findChild<QSpinBox *>(QStringLiteral("experts"));
        experts->setValue(100);
        QCOMPARE(status.count(), 1);
        QCOMPARE(status.at(0).at(0).toString(),
                 QStringLiteral("Model not changed: router_groups (8) must divide experts (100)"));
        QCOMPARE(f.doc.model().config("model")->experts, 256);
        QCOMPARE(experts->value(), 256);
        // 64 experts (8 groups of 8, top-8 inside 4 of them) is a model.
        experts->setValue(64);
        QCOMPARE(f.doc.model().config("model")->experts, 64);
    }

    void aBadPatternIsRefusedWithTheReason_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("reason");
        QTest::newRow("unknown kind") << "3*dense, 58*moe_x" << "unknown layer kind 'moe_x'";
        QTest::newRow("longer than the model") << "3*dense, 59*moe" << "the pattern holds 62 layers";
        QTest::newRow("malformed item") << "3*dense, 0*moe" << "item 2";
        QTest::newRow("sliding without a window") << "5*sliding, global" << "sliding_window";
    }
    void aBadPatternIsRefusedWithTheReason()
    {
        QFETCH(QString, text);
        QFETCH(QString, reason);
        PanelFixture f;
        QVERIFY(f.panel.importFile(kDeepSeekV3));
        const int steps = f.doc.undoStack()->count();
        const ModelSource before = f.doc.model();
        QSignalSpy changed(&f.doc, &WorkspaceDocument::modelChanged);
        f.typePattern(text);
        QCOMPARE(f.doc.undoStack()->count(), steps);
        QCOMPARE(changed.count(), 0);
        QVERIFY(f.doc.model().sharesParseWith(before));
        QVERIFY(f.problem()->isVisibleTo(&f.panel));
        QVERIFY2(f.problem()->text().startsWith(QStringLiteral("Pattern not changed: ")) &&
                     f.problem()->text().contains(reason),
                 qPrintable(f.problem()->text()));
        QCOMPARE(f.panel.patternProblem(), f.problem()->text());
        QCOMPARE(f.pattern()->text(), text);   // kept for the user to mend
        QCOMPARE(f.panel.layerStrip()->counts(), runs({{"dense", 3}, {"moe", 58}, {"mtp", 1}}));
        // A good pattern then clears the message.
        f.typePattern(QStringLiteral("3*dense, 57*moe"));
        QVERIFY(f.problem()->isHidden());
        QCOMPARE(f.doc.undoStack()->count(), steps + 1);
    }

    void aProfileWithoutHyperparametersStillShowsItsStrip()
    {
        PanelFixture f;
        QVERIFY(f.panel.importFile(QStringLiteral(NEST_SOURCE_DIR "/sample_configs/profiles/llama2-7b-example.json")));
        QVERIFY(!f.doc.model().hasHyperparameters());
        QVERIFY(!f.pattern()->isVisibleTo(&f.panel));   // no hyperparameters, no pattern to edit
        const ModelProfile profile = f.doc.model().profile("model").value();
        const int blocks = static_cast<int>(std::count_if(profile.layers.begin(), profile.layers.end(),
                                                          [](const LayerProfile &l) { return isDecoderBlock(l.kind); }));
        QCOMPARE(f.panel.layerStrip()->runs().size(), size_t{1});
        QCOMPARE(f.panel.layerStrip()->runs().front().count, blocks);
    }

    // A 100,000-block stack of alternating kinds: the strip draws at most one segment per
    // pixel column, fast.
    void aHundredThousandLayersDrawRunsNotLayers()
    {
        ModelConfig c = familyDefaults("llama");
        c.name = "tall";
        c.layers = 100000;
        c.hidden = 64;
        c.heads = 4;
        c.kvHeads = 4;
        c.ffnHidden = 128;
        c.vocab = 100;
        c.slidingWindow = 16;
        c.seqLength = 64;
        c.pattern = {{"sliding", 5}, {"global", 1}};
        QCOMPARE(QString::fromStdString(validate(c)), QString());
        const ModelProfile profile = buildProfile(c);
        LayerStripView strip;
        strip.resize(380, 60);
        strip.show();
        QElapsedTimer t;
        t.start();
        strip.setProfile(profile);
        QCOMPARE(strip.runs().size(), size_t{33333});   // 16,666 periods and 4 more sliding
        QCOMPARE(strip.counts(), runs({{"sliding", 83334}, {"global", 16666}}));
        QVERIFY(strip.segments().size() <= size_t(strip.barRect().width()));
        const QImage image = strip.grab().toImage();
        const qint64 ms = t.elapsed();
        qInfo("100,000 blocks: %zu runs, %zu segments, set and drawn in %lld ms", strip.runs().size(),
              strip.segments().size(), ms);
        QVERIFY2(ms < 2000, qPrintable(QString::number(ms)));
        QVERIFY(!image.isNull());
        const QString tip = strip.toolTipAt(QPoint(strip.barRect().width() / 2, strip.barRect().center().y()));
        QVERIFY2(tip.contains(QStringLiteral("mostly sliding")) && tip.contains(QStringLiteral("global ")), qPrintable(tip));
        // Each column shows both kinds, as bands in proportion (5:1 of the bar's rows).
        for (const LayerStripView::Segment &seg : strip.segments()) {
            QCOMPARE(seg.kind, 0);
            QCOMPARE(seg.bands.size(), size_t{2});
            QVERIFY(seg.bands[0].second > 4 * seg.bands[1].second && seg.bands[1].second > 0);
        }
        QCOMPARE(strip.legendText(), QStringLiteral("sliding 83334 · global 16666"));
    }

    // The memory per stage by layer kind adds up to the memory per stage, read back from the
    // plotted bars of both modes.
    void memorySplitByKindAddsUpToTheStages()
    {
        const PlanSnapshotPtr s = deepSeekPlan();
        QVERIFY(s && s->analysis.wellFormed());
        MemoryChartView view;
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setSnapshot(s);
        view.setMode(MemoryChartView::PerStage);
        const QVector<double> keys = view.keys();
        QCOMPARE(keys.size(), 16);
        QVector<double> unsplit(keys.size(), 0.0);
        for (const QString &name : MemoryChartView::componentNames()) {
            const QVector<double> v = view.seriesValues(name);
            for (int k = 0; k < keys.size(); ++k)
                unsplit[k] += v[k];
        }
        // The user picks the mode in the box.
        QComboBox *box = view.modeBox();
        box->setCurrentIndex(box->findText(QStringLiteral("Per stage, by layer kind")));
        QCOMPARE(view.mode(), MemoryChartView::PerStageByKind);
        QCOMPARE(view.keys(), keys);
        QCOMPARE(view.seriesNames(), QStringList({"embedding", "dense", "moe", "mtp", "head", "Activations", "Overhead"}));
        QVector<double> split(keys.size(), 0.0);
        for (const QString &name : view.seriesNames()) {
            const QVector<double> v = view.seriesValues(name);
            QCOMPARE(v.size(), keys.size());
            for (int k = 0; k < keys.size(); ++k)
                split[k] += v[k];
        }
        for (int k = 0; k < keys.size(); ++k) {
            QVERIFY2(std::abs(split[k] - unsplit[k]) <= 1e-9 * unsplit[k],
                     qPrintable(QStringLiteral("stage %1: %2 vs %3").arg(k).arg(split[k]).arg(unsplit[k])));
            QVERIFY(std::abs(unsplit[k] - s->report().stages[k].cost.memoryTotal) <= 1e-9 * unsplit[k]);
        }
        // The first stage holds the embedding, the dense blocks and MoE blocks; the last the
        // MTP module and the head; the dense blocks are nowhere else.
        QVERIFY(view.seriesValues("embedding")[0] > 0 && view.seriesValues("dense")[0] > 0 &&
                view.seriesValues("moe")[0] > 0);
        QVERIFY(view.seriesValues("mtp")[15] > 0 && view.seriesValues("head")[15] > 0);
        QCOMPARE(sum(view.seriesValues("dense")), view.seriesValues("dense")[0]);
        QVERIFY(view.title().contains(QStringLiteral("by layer kind")));
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const QString tip = view.toolTipAt(at(view.plot(), 0, view.seriesValues("embedding")[0] / 2));
        QVERIFY2(tip.contains(QStringLiteral("dense: ")) && tip.contains(QStringLiteral("weights ")) &&
                     !tip.contains(QStringLiteral("mtp:")),
                 qPrintable(tip));
    }

    // The time per stage by layer kind adds up to the time per stage by category, and the
    // iteration split too.
    void breakdownSplitByKindAddsUpToTheStages()
    {
        const PlanSnapshotPtr s = deepSeekPlan();
        QVERIFY(s && s->analysis.wellFormed());
        BreakdownChartView view;
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setSnapshot(s);
        QCOMPARE(view.split(), BreakdownChartView::ByCategory);
        const QVector<double> keys = view.keys();
        QVector<double> unsplit(keys.size(), 0.0);
        double iteration = 0;
        for (const QString &name : BreakdownChartView::categoryNames()) {
            const QVector<double> v = view.seriesValues(name);
            for (int k = 0; k < keys.size(); ++k)
                unsplit[k] += v[k];
            iteration += view.splitValue(name);
        }
        QComboBox *box = view.splitBox();
        box->setCurrentIndex(box->findText(QStringLiteral("By layer kind")));
        QCOMPARE(view.split(), BreakdownChartView::ByKind);
        QCOMPARE(view.seriesNames(),
                 QStringList({"embedding", "dense", "moe", "mtp", "head", "Pipeline p2p", "Bubble"}));
        QVector<double> split(keys.size(), 0.0);
        double splitIteration = 0;
        for (const QString &name : view.seriesNames()) {
            const QVector<double> v = view.seriesValues(name);
            for (int k = 0; k < keys.size(); ++k)
                split[k] += v[k];
            splitIteration += view.splitValue(name);
        }
        for (int k = 0; k < keys.size(); ++k)
            QVERIFY2(std::abs(split[k] - unsplit[k]) <= 1e-9 * unsplit[k],
                     qPrintable(QStringLiteral("stage %1: %2 vs %3").arg(k).arg(split[k]).arg(unsplit[k])));
        QVERIFY(std::abs(splitIteration - iteration) <= 1e-9 * iteration);
        QVERIFY(std::abs(iteration - s->report().iterationTime) <= 1e-6 * iteration);
        // Stage 5 holds MoE blocks alone; MoE blocks exchange their tokens (EP), as the
        // tooltip's detail says.
        QVERIFY(view.seriesValues("moe")[5] > 0);
        QCOMPARE(view.seriesValues("dense")[5], 0.0);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const QString tip = view.toolTipAt(at(view.plot(), 5, view.seriesValues("moe")[5] / 2));
        QVERIFY2(tip.contains(QStringLiteral("<b>stage 5</b>")) && tip.contains(QStringLiteral("moe: ")) &&
                     tip.contains(QStringLiteral("EP ")) && !tip.contains(QStringLiteral("dense:")),
                 qPrintable(tip));
        QVERIFY(view.title().contains(QStringLiteral("by layer kind")));
        // Back to categories: the bars are the ones drawn before.
        view.setSplit(BreakdownChartView::ByCategory);
        QCOMPARE(box->currentIndex(), 0);
        QCOMPARE(view.seriesNames(), BreakdownChartView::categoryNames());
    }
};

QTEST_MAIN(TestLayerKindsView)
#include "test_layer_kinds_view.moc"
