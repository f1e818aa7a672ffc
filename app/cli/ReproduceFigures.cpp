// The figures of `nest-cli reproduce` (ReproduceFigures.h); built only with NEST_BUILD_GUI=ON.
#include "ReproduceFigures.h"

#include "CliArgs.h"
#include "SeriesChart.h"

#include <QApplication>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>

namespace nest::cli {

namespace {

QString qs(const std::string &s)
{
    return QString::fromStdString(s);
}

// Throughput of `planner` at the rows matching `keep`, as a chart series over `x`.
ui::ChartSeries seriesOf(const std::vector<EvaluationRow> &rows, const std::string &planner,
                         const std::function<bool(const EvaluationRow &)> &keep,
                         const std::function<double(const EvaluationRow &)> &x)
{
    ui::ChartSeries s;
    s.name = qs(planner);
    for (const EvaluationRow &r : rows) {
        if (r.run.planner != planner || !keep(r))
            continue;
        s.x.push_back(x(r));
        s.y.push_back(r.run.result.found ? r.run.result.report.samplesPerSecond : NAN);
    }
    return s;
}

std::vector<std::string> writeFigures(const std::vector<EvaluationRow> &rows, const EvaluationGrid &grid,
                                      const std::filesystem::path &dir)
{
    std::vector<std::string> files;
    std::vector<std::pair<std::string, std::string>> curves;  // (family, model)
    std::vector<std::string> sweeps;
    for (const EvaluationRow &r : rows) {
        if (r.point.part == EvaluationPart::Throughput &&
            std::find(curves.begin(), curves.end(), std::make_pair(r.point.family, r.point.model)) == curves.end())
            curves.emplace_back(r.point.family, r.point.model);
        if (r.point.part == EvaluationPart::MicroBatch &&
            std::find(sweeps.begin(), sweeps.end(), r.point.model) == sweeps.end())
            sweeps.push_back(r.point.model);
    }
    auto save = [&](const ui::SeriesChartData &chart, const std::string &stem) {
        for (const char *ext : {".png", ".svg"}) {
            const std::string file = (dir / (stem + ext)).string();
            QString error;
            if (!ui::exportSeriesChart(chart, qs(file), &error))
                throw UsageError{error.toStdString()};
            files.push_back(file);
        }
    };
    for (const auto &[family, model] : curves) {
        ui::SeriesChartData chart;
        chart.title = qs(model + " on the " + family + " cluster");
        chart.xLabel = QStringLiteral("devices");
        chart.yLabel = QStringLiteral("throughput (samples/s)");
        chart.logX = true;
        std::vector<double> ticks;
        for (const EvaluationRow &r : rows)
            if (r.point.part == EvaluationPart::Throughput && r.point.family == family && r.point.model == model &&
                std::find(ticks.begin(), ticks.end(), double(r.point.devices)) == ticks.end())
                ticks.push_back(r.point.devices);
        chart.xTicks = ticks;
        const std::string fam = family, mod = model;
        for (const std::string &planner : grid.planners)
            chart.series.push_back(seriesOf(
                rows, planner,
                [&](const EvaluationRow &r) {
                    return r.point.part == EvaluationPart::Throughput && r.point.family == fam && r.point.model == mod;
                },
                [](const EvaluationRow &r) { return double(r.point.devices); }));
        save(chart, "throughput-" + family + "-" + model);
    }
    for (const std::string &model : sweeps) {
        ui::SeriesChartData chart;
        chart.title = qs(model + ": throughput against micro-batch size");
        chart.xLabel = QStringLiteral("micro-batch size");
        chart.yLabel = QStringLiteral("throughput (samples/s)");
        chart.xTicks = {1, 2, 4, 8};
        chart.logX = true;
        for (const std::string &planner : grid.planners)
            chart.series.push_back(seriesOf(
                rows, planner,
                [&](const EvaluationRow &r) { return r.point.part == EvaluationPart::MicroBatch && r.point.model == model; },
                [](const EvaluationRow &r) { return double(r.point.microBatch); }));
        save(chart, "microbatch-" + model);
    }
    return files;
}

} // namespace

std::vector<std::string> writeReproduceFigures(const std::vector<EvaluationRow> &rows, const EvaluationGrid &grid,
                                               const std::filesystem::path &dir)
{
    if (!QCoreApplication::instance()) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");  // figures are drawn off screen
        // Qt only warns that it picks a default runtime folder; nothing here needs one.
        qInstallMessageHandler([](QtMsgType type, const QMessageLogContext &, const QString &msg) {
            if (!msg.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR")))
                std::fprintf(stderr, "%s%s\n", type == QtWarningMsg ? "warning: " : "", qPrintable(msg));
        });
    }
    static int qtArgc = 1;
    static char qtName[] = "nest-cli";
    static char *qtArgv[] = {qtName, nullptr};
    std::unique_ptr<QApplication> app;
    if (!QCoreApplication::instance())
        app = std::make_unique<QApplication>(qtArgc, qtArgv);
    return writeFigures(rows, grid, dir);
}

} // namespace nest::cli
