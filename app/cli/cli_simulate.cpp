// nest-cli simulate: discrete-event run of one iteration; prints the makespan (and the
// evaluator's closed form for comparison), writes the timeline JSON with --out FILE.
#include "CliCommands.h"
#include "CliPlanOptions.h"

#include "PlanIO.h"
#include "Simulator.h"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace nest::cli {

int cmdSimulate(const Args &argv)
{
    auto values = planValueOptions();
    values.insert("out");
    auto flags = planFlagOptions();
    flags.insert("json");
    const CliArgs args(argv, values, flags, "simulate");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    const PlanInputs in = loadPlanInputs(args);
    const CostOptions options = costOptionsFor(args, in);
    const std::vector<std::string> errors = planErrors(in.plan, in.topology, in.model);
    if (!errors.empty()) {
        std::string msg = "the plan is not valid for this cluster and model:";
        for (const auto &e : errors)
            msg += "\n  " + e;
        throw UsageError{msg};
    }
    const SimulationResult sim = simulate(in.plan, in.topology, in.model, options);
    if (!sim.error.empty())
        throw UsageError{sim.error};
    const Report report = evaluate(in.plan, in.topology, in.model, options);
    // The model's error band on the simulated total (the makespan), as evaluate gives it on
    // the closed form's.
    const ErrorBand band = modelErrorBand(options, in.calibration, in.topology);
    const double gap = report.iterationTime > 0 ? (sim.makespan - report.iterationTime) / report.iterationTime : 0;
    if (args.has("out")) {
        auto written = writeJsonFile(args.value("out"), timelineToJson(sim));
        if (!written)
            throw UsageError{written.error()};
    }
    if (args.flag("json")) {
        const Json j = {{"makespan_s", sim.makespan},
                        {"evaluator_iteration_time_s", report.iterationTime},
                        {"relative_gap", gap},
                        {"events", sim.events.size()},
                        {"feasible", report.feasible},
                        {"reasons", report.reasons},
                        {"error_band", errorBandToJson(band, sim.makespan)}};
        std::cout << j.dump(2) << "\n";
    } else {
        std::printf("makespan:            %.4f s (simulated; %s)\n", sim.makespan, band.text(sim.makespan).c_str());
        std::printf("closed form:         %.4f s (evaluator), gap %+.2f %%\n", report.iterationTime, 100 * gap);
        std::printf("events:              %zu\n", sim.events.size());
        if (!report.feasible)
            std::printf("note: the plan does not fit in memory (see `nest-cli evaluate`)\n");
        if (args.has("out"))
            std::printf("timeline written to  %s\n", args.value("out").c_str());
    }
    return 0;
}

} // namespace nest::cli
