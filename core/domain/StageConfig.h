#pragma once
// The per-stage choice: how one pipeline stage is split across devices (tensor, context,
// expert and sequence parallelism) and how it spends memory (ZeRO stage, activation
// recomputation). It has one definition: plan stages (StagePlan), the planners' options,
// uniform layouts (UniformLayout), the cost functions' arguments (layerTimes,
// stageCollectives) and every cache key embed it or derive from it. The rules that decide
// which choices are valid (when sequence parallelism applies, what must divide what) live
// here too, so a planner and the evaluator cannot disagree about them.
//
// Adding a field: add it below, to key() / switchKey() (or widthKey()), to the JSON pair
// writeStageConfig / readStageConfig, and to the structured binding in
// tests/core/test_stage_config.cpp, which fails to compile until it lists every field and
// then checks that each one reaches the key and survives the JSON round trip.
#include "FlatKey.h"
#include "JsonUtil.h"
#include "Limits.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nest {

// Activation recomputation of a stage (Korthikanti et al. MLSys'23): none; selective = the
// attention core (QK^T, softmax, dropout, PV) is recomputed in backward and its s x s
// tensors are not stashed (Megatron-LM --recompute-granularity selective); full = every
// transformer block keeps only its input and reruns its forward before its backward.
enum class Recompute { None, Selective, Full };
const char *toString(Recompute r);  // "none", "selective", "full"
// Parses "none", "selective", "full" (case-insensitive); false when unknown.
bool recomputeFromString(const std::string &text, Recompute &out);

struct StageConfig {
    int tp = 1;           // tensor-parallel width
    int cp = 1;           // context-parallel width
    int ep = 1;           // expert-parallel width: experts are sharded across ep ranks of the
                          // stage's tp x cp x dp devices (Megatron-Core "parallel folding")
    bool sp = false;      // sequence parallelism (needs tp > 1 to matter)
    int zero = 0;         // ZeRO stage 0..3 over the data-parallel group
    Recompute recompute = Recompute::None;
    int etp = 0;          // expert tensor-parallel width (Megatron-Core
                          // --expert-tensor-parallel-size); 0 = the same as tp, its default.
                          // Last, so that brace-initialised choices read as before.

    // Shards per replica: the devices one replica of the stage runs on.
    int width() const { return tp * cp; }
    // The tensor width of the experts: etp, or tp when etp is 0.
    int expertTp() const { return etp > 0 ? etp : tp; }
    // The stored etp of a choice whose experts are `etp` wide: 0 when that is tp, so that one
    // layout has one key (a == b exactly when they describe the same run).
    static int etpField(int etp, int tp) { return etp == tp ? 0 : etp; }
    // The same run: etp 0 and etp == tp are one layout (key() agrees).
    bool operator==(const StageConfig &o) const
    {
        return tp == o.tp && cp == o.cp && ep == o.ep && sp == o.sp && zero == o.zero && recompute == o.recompute &&
               expertTp() == o.expertTp();
    }
    // This choice alone, for types that derive from it (StagePlan, UniformLayout).
    StageConfig &config() { return *this; }
    const StageConfig &config() const { return *this; }

    // --- keys -----------------------------------------------------------------------------
    // tp, cp, ep and expertTp() in 4 x kWidthBits bits (each stored minus one): what a
    // stage's device geometry and collectives depend on. Exact for every width the loaders
    // accept (limits::parallelWidth).
    static constexpr int kWidthBits = 16;
    uint64_t widthKey() const;
    // sp, zero and recompute in kSwitchBits bits: the memory and overlap switches.
    static constexpr int kSwitchBits = 5;
    uint32_t switchKey() const;
    // Every field without loss: a.key() == b.key() exactly when a == b.
    FlatKey key() const { return {widthKey(), switchKey()}; }

    // --- rules ------------------------------------------------------------------------------
    // Sequence parallelism is used where it is allowed and there is a tensor-parallel group
    // to split the sequence over (Megatron-LM ignores --sequence-parallel at tp 1).
    static bool sequenceParallel(bool allowed, int tp) { return allowed && tp > 1; }
    // ZeRO shards over the dp x cp ranks of a stage; with a group of one it is a no-op.
    static bool zeroShards(int dp, int cp) { return dp * cp > 1; }
    // Divisibility (heads <= 0: the model does not say; experts only matter when ep > 1;
    // cp only when cp > 1).
    static bool tpDividesHeads(int tp, int heads) { return heads <= 0 || heads % tp == 0; }
    static bool epDividesExperts(int ep, int experts) { return ep <= 1 || experts % ep == 0; }
    // Megatron-Core's folding: the experts' etp x ep x expert-dp grid re-slices the stage's
    // tp x cp x dp devices, so etp x ep must divide tp x cp x dp.
    static bool expertGridFits(int tp, int cp, int dp, int etp, int ep)
    {
        return etp >= 1 && ep >= 1 && (static_cast<long long>(tp) * cp * dp) % (static_cast<long long>(etp) * ep) == 0;
    }
    // Replicas of one expert shard (expert data parallelism) on a stage of dp replicas.
    int expertDp(int dp) const { return tp * cp * dp / (expertTp() * ep); }
    static bool cpDividesSequence(int cp, int seqLength) { return cp <= 1 || seqLength % cp == 0; }
    // Everything wrong with this choice for a model with `heads` attention heads and
    // `experts` experts, a sequence of `seqLength` tokens and `dp` replicas, one message
    // per problem ("tp 3 does not divide the model's 32 attention heads"); empty when valid.
    std::vector<std::string> problems(int heads, int experts, int seqLength, int dp) const;
};

struct StageConfigHash {
    size_t operator()(const StageConfig &c) const noexcept;
};

// The keys "tp", "cp", "ep", "sp", "zero" and "recompute" of a plan stage's JSON object.
void writeStageConfig(Json &stage, const StageConfig &c);
// Reads them from `stage` at JSON path `path` (absent keys keep their defaults; recompute
// also accepts true / false, version 1's full / none). Throws JsonError.
StageConfig readStageConfig(const Json &stage, const std::string &path);

} // namespace nest
