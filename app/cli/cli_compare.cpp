// nest-cli compare: NEST and the baselines on the same inputs, one row per planner:
// throughput, iteration time, peak memory, plan shape, search time and NEST / planner
// (how many times NEST's throughput is the planner's). The planners run on parallel
// threads (--threads). With --json: {"results": [{"planner", "feasible", "report",
// "plan", "solve_time_s", "message", "verified", "nest_ratio"}, ...]}.
#include "CliCommands.h"
#include "CliPlanOptions.h"
#include "CliProgress.h"
#include "FrameworkSearch.h"
#include "MeasuredDevice.h"

#include "PlanIO.h"
#include "PlanShape.h"
#include "PlannerRuns.h"
#include "PlannerRegistry.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

namespace nest::cli {

namespace {

const std::vector<std::string> kDefaultPlanners{"nest", "flat", "megatron", "mcmc"};

double nestTime(const std::vector<PlannerRun> &runs)
{
    for (const PlannerRun &r : runs)
        if (r.planner == "nest" && r.result.found)
            return r.result.report.iterationTime;
    return 0;
}

void printComparisonTable(const std::vector<PlannerRun> &runs, const ModelProfile &model, const ErrorBand &band)
{
    const double nest = nestTime(runs);
    std::printf("model %s, global batch %d, sequence %d\n\n", model.name.c_str(),
                runs.empty() ? 0 : (runs.front().result.found ? runs.front().result.plan.globalBatch : model.globalBatch),
                model.seqLength);
    std::printf("%-10s %11s %9s %17s %8s %6s  %-34s %-15s %4s %-16s %3s %8s %7s\n", "planner", "samples/s",
                "iter_s", "band_s", "peak_GB", "MFU%", "shape", "schedule", "zero", "recompute", "mb", "search_s",
                "NEST/x");
    for (const PlannerRun &run : runs) {
        const PlanResult &r = run.result;
        if (!r.found) {
            std::printf("%-10s no feasible plan: %s\n", run.planner.c_str(),
                        r.cancelled ? "cancelled" : r.message.c_str());
            continue;
        }
        const PlanShape s = shapeOf(r.plan);
        char ratio[32] = "-";
        if (nest > 0)
            std::snprintf(ratio, sizeof ratio, "%.3f", r.report.iterationTime / nest);
        char mfu[16] = "-";   // unknown without model FLOPs (mfuKnown, MeasuredDevice.h)
        if (mfuKnown(r.report))
            std::snprintf(mfu, sizeof mfu, "%.1f", 100 * r.report.mfu);
        std::printf("%-10s %11.2f %9.4f %17s %8.2f %6s  %-34s %-15s %4s %-16s %3d %8.3f %7s%s\n",
                    run.planner.c_str(), r.report.samplesPerSecond, r.report.iterationTime,
                    band.bounds(r.report.iterationTime).c_str(), r.report.peakMemoryBytes / 1e9, mfu, widthsText(s).c_str(),
                    scheduleText(s).c_str(), rangeText(s.least.zero, s.most.zero).c_str(), s.recompute.c_str(),
                    s.microBatch, r.stats.wallSeconds, ratio, r.verified ? "" : "  (UNVERIFIED)");
    }
    if (nest > 0)
        std::printf("\nNEST/x: the planner's iteration time over NEST's (NEST's throughput over the "
                    "planner's); every time is the evaluator's on the real cluster.\n");
    std::printf("model error: %s", band.text().c_str());
    std::string within;
    for (const PlannerRun &run : runs)
        if (run.planner != "nest" && run.result.found && nest > 0 &&
            withinModelError(run.result.report.iterationTime, band, nest, band))
            within += (within.empty() ? "" : ", ") + run.planner;
    if (!within.empty())
        std::printf("; within model error of NEST: %s", within.c_str());
    std::printf("\n");
}

} // namespace

namespace {

// --planners: known names, each once.
std::vector<std::string> plannersOption(const CliArgs &args)
{
    std::vector<std::string> planners = args.wordList("planners", kDefaultPlanners);
    for (size_t i = 0; i < planners.size(); ++i) {
        if (!makePlanner(planners[i]))
            throw UsageError{"option --planners: unknown planner '" + planners[i] + "' (known: " +
                             plannerNameList() + ")"};
        for (size_t k = 0; k < i; ++k)
            if (planners[k] == planners[i])
                throw UsageError{"option --planners lists '" + planners[i] + "' twice"};
    }
    return planners;
}

// Every planner named, on `threads` threads, with one progress bar for all of them: the
// mean of their fractions (on a terminal or with --progress).
std::vector<PlannerRun> runComparison(const CliArgs &args, const SearchJob &job,
                                      const std::vector<std::string> &planners, int threads)
{
    TerminalProgress progress("compare", args.flag("progress"));
    std::mutex fractionsMutex;
    std::vector<double> fractions(planners.size(), 0.0);
    const auto hook = commandHooks().progress;  // runPlanners may call back from its threads
    const ComparisonProgressFn onProgress = [&](int index, double fraction, double) {
        double mean = 0;
        {
            const std::lock_guard lock(fractionsMutex);
            fractions[static_cast<size_t>(index)] = fraction;
            for (double f : fractions)
                mean += f / double(fractions.size());
            if (hook)
                hook(mean, 0);
        }
        progress.update(mean, std::to_string(planners.size()) + " planners");
    };
    std::vector<PlannerRun> runs =
        runPlanners(job.topology, job.model, job.options, planners, threads, onProgress, commandCancelToken());
    progress.finish();
    return runs;
}

// --target F (issue 47): the row of the best plan that framework runs as it is.
std::optional<PlannerRun> targetRow(const SearchJob &job)
{
    if (job.settings.target.empty())
        return std::nullopt;
    const auto target = targetFromString(job.settings.target);
    if (!target)
        return std::nullopt;
    const TargetResult t = searchForFramework(job.topology, job.model, *target, job.options, job.config);
    PlannerRun row;
    row.planner = job.settings.target + "-runnable";
    row.result.found = t.found;
    row.result.message = t.message;
    row.result.plan = t.plan;
    row.result.report = t.report;
    row.result.objective = t.report.iterationTime;
    row.result.verified = true;
    return row;
}

void printJson(const std::vector<PlannerRun> &runs, const ErrorBand &band)
{
    const double nest = nestTime(runs);
    Json results = Json::array();
    for (const PlannerRun &run : runs) {
        const PlanResult &r = run.result;
        Json row{{"planner", run.planner},
                 {"feasible", r.found},
                 {"report", r.found ? reportToJson(r.report) : Json(nullptr)},
                 {"plan", r.found ? planToJson(r.plan) : Json(nullptr)},
                 {"solve_time_s", r.stats.wallSeconds},
                 {"verified", r.verified},
                 {"message", r.message}};
        // The bounds of this row's time; the top-level "error_band" holds NEST's.
        row["error_band"] = r.found ? errorBandToJson(band, r.report.iterationTime) : Json(nullptr);
        row["nest_ratio"] = (r.found && nest > 0) ? Json(r.report.iterationTime / nest) : Json(nullptr);
        row["within_model_error_of_nest"] =
            r.found && nest > 0 && run.planner != "nest" && withinModelError(r.report.iterationTime, band, nest, band);
        results.push_back(row);
    }
    Json top = nest > 0 ? errorBandToJson(band, nest) : Json{{"basis", band.basis}, {"low_s", nullptr}, {"high_s", nullptr}};
    std::cout << Json{{"results", results}, {"error_band", top}}.dump(2) << "\n";
}

} // namespace

int cmdCompare(const Args &argv)
{
    std::set<std::string> values, flags;
    searchCommandOptions(values, flags);
    values.erase("planner");
    values.erase("out");
    values.insert("planners");
    values.insert("threads");
    const CliArgs args(argv, values, flags, "compare");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};

    const std::vector<std::string> planners = plannersOption(args);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads = args.intValue("threads", std::min(cores, 4), limits::threads);

    const SearchJob job = loadSearchJob(args);
    std::vector<PlannerRun> runs = runComparison(args, job, planners, threads);
    if (std::optional<PlannerRun> row = targetRow(job))
        runs.push_back(std::move(*row));

    const ErrorBand band = modelErrorBand(job.options.cost, job.calibration, job.topology);
    bool any = false;
    for (const PlannerRun &r : runs)
        any = any || r.result.found;
    if (args.flag("json"))
        printJson(runs, band);
    else
        printComparisonTable(runs, job.model, band);
    if (!any) {
        std::cerr << "nest-cli compare: no planner found a feasible plan\n";
        return 2;
    }
    for (const PlannerRun &r : runs)
        if (r.result.found && !r.result.verified) {
            std::cerr << "nest-cli compare: " << r.planner << ": " << r.result.message << "\n";
            return 1;
        }
    return 0;
}

} // namespace nest::cli
