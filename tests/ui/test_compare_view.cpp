// The Compare tab (CompareView), its placement thumbnails and its report: the metric table
// against each plan's Report, the reference combo, the best cells, shared chart axes, the
// infeasible column, and the exports (4-page PDF with text, PNG, SVG, JSON, CSV).
#include "BreakdownChartView.h"
#include "ClusterIO.h"
#include "CompareView.h"
#include "ComparisonReport.h"
#include "DeviceSpec.h"
#include "MegatronPlanner.h"
#include "MemoryChartView.h"
#include "ModelIO.h"
#include "PlacementOverlay.h"
#include "PlacementThumbnail.h"
#include "PlanBuilder.h"
#include "UiTestSupport.h"

#include <QComboBox>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QWheelEvent>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>
#include <qcustomplot.h>

#include <cmath>

using namespace nest;
using namespace nest::ui;

namespace {

ModelProfile modelNamed(const char *name = "bert-large", int globalBatch = 64)
{
    ModelOptions options;
    options.globalBatch = globalBatch;
    return resolveModel(name, options).value();
}

PlanSnapshotPtr snapshotOf(const Topology &topo, const ModelProfile &model, const Plan &plan, const char *label,
                           const char *planner, double searchSeconds = 0)
{
    auto s = std::make_shared<PlanSnapshot>();
    s->label = label;
    s->planner = planner;
    s->topology = topo;
    s->model = model;
    s->analysis = analyzePlan(plan, topo, model);
    s->band = validationErrorBand(Framework::MegatronCore, Stack::Tuned, topo.deviceCount());
    s->stats.wallSeconds = searchSeconds;
    s->searched = searchSeconds > 0;
    return s;
}

PlanSnapshotPtr uniform(const char *cluster, const char *modelName, UniformLayout u, const char *label,
                        double searchSeconds = 0)
{
    const Topology topo = resolveCluster(cluster).value();
    const ModelProfile model = modelNamed(modelName);
    u.globalBatch = model.globalBatch;
    u.seqLength = model.seqLength;
    return snapshotOf(topo, model, buildUniformPlan(u, topo, model).value(), label, "nest", searchSeconds);
}

// The Megatron-style baseline on the 8-V100 cluster (another cluster than the others).
PlanSnapshotPtr megatronOn8()
{
    const Topology topo = resolveCluster("paper-v100-8").value();
    const ModelProfile model = modelNamed();
    SearchOptions options;
    options.microBatches = {1};
    const PlanResult r = MegatronPlanner().plan(topo, model, options);
    if (!r.found)
        return nullptr;
    return snapshotOf(topo, model, r.plan, "megatron 8", "megatron", r.stats.wallSeconds > 0 ? r.stats.wallSeconds : 0.01);
}

// bert-large: nest on 16 V100 (searched 2.5 s), megatron on 8 V100; and an infeasible
// plan (llama2-7b unsharded on 32 GB devices).
QList<PlanSnapshotPtr> threePlans()
{
    return {uniform("paper-v100-16", "bert-large", uitest::layout(2, 2, 4), "nest 16", 2.5), megatronOn8(),
            uniform("paper-v100-16", "llama2-7b", uitest::layout(1, 1, 16), "unsharded 16")};
}

int rowOf(const CompareView &v, const std::string &key)
{
    for (size_t r = 0; r < v.metrics().size(); ++r)
        if (v.metrics()[r].key == key)
            return int(r);
    return -1;
}

QString run(const QString &tool, const QStringList &args)
{
    QProcess proc;
    proc.start(tool, args);
    if (!proc.waitForFinished(60000) || proc.exitCode() != 0)
        return QStringLiteral("<%1 failed>").arg(tool);
    return QString::fromUtf8(proc.readAllStandardOutput());
}

bool imageHasColour(const QImage &image, const QColor &c)
{
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            if (image.pixelColor(x, y).rgb() == c.rgb())
                return true;
    return false;
}

} // namespace

class TestCompareView : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QList<PlanSnapshotPtr> m_plans;

private slots:
    void initTestCase()
    {
        m_plans = threePlans();
        for (const PlanSnapshotPtr &s : m_plans)
            QVERIFY(s && s->analysis.wellFormed());
        QVERIFY(m_plans[0]->report().feasible && m_plans[1]->report().feasible);
        QVERIFY(!m_plans[2]->report().feasible && !m_plans[2]->report().reasons.empty());
        QCOMPARE(m_plans[1]->topology.deviceCount(), 8);
    }

    void placeholderWithFewerThanTwoPlans()
    {
        CompareView view;
        QCOMPARE(view.objectName(), QStringLiteral("compareView"));
        const QString text = QStringLiteral("Pin two or more plans and select them in the plan list to compare");
        QVERIFY(view.placeholder()->isVisibleTo(&view));
        QCOMPARE(view.placeholder()->text(), text);
        view.setSnapshots({m_plans[0]});
        QVERIFY(view.placeholder()->isVisibleTo(&view));
        QVERIFY(!view.metricTable()->isVisibleTo(&view));
        QString error;
        const QString file = m_dir.filePath(QStringLiteral("one.pdf"));
        QVERIFY(!view.exportTo(file, &error));
        QVERIFY2(error.startsWith(file) && error.contains(QStringLiteral("nothing to compare")), qPrintable(error));
        view.setSnapshots(m_plans.mid(0, 2));
        QVERIFY(!view.placeholder()->isVisibleTo(&view));
        QVERIFY(view.metricTable()->isVisibleTo(&view));
        QCOMPARE(view.snapshots().size(), 2);
    }

    void tableEqualsTheReports()
    {
        CompareView view;
        view.setSnapshots(m_plans);
        QTableWidget *t = view.metricTable();
        QCOMPARE(t->columnCount(), 3);
        QCOMPARE(t->rowCount(), 11);
        // The model's error band of each plan, as bounds on its time: "LOW-HIGH s, basis",
        // read back and checked against the band's factors times the plan's time.
        const double t0 = m_plans[0]->report().iterationTime, t1 = m_plans[1]->report().iterationTime;
        const ErrorBand &b0 = m_plans[0]->band, &b1 = m_plans[1]->band;
        for (int i = 0; i < 2; ++i) {
            const QString text = t->item(rowOf(view, "model_error"), i)->text();
            const ErrorBand &b = m_plans[i]->band;
            const double time = m_plans[i]->report().iterationTime;
            const QRegularExpressionMatch m =
                QRegularExpression(QStringLiteral("^([0-9.]+)-([0-9.]+) s, (.*)$")).match(text);
            QVERIFY2(m.hasMatch(), qPrintable(text));
            QCOMPARE(m.captured(3), QString::fromStdString(b.basis));
            QVERIFY2(std::abs(m.captured(1).toDouble() / (b.low * time) - 1) < 0.01, qPrintable(text));
            QVERIFY2(std::abs(m.captured(2).toDouble() / (b.high * time) - 1) < 0.01, qPrintable(text));
            QVERIFY(m.captured(1).toDouble() <= m.captured(2).toDouble());
        }
        // A plan whose band meets the reference's (plan 0) says so, by hand: the intervals
        // [low t, high t] intersect.
        const bool within = std::max(b0.low * t0, b1.low * t1) <= std::min(b0.high * t0, b1.high * t1);
        QCOMPARE(t->item(rowOf(view, "iteration_time"), 1)->text().contains(QStringLiteral("within model error")), within);
        QVERIFY(!t->item(rowOf(view, "iteration_time"), 0)->text().contains(QStringLiteral("within model error")));
        for (int i = 0; i < 2; ++i) {
            const Report &r = m_plans[i]->report();
            const std::pair<const char *, double> expected[] = {
                {"throughput", r.samplesPerSecond}, {"tokens_per_s", r.tokensPerSecond}, {"mfu", r.mfu},
                {"iteration_time", r.iterationTime}, {"peak_memory", r.peakMemoryBytes}};
            for (const auto &[key, value] : expected) {
                const QTableWidgetItem *item = t->item(rowOf(view, key), i);
                QVERIFY2(item, key);
                QCOMPARE(item->data(Qt::UserRole).toDouble(), value);
            }
        }
        QCOMPARE(t->item(rowOf(view, "search_time"), 0)->data(Qt::UserRole).toDouble(), 2.5);
        QCOMPARE(t->item(rowOf(view, "search_time"), 0)->text(), QStringLiteral("2.500"));
        // MFU shown in percent, one decimal.
        QVERIFY(t->item(rowOf(view, "mfu"), 0)->text() ==
                QString::number(100 * m_plans[0]->report().mfu, 'f', 1));
        QVERIFY(t->verticalHeaderItem(0)->text() == QStringLiteral("Throughput (samples/s)"));
        // The infeasible plan: no value, says so, never best.
        for (int r = 0; r < t->rowCount(); ++r) {
            const std::string &key = view.metrics()[size_t(r)].key;
            if (key == "shape" || key == "search_time" || key == "model_error")
                continue;
            QVERIFY(!t->item(r, 2)->data(Qt::UserRole).isValid());
            QVERIFY(t->item(r, 2)->text().startsWith(QStringLiteral("infeasible")));
            QVERIFY(!t->item(r, 2)->font().bold());
        }
        // The shape row comes from the plan.
        QVERIFY(t->item(rowOf(view, "shape"), 0)->text().startsWith(QStringLiteral("tp 2, pp 2, dp 4")));
    }

    void referenceComboChangesTheDifferences()
    {
        CompareView view;
        view.setSnapshots(m_plans.mid(0, 2));
        QSignalSpy spy(&view, &CompareView::referenceChanged);
        const double a = m_plans[0]->report().samplesPerSecond, b = m_plans[1]->report().samplesPerSecond;
        const int row = rowOf(view, "throughput");
        QTableWidget *t = view.metricTable();
        QCOMPARE(view.reference(), 0);
        QCOMPARE(t->item(row, 1)->data(Qt::UserRole + 1).toDouble(), b - a);
        QCOMPARE(t->item(row, 1)->data(Qt::UserRole + 2).toDouble(), b / a);
        const QString pct = QString::number(100 * (b / a - 1), 'f', 1);
        QVERIFY2(t->item(row, 1)->text().contains(QStringLiteral("%1 %, %2×").arg(pct, QString::number(b / a, 'f', 2))),
                 qPrintable(t->item(row, 1)->text()));
        QVERIFY(!t->item(row, 0)->text().contains(QLatin1Char('(')));
        QVERIFY(t->horizontalHeaderItem(0)->text().contains(QStringLiteral("(reference)")));

        view.referenceCombo()->setCurrentIndex(1);
        QCOMPARE(view.reference(), 1);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(0).toInt(), 1);
        QCOMPARE(t->item(row, 0)->data(Qt::UserRole + 1).toDouble(), a - b);
        QCOMPARE(t->item(row, 0)->data(Qt::UserRole + 2).toDouble(), a / b);
        QCOMPARE(t->item(row, 1)->data(Qt::UserRole + 1).toDouble(), 0.0);
        QVERIFY(!t->item(row, 1)->text().contains(QLatin1Char('(')));
        QVERIFY(t->horizontalHeaderItem(1)->text().contains(QStringLiteral("(reference)")));
        QVERIFY(!t->horizontalHeaderItem(0)->text().contains(QStringLiteral("(reference)")));
        view.setReference(0);
        QCOMPARE(view.referenceCombo()->currentIndex(), 0);
        QCOMPARE(spy.count(), 2);
    }

    void bestCellHighlighted()
    {
        CompareView view;
        view.setSnapshots(m_plans);
        QTableWidget *t = view.metricTable();
        const Report &a = m_plans[0]->report(), &b = m_plans[1]->report();
        const std::pair<const char *, int> expected[] = {
            {"throughput", a.samplesPerSecond > b.samplesPerSecond ? 0 : 1},
            {"iteration_time", a.iterationTime < b.iterationTime ? 0 : 1},
            {"peak_memory", a.peakMemoryBytes < b.peakMemoryBytes ? 0 : 1},
            {"search_time", m_plans[0]->stats.wallSeconds < m_plans[1]->stats.wallSeconds ? 0 : 1}};
        for (const auto &[key, best] : expected) {
            const int row = rowOf(view, key);
            for (int i = 0; i < 3; ++i) {
                const QTableWidgetItem *item = t->item(row, i);
                QCOMPARE(item->font().bold(), i == best);
                QCOMPARE(item->toolTip() == QStringLiteral("best"), i == best);
                QCOMPARE(item->background().color() == QColor(0xd4, 0xed, 0xda), i == best);
            }
        }
        const int shape = rowOf(view, "shape");
        for (int i = 0; i < 3; ++i)
            QVERIFY(!t->item(shape, i)->font().bold());
    }

    void columnsChartsAndSharedAxes()
    {
        CompareView view;
        view.setSnapshots(m_plans);
        // Each header names the plan's own cluster.
        QCOMPARE(view.columnHeaders().size(), 3);
        QVERIFY(view.columnHeaders()[0]->text().contains(QStringLiteral("paper-v100-16 — 16 devices")));
        QVERIFY(view.columnHeaders()[1]->text().contains(QStringLiteral("8 devices")));
        QVERIFY(view.columnHeaders()[1]->text().contains(QStringLiteral("megatron")));
        // Charts for the feasible plans only; the infeasible column says why.
        QCOMPARE(view.memoryCharts().size(), 2);
        QCOMPARE(view.breakdownCharts().size(), 2);
        const auto *why = view.findChild<QLabel *>(QStringLiteral("compareInfeasible2"));
        QVERIFY(why);
        QVERIFY(why->text().contains(QString::fromStdString(m_plans[2]->report().reasons.front())));
        // One memory axis and one time axis for all columns, covering every plan.
        const double peak = std::max(m_plans[0]->report().peakMemoryBytes, m_plans[1]->report().peakMemoryBytes);
        const double iter = std::max(m_plans[0]->report().iterationTime, m_plans[1]->report().iterationTime);
        const double memTop = view.memoryCharts()[0]->plot()->yAxis->range().upper;
        const double timeTop = view.breakdownCharts()[0]->plot()->yAxis->range().upper;
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(view.memoryCharts()[i]->plot()->yAxis->range().upper, memTop);
            QCOMPARE(view.breakdownCharts()[i]->plot()->yAxis->range().upper, timeTop);
            QCOMPARE(view.memoryCharts()[i]->snapshot(), m_plans[i]);
        }
        QVERIFY(memTop >= peak && memTop >= m_plans[0]->report().devices[0].capacity);
        QVERIFY(timeTop >= iter);
        QCOMPARE(memTop, 1.1 * std::max(view.memoryCharts()[0]->dataMaximum(), view.memoryCharts()[1]->dataMaximum()));
        // A view on its own keeps its own range.
        MemoryChartView alone;
        alone.setSnapshot(m_plans[1]);
        QCOMPARE(alone.plot()->yAxis->range().upper, 1.1 * alone.dataMaximum());
    }

    void thumbnailsColourByStage()
    {
        CompareView view;
        view.setSnapshots(m_plans.mid(0, 2));
        QCOMPARE(view.thumbnails().size(), 2);
        for (int i = 0; i < 2; ++i) {
            const PlacementThumbnail *thumb = view.thumbnails()[i];
            const PlanSnapshot &s = *m_plans[i];
            const int depth = s.plan().pipelineDepth();
            QCOMPARE(thumb->caption(), QStringLiteral("%1 — %2 devices")
                                           .arg(QString::fromStdString(s.topology.name)).arg(s.topology.deviceCount()));
            for (const DeviceReport &d : s.report().devices)
                QCOMPARE(thumb->deviceColour(d.device),
                         d.stage < 0 ? PlacementOverlay::unusedColour() : PlacementOverlay::paletteColour(d.stage, depth));
            const QImage image = thumb->render(QSize(240, 140));
            QCOMPARE(image.size(), QSize(240, 140));
            for (int k = 0; k < depth; ++k)
                QVERIFY(imageHasColour(image, PlacementOverlay::paletteColour(k, depth)));
        }
    }

    void thumbnailOf16384Devices()
    {
        const Topology topo = Topology::uniform("big", devicePreset("h100").value(),
                                                {{"node", 8, {900e9, 0, 1}}, {"rack", 32, {50e9, 0, 1}},
                                                 {"spine", 64, {25e9, 0, 2}}});
        QCOMPARE(topo.deviceCount(), 16384);
        const ModelProfile model = modelNamed("llama2-7b", 4096);
        UniformLayout u = uitest::layout(8, 4, 256);  // half the cluster
        u.globalBatch = 4096;
        u.seqLength = model.seqLength;
        const PlanSnapshotPtr s = snapshotOf(topo, model, buildUniformPlan(u, topo, model).value(), "big", "nest");
        QVERIFY(s->analysis.wellFormed());
        PlacementThumbnail thumb;
        thumb.setSnapshot(s);
        QCOMPARE(thumb.rackCount(), 64);
        const QImage image = thumb.render(QSize(300, 180));  // squares < 2 px: bands
        for (int k = 0; k < 4; ++k)
            QVERIFY(imageHasColour(image, PlacementOverlay::paletteColour(k, 4)));
        QVERIFY(imageHasColour(image, PlacementOverlay::unusedColour()));
    }

    // Issue 49: four plans in the Compare tab of a 1920 x 1080 window (the tab is about
    // 1160 px wide there) cut legends and titles ("Weig", "Comp", "T"). Each chart's title
    // now wraps to its width and its legend takes the columns that fit. 1160 px: three
    // charts per row; 1380 px: four, each at about kMinChartWidth.
    void chartsKeepTitleAndLegendWhole_data()
    {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("perRow");
        QTest::newRow("1160 px") << 1160 << 3;
        QTest::newRow("1380 px") << 1380 << 4;
    }

    void chartsKeepTitleAndLegendWhole()
    {
        QFETCH(int, width);
        QFETCH(int, perRow);
        CompareView view;
        const QList<PlanSnapshotPtr> four{
            m_plans[0], m_plans[1],
            uniform("paper-v100-16", "bert-large", uitest::layout(1, 2, 8), "flat 16 with a long label to wrap", 1.0),
            uniform("paper-v100-16", "bert-large", uitest::layout(4, 1, 4), "mcmc 16", 1.5)};
        view.resize(width, 900);
        view.setSnapshots(four);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::qWait(50);
        QCOMPARE(view.memoryCharts().size(), 4);
        QCOMPARE(view.chartsPerRow(), perRow);
        QList<PlotView *> charts;
        for (auto *c : view.memoryCharts())
            charts << c;
        for (auto *c : view.breakdownCharts())
            charts << c;
        for (PlotView *chart : charts) {
            QCustomPlot *plot = chart->plot();
            plot->replot(QCustomPlot::rpImmediateRefresh);
            const QRect legend = plot->legend->outerRect();
            QVERIFY2(legend.left() >= 0 && legend.right() < plot->width(),
                     qPrintable(QStringLiteral("%1: legend x %2..%3 in a plot %4 px wide")
                                    .arg(chart->title()).arg(legend.left()).arg(legend.right()).arg(plot->width())));
            // The legend got the width its entries need (QCustomPlot squeezes a legend
            // into a narrower plot and cuts its entries' text).
            QVERIFY2(plot->legend->minimumOuterSizeHint().width() <= legend.width(),
                     qPrintable(QStringLiteral("%1: legend needs %2 px, has %3")
                                    .arg(chart->title()).arg(plot->legend->minimumOuterSizeHint().width()).arg(legend.width())));
            int entries = 0;
            for (int i = 0; i < plot->legend->itemCount(); ++i)
                if (QCPAbstractLegendItem *item = plot->legend->item(i)) {
                    ++entries;
                    QVERIFY(legend.contains(item->outerRect()));
                }
            QVERIFY(entries >= 6);   // the memory components, or the breakdown's categories
            // The title: every line fits the plot, and the lines are the whole title (no
            // word dropped or elided).
            auto *title = qobject_cast<QCPTextElement *>(plot->plotLayout()->element(0, 0));
            QVERIFY(title);
            const QFontMetrics metrics(title->font());
            for (const QString &line : title->text().split(QLatin1Char('\n')))
                QVERIFY2(metrics.horizontalAdvance(line) <= plot->width(), qPrintable(line));
            QString shown = title->text(), whole = chart->title();
            shown.replace(QLatin1Char('\n'), QLatin1Char(' '));
            whole.replace(QLatin1Char('\n'), QLatin1Char(' '));
            QCOMPARE(shown, whole);
            QVERIFY(whole.contains(QString::fromStdString(chart->snapshot()->label)));
        }
    }

    // Issue 49: the wheel over a chart zoomed it (axis -100...150) instead of scrolling the
    // page. Over a chart in the Compare tab the wheel scrolls the page; Ctrl + wheel zooms.
    void wheelOverAChartScrollsThePage()
    {
        CompareView view;
        view.resize(900, 600);
        view.setSnapshots(m_plans.mid(0, 2));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::qWait(50);
        auto *page = view.findChild<QScrollArea *>();
        QVERIFY(page);
        QScrollBar *bar = page->verticalScrollBar();
        QVERIFY2(bar->maximum() > 0, "the page should scroll at this height");
        MemoryChartView *chart = view.memoryCharts().front();
        QCustomPlot *plot = chart->plot();
        plot->replot(QCustomPlot::rpImmediateRefresh);
        const QCPRange before = plot->xAxis->range();
        const int scrolled = bar->value();
        const QPoint centre = plot->axisRect()->rect().center();
        const auto wheel = [&](Qt::KeyboardModifiers modifiers) {
            QWheelEvent event(centre, plot->mapToGlobal(centre), QPoint(), QPoint(0, -240), Qt::NoButton, modifiers,
                              Qt::NoScrollPhase, false);
            QApplication::sendEvent(plot, &event);
            plot->replot(QCustomPlot::rpImmediateRefresh);
        };
        wheel(Qt::NoModifier);   // two notches down
        QCOMPARE(plot->xAxis->range(), before);
        QVERIFY2(bar->value() > scrolled, qPrintable(QStringLiteral("%1 -> %2").arg(scrolled).arg(bar->value())));
        const int afterScroll = bar->value();
        wheel(Qt::ControlModifier);
        QVERIFY2(!(plot->xAxis->range() == before), "Ctrl + wheel zooms the chart");
        QCOMPARE(bar->value(), afterScroll);
    }

    void moreThanFourPlans()
    {
        CompareView view;
        QList<PlanSnapshotPtr> five = m_plans;
        five << m_plans[0] << m_plans[1];
        view.setSnapshots(five, 3);
        QCOMPARE(view.snapshots().size(), 4);
        QCOMPARE(view.metricTable()->columnCount(), 4);
        QCOMPARE(view.reference(), 3);
        QVERIFY(view.note()->isVisibleTo(&view));
        QVERIFY2(view.note()->text().contains(QStringLiteral("first 4 of 5")), qPrintable(view.note()->text()));
        view.setSnapshots(m_plans, 9);
        QCOMPARE(view.reference(), 2);
        QVERIFY(!view.note()->isVisibleTo(&view));
        // A narrower comparison replaces the columns: nothing of the earlier one is left.
        view.setSnapshots(m_plans.mid(0, 2));
        QCOMPARE(view.columnHeaders().size(), 2);
        QCOMPARE(view.findChildren<PlacementThumbnail *>().size(), 2);
        QCOMPARE(view.findChildren<MemoryChartView *>().size(), 2);
        QCOMPARE(view.referenceCombo()->count(), 2);
    }

    void exportPdfReport()
    {
        CompareView view;
        view.setSnapshots(m_plans, 1);
        const QString pdf = m_dir.filePath(QStringLiteral("report.pdf"));
        QString error;
        QVERIFY2(view.exportTo(pdf, &error), qPrintable(error));
        QVERIFY(uitest::bytesOf(pdf).startsWith("%PDF"));
        const QString pdfinfo = QStandardPaths::findExecutable(QStringLiteral("pdfinfo"));
        const QString pdftotext = QStandardPaths::findExecutable(QStringLiteral("pdftotext"));
        if (pdfinfo.isEmpty() || pdftotext.isEmpty())
            QSKIP("poppler-utils (pdfinfo, pdftotext) are not installed");
        const QString info = run(pdfinfo, {pdf});
        QVERIFY2(QRegularExpression(QStringLiteral("Pages:\\s+4\\n")).match(info).hasMatch(), qPrintable(info));
        const QString text = run(pdftotext, {pdf, QStringLiteral("-")});
        QVERIFY2(text.contains(QStringLiteral("NEST Planner — plan comparison")), qPrintable(text));
        for (const char *word : {"Throughput", "nest 16", "megatron 8", "unsharded 16", "paper-v100-8", "(reference)"})
            QVERIFY2(text.contains(QString::fromUtf8(word)), word);
        // One section per page, each page headed by its name.
        const QStringList sections = {"Inputs", "Metrics", "Charts", "Placement"};
        for (int k = 0; k < 4; ++k) {
            const QString page = run(pdftotext, {"-f", QString::number(k + 1), "-l", QString::number(k + 1), pdf, "-"});
            for (int j = 0; j < 4; ++j)
                QVERIFY2(page.contains(QRegularExpression(QStringLiteral("(^|\\n)%1\\n").arg(sections[j]))) == (j == k),
                         qPrintable(QStringLiteral("page %1, %2:\n%3").arg(k + 1).arg(sections[j], page)));
        }
        const QString metrics = run(pdftotext, {"-f", "2", "-l", "2", pdf, "-"});
        QVERIFY(metrics.contains(QStringLiteral("best")) && metrics.contains(QStringLiteral("Peak memory (GB)")));
        const QString charts = run(pdftotext, {"-f", "3", "-l", "3", pdf, "-"});
        QVERIFY2(charts.contains(QStringLiteral("Memory per device — nest 16")) && charts.contains(QStringLiteral("Weights")) &&
                     charts.contains(QStringLiteral("Time per stage — megatron 8")),
                 qPrintable(charts));
    }

    void exportImagesAndData()
    {
        CompareView view;
        view.setSnapshots(m_plans);
        QString error;
        const QString png = m_dir.filePath(QStringLiteral("compare.png"));
        QVERIFY2(view.exportTo(png, &error), qPrintable(error));
        const QImage image(png);
        QVERIFY(!image.isNull() && image.width() == 1600 && image.height() > 1000);
        const QString svg = m_dir.filePath(QStringLiteral("compare.svg"));
        QVERIFY2(view.exportTo(svg, &error), qPrintable(error));
        const QByteArray svgBytes = uitest::bytesOf(svg);
        QXmlStreamReader xml(svgBytes);
        while (!xml.atEnd())
            xml.readNext();
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY(svgBytes.contains("Throughput") && svgBytes.contains("megatron 8"));

        const QString json = m_dir.filePath(QStringLiteral("compare.json"));
        QVERIFY2(view.exportTo(json, &error), qPrintable(error));
        const QJsonObject root = QJsonDocument::fromJson(uitest::bytesOf(json)).object();
        const QJsonArray metrics = root.value("metrics").toArray();
        QCOMPARE(metrics.size(), 11);
        const QStringList keys = {"throughput", "tokens_per_s", "mfu", "cluster_mfu", "iteration_time", "peak_memory",
                                  "comm_share", "bubble_share", "shape", "search_time", "model_error"};
        for (int i = 0; i < 11; ++i)
            QCOMPARE(metrics[i].toObject().value("key").toString(), keys[i]);
        QCOMPARE(metrics[0].toObject().value("values").toArray()[0].toDouble(), m_plans[0]->report().samplesPerSecond);
        QCOMPARE(root.value("plans").toArray().size(), 3);

        const QString csv = m_dir.filePath(QStringLiteral("compare.csv"));
        QVERIFY2(view.exportTo(csv, &error), qPrintable(error));
        const QStringList lines = QString::fromUtf8(uitest::bytesOf(csv)).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 12);
        QVERIFY(lines[0].startsWith(QStringLiteral("key,name,unit,value_unit,better,best,nest 16,megatron 8,unsharded 16")));
        for (int i = 0; i < 11; ++i)
            QVERIFY(lines[i + 1].startsWith(keys[i] + ","));
    }

    void exportErrors()
    {
        CompareView view;
        view.setSnapshots(m_plans.mid(0, 2));
        QString error;
        const QString unknown = m_dir.filePath(QStringLiteral("compare.txt"));
        QVERIFY(!view.exportTo(unknown, &error));
        QVERIFY2(error.startsWith(unknown) && error.contains(QStringLiteral("unknown export format")), qPrintable(error));
        QVERIFY(!QFile::exists(unknown));
        for (const char *name : {"missing/dir/report.pdf", "missing/dir/compare.png", "missing/dir/compare.csv"}) {
            const QString file = m_dir.filePath(QString::fromLatin1(name));
            QVERIFY(!view.exportTo(file, &error));
            QVERIFY2(error.startsWith(file), qPrintable(error));
        }
    }
};

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
