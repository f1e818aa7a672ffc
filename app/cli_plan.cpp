// nest-cli plan: search for the best plan (NEST dynamic program or exhaustive enumeration)
// and print it with its report and the search statistics. With --json one object with the
// keys "plan", "report" (as `evaluate --json`), "solve_time_s", "states", "stats" and
// "search" (the settings searched). With --workspace FILE the cluster, the model and the
// search settings come from the workspace and go through searchOptionsFrom(), exactly as
// the window plans; explicit flags override the workspace's settings.
#include "CliCommands.h"
#include "CliPlanOptions.h"
#include "CliProgress.h"

#include "PlanIO.h"
#include "SearchEstimate.h"
#include "SearchSettings.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>

namespace nest::cli {

namespace {

void printPlan(const PlanResult &r, const ErrorBand &band)
{
    const Plan &p = r.plan;
    const Report &rep = r.report;
    std::printf("best plan:           %s, micro-batch %d (%d micro-batches), dp %d, %d stages%s\n",
                toString(p.schedule), p.microBatch, p.numMicroBatches(), p.dp, p.pipelineDepth(),
                p.virtualStages > 1 ? (", " + std::to_string(p.virtualStages) + " chunks per device").c_str() : "");
    std::printf("iteration time:      %.4f s (%s; search value %.4f s, %s)\n", rep.iterationTime,
                band.text().c_str(), r.objective, r.verified ? "matches the evaluator" : "MISMATCH");
    std::printf("throughput:          %.2f samples/s, %.0f tokens/s, MFU %.1f %%\n", rep.samplesPerSecond,
                rep.tokensPerSecond, 100 * rep.mfu);
    std::printf("peak memory:         %.2f GB per device\n\n", rep.peakMemoryBytes / 1e9);
    std::printf("%5s %9s %4s %4s %4s %3s %5s %5s %10s %10s %10s %9s\n", "stage", "layers", "tp", "cp", "ep",
                "sp", "zero", "recmp", "devices", "t_stage_ms", "extra_ms", "memory_GB");
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
        std::printf("%5zu %9s %4d %4d %4d %3s %5d %5s %10s %10.2f %10.1f %9.2f\n", s, layers, st.tp, st.cp, st.ep,
                    st.sp ? "on" : "off", st.zero, toString(st.recompute), devs, 1e3 * t, 1e3 * extra,
                    mem / 1e9);
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

} // namespace

int cmdPlan(const Args &argv)
{
    std::set<std::string> values, flags;
    searchCommandOptions(values, flags);
    const CliArgs args(argv, values, flags, "plan");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};

    const SearchJob job = loadSearchJob(args);
    const SearchSettings &settings = job.settings;
    const std::unique_ptr<Planner> planner = makePlanner(settings.planner);  // checked by searchSettingsFrom
    // Progress after the first second, on a terminal or with --progress; before the first
    // fractions arrive the time left comes from the search estimate.
    TerminalProgress progress("plan", args.flag("progress"));
    if (progress.enabled())
        if (const auto estimate = estimateSearch(job.topology, job.model, job.options, settings.planner))
            progress.setEstimate(estimate->seconds);
    const ProgressFn onProgress = [&progress](double fraction, double best) {
        char detail[64] = "";
        if (std::isfinite(best) && best > 0)
            std::snprintf(detail, sizeof detail, "best %.4g s per iteration", best);
        progress.update(fraction, detail);
    };
    const PlanResult r = planner->plan(job.topology, job.model, job.options, onProgress, CancelToken{});
    progress.finish();
    if (!r.found) {
        std::cerr << "nest-cli plan: no plan found: " << r.message << "\n";
        return 2;
    }
    if (!r.verified)
        std::cerr << "nest-cli plan: warning: " << r.message << "\n";
    if (args.has("out")) {
        const auto saved = savePlan(args.value("out"), r.plan);
        if (!saved) {
            std::cerr << "nest-cli plan: " << saved.error() << "\n";
            return 2;
        }
    }
    const ErrorBand band = modelErrorBand(job.options.cost.framework, job.calibration);
    if (args.flag("json")) {
        const Json j{{"plan", planToJson(r.plan)},
                     {"report", reportToJson(r.report)},
                     {"objective_s", r.objective},
                     {"verified", r.verified},
                     {"solve_time_s", r.stats.wallSeconds},
                     {"states", r.stats.states},
                     {"planner", planner->name()},
                     {"search", searchSettingsToJson(settings)},
                     {"stats", statsToJson(r.stats)},
                     {"error_band", errorBandJson(band)}};
        std::cout << j.dump(2) << "\n";
    } else {
        printPlan(r, band);
    }
    return r.verified ? 0 : 1;
}

} // namespace nest::cli
