#pragma once
// A plan as the launch files of the framework that runs it (issue 21, docs/interop.md):
// Megatron-LM (a bash launch script), NeMo (a launcher-style YAML), DeepSpeed (the config
// JSON with its pipeline partition), torchtitan (a TOML job file) and the NEST artifact's
// output JSON. Every export carries the rank-to-device mapping (RankMapping) as a hostfile,
// a JSON file and CUDA_VISIBLE_DEVICES in its launch script, and states what the framework
// could not express: the nearest plan it can run (RunnablePlan) is exported instead and
// priced by the evaluator beside the original. One writer per framework, each taking the
// same typed plan and cluster.
#include "Evaluator.h"
#include "ModelConfig.h"
#include "ModelProfile.h"
#include "Plan.h"
#include "Result.h"
#include "RunnablePlan.h"
#include "Topology.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

enum class ExportFormat { Megatron, Nemo, DeepSpeed, Torchtitan, Nest };

const std::vector<ExportFormat> &exportFormats();
// "megatron", "nemo", "deepspeed", "torchtitan", "nest"
const char *toString(ExportFormat f);
// Case-insensitive; also "megatron-lm", "nest-json".
std::optional<ExportFormat> exportFormatFromString(const std::string &name);
std::string exportFormatNameList();  // "megatron, nemo, deepspeed, torchtitan, nest"
// "Megatron-LM", "NeMo", "DeepSpeed", "torchtitan", "NEST artifact JSON" (the NEST paper
// artifact's solver output, not NEST Planner's own plan JSON)
const char *exportFormatTitle(ExportFormat f);
// The main file's default name: "launch_megatron.sh", "nemo_config.yaml",
// "ds_config.json", "torchtitan_job.toml", "nest_output.json".
std::string defaultExportFileName(ExportFormat f);
// What the framework can express (docs/interop.md "Fallback rules").
FrameworkRules frameworkRules(ExportFormat f);

struct ExportRequest {
    Plan plan;
    Topology topology;
    ModelProfile model;
    // The model's hyperparameters when it has them (a preset, a model file, a Hugging Face
    // config): the shape flags. A measured profile gives what it knows.
    std::optional<ModelConfig> config;
    CostOptions cost;          // the framework profile whose overlap flags are written
    std::string fileName;      // the main file's name; side files take its stem
    bool strict = false;       // refuse instead of exporting a fallback
    int iterations = 100;      // training iterations the launch files run
};

struct ExportFile {
    std::string name;          // a file name next to the main file
    std::string text;
    bool executable = false;   // launch scripts
};

// The best plan the framework runs as it is (FrameworkSearch.h), offered beside a fallback.
struct RunnableAlternative {
    Plan plan;
    Report report;
    std::string layout;                  // "tp 1 pp 7 dp 8 mb 1 1f1b ZeRO-1 blocks 6,6,..."
};

struct ExportResult {
    ExportFormat format = ExportFormat::Megatron;
    RunnablePlan runnable;               // what is exported, and what changed
    Report original;                     // the evaluator on the plan as given
    Report exported;                     // ... on the exported plan
    std::vector<ExportFile> files;       // files[0] is the main file
    int devicesAvailable = 0;            // the cluster's GPUs
    // After a fallback: the best plan the framework runs as it is, when it is faster than the
    // fallback or uses more of the GPUs.
    std::optional<RunnableAlternative> alternative;
    bool fellBack() const { return !runnable.changes.empty(); }
    // "uses 16 of the 56 GPUs (40 idle; the plan used 56)", or "uses all 56 GPUs".
    std::string gpuUsage() const;
    // "Megatron-LM cannot run per-stage tensor widths (...); exported tp 8 everywhere:
    // 21.4 s per iteration instead of 20.1 s (+6.5 %)", or "Megatron-LM runs the plan as
    // it is: 20.1 s per iteration".
    std::string summary() const;
    // "21.4 s per iteration instead of 20.1 s (+6.5 %)" (fallback) or "20.1 s per
    // iteration" (the plan as it is); "... but does not fit in memory" where it does not.
    std::string timeComparison() const;
};

// "tp 2 pp 6 dp 4 mb 1 1f1b ZeRO-1 sp recompute none blocks 8,8,8,3,3,2": a layout in a line.
std::string layoutDescription(const UniformLayout &u);

// The launch files of `request.plan` for `format`. Errors: a node name that is no host name
// (hostNameProblem), the plan does not fit the cluster or model (planErrors), --strict with
// something the framework cannot express (every reason listed), no runnable layout. Every
// value written into bash is shell-quoted, every comment line kept to one line (SafeText.h).
Result<ExportResult> exportPlan(const ExportRequest &request, ExportFormat format);

// The files of `result` (an exportPlan() of `request`'s plan) named after request.fileName:
// what exportPlan() puts in result.files. The window prices an export once for its fallback
// dialog and names the files after the save dialog with this.
std::vector<ExportFile> exportFiles(const ExportRequest &request, const ExportResult &result);

} // namespace nest
