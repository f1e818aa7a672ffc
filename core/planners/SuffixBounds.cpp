#include "SuffixBounds.h"

#include <algorithm>

namespace nest {

const LayerComputeBound &SuffixBounds::of(const OuterConfig &cfg)
{
    int widest = 0;
    for (int w : m_s.space.widths())
        if (w <= cfg.positions)
            widest = w;
    // With MoE layers the bound depends on dp too (layerComputeBound()).
    const std::tuple<int, int, int> key(cfg.microBatch, widest, m_s.space.hasMoe(0, m_s.L) ? cfg.dp : 0);
    auto it = m_bounds.find(key);
    if (it == m_bounds.end()) {
        m_s.poll();
        it = m_bounds.emplace(key, layerComputeBound(m_s.space, cfg, m_s.stats)).first;
    }
    return it->second;
}

double SuffixBounds::lowerBound(const OuterConfig &cfg, double usable)
{
    const LayerComputeBound &b = of(cfg);
    return cfg.numMicroBatches * std::max(b.deviceSeconds / usable, b.slowestLayer);
}

double SuffixBounds::lowerBound(const OuterConfig &cfg)
{
    return lowerBound(cfg, m_s.space.usablePositions(cfg));
}

} // namespace nest
