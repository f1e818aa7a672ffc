// nest-cli evaluate: the cost report of one plan (text, or one JSON object with --json), on
// --cluster and --model or on the cluster and model of --workspace FILE.
#include "CliCommands.h"
#include "CliPlanOptions.h"

#include "PlanIO.h"

#include <cstdio>
#include <iostream>

namespace nest::cli {

namespace {

void printReport(const Report &r, const Plan &plan, const ErrorBand &band)
{
    std::printf("feasible:            %s\n", r.feasible ? "yes" : "no");
    for (const auto &reason : r.reasons)
        std::printf("  reason: %s\n", reason.c_str());
    std::printf("iteration time:      %.4f s (%s)\n", r.iterationTime, band.text(r.iterationTime).c_str());
    std::printf("throughput:          %.2f samples/s, %.0f tokens/s\n", r.samplesPerSecond, r.tokensPerSecond);
    std::printf("MFU:                 %s\n", mfuValueText(r).c_str());
    std::printf("peak memory:         %.2f GB per device\n", r.peakMemoryBytes / 1e9);
    std::printf("devices used:        %d (dp %d, %zu stages, %d micro-batches of %d, schedule %s)\n",
                r.devicesUsed, plan.dp, plan.stages.size(), plan.numMicroBatches(), plan.microBatch,
                toString(plan.schedule));
    if (r.stages.empty())
        return;
    std::printf("\nper stage (ms per micro-batch; sync, optimizer, bubble in ms per iteration; memory GB):\n");
    std::printf("%5s %9s %8s %8s %8s %7s %7s %7s %7s %7s %8s %8s %8s %8s %8s\n", "stage", "layers", "fwd",
                "bwd", "recomp", "tp", "ep", "cp", "p2p", "zero", "t_stage", "dp-sync", "optim", "bubble",
                "memory");
    for (const StageReport &s : r.stages) {
        const StageCost &c = s.cost;
        char layers[32];
        std::snprintf(layers, sizeof layers, "%d-%d", s.firstLayer, s.endLayer - 1);
        std::printf("%5d %9s %8.2f %8.2f %8.2f %7.2f %7.2f %7.2f %7.2f %7.2f %8.2f %8.1f %8.1f %8.1f %8.2f\n",
                    s.index, layers, 1e3 * c.forward, 1e3 * c.backward, 1e3 * c.recompute, 1e3 * c.tpComm,
                    1e3 * c.epComm, 1e3 * c.cpComm, 1e3 * c.p2p, 1e3 * c.zeroComm, 1e3 * c.perMicroBatch,
                    1e3 * (c.dpSync + c.zeroGather), 1e3 * c.optimizer, 1e3 * s.bubble, c.memoryTotal / 1e9);
    }
}

} // namespace

int cmdEvaluate(const Args &argv)
{
    auto flags = planFlagOptions();
    flags.insert("json");
    const CliArgs args(argv, planValueOptions(), flags, "evaluate");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    const PlanInputs in = loadPlanInputs(args);
    const CostOptions options = costOptionsFor(args, in);
    const Report report = evaluate(in.plan, in.topology, in.model, options);
    const ErrorBand band = modelErrorBand(options, in.calibration, in.topology);
    if (!report.feasible && report.stages.empty()) {
        // The plan does not fit this cluster/model at all (bad layer ranges, device ids...).
        std::string msg = "the plan is not valid for this cluster and model:";
        for (const auto &e : report.reasons)
            msg += "\n  " + e;
        throw UsageError{msg};
    }
    if (args.flag("json")) {
        Json j = reportToJson(report);
        j["error_band"] = errorBandToJson(band, report.iterationTime);
        std::cout << j.dump(2) << "\n";
    } else {
        printReport(report, in.plan, band);
    }
    return 0;
}

} // namespace nest::cli
