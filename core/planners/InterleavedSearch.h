#pragma once
// The interleaved points (docs/planner.md, "Interleaved candidates"): no recurrence, a short
// list of candidates (pp, chunks, width, option) per point, each priced by its closed form
// T = (m + (pp-1)/v) * max over devices of the summed t + max e, memory first, and the
// survivors evaluated and offered to the incumbent.
#include "SearchState.h"
#include "SuffixBounds.h"

namespace nest {

class InterleavedSearch {
public:
    InterleavedSearch(SearchState &s, SuffixBounds &bounds) : m_s(s), m_bounds(bounds) {}

    // Every candidate of the interleaved point `cfg` (after NestPlanner's setupConfig(cfg)).
    void run(const OuterConfig &cfg);

private:
    SearchState &m_s;
    SuffixBounds &m_bounds;
};

} // namespace nest
