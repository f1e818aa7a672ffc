// nest-cli plan: search for the best plan (NEST dynamic program or exhaustive enumeration)
// and print it with its report and the search statistics. With --json one object with the
// keys "plan", "report" (as `evaluate --json`), "solve_time_s", "states", "stats" and
// "search" (the settings searched). With --workspace FILE the cluster, the model and the
// search settings come from the workspace and go through searchOptionsFrom(), exactly as
// the window plans; explicit flags override the workspace's settings.
#include "BatchHint.h"
#include "CliCommands.h"
#include "CliPlanOptions.h"
#include "PrecisionSearch.h"
#include "CliProgress.h"
#include "FrameworkSearch.h"

#include "PlanIO.h"
#include "SearchEstimate.h"
#include "SearchSettings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace nest::cli {

namespace {

void printPlan(const PlanResult &r, const ErrorBand &band)
{
    const Plan &p = r.plan;
    const Report &rep = r.report;
    std::printf("best plan:           %s, micro-batch %d (%d micro-batches), dp %d, %d stages%s, %s\n",
                toString(p.schedule), p.microBatch, p.numMicroBatches(), p.dp, p.pipelineDepth(),
                p.virtualStages > 1 ? (", " + std::to_string(p.virtualStages) + " chunks per device").c_str() : "",
                precisionLabel(p.precision).c_str());
    std::printf("iteration time:      %.4f s (%s; search value %.4f s, %s)\n", rep.iterationTime,
                band.text(rep.iterationTime).c_str(), r.objective, r.verified ? "matches the evaluator" : "MISMATCH");
    std::printf("throughput:          %.2f samples/s, %.0f tokens/s, %s\n", rep.samplesPerSecond,
                rep.tokensPerSecond, ("MFU " + mfuValueText(rep)).c_str());
    std::printf("peak memory:         %.2f GB per device\n\n", rep.peakMemoryBytes / 1e9);
    // The experts' tensor width only where the plan has experts split its own way.
    const bool experts = std::any_of(p.stages.begin(), p.stages.end(),
                                     [](const StagePlan &st) { return st.ep > 1 || st.etp > 0; });
    std::printf("%5s %9s %4s %4s %4s", "stage", "layers", "tp", "cp", "ep");
    if (experts)
        std::printf(" %4s", "etp");
    std::printf(" %3s %5s %5s %10s %10s %10s %9s\n", "sp", "zero", "recmp", "devices", "t_stage_ms", "extra_ms",
                "memory_GB");
    for (size_t s = 0; s < p.stages.size(); ++s) {
        const StagePlan &st = p.stages[s];
        char layers[32], devs[64];
        std::snprintf(layers, sizeof layers, "%d-%d", st.firstLayer, st.endLayer - 1);
        int lo = 1 << 30, hi = -1;
        for (const auto &row : st.devices)
            for (int d : row) {
                lo = std::min(lo, d);
                hi = std::max(hi, d);
            }
        std::snprintf(devs, sizeof devs, "%d-%d", lo, hi);
        double t = 0, extra = 0, mem = 0;
        if (s < rep.stages.size()) {
            t = rep.stages[s].cost.perMicroBatch;
            extra = rep.stages[s].cost.iterationExtra;
            mem = rep.stages[s].cost.memoryTotal;
        }
        std::printf("%5zu %9s %4d %4d %4d", s, layers, st.tp, st.cp, st.ep);
        if (experts)
            std::printf(" %4d", st.expertTp());
        std::printf(" %3s %5d %5s %10s %10.2f %10.1f %9.2f\n", st.sp ? "on" : "off", st.zero, toString(st.recompute), devs,
                    1e3 * t, 1e3 * extra, mem / 1e9);
    }
    const SearchStats &st = r.stats;
    std::printf("\nsearch: %.3f s, %lld states, %lld transitions, %lld pruned, %lld stage costs, "
                "%lld of %lld outer points searched\n",
                st.wallSeconds, st.states, st.transitions, st.pruned, st.stageCostCalls, st.configs,
                st.configs + st.configsSkipped);
}

Json statsToJson(const SearchStats &s)
{
    return Json{{"states", s.states},
                {"transitions", s.transitions},
                {"pruned", s.pruned},
                {"stage_cost_calls", s.stageCostCalls},
                {"configs", s.configs},
                {"configs_skipped", s.configsSkipped},
                {"wall_s", s.wallSeconds}};
}

struct FrameworkBest {
    ExportFormat format;
    TargetResult result;
};

// Each launcher framework's best plan (issue 47): the search restricted to what it runs.
std::vector<FrameworkBest> frameworkBests(const SearchJob &job, const SearchOptions &options, const PlanResult &r)
{
    std::vector<FrameworkBest> out;
    if (!r.found)
        return out;
    for (ExportFormat f : {ExportFormat::Megatron, ExportFormat::Nemo, ExportFormat::DeepSpeed, ExportFormat::Torchtitan})
        out.push_back({f, {}});
    // One thread per framework (each search reads the job only).
    std::vector<std::thread> threads;
    for (FrameworkBest &b : out)
        threads.emplace_back([&job, &options, &b] {
            b.result = searchForFramework(job.topology, job.model, b.format, options, job.config);
        });
    for (std::thread &t : threads)
        t.join();
    return out;
}

// "the unconstrained optimum is X % faster than the best F-runnable plan": how much less time
// per iteration the best plan takes than the framework's best, in per cent of the latter.
double fasterPercent(double optimum, double framework)
{
    return 100 * (1 - optimum / framework);
}

void printFrameworkComparison(const PlanResult &r, const std::vector<FrameworkBest> &bests, int devices)
{
    if (bests.empty())
        return;
    std::printf("\nbest plan each framework runs as it is (nest-cli plan --target F):\n");
    for (const FrameworkBest &b : bests) {
        if (!b.result.found) {
            std::printf("  %-12s none: %s\n", exportFormatTitle(b.format), b.result.message.c_str());
            continue;
        }
        std::printf("  %-12s %10.4f s  %4d of %d GPUs  %s\n", exportFormatTitle(b.format),
                    b.result.report.iterationTime, b.result.report.devicesUsed, devices,
                    layoutDescription(b.result.layout).c_str());
    }
    for (const FrameworkBest &b : bests)
        if (b.format == ExportFormat::Megatron && b.result.found)
            std::printf("the unconstrained optimum is %.1f %% faster than the best Megatron-runnable plan\n",
                        fasterPercent(r.report.iterationTime, b.result.report.iterationTime));
}

Json frameworkComparisonJson(const std::vector<FrameworkBest> &bests)
{
    Json out = Json::array();
    for (const FrameworkBest &b : bests) {
        Json row{{"framework", toString(b.format)}, {"found", b.result.found}};
        if (b.result.found) {
            row["iteration_time_s"] = b.result.report.iterationTime;
            row["devices_used"] = b.result.report.devicesUsed;
            row["layout"] = layoutDescription(b.result.layout);
            row["plan"] = planToJson(b.result.plan);
        } else {
            row["message"] = b.result.message;
        }
        out.push_back(row);
    }
    return out;
}

} // namespace

// --top K: one line per plan, best first, with its time and its difference to the best.
void printTop(const PlanResult &r, const ErrorBand &band)
{
    std::printf("\nthe %zu best distinct plans (model error %s):\n", r.top.size(), band.text().c_str());
    std::printf("%4s %12s %18s %10s %8s  %s\n", "rank", "time_s", "band_s", "delta_s", "delta_%", "layout");
    const double best = r.top.empty() ? 0 : r.top.front().objective;
    for (size_t i = 0; i < r.top.size(); ++i) {
        const RankedPlan &t = r.top[i];
        const Plan &p = t.plan;
        std::string shape = std::string(toString(p.schedule)) + " mb " + std::to_string(p.microBatch) + " dp " +
                            std::to_string(p.dp) + " pp " + std::to_string(p.pipelineDepth());
        if (p.virtualStages > 1)
            shape += " v " + std::to_string(p.virtualStages);
        shape += " | tp/zero/recompute per stage:";
        // Runs of equal stages as "option x count".
        for (size_t s = 0; s < p.stages.size();) {
            const StagePlan &st = p.stages[s];
            size_t n = 1;
            while (s + n < p.stages.size() && p.stages[s + n].config() == st.config())
                ++n;
            shape += " " + std::to_string(st.tp) + (st.cp > 1 ? "x" + std::to_string(st.cp) : "") +
                     (st.ep > 1 ? "e" + std::to_string(st.ep) : "") +
                     (st.etp > 0 ? "t" + std::to_string(st.etp) : "") + "/" + std::to_string(st.zero) + "/" +
                     toString(st.recompute) + (n > 1 ? " x" + std::to_string(n) : "");
            s += n;
        }
        std::printf("%4zu %12.4f %18s %10.4f %8.2f  %s%s\n", i + 1, t.objective, band.bounds(t.objective).c_str(),
                    t.objective - best,
                    best > 0 ? 100 * (t.objective - best) / best : 0.0, shape.c_str(), t.verified ? "" : "  (MISMATCH)");
    }
}

// --top K as JSON: rank, objective_s, delta_s, delta_pct, verified, error_band, plan, report
// (docs/formats.md).
Json topToJson(const PlanResult &r, const ErrorBand &band)
{
    Json list = Json::array();
    const double best = r.top.empty() ? 0 : r.top.front().objective;
    for (size_t i = 0; i < r.top.size(); ++i) {
        const RankedPlan &t = r.top[i];
        list.push_back({{"rank", i + 1},
                        {"objective_s", t.objective},
                        {"delta_s", t.objective - best},
                        {"delta_pct", best > 0 ? 100 * (t.objective - best) / best : 0.0},
                        {"verified", t.verified},
                        {"error_band", errorBandToJson(band, t.report.iterationTime)},
                        {"plan", planToJson(t.plan)},
                        {"report", reportToJson(t.report)}});
    }
    return list;
}

namespace {

// --top K and --threads N over the job's options (the workspace's "top_k" unless the flag
// says otherwise); both need the nest planner.
SearchOptions optionsWithFlags(const CliArgs &args, const SearchJob &job)
{
    const SearchSettings &settings = job.settings;
    // --top K (issue 24): the K best distinct plans; nest only, 1 = the best plan alone.
    SearchOptions options = job.options;
    if (args.has("top"))
        options.topK = args.intValue("top", 1, limits::topPlans);
    if (options.topK > 1 && settings.planner != "nest")
        throw UsageError{"--top needs the nest planner, found '" + settings.planner + "'"};
    // --threads N: the nest planner deals its outer points to N searches (the same plan,
    // sooner where there are cores for them; docs/planner.md, "Outer points in parallel").
    if (args.has("threads"))
        options.threads = args.intValue("threads", 1, limits::searchThreads);
    if (options.threads > 1 && settings.planner != "nest")
        throw UsageError{"--threads needs the nest planner, found '" + settings.planner + "'"};
    return options;
}

// The search: restricted to what `target` runs as it is (issue 47; `targeted` gets what it
// priced), else once per precision searched (PrecisionSearch.h), the best of them. Progress
// after the first second, on a terminal or with --progress; before the first fractions
// arrive the time left comes from the search estimate.
PlanResult runPlanSearch(const CliArgs &args, const SearchJob &job, const SearchOptions &options,
                         const Planner &planner, std::optional<ExportFormat> target, TargetResult &targeted)
{
    TerminalProgress progress("plan", args.flag("progress"));
    if (progress.enabled())
        if (const auto estimate = estimateSearch(job.topology, job.model, job.options, job.settings.planner))
            progress.setEstimate(estimate->seconds);
    const ProgressFn onProgress = [&progress, hook = commandHooks().progress](double fraction, double best) {
        if (hook)
            hook(fraction, best);
        char detail[64] = "";
        if (std::isfinite(best) && best > 0)
            std::snprintf(detail, sizeof detail, "best %.4g s per iteration", best);
        progress.update(fraction, detail);
    };
    PlanResult r;
    if (target) {
        targeted = searchForFramework(job.topology, job.model, *target, options, job.config);
        r.found = targeted.found;
        r.message = targeted.message;
        r.plan = targeted.plan;
        r.report = targeted.report;
        r.objective = targeted.report.iterationTime;
        r.verified = true;
    } else {
        r = planPrecisions(planner, job.topology, job.model, options, onProgress, commandCancelToken());
    }
    progress.finish();
    return r;
}

void printPlanJson(const CliArgs &args, const SearchJob &job, const SearchOptions &options, const PlanResult &r,
                   const std::string &plannerName, const ErrorBand &band, std::optional<ExportFormat> target,
                   const TargetResult &targeted)
{
    const Json j{{"plan", planToJson(r.plan)},
                 {"report", reportToJson(r.report)},
                 {"objective_s", r.objective},
                 {"verified", r.verified},
                 {"solve_time_s", r.stats.wallSeconds},
                 {"states", r.stats.states},
                 {"planner", plannerName},
                 {"search", searchSettingsToJson(job.settings)},
                 {"stats", statsToJson(r.stats)},
                 {"error_band", errorBandToJson(band, r.report.iterationTime)}};
    Json out = j;
    if (options.topK > 1)
        out["top"] = topToJson(r, band);
    if (target)
        out["target"] = {{"framework", toString(*target)}, {"layouts_priced", targeted.evaluated}};
    else if (args.flag("frameworks"))  // opt-in: scripts read --json, and it costs searches
        out["frameworks"] = frameworkComparisonJson(frameworkBests(job, options, r));
    if (const std::string hint = batchSizeHint(r.plan, r.report, job.topology.deviceCount()); !hint.empty())
        out["hint"] = hint;
    std::cout << out.dump(2) << "\n";
}

void printPlanText(const CliArgs &args, const SearchJob &job, const SearchOptions &options, const PlanResult &r,
                   const ErrorBand &band, std::optional<ExportFormat> target, const TargetResult &targeted)
{
    printPlan(r, band);
    if (target)
        std::printf("\ntarget:              %s runs this plan as it is (%lld layouts it runs priced)\n",
                    exportFormatTitle(*target), targeted.evaluated);
    else if (!args.flag("no-frameworks"))
        printFrameworkComparison(r, frameworkBests(job, options, r), job.topology.deviceCount());
    if (options.topK > 1)
        printTop(r, band);
    if (const std::string hint = batchSizeHint(r.plan, r.report, job.topology.deviceCount()); !hint.empty())
        std::printf("\nhint: %s\n", hint.c_str());
}

} // namespace

int cmdPlan(const Args &argv)
{
    std::set<std::string> values, flags;
    searchCommandOptions(values, flags);
    values.insert("top");
    values.insert("threads");
    flags.insert({"no-frameworks", "frameworks"});
    const CliArgs args(argv, values, flags, "plan");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};

    const SearchJob job = loadSearchJob(args);
    const SearchSettings &settings = job.settings;
    const std::unique_ptr<Planner> planner = makePlanner(settings.planner);  // checked by searchSettingsFrom
    const SearchOptions options = optionsWithFlags(args, job);
    // --target F (issue 47): the search restricted to what that framework runs as it is.
    std::optional<ExportFormat> target;
    if (!settings.target.empty())
        target = targetFromString(settings.target);
    if (target.has_value() && options.topK > 1)
        throw UsageError{"--top and --target do not go together"};
    TargetResult targeted;
    const PlanResult r = runPlanSearch(args, job, options, *planner, target, targeted);
    if (!r.found) {
        std::cerr << "nest-cli plan: no plan found: " << r.message << "\n";
        return 2;
    }
    if (!r.verified)
        std::cerr << "nest-cli plan: warning: " << r.message << "\n";
    const ErrorBand band = modelErrorBand(job.options.cost, job.calibration, job.topology);
    if (args.has("out")) {
        const auto saved = savePlan(args.value("out"), r.plan, errorBandToJson(band, r.report.iterationTime));
        if (!saved) {
            std::cerr << "nest-cli plan: " << saved.error() << "\n";
            return 2;
        }
    }
    if (args.flag("json"))
        printPlanJson(args, job, options, r, planner->name(), band, target, targeted);
    else
        printPlanText(args, job, options, r, band, target, targeted);
    return r.verified ? 0 : 1;
}

} // namespace nest::cli
