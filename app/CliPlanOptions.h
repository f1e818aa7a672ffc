#pragma once
// Option parsing shared by `nest-cli evaluate`, `simulate` (and `plan` for --cluster /
// --model): loads the cluster and the model, and the plan from --plan FILE or from the
// uniform-layout options (--tp --pp --dp --ep --cp --sp --microbatch --batch --seq
// --schedule --zero --recompute --order). Bad input throws UsageError (exit 2).
#include "CliArgs.h"

#include "Evaluator.h"
#include "ModelProfile.h"
#include "Plan.h"
#include "Topology.h"

#include <set>
#include <string>

namespace nest::cli {

// Value options and flags the plan-taking commands accept (add your own to these sets).
std::set<std::string> planValueOptions();
std::set<std::string> planFlagOptions();

// --cluster FILE|PRESET (required).
Topology loadClusterOption(const CliArgs &args);
// --model FILE|PRESET (required), with optional sequence length / global batch overrides.
ModelProfile loadModelOption(const CliArgs &args, std::optional<int> seqLength, std::optional<int> globalBatch);
// --efficiency F (matmul efficiency override), --dp-overlap F.
CostOptions costOptionsFrom(const CliArgs &args);

struct PlanInputs {
    Topology topology;
    ModelProfile model;
    Plan plan;
};
// Cluster, model and plan; with --plan FILE the model is built with the plan's sequence
// length and global batch.
PlanInputs loadPlanInputs(const CliArgs &args);

} // namespace nest::cli
