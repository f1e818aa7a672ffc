// The three plan charts (memory, breakdown, timeline) against the evaluator's Report and
// the simulator's events of real plans (presets + uniform layouts), their interactions and
// their exports (PNG loads, SVG parses, PDF keeps text: pdftotext finds title and legend).
#include "BreakdownChartView.h"
#include "ClusterIO.h"
#include "MemoryChartView.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "PlotExport.h"
#include "TimelineView.h"
#include "UiTestSupport.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QImage>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QXmlStreamReader>
#include <QtTest>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace nest;
using namespace nest::ui;

namespace {

PlanSnapshotPtr snapshotOf(const char *cluster, const char *model, UniformLayout u, int globalBatch,
                           const char *label = "nest 14:02")
{
    const Result<Topology> topo = resolveCluster(cluster);
    ModelOptions options;
    options.globalBatch = globalBatch;
    const Result<ModelProfile> profile = resolveModel(model, options);
    if (!topo || !profile)
        return nullptr;
    u.globalBatch = globalBatch;
    u.seqLength = profile->seqLength;
    const Result<Plan> plan = buildUniformPlan(u, *topo, *profile);
    if (!plan)
        return nullptr;
    auto s = std::make_shared<PlanSnapshot>();
    s->label = label;
    s->planner = "nest";
    s->topology = *topo;
    s->model = *profile;
    s->analysis = analyzePlan(*plan, *topo, *profile);
    return s;
}

// The plan most cases use: llama2-7b, tp 2 x pp 2 x dp 4 on 16 V100, 16 micro-batches.
PlanSnapshotPtr smallPlan()
{
    return snapshotOf("paper-v100-16", "llama2-7b", uitest::layout(2, 2, 4), 64);
}

// One of each view, sharing a snapshot.
struct Views {
    MemoryChartView memory;
    BreakdownChartView breakdown;
    TimelineView timeline;
    QList<QWidget *> all() { return {&memory, &breakdown, &timeline}; }
    void setSnapshot(const PlanSnapshotPtr &s)
    {
        memory.setSnapshot(s);
        breakdown.setSnapshot(s);
        timeline.setSnapshot(s);
    }
    bool exportTo(const QString &view, const QString &file, QString *error)
    {
        return view == "memory" ? memory.exportTo(file, error)
               : view == "breakdown" ? breakdown.exportTo(file, error) : timeline.exportTo(file, error);
    }
};

} // namespace

class TestPlanCharts : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

private slots:
    void placeholderAndStaleBanner()
    {
        Views v;
        MemoryChartView &memory = v.memory;
        TimelineView &timeline = v.timeline;
        const QList<std::tuple<QWidget *, QLabel *, QLabel *>> views = {
            {&memory, memory.placeholder(), memory.staleBanner()},
            {&v.breakdown, v.breakdown.placeholder(), v.breakdown.staleBanner()},
            {&timeline, timeline.placeholder(), timeline.staleBanner()}};
        for (const auto &[view, placeholder, banner] : views) {
            QVERIFY(placeholder->isVisibleTo(view));
            QCOMPARE(placeholder->text(), QStringLiteral("No plan yet: press Run (Ctrl+R)"));
            QVERIFY(!banner->isVisibleTo(view));
        }
        QVERIFY(!memory.isStale());
        memory.setStale(true);
        timeline.setStale(true);
        QVERIFY(memory.isStale() && memory.staleBanner()->isVisibleTo(&memory));
        QVERIFY(memory.staleBanner()->text().startsWith(QStringLiteral("Stale: the cluster or model changed")));
        QVERIFY(timeline.staleBanner()->isVisibleTo(&timeline));
        timeline.setStale(false);
        QVERIFY(!timeline.staleBanner()->isVisibleTo(&timeline));
        // A plan replaces the placeholder; null brings it back.
        const PlanSnapshotPtr s = smallPlan();
        QVERIFY(s && s->analysis.wellFormed());
        memory.setSnapshot(s);
        QVERIFY(!memory.placeholder()->isVisibleTo(&memory) && memory.plot()->isVisibleTo(&memory));
        memory.setSnapshot(nullptr);
        QVERIFY(memory.placeholder()->isVisibleTo(&memory));
        QCOMPARE(memory.keys().size(), 0);
        QString error;
        const QString file = m_dir.filePath(QStringLiteral("empty.png"));
        QVERIFY(!memory.exportTo(file, &error));
        QVERIFY2(error.startsWith(file), qPrintable(error));
    }

    void memoryPerDevice_data()
    {
        QTest::addColumn<QString>("cluster");
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("tp");
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("dp");
        QTest::addColumn<bool>("overExpected");
        QTest::newRow("llama2-7b pp2 all devices") << "paper-spineleaf-64" << "llama2-7b" << 8 << 2 << 4 << false;
        QTest::newRow("llama2-7b pp4, 16 of 64 used") << "paper-spineleaf-64" << "llama2-7b" << 2 << 4 << 2 << false;
        QTest::newRow("llama2-7b on V100 (over)") << "paper-v100-16" << "llama2-7b" << 2 << 2 << 4 << true;
        QTest::newRow("gpt3-175b on 8 (over)") << "paper-v100-8" << "gpt3-175b" << 4 << 2 << 1 << true;
    }
    void memoryPerDevice()
    {
        QFETCH(QString, cluster);
        QFETCH(QString, model);
        QFETCH(int, tp);
        QFETCH(int, pp);
        QFETCH(int, dp);
        QFETCH(bool, overExpected);
        const PlanSnapshotPtr s =
            snapshotOf(qPrintable(cluster), qPrintable(model), uitest::layout(tp, pp, dp), 64);
        QVERIFY(s && s->analysis.wellFormed());
        MemoryChartView view;
        view.setSnapshot(s);
        QCOMPARE(view.mode(), MemoryChartView::PerDevice);
        std::vector<DeviceReport> used;
        for (const DeviceReport &d : s->report().devices)
            if (d.stage >= 0)
                used.push_back(d);
        QCOMPARE(static_cast<size_t>(view.keys().size()), used.size());
        QCOMPARE(static_cast<int>(used.size()), tp * pp * dp);
        int over = 0;
        for (size_t i = 0; i < used.size(); ++i) {
            const DeviceReport &d = used[i];
            const auto k = static_cast<qsizetype>(i);
            QCOMPARE(view.keys()[k], double(d.device));
            const std::map<QString, double> expected = {
                {"Weights", d.weights}, {"Gradients", d.gradients}, {"Optimizer state", d.optimizerState},
                {"Activations", d.activations}, {"Stash", d.stash}, {"Overhead", d.overhead},
                {"Capacity", d.capacity}, {"Over capacity", d.total > d.capacity ? d.total : 0.0}};
            for (const auto &[name, value] : expected)
                QCOMPARE(view.seriesValues(name).at(k), value);
            over += d.total > d.capacity ? 1 : 0;
        }
        QCOMPARE(over > 0, overExpected);
        QCOMPARE(view.overCapacityCount(), over);
        QVERIFY(view.title().startsWith(QStringLiteral("Memory per device — nest 14:02")));
        QCOMPARE(view.title().contains(QStringLiteral("%1 devices over capacity").arg(over)), over > 1);
        QVERIFY(view.seriesValues(QStringLiteral("No such series")).isEmpty());

        // Per stage: StageReport::cost, the stage's worst device.
        view.setMode(MemoryChartView::PerStage);
        QCOMPARE(view.modeBox()->currentText(), QStringLiteral("Per stage"));
        const auto &stages = s->report().stages;
        QCOMPARE(view.keys().size(), static_cast<qsizetype>(stages.size()));
        int overStages = 0;
        for (const StageReport &st : stages) {
            const StageCost &c = st.cost;
            QCOMPARE(view.keys()[st.index], double(st.index));
            const std::map<QString, double> expected = {
                {"Weights", c.weights}, {"Gradients", c.gradients}, {"Optimizer state", c.optimizerState},
                {"Activations", c.activations}, {"Stash", c.stash}, {"Overhead", c.overhead},
                {"Capacity", c.memoryCapacity}};
            for (const auto &[name, value] : expected)
                QCOMPARE(view.seriesValues(name).at(st.index), value);
            overStages += c.fitsMemory ? 0 : 1;
        }
        QCOMPARE(view.overCapacityCount(), overStages);
        QVERIFY(view.title().startsWith(QStringLiteral("Memory per stage — ")));
        view.modeBox()->setCurrentIndex(0);  // the combo drives the mode too
        QCOMPARE(view.mode(), MemoryChartView::PerDevice);
        QCOMPARE(static_cast<size_t>(view.keys().size()), used.size());
    }

    void memoryManyDevices()
    {
        const PlanSnapshotPtr s = snapshotOf("paper-spineleaf-1024", "llama2-7b", uitest::layout(8, 4, 32), 1024);
        QVERIFY(s && s->analysis.wellFormed());
        MemoryChartView view;
        view.resize(1200, 600);
        view.setSnapshot(s);
        QCOMPARE(view.keys().size(), 1024);
        auto *weights = qobject_cast<QCPBars *>(view.plot()->plottable(0));
        QVERIFY(weights && weights->name() == QStringLiteral("Weights"));
        QCOMPARE(weights->width(), 1.0);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY2(view.plot()->xAxis->tickVector().size() <= 20,
                 qPrintable(QString::number(view.plot()->xAxis->tickVector().size())));
        QCOMPARE(view.seriesValues("Capacity").size(), 1024);
    }

    void breakdownMatchesReport_data()
    {
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("zero");
        QTest::addColumn<bool>("recompute");
        QTest::addColumn<int>("schedule");
        QTest::newRow("pp2") << 2 << 0 << false << int(Schedule::OneFOneB);
        QTest::newRow("pp4 zero1 recompute") << 4 << 1 << true << int(Schedule::OneFOneB);
        QTest::newRow("pp4 gpipe zero2") << 4 << 2 << false << int(Schedule::GPipe);
        QTest::newRow("pp2 interleaved x2") << 2 << 0 << false << int(Schedule::Interleaved);
    }
    void breakdownMatchesReport()
    {
        QFETCH(int, pp);
        QFETCH(int, zero);
        QFETCH(bool, recompute);
        QFETCH(int, schedule);
        UniformLayout u = uitest::layout(2, pp, 16 / (2 * pp), zero, recompute ? Recompute::Full : Recompute::None);
        u.schedule = static_cast<Schedule>(schedule);
        u.virtualStages = u.schedule == Schedule::Interleaved ? 2 : 1;
        const PlanSnapshotPtr s = snapshotOf("paper-v100-16", "llama2-7b", u, 64);
        QVERIFY(s && s->analysis.wellFormed());
        BreakdownChartView view;
        view.setSnapshot(s);
        const Report &rep = s->report();
        const double m = s->plan().numMicroBatches();
        const int depth = s->plan().pipelineDepth();
        QCOMPARE(view.keys().size(), static_cast<qsizetype>(rep.stages.size()));
        std::map<QString, double> mean;  // per category: sum over stages / depth
        for (const StageReport &st : rep.stages) {
            const StageCost &c = st.cost;
            const std::map<QString, double> expected = {
                {"Compute", m * (c.forward + c.backward)}, {"Recompute", m * c.recompute},
                {"TP", m * c.tpComm}, {"EP", m * c.epComm}, {"CP", m * c.cpComm}, {"Pipeline p2p", m * c.p2p},
                {"Gradient sync", c.dpSync}, {"ZeRO", m * c.zeroComm + c.zeroGather},
                {"Optimizer", c.optimizer}, {"Bubble", st.bubble}};
            double stack = 0;
            for (const auto &[name, value] : expected) {
                QCOMPARE(view.seriesValues(name).at(st.index), value);
                stack += value;
                if (name != "Bubble" || st.index < depth)
                    mean[name] += value / depth;
            }
            if (u.virtualStages == 1)  // every stage's stack is the iteration
                QVERIFY2(std::abs(stack - rep.iterationTime) <= 1e-9 * rep.iterationTime,
                         qPrintable(QStringLiteral("%1 vs %2").arg(stack).arg(rep.iterationTime)));
        }
        double split = 0;
        for (const QString &name : BreakdownChartView::categoryNames()) {
            QVERIFY(qAbs(view.splitValue(name) - mean[name]) <= 1e-12 * rep.iterationTime);
            split += view.splitValue(name);
        }
        QVERIFY2(std::abs(split - rep.iterationTime) <= 1e-9 * rep.iterationTime,
                 qPrintable(QStringLiteral("%1 vs %2").arg(split).arg(rep.iterationTime)));
        QVERIFY(view.seriesValues("Compute").at(0) > 0);
        QCOMPARE(view.seriesValues("Recompute").at(0) > 0, recompute);
        QCOMPARE(view.seriesValues("ZeRO").at(0) > 0, zero > 0);
        QVERIFY(view.title().startsWith(QStringLiteral("Time per stage — nest 14:02")));
    }

    void timelineBlocksAndZoom()
    {
        const UniformLayout u = uitest::layout(2, 4, 2, 0, Recompute::Full);
        auto s = std::make_shared<PlanSnapshot>(*snapshotOf("paper-v100-16", "llama2-7b", u, 32));
        const SimulationResult &sim = s->analysis.simulation;
        QVERIFY(sim.error.empty() && !sim.events.empty());
        s->analysis.simulation.events.push_back({0, 0, -1, "future-kind", 0.0, 1e-3});
        std::map<std::string, int> counts;
        for (const TimelineEvent &e : s->analysis.simulation.events)
            ++counts[e.kind];
        QVERIFY(counts["forward"] > 0 && counts["recompute"] > 0 && counts["send"] > 0 && counts["dp-sync"] > 0);
        TimelineView view;
        view.resize(1000, 600);
        view.setSnapshot(s);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (const auto &[kind, n] : counts)
            QCOMPARE(view.blockCount(QString::fromStdString(kind)), n);
        QCOMPARE(view.blockCount(QStringLiteral("nothing")), 0);
        QCOMPARE(view.plot()->yAxis->range().lower, -0.5);
        QCOMPARE(view.plot()->yAxis->range().upper, 3.5);
        auto *rows = dynamic_cast<QCPAxisTickerText *>(view.plot()->yAxis->ticker().data());
        QVERIFY(rows && rows->ticks().value(0) == QStringLiteral("stage 0") && rows->ticks().size() == 4);
        QVERIFY(view.plot()->yAxis->rangeReversed());

        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const QCPRange fitted = view.timeRange();
        QVERIFY(fitted.lower <= 0 && fitted.upper >= sim.makespan);
        const QPoint centre = view.plot()->axisRect()->rect().center();
        QWheelEvent wheel(centre, view.plot()->mapToGlobal(centre), QPoint(), QPoint(0, 960), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(view.plot(), &wheel);
        const QCPRange zoomed = view.timeRange();
        QVERIFY2(zoomed.size() < 0.5 * fitted.size(), qPrintable(QString::number(zoomed.size() / fitted.size())));
        QCOMPARE(view.plot()->yAxis->range().upper, 3.5);  // only the time axis zooms
        QTest::mousePress(view.plot(), Qt::LeftButton, {}, centre);
        const QPoint to = centre + QPoint(-200, 0);
        QMouseEvent move(QEvent::MouseMove, to, view.plot()->mapToGlobal(to), Qt::NoButton, Qt::LeftButton,
                         Qt::NoModifier);
        QApplication::sendEvent(view.plot(), &move);
        QTest::mouseRelease(view.plot(), Qt::LeftButton, {}, to);
        QVERIFY(view.timeRange().lower > zoomed.lower);  // dragged left: later times
        QCOMPARE(view.timeRange().size(), zoomed.size());
        view.plot()->xAxis->setRange(-100, 100);  // clamped to the iteration's neighbourhood
        QVERIFY(view.timeRange().size() <= 1.1000001 * sim.makespan);
        QTest::mouseClick(view.fitButton(), Qt::LeftButton);
        QCOMPARE(view.timeRange(), fitted);
        QVERIFY(view.title().contains(QStringLiteral("nest 14:02")));
    }

    void timelineLarge()
    {
        // 256 micro-batches x 16 stages.
        const PlanSnapshotPtr s = snapshotOf("paper-v100-16", "llama2-7b", uitest::layout(1, 16, 1), 256);
        QVERIFY(s && s->analysis.wellFormed() && s->simulation().error.empty());
        QCOMPARE(s->plan().numMicroBatches(), 256);
        TimelineView view;
        view.resize(1400, 800);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QElapsedTimer timer;
        timer.start();
        view.setSnapshot(s);
        const qint64 build = timer.restart();
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const qint64 draw = timer.restart();
        view.setSnapshot(s);  // again, the plot already shown
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const qint64 again = timer.restart();
        view.plot()->xAxis->scaleRange(0.02, s->simulation().makespan / 2);  // zoomed: numbered blocks
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        qInfo("timeline: %zu events, first setSnapshot %lld ms + replot %lld ms; next setSnapshot + replot %lld ms; "
              "zoomed replot %lld ms",
              s->simulation().events.size(), build, draw, again, timer.elapsed());
        int total = 0;
        for (const QString &kind : TimelineView::kinds())
            total += view.blockCount(kind);
        QCOMPARE(static_cast<size_t>(total), s->simulation().events.size());
        QCOMPARE(view.blockCount("forward"), 256 * 16);
    }

    void toolTips()
    {
        const PlanSnapshotPtr s = smallPlan();
        Views v;
        for (QWidget *w : v.all()) {
            w->resize(1000, 600);
            w->show();
            QVERIFY(QTest::qWaitForWindowExposed(w));
        }
        v.setSnapshot(s);
        MemoryChartView &memory = v.memory;
        BreakdownChartView &breakdown = v.breakdown;
        TimelineView &timeline = v.timeline;
        for (QCustomPlot *p : {memory.plot(), breakdown.plot(), timeline.plot()})
            p->replot(QCustomPlot::rpImmediateRefresh);
        const auto at = [](QCustomPlot *p, double key, double value) {
            return QPointF(p->xAxis->coordToPixel(key), p->yAxis->coordToPixel(value)).toPoint();
        };
        const DeviceReport &d3 = s->report().devices[3];
        const QString mem = memory.toolTipAt(at(memory.plot(), 3, d3.weights / 2));
        QVERIFY2(mem.contains(QStringLiteral("device 3 (stage %1").arg(d3.stage)) && mem.contains("Weights"),
                 qPrintable(mem));
        QVERIFY(memory.toolTipAt(QPoint(1, 1)).isEmpty());
        // The timeline's total with the band's bounds (none without a band).
        QVERIFY2(!timeline.title().contains(QStringLiteral(" s; evaluator")), qPrintable(timeline.title()));
        {
            auto banded = std::make_shared<PlanSnapshot>(*s);
            banded->band = {0.9, 1.2, "megatron-core tuned, <=64 GPUs, uncalibrated"};
            TimelineView withBand;
            withBand.setSnapshot(banded);
            const double makespan = s->simulation().makespan;
            const int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(1.2 * makespan))));
            const QString bounds = QString::number(0.9 * makespan, 'f', decimals) + QLatin1Char('-') +
                                   QString::number(1.2 * makespan, 'f', decimals) + QStringLiteral(" s; evaluator");
            QVERIFY2(withBand.title().contains(bounds), qPrintable(withBand.title() + " / " + bounds));
        }
        const QString stage = breakdown.toolTipAt(at(breakdown.plot(), 1, 1e-3));
        QVERIFY2(stage.contains("stage 1") && stage.contains("Bubble") && stage.contains("total"), qPrintable(stage));
        const TimelineEvent *first = nullptr;
        for (const TimelineEvent &e : s->simulation().events)
            if (e.kind == "backward" && e.stage == 1 && e.microBatch == 2)
                first = &e;
        QVERIFY(first);
        const QString block = timeline.toolTipAt(at(timeline.plot(), (first->start + first->end) / 2, 1));
        QVERIFY2(block.contains("backward") && block.contains("stage 1, micro-batch 2"), qPrintable(block));
    }

    void exports_data()
    {
        QTest::addColumn<QString>("view");
        QTest::addColumn<QString>("title");
        QTest::addColumn<QString>("legendWord");
        QTest::newRow("memory") << "memory" << "Memory per device" << "Weights";
        QTest::newRow("breakdown") << "breakdown" << "Time per stage" << "Gradient sync";
        QTest::newRow("timeline") << "timeline" << "Timeline of one iteration" << "Backward";
    }
    void exports()
    {
        QFETCH(QString, view);
        QFETCH(QString, title);
        QFETCH(QString, legendWord);
        Views v;
        v.setSnapshot(smallPlan());
        const auto exportTo = [&](const QString &file, QString *error) { return v.exportTo(view, file, error); };
        QString error;
        const QString png = m_dir.filePath(view + ".png");
        QVERIFY2(exportTo(png, &error), qPrintable(error));
        const QImage image(png);
        QVERIFY(!image.isNull() && image.width() == 1200 && image.height() == 700);

        const QString svg = m_dir.filePath(view + ".svg");
        QVERIFY2(exportTo(svg, &error), qPrintable(error));
        const QByteArray svgBytes = uitest::bytesOf(svg);
        QVERIFY(svgBytes.contains("<svg") && svgBytes.contains("viewBox=\"0 0 1200 700\""));
        QXmlStreamReader xml(svgBytes);
        while (!xml.atEnd())
            xml.readNext();
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY(QString::fromUtf8(svgBytes).contains(title));

        const QString pdf = m_dir.filePath(view + ".pdf");
        QVERIFY2(exportTo(pdf, &error), qPrintable(error));
        QVERIFY(uitest::bytesOf(pdf).startsWith("%PDF"));
        const QString pdftotext = QStandardPaths::findExecutable(QStringLiteral("pdftotext"));
        if (pdftotext.isEmpty())
            QSKIP("pdftotext is not installed");
        QProcess proc;
        proc.start(pdftotext, {pdf, QStringLiteral("-")});
        QVERIFY(proc.waitForFinished(30000) && proc.exitCode() == 0);
        const QString text = QString::fromUtf8(proc.readAllStandardOutput());
        QVERIFY2(text.contains(title) && text.contains(QStringLiteral("nest 14:02")), qPrintable(text));
        QVERIFY2(text.contains(legendWord), qPrintable(text));
    }

    void exportErrors()
    {
        MemoryChartView view;
        view.setSnapshot(smallPlan());
        QString error;
        const QString unknown = m_dir.filePath(QStringLiteral("chart.txt"));
        QVERIFY(!view.exportTo(unknown, &error));
        QVERIFY2(error.startsWith(unknown) && error.contains(QStringLiteral("unknown export format")),
                 qPrintable(error));
        QVERIFY(!QFile::exists(unknown));
        const QString noDir = m_dir.filePath(QStringLiteral("missing/dir/chart.png"));
        QVERIFY(!view.exportTo(noDir, &error));
        QVERIFY2(error.startsWith(noDir), qPrintable(error));
    }

    void darkPalette()
    {
        Views v;
        v.setSnapshot(smallPlan());
        QPalette dark = v.memory.palette();
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
        dark.setColor(QPalette::Window, QColor(0x2d, 0x2d, 0x2d));
        dark.setColor(QPalette::WindowText, QColor(0xee, 0xee, 0xee));
        const QColor text(0xee, 0xee, 0xee);
        for (QWidget *w : v.all())
            w->setPalette(dark);
        for (QCustomPlot *p : {v.memory.plot(), v.breakdown.plot(), v.timeline.plot()}) {
            QCOMPARE(p->xAxis->tickLabelColor(), text);
            QCOMPARE(p->yAxis->basePen().color(), text);
            QCOMPARE(p->legend->textColor(), text);
            QCOMPARE(plotTitle(p)->textColor(), text);
            const QImage image = p->toPixmap(400, 300).toImage();
            QCOMPARE(image.pixelColor(2, 2), QColor(0x1e, 0x1e, 0x1e));  // the background
        }
        QCOMPARE(v.breakdown.splitRect()->axis(QCPAxis::atLeft)->basePen().color(), text);
        auto *capacity = qobject_cast<QCPGraph *>(v.memory.plot()->plottable(6));
        QVERIFY(capacity && capacity->name() == QStringLiteral("Capacity") && capacity->pen().color() == text);
    }
};

QTEST_MAIN(TestPlanCharts)
#include "test_plan_charts.moc"
