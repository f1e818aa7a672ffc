#pragma once
// The NEST paper's evaluation as a grid of planner runs (`nest-cli reproduce`,
// docs/evaluation.md): five models (BERT-Large, Llama2-7B, Llama3-70B, Mixtral-8x7B,
// GPT-3 175B) on 64 ... 1024 devices of the TPUv4-like fat-tree and the H100 spine-leaf
// clusters, plus the 8- and 16-V100 clusters of the paper's validation; a micro-batch
// sweep (1, 2, 4, 8) at 256 devices; and a memory-constrained ablation (devices with less
// memory) with ZeRO and recomputation switched off in turn. Every row is a planner run
// whose time is the evaluator's on the real cluster; the tables are derived from the rows.
#include "PlannerRuns.h"
#include "ModelProfile.h"
#include "Result.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

enum class EvaluationPart { Throughput, MicroBatch, Memory };

struct EvaluationPoint {
    EvaluationPart part = EvaluationPart::Throughput;
    std::string family;       // "fat-tree", "spine-leaf", "v100"
    std::string clusterTemplate;  // "paper-fattree", "paper-spineleaf", "paper-v100"
    int devices = 64;
    std::string model;        // model preset
    int microBatch = 0;       // > 0: only this micro-batch size (sweep)
    double memoryGB = 0;      // > 0: every device's memory (ablation)
    std::string variant = "all";  // ablation: "all", "no-zero", "no-recompute", "neither"
};

struct EvaluationGrid {
    std::vector<EvaluationPoint> points;
    std::vector<std::string> planners;  // for throughput and micro-batch points
    int mcmcBudget = 0;                 // 0 = the planner's default
};

// The whole grid, or with quick = true a subset that runs in well under a minute.
EvaluationGrid paperEvaluationGrid(bool quick);

Result<Topology> evaluationCluster(const EvaluationPoint &p);
Result<ModelProfile> evaluationModel(const EvaluationPoint &p);
// The planners run at a point: the grid's, or "nest" alone for the memory ablation.
std::vector<std::string> evaluationPlanners(const EvaluationGrid &grid, const EvaluationPoint &p);
// The search options of a point (its micro-batch, its ablation switches, the budget).
SearchOptions evaluationOptions(const EvaluationGrid &grid, const EvaluationPoint &p);

struct EvaluationRow {
    EvaluationPoint point;
    std::string cluster;   // the cluster's name
    PlannerRun run;
};

// One CSV line per row, with a header (columns in docs/evaluation.md).
std::string evaluationCsv(const std::vector<EvaluationRow> &rows);
// The Markdown tables: throughput per planner with NEST / baseline ratios per point and
// their geometric means, the micro-batch sweep, the memory ablation.
std::string evaluationMarkdown(const std::vector<EvaluationRow> &rows, const std::vector<std::string> &planners);
// Geometric mean of baseline time / NEST time over the throughput points where both found
// a plan (0 when there is none); `count` receives how many points entered.
double geometricMeanRatio(const std::vector<EvaluationRow> &rows, const std::string &family,
                          const std::string &baseline, int *count = nullptr);

} // namespace nest
