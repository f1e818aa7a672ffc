#pragma once
// Calibration of the cost model to a user's own measured runs (issue 23, docs/validation.md
// "Calibration"). A measured run names its cluster, model, batch, sequence, framework and
// layout (or a plan file) and one measurement; the fit finds a few physical parameters per
// device type and framework, by least squares on log step time:
//   gemm_efficiency  the large-GEMM fraction of peak FLOP/s of the device type (shared by the
//                    frameworks that run on it),
//   step_overhead    the fraction of each micro-batch's compute and communication time the
//                    software stack loses to itself (CostOptions::stepOverhead).
// A calibration is applied to CostOptions for one cluster and framework (applyCalibration).
#include "CalibrationIO.h"
#include "Evaluator.h"
#include "JsonUtil.h"
#include "ModelErrorBand.h"
#include "ModelProfile.h"
#include "SearchSettings.h"
#include "Plan.h"
#include "Result.h"
#include "Topology.h"

#include <optional>
#include <functional>
#include <string>
#include <vector>

namespace nest {

// The parameters a fit may free (--fit): "gemm_efficiency", "step_overhead".
const std::vector<std::string> &calibrationParameterNames();

// One row of a "nest-runs" file, resolved: the plan that ran, where, and the measured step.
struct MeasuredRun {
    std::string name;
    Plan plan;
    Topology topology;
    ModelProfile model;
    Framework framework = Framework::MegatronCore;
    double measuredSeconds = 0;  // the step time the measurement implies
    std::string measurement;     // what was given, e.g. "tflops_per_gpu 402 (megatron formula)"
};

// Reads {"format": "nest-runs", "runs": [...]} (docs/validation.md): each run's cluster and
// model (a file, relative to RUNS.json's folder, or a preset), batch, seq, framework,
// "layout" or "plan", and exactly one of step_time_s, tokens_per_s_per_gpu, tflops_per_gpu
// (with "flops_formula": "megatron" or "6nd"). Errors name the file and the JSON path.
Result<std::vector<MeasuredRun>> loadMeasuredRuns(const std::string &file);
// The same from the parsed JSON: `origin` names it in messages, relative cluster, model and
// plan files are looked up in `folder`. A run's "cluster" may also be a cluster object and its
// "model" a model object as a workspace names it (the window's runs on its own cluster).
Result<std::vector<MeasuredRun>> measuredRunsFromJson(const Json &j, const std::string &origin,
                                                      const std::string &folder);

// The model FLOPs of one step by a published formula: "megatron" (Narayanan et al. 2021:
// 72 B s L h^2 (1 + s / 6h + V / 12 L h), generalised to gated MLPs, grouped-query attention
// and mixtures of experts as 6 B s (L P_block + h V) + 12 B s^2 L h, P_block the matrix
// parameters one token passes through in a block) or "6nd" (6 x active parameters x tokens).
double stepFlops(const ModelProfile &model, const std::string &formula, int globalBatch, int seqLength);

// `base` with the calibration of the cluster's device types under base.framework: their
// GEMM efficiencies, and the step overhead of the device type holding most devices.
CostOptions applyCalibration(CostOptions base, const Calibration &calibration, const Topology &topo);

// `base` with `calibration` applied when there is one (the window's and the CLI's one rule).
CostOptions calibratedOptions(CostOptions base, const std::optional<Calibration> &calibration, const Topology &topo);
// What the window plans and prices with: searchOptionsFrom(settings, model), calibrated
// for `topo`.
SearchOptions calibratedSearchOptions(const SearchSettings &settings, const ModelProfile &model, const Topology &topo,
                                      const std::optional<Calibration> &calibration);

// The error band of times reported under `framework` and `stack` on `gpus` GPUs: the
// validation set's (validationErrorBand) without a calibration. With one that has an entry
// for `framework`, it narrows to what the calibration's residuals (measured / after) support,
// "calibrated (N runs)":
// - at least 9 runs, more than the fitted parameters: the residuals' own central 80 %
//   split-conformal band (conformalBand);
// - fewer runs: the residuals say too little for an 80 % order statistic, and a fit on few
//   runs hides the scatter of the runs it did not see. The band is the validation rows'
//   scatter within one source and device type (withinSourceBand: the offset a calibration
//   removes is gone, the run-to-run scatter stays), widened to the residuals when one lies
//   outside it: "calibrated (3 runs), band of one source's scatter";
// - no more runs than fitted parameters (one run: one parameter): the residuals are zero by
//   construction; the scatter band alone.
// A calibration with no entry for `framework` leaves its band as it was.
//
// With the cluster (issue 49), the label says what applyCalibration() changes there, so it
// never contradicts the times: nothing applied (other devices) keeps the validation band; a
// GEMM efficiency fitted under other frameworks (the hardware's, applied whatever the
// framework) keeps the framework's band and says so, "megatron-core tuned, <=64 GPUs band;
// GEMM efficiency calibrated (3 runs of deepspeed)". The cost options give the framework and
// the stack, the cluster the GPU count.
ErrorBand modelErrorBand(Framework framework, Stack stack, int gpus, const std::optional<Calibration> &calibration);
ErrorBand modelErrorBand(const CostOptions &cost, const std::optional<Calibration> &calibration, const Topology &topo);

// Fits the `fit` parameters (calibrationParameterNames) to `runs`, starting from the cost
// model's defaults under `base` (each run's own framework). Refuses when the free
// parameters outnumber the runs, or when a run's plan cannot be evaluated.
Result<Calibration> fitCalibration(const std::vector<MeasuredRun> &runs, const std::vector<std::string> &fit,
                                   const CostOptions &base = {});

// The parameters a fit frees when the user names none (issue 50, point 5: nest-cli calibrate
// without --fit, the window's "what the runs identify"). Every one of
// calibrationParameterNames() when there are at least as many runs as they make free
// parameters; with fewer, one kind, with the reason: a measured step time fixes one number
// per run, and identifies the GEMM efficiency of the device type when at least half of the
// predicted step scales with it (-d ln T / d ln eta >= 0.5: compute-bound), else the step
// overhead (which scales the micro-batches' compute and communication alike). Refused when
// not even one parameter per device type is determined.
struct FitChoice {
    std::vector<std::string> parameters;
    std::string reason;  // why fewer than all are fitted; empty when all are
};
Result<FitChoice> identifiedFitParameters(const std::vector<MeasuredRun> &runs, const CostOptions &base = {});

// The fit's bound (issue 48: 1,000 runs of large clusters took 180 s with no progress and
// grew about cubically). Before it starts the fit estimates its plan evaluations (runs x
// (1 + about 10 iterations x (parameters + 2))) and seconds (each evaluation's cost grows
// with the run's devices and layers, each iteration's solve with parameters^3), and refuses
// past maxStates (as a search: 0 = the default 2e9, each standing for ~8 us) naming
// --max-states; `progress` (may be empty) hears the fraction done.
struct FitLimits {
    double maxStates = 0;
    std::function<void(double fraction)> progress;
    std::function<void(double seconds)> estimate;  // told the estimate before the fit starts
};
Result<Calibration> fitCalibration(const std::vector<MeasuredRun> &runs, const std::vector<std::string> &fit,
                                   const CostOptions &base, const FitLimits &limits);

} // namespace nest
