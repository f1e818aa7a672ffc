// nest-cli reproduce [--out DIR] [--quick]: the paper's evaluation grid (PaperEvaluation.h)
// run with every planner, with a progress bar on a terminal. Writes DIR/results.csv,
// DIR/results.md (the tables with NEST / baseline ratios and their geometric means) and
// the figures DIR/throughput-FAMILY-MODEL.{png,svg} (throughput against devices, one line
// per planner) and DIR/microbatch-MODEL.{png,svg}.
#include "CliArgs.h"
#include "CliCommands.h"
#include "CliProgress.h"

#include "FileGuard.h"
#include "PaperEvaluation.h"
#include "SeriesChart.h"

#include <QApplication>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

namespace nest::cli {

namespace {

using Clock = std::chrono::steady_clock;

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

void writeOrThrow(const std::string &file, const std::string &text)
{
    const auto written = writeFileAtomically(file, text);
    if (!written)
        throw UsageError{written.error()};
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

int cmdReproduce(const Args &argv)
{
    const CliArgs args(argv, {"out", "threads"}, {"quick"}, "reproduce");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    const std::filesystem::path dir = args.value("out", "nest-evaluation");
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads = args.intValue("threads", std::min(cores, 4), limits::threads);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw UsageError{dir.string() + ": cannot create the output folder" + (ec ? " (" + ec.message() + ")" : "")};

    const bool quick = args.flag("quick");
    const EvaluationGrid grid = paperEvaluationGrid(quick);
    std::vector<EvaluationRow> rows;
    TerminalProgress bar("reproduce", false, 0);
    const size_t total = grid.points.size();
    const auto start = Clock::now();
    for (size_t i = 0; i < grid.points.size(); ++i) {
        const EvaluationPoint &p = grid.points[i];
        bar.update(double(i) / double(total), std::to_string(i) + "/" + std::to_string(total) + " " + p.model +
                                                   " on " + p.family + " " + std::to_string(p.devices));
        const Result<Topology> topo = evaluationCluster(p);
        const Result<ModelProfile> model = evaluationModel(p);
        if (!topo || !model)
            throw std::runtime_error(!topo ? topo.error() : model.error());
        const std::vector<PlannerRun> runs = runPlanners(*topo, *model, evaluationOptions(grid, p),
                                                         evaluationPlanners(grid, p), threads);
        for (const PlannerRun &run : runs) {
            if (run.result.found && !run.result.verified)
                throw std::runtime_error(run.planner + " at " + p.model + "/" + p.family + "/" +
                                         std::to_string(p.devices) + ": " + run.result.message);
            rows.push_back({p, topo->name, run});
        }
    }
    bar.finish();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

    std::string md = "# NEST Planner: the paper's evaluation reproduced\n\n"
                     "Generated by `nest-cli reproduce" + std::string(quick ? " --quick" : "") + "` in " +
                     std::to_string(static_cast<int>(std::lround(seconds))) + " s (" +
                     std::to_string(grid.points.size()) + " points). Every number is the evaluator's "
                     "iteration time for the planner's plan on the real cluster.\n\n";
    md += evaluationMarkdown(rows, grid.planners);
    writeOrThrow((dir / "results.csv").string(), evaluationCsv(rows));
    writeOrThrow((dir / "results.md").string(), md);

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
    const std::vector<std::string> figures = writeFigures(rows, grid, dir);

    std::printf("%zu points, %zu planner runs in %.1f s\n", grid.points.size(), rows.size(), seconds);
    for (const char *family : {"fat-tree", "spine-leaf", "v100", ""}) {
        std::printf("%-11s", *family ? family : "all");
        for (const std::string &b : grid.planners) {
            if (b == "nest")
                continue;
            int n = 0;
            const double g = geometricMeanRatio(rows, family, b, &n);
            if (n)
                std::printf("  NEST/%s %.3fx (%d)", b.c_str(), g, n);
        }
        std::printf("\n");
    }
    std::printf("wrote %s, %s and %zu figures in %s\n", (dir / "results.csv").string().c_str(),
                (dir / "results.md").string().c_str(), figures.size(), dir.string().c_str());
    return 0;
}

} // namespace nest::cli
