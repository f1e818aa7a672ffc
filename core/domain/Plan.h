#pragma once
// A fully explicit training plan: every stage's layers, widths, memory options and the
// device ids of every replica's shards. Plans are values; the Evaluator says what they cost.
#include "JsonUtil.h"
#include "Precision.h"
#include "Result.h"
#include "StageConfig.h"

#include <string>
#include <vector>

namespace nest {

class Topology;
struct ModelProfile;

enum class Schedule { OneFOneB, GPipe, Interleaved };
const char *toString(Schedule s);  // "1f1b", "gpipe", "interleaved"
// Parses "1f1b", "gpipe", "interleaved" (case-insensitive); false when unknown.
bool scheduleFromString(const std::string &text, Schedule &out);

// What a uniform pipeline split counts as its units (docs/planner.md, "Pipeline units"):
// the transformer / MoE blocks alone (the embedding rides with the first block, the head
// with the last: Megatron-LM's and NeMo's default), or also the embedding as one unit
// (Megatron-Core's account_for_embedding_in_pipeline_split), or the embedding and the
// output layer / loss as one unit each (plus account_for_loss_in_pipeline_split; DeepSpeed's
// partition_method "type:transformer|embedding" with tied embeddings). It decides how
// uniform layouts and the interleaved chunks cut the layers, and which flags the framework
// exports write; a plan's explicit layer ranges are what the evaluator costs.
enum class PipelineUnits { Layers, LayersEmbedding, LayersEmbeddingLoss };
const char *toString(PipelineUnits u);  // "layers", "layers+embedding", "layers+embedding+loss"
// Parses the three spellings above (exactly); false when unknown.
bool pipelineUnitsFromString(const std::string &text, PipelineUnits &out);
inline bool countsEmbedding(PipelineUnits u) { return u != PipelineUnits::Layers; }
inline bool countsLoss(PipelineUnits u) { return u == PipelineUnits::LayersEmbeddingLoss; }

// One pipeline stage: its layers, its choice (StageConfig: widths and memory switches) and
// the device ids of every replica's shards.
struct StagePlan : StageConfig {
    int firstLayer = 0;   // index into ModelProfile::layers
    int endLayer = 0;     // one past the last layer
    // devices[r][j]: replica r (0..dp-1), shard j (0..tp*cp-1), j = cpRank * tp + tpRank.
    std::vector<std::vector<int>> devices;

    int layerCount() const { return endLayer - firstLayer; }
    bool operator==(const StagePlan &) const = default;
};

struct Plan {
    int globalBatch = 4096;   // samples per iteration
    int microBatch = 1;       // samples per micro-batch
    int seqLength = 2048;
    Schedule schedule = Schedule::OneFOneB;
    int virtualStages = 1;    // model chunks per device (interleaved only)
    int dp = 1;               // data-parallel degree (replicas of every stage)
    // How the split was counted (uniform layouts, interleaved chunks, framework exports).
    PipelineUnits pipelineUnits = PipelineUnits::Layers;
    // The linear layers' number format (Precision.h); every device of the plan supports it.
    Precision precision;
    // Interleaved schedules list pp * virtualStages stages; stage k runs on the devices of
    // stage k % pp.
    std::vector<StagePlan> stages;

    int pipelineDepth() const
    {
        return virtualStages > 1 ? static_cast<int>(stages.size()) / virtualStages
                                 : static_cast<int>(stages.size());
    }
    // Micro-batches per replica per iteration.
    // In 64 bits (micro_batch x dp can pass INT_MAX); 0 for a plan whose product is not positive.
    int numMicroBatches() const
    {
        const long long perIteration = static_cast<long long>(microBatch) * dp;
        return perIteration > 0 ? static_cast<int>(globalBatch / perIteration) : 0;
    }
    // Number of distinct devices the plan uses (dp * sum of widths of the physical stages).
    int deviceCount() const;
    bool operator==(const Plan &) const = default;
};

// Why a plan cannot be evaluated at all (layer ranges, widths, device ids, batch split,
// sequence length...), one message per problem. Empty when the plan is well formed for
// this topology and model (Plan.cpp).
std::vector<std::string> planErrors(const Plan &plan, const Topology &topo, const ModelProfile &model);
// Why `precision` cannot run on the cluster's devices (those of the types flagged in
// `types`, every type when null), naming the device and what it supports; empty when it can.
std::string precisionProblem(const Topology &topo, const Precision &precision,
                             const std::vector<char> *types = nullptr);
// "bf16, fp8, mxfp8" for messages.
std::string formatList(const std::vector<NumberFormat> &formats);

} // namespace nest
