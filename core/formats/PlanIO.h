#pragma once
// The plan JSON format (docs/formats.md (Plan and timeline JSON)) and the evaluator report as JSON (the CLI's
// --json output, reused by `nest-cli plan`).
#include "Evaluator.h"
#include "JsonUtil.h"
#include "ModelErrorBand.h"
#include "Plan.h"
#include "Result.h"

#include <string>

namespace nest {

Json planToJson(const Plan &plan);
// `origin` names the source in messages ("plan.json"); errors name the JSON path.
Result<Plan> planFromJson(const Json &j, const std::string &origin);
Result<Plan> loadPlan(const std::string &file);
// `errorBand` (errorBandToJson; null: none) is written as the file's "error_band" key: the band
// of the plan's time when it was saved, informational (a loaded plan is priced again).
Result<bool> savePlan(const std::string &file, const Plan &plan, const Json &errorBand = nullptr);

// {"basis": "megatron-core tuned, 65-512 GPUs, uncalibrated", "low_s": 18.9, "high_s": 23.4}:
// the band's bounds on the time `seconds` (the "error_band" of --json outputs and plan files).
Json errorBandToJson(const ErrorBand &band, double seconds);

// One JSON object: feasible, reasons, iteration_time_s, throughput_samples_per_s,
// tokens_per_s, mfu, peak_memory_bytes, model_flops_per_iteration, devices_used,
// stages[] (time terms in seconds, memory terms in bytes), devices[].
Json reportToJson(const Report &report);

} // namespace nest
