#pragma once
// The compute bounds of a NEST search (docs/planner.md, "Bounds and cuts"): the lower bound
// of an outer point (T >= m * max(device-seconds / usable devices, slowest layer)), the bound
// on a suffix's max t, and the narrow-stages test. None changes the optimum.
#include "SearchCells.h"
#include "SearchState.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace nest {

class SuffixBounds {
public:
    explicit SuffixBounds(SearchState &s) : m_s(s) {}

    // The point's compute bound (options of its micro-batch and widest width; with MoE
    // layers of its dp too), made on first use.
    const LayerComputeBound &of(const OuterConfig &cfg);
    // T >= m * max(sum of per-layer device-seconds / usable devices, slowest layer)
    // (docs/planner.md); with several device types each layer's compute is the least over
    // the types' rates (layerComputeBound), so it bounds every placement too.
    double lowerBound(const OuterConfig &cfg, double usable);
    double lowerBound(const OuterConfig &cfg);

    // Lower bound on max t of a suffix [j, L) in `stages` stages placed on positions
    // [q, positions) of the current point: its stages use at most min(positions - q,
    // stages * widest) positions.
    double suffixBound(int j, int q, int stages) const;
    // Whether the k stages after the cell's first can be wide enough (docs/planner.md,
    // "Narrow stages").
    bool suffixFits(const Cell &cell, double weight) const;

private:
    SearchState &m_s;
    // Per (micro-batch, widest width that fits the positions, dp with MoE layers else 0).
    std::map<std::tuple<int, int, int>, LayerComputeBound> m_bounds;

    // The narrowest width w of the point with weightedDeviceSeconds / w < best; -1 if none.
    int narrowestWidth(double weightedDeviceSeconds) const;
};

// Inline: the recurrence asks these once per cell and transition.
inline double SuffixBounds::suffixBound(int j, int q, int stages) const
{
    if (!m_s.bound)
        return 0;
    const double usable = std::min<double>(m_s.cfg.positions - q, double(stages) * m_s.widths.back());
    return std::max(m_s.bound->suffixDeviceSeconds[j] / usable, m_s.bound->suffixSlowest[j]);
}

// Each of the k stages after the cell's first holds a layer of [j+1, L), and a stage of
// width w has weight * t >= weight * d / w for each of its layers' device-seconds d, which
// must stay below the incumbent. One of them may hold the lightest layer, the others a layer
// at least as heavy as the second lightest; each needs the narrowest width that allows it.
inline bool SuffixBounds::suffixFits(const Cell &cell, double weight) const
{
    if (!m_s.bound || cell.stagesAfter == 0)
        return true;
    const int j = cell.firstLayer + 1;
    const int narrowest = narrowestWidth(weight * m_s.bound->suffixLightest[j]);
    const int narrowOthers = cell.stagesAfter > 1 ? narrowestWidth(weight * m_s.bound->suffixSecondLightest[j]) : 0;
    if (narrowest < 0 || narrowOthers < 0)
        return false;
    return double(cell.position) + m_s.widths[cell.width] + narrowest + double(cell.stagesAfter - 1) * narrowOthers <=
           m_s.cfg.positions;
}

inline int SuffixBounds::narrowestWidth(double weightedDeviceSeconds) const
{
    for (int w = 0; w < m_s.nW; ++w)
        if (weightedDeviceSeconds / m_s.widths[w] < m_s.incumbent.best)
            return m_s.widths[w];
    return -1;
}

} // namespace nest
