#include "LayerSumsStore.h"

#include "SearchRun.h"

#include <algorithm>
#include <string>

namespace nest {

std::vector<int> LayerSumsStore::sumsTwins(const std::vector<StageConfig> &options)
{
    std::vector<int> twins;
    twins.reserve(options.size());
    for (size_t i = 0; i < options.size(); ++i) {
        const StageConfig a = sumsChoice(options[i]);
        size_t twin = 0;
        while (twin < i && !(sumsChoice(options[twin]) == a))
            ++twin;
        twins.push_back(static_cast<int>(twin));
    }
    return twins;
}

namespace {

// The index of `value` in `seen`, appended when new; a key holds `bits` bits of it.
template <typename T>
int intern(std::vector<T> &seen, const T &value, int bits, const char *who, const char *what)
{
    const size_t i = static_cast<size_t>(std::find(seen.begin(), seen.end(), value) - seen.begin());
    if (i >= (size_t{1} << bits))
        throw SearchLimitExceeded{std::string(who) + " more than " + std::to_string(1 << bits) + " distinct " + what +
                                  "; the planner's caches hold at most that many"};
    if (i == seen.size())
        seen.push_back(value);
    return static_cast<int>(i);
}

} // namespace

LayerSumsStore::LayerSumsStore(const ModelProfile &model, int seqLength, const CostOptions &options)
    : m_model(model), m_seqLength(seqLength), m_options(options), m_ranges(model)
{
}

bool LayerSumsStore::serves(const ModelProfile &model, int seqLength, const CostOptions &options) const
{
    return seqLength == m_seqLength && options == m_options && model == m_model;
}

bool LayerSumsStore::hasRoom(int speeds, int microBatches) const
{
    return m_speeds.size() + static_cast<size_t>(std::max(speeds, 0)) <= (size_t{1} << kSpeedBits) &&
           m_microBatches.size() + static_cast<size_t>(std::max(microBatches, 0)) <= (size_t{1} << kMicroBatchBits);
}

size_t LayerSumsStore::bytes() const
{
    return m_sums.capacity() * sizeof(StageLayerSums) + m_prefixClass.capacity() * sizeof(int) +
           m_sumIdx.bytes() + m_ranges.bytes();
}

int LayerSumsStore::newMicroBatchIndex(int microBatch)
{
    m_lastMicroBatchIndex = intern(m_microBatches, microBatch, kMicroBatchBits, "the search has", "micro-batch sizes");
    m_lastMicroBatch = microBatch;
    return m_lastMicroBatchIndex;
}

int LayerSumsStore::newSpeedIndex(const ComputeRates &rates)
{
    m_lastSpeedIndex = intern(m_speeds, rates, kSpeedBits, "the cluster has", "device speeds");
    return m_lastSpeedIndex;
}

int LayerSumsStore::layerSums(int range, const StageContext &ctx, const ComputeRates &rates)
{
    const int speed = speedIndex(rates);
    const int mb = microBatchIndex(ctx.microBatch);
    const StagePlan &st = *ctx.stage;
    const StageConfig sums = sumsChoice(st.config());
    int idx = -1;
    if (m_sumIdx.find(key(range, mb, speed, sums), idx))
        return idx;
    // Layer sums by extension (docs/planner.md): walk back the prefixes [j, e) of the range
    // to the longest one cached under the same speed and choice, then add the layers after
    // it one at a time (StageLayerFold: bit for bit stageLayerSums()), caching each prefix
    // on the way. A prefix without an embedding layer the range holds would count tied
    // parameters differently: the walk stops before one.
    const ModelProfile &model = *ctx.model;
    const int j = st.firstLayer, jEnd = st.endLayer;
    m_sumChain.clear();
    m_sumChain.push_back({range, jEnd});
    int base = -1;
    while (m_sumChain.back().second - 1 > j &&
           model.layers[static_cast<size_t>(m_sumChain.back().second - 1)].kind != LayerKind::Embedding) {
        const auto [c, e] = m_sumChain.back();
        const int shorter = prefixClass(c, j, e);
        int found = -1;
        if (m_sumIdx.find(key(shorter, mb, speed, sums), found)) {
            base = found;  // the sums of [j, e - 1)
            break;
        }
        m_sumChain.push_back({shorter, e - 1});
    }
    StageLayerFold fold(ctx, rates, rangeHoldsEmbedding(model, j, jEnd));
    StageLayerSums s = base >= 0 ? m_sums[static_cast<size_t>(base)] : StageLayerSums{};
    const int from = base >= 0 ? m_sumChain.back().second - 1 : j;
    for (int i = from; i < jEnd; ++i) {
        fold.add(s, i);
        if (m_sumChain.back().second == i + 1) {
            idx = static_cast<int>(m_sums.size());
            m_sums.push_back(s);
            m_sumIdx.insert(key(m_sumChain.back().first, mb, speed, sums), idx);
            m_sumChain.pop_back();
        }
    }
    return idx;
}

int LayerSumsStore::prefixClass(int range, int j, int e)
{
    // The class of [j, e) fixes the layer types of [j - 1, e), hence those of [j - 1, e - 1).
    if (range >= static_cast<int>(m_prefixClass.size()))
        m_prefixClass.resize(static_cast<size_t>(range) + 1, -1);
    int &p = m_prefixClass[static_cast<size_t>(range)];
    if (p < 0)
        p = m_ranges.rangeClass(j, e - 1);
    return p;
}

} // namespace nest
