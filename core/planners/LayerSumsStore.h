#pragma once
// The layer sums of a model's stages (Evaluator: stageLayerSums()) by range class, kept
// across searches (issue 24.3, docs/planner.md "Layer sums kept across re-plans").
//
// A stage's layer sums read the layers of its range, its choice's (tp, cp, ep, sp,
// recompute), the micro-batch, the devices' speed, the sequence length and the cost options
// (Evaluator.h, decomposition contract): not the topology's links, the placement, ZeRO or
// the pipeline position. So after an edit of a link, a rack or most search settings, the
// sums a search computed are still the ones the next search would compute. A store serves
// the searches of one (model, sequence length, cost options) -- serves() -- and numbers
// micro-batches and device speeds by value, so its keys mean the same in every search.
// The range classes it keys by (RangeClasses) depend on the model alone.
#include "Evaluator.h"
#include "FlatHashMap.h"
#include "Limits.h"
#include "RangeClasses.h"
#include "StageConfig.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace nest {

class LayerSumsStore {
public:
    LayerSumsStore(const ModelProfile &model, int seqLength, const CostOptions &options);

    // Whether this store's sums are those of these inputs. A search may use a store only
    // then (NestPlanner::planWithBound replaces one that does not).
    bool serves(const ModelProfile &model, int seqLength, const CostOptions &options) const;
    // Whether a search that adds at most `speeds` device speeds and `microBatches`
    // micro-batch sizes fits the store's keys (else start a new store: a search alone
    // never fails where it would not have failed with a new one).
    bool hasRoom(int speeds, int microBatches) const;
    // Heap bytes held (roughly), for a caller deciding whether to keep the store.
    size_t bytes() const;
    // The searches that have used the store (a search calls beginSearch() when it starts).
    void beginSearch() { ++m_searches; }
    long long searches() const { return m_searches; }

    // The part of a stage's choice its layer sums read: all but the ZeRO stage. Two choices
    // with the same part have the same sums on the same range, micro-batch and speed.
    static StageConfig sumsChoice(StageConfig c)
    {
        c.zero = 0;
        return c;
    }
    // Per option of `options`, the index of the first option with the same sumsChoice() (its
    // own index when it is the first).
    static std::vector<int> sumsTwins(const std::vector<StageConfig> &options);

    int rangeClass(int first, int end) { return m_ranges.rangeClass(first, end); }
    // The index of stageLayerSums(ctx, rates), bit for bit, of ctx's stage, whose range
    // class is `range`; ctx's model, sequence length and options are the store's
    // (serves()). Indices stay valid for the store's life.
    int layerSums(int range, const StageContext &ctx, const ComputeRates &rates);
    const StageLayerSums &sums(int index) const { return m_sums[static_cast<size_t>(index)]; }

private:
    ModelProfile m_model;
    int m_seqLength;
    CostOptions m_options;
    RangeClasses m_ranges;
    std::vector<int> m_microBatches;  // distinct micro-batch sizes seen (index: key)
    std::vector<ComputeRates> m_speeds;  // distinct device speeds seen (index: key)
    FlatHashMap<int> m_sumIdx;
    std::vector<std::pair<int, int>> m_sumChain;  // layerSums(): (range class, end) of prefixes
    std::vector<int> m_prefixClass;               // range class of [j, e) -> that of [j, e - 1)
    std::vector<StageLayerSums> m_sums;

    // (range class, micro-batch index, device speed, choice) without loss: hi = the choice's
    // widthKey(); lo = range class (32 bits) | micro-batch index (16) | speed (11) | the
    // choice's switchKey() (5).
    static constexpr int kMicroBatchBits = 16;
    static constexpr int kSpeedBits = 32 - kMicroBatchBits - StageConfig::kSwitchBits;
    static_assert(limits::microBatch.max <= double(1 << kMicroBatchBits),
                  "distinct micro-batch sizes need more than kMicroBatchBits bits");
    static FlatKey key(int range, int mb, int speed, const StageConfig &c)
    {
        return {c.widthKey(), (static_cast<uint64_t>(range) << 32) |
                                  (static_cast<uint64_t>(mb) << (32 - kMicroBatchBits)) |
                                  (static_cast<uint64_t>(speed) << StageConfig::kSwitchBits) | c.switchKey()};
    }
    // The key index of a micro-batch size and of a device speed; the last one asked is
    // answered inline (a search asks for the same ones many times in a row).
    int microBatchIndex(int microBatch)
    {
        return microBatch == m_lastMicroBatch ? m_lastMicroBatchIndex : newMicroBatchIndex(microBatch);
    }
    int speedIndex(const ComputeRates &rates)
    {
        return m_lastSpeedIndex >= 0 && rates == m_speeds[static_cast<size_t>(m_lastSpeedIndex)] ? m_lastSpeedIndex
                                                                                                : newSpeedIndex(rates);
    }
    int newMicroBatchIndex(int microBatch);
    int newSpeedIndex(const ComputeRates &rates);
    long long m_searches = 0;
    int m_lastMicroBatch = -1, m_lastMicroBatchIndex = -1, m_lastSpeedIndex = -1;
    int prefixClass(int range, int j, int e);
};

} // namespace nest
