// nest-cli calibrate --runs RUNS.json [--fit LIST] [--out CAL.json] [--json]
// Fits the cost model's physical parameters (core/studies/Calibration.h) to measured runs
// (without --fit, those the runs identify: identifiedFitParameters) and prints each run's
// error before and after; --out writes the calibration that
// --calibration applies (docs/validation.md "Calibration").
#include "CliCommands.h"
#include "CliArgs.h"

#include "Calibration.h"
#include "CliProgress.h"
#include "FileGuard.h"
#include "Limits.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace nest::cli {

namespace {

// --max-states: the fit's bound (issue 48), as plan's.
double maxStatesOption(const CliArgs &args)
{
    double maxStates = 0;
    if (!args.numberValue("max-states", maxStates))
        throw UsageError{"option --max-states expects a number of states (e.g. 1e10), got '" +
                         args.value("max-states") + "'"};
    if (auto why = checkRange(maxStates, nest::limits::searchStates, "option --max-states"))
        throw UsageError{*why};
    return maxStates;
}

// Each run's error before and after, their mean, and the fitted parameters.
void printCalibration(const Calibration &cal)
{
    std::printf("%-32s %12s %12s %8s %12s %8s\n", "run", "measured_s", "before_s", "error", "after_s", "error");
    double sumBefore = 0, sumAfter = 0;
    for (const CalibratedRun &r : cal.runs) {
        const double eb = 100 * (r.beforeSeconds / r.measuredSeconds - 1);
        const double ea = 100 * (r.afterSeconds / r.measuredSeconds - 1);
        sumBefore += std::abs(eb);
        sumAfter += std::abs(ea);
        std::printf("%-32s %12.4f %12.4f %+7.1f%% %12.4f %+7.1f%%\n", r.name.c_str(), r.measuredSeconds,
                    r.beforeSeconds, eb, r.afterSeconds, ea);
    }
    const double n = static_cast<double>(cal.runs.size());
    std::printf("mean |error|: %.1f %% before, %.1f %% after\n", sumBefore / n, sumAfter / n);
    std::printf("\nparameters:\n");
    for (const CalibrationEntry &e : cal.parameters) {
        std::printf("  %s/%s:", e.device.c_str(), e.framework.c_str());
        if (e.gemmEfficiency)
            std::printf(" gemm_efficiency %.4f", *e.gemmEfficiency);
        if (e.stepOverhead)
            std::printf(" step_overhead %+.4f", *e.stepOverhead);
        std::printf("\n");
    }
}

} // namespace

int cmdCalibrate(const Args &argv)
{
    const CliArgs args(argv, {"runs", "fit", "out", "max-states"}, {"json", "progress"}, "calibrate");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    if (!args.has("runs"))
        throw UsageError{"--runs RUNS.json is required ({\"format\": \"nest-runs\", \"runs\": [...]})"};
    auto runs = loadMeasuredRuns(args.value("runs"));
    if (!runs)
        throw UsageError{runs.error()};
    // --fit names the parameters; without it, those the runs identify (issue 50, point 5):
    // both with enough runs, else the one kind the runs determine, said on the output.
    std::vector<std::string> fit;
    std::string choiceReason;
    if (args.has("fit")) {
        fit = args.wordList("fit", calibrationParameterNames());
    } else {
        auto choice = identifiedFitParameters(*runs);
        if (!choice)
            throw UsageError{args.value("runs") + ": " + choice.error()};
        fit = choice->parameters;
        choiceReason = choice->reason;
    }
    // The fit's bound and progress (issue 48), as plan's: --max-states, --progress or a terminal.
    FitLimits limits;
    if (args.has("max-states"))
        limits.maxStates = maxStatesOption(args);
    TerminalProgress progress("calibrate", args.flag("progress"));
    if (progress.enabled()) {
        limits.estimate = [&progress](double seconds) { progress.setEstimate(seconds); };
        limits.progress = [&progress](double fraction) { progress.update(fraction); };
    }
    auto cal = fitCalibration(*runs, fit, CostOptions{}, limits);
    progress.finish();
    if (!cal)
        throw UsageError{args.value("runs") + ": " + cal.error()};  // the file, then the run
    if (args.has("out")) {
        auto ok = writeJsonFile(args.value("out"), cal->toJson());  // stamped with the tool version
        if (!ok)
            throw UsageError{ok.error()};
    }
    if (args.flag("json")) {
        if (!choiceReason.empty())  // stdout stays the calibration file
            std::cerr << "calibrate: " << choiceReason << "\n";
        std::cout << cal->toJson().dump(2) << "\n";
        return 0;
    }
    if (!choiceReason.empty())
        std::printf("%s\n\n", choiceReason.c_str());
    printCalibration(*cal);
    if (args.has("out"))
        std::printf("wrote %s\n", args.value("out").c_str());
    return 0;
}

} // namespace nest::cli
