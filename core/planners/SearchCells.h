#pragma once
// The NEST recurrence's data (docs/planner.md, "The NEST recurrence" and "Data structures"):
// a DP cell, the points of its Pareto front, and the span of the one pool that holds a front.
#include "FlatKey.h"
#include "Limits.h"
#include "StageCostCache.h"

#include <cstdint>
#include <limits>

namespace nest {

inline constexpr double kSearchInf = std::numeric_limits<double>::infinity();

// A DP cell: the best suffixes covering layers [firstLayer, L) with stagesAfter + 1 stages,
// the first of width index `width` at position `position`, whose boundary with the stage
// before has link id `prevLink` (0 = none: the first stage).
struct Cell {
    int stagesAfter;  // k
    int firstLayer;   // j
    int position;     // q
    int prevLink;     // v
    int width;        // w, an index into the widths
};

// A point of a DP cell's Pareto front of (max t, max extra e) over the suffix.
struct Point {
    double t, e;
    int jEnd;   // end layer of the cell's first stage
    int opt;    // its option index
    int w2;     // width index of the next stage, -1 for the last stage
    int succ;   // index of the successor point in the pool, -1 for the last stage,
                // kLastStage - o when the successor is the last stage with option o
};
// topK > 1: a point with the id of its suffix's signature (stage choices and boundary tiers).
struct SignedPoint {
    Point point;
    int sig;
};
inline constexpr int kLastStage = -2;

// A cell's front: `count` points of the pool from `begin`.
struct Span {
    int begin = 0, count = 0;
};

// The memo's key of a cell: hi = stagesAfter (32 bits) | firstLayer (32); lo = position
// (kPositionBits) | prevLink (StageCostCache::kLinkIdBits) | width index (kWidthIndexBits).
// Exact for every input the loaders accept.
inline constexpr int kPositionBits = 24;
inline constexpr int kWidthIndexBits = 20;
static_assert(kPositionBits + StageCostCache::kLinkIdBits + kWidthIndexBits == 64, "cellKey() packs 64 bits");
static_assert(limits::devices.max < double(uint64_t{1} << kPositionBits), "positions no longer fit cellKey()");
static_assert(limits::devices.max <= double(uint64_t{1} << kWidthIndexBits), "width indices no longer fit cellKey()");
static_assert(limits::stages.max < 4294967296.0 && limits::layers.max < 4294967296.0,
              "stage and layer counts no longer fit cellKey()");

inline FlatKey cellKey(const Cell &c)
{
    return {(static_cast<uint64_t>(c.stagesAfter) << 32) | static_cast<uint64_t>(c.firstLayer),
            (static_cast<uint64_t>(c.position) << (StageCostCache::kLinkIdBits + kWidthIndexBits)) |
                (static_cast<uint64_t>(c.prevLink) << kWidthIndexBits) | static_cast<uint64_t>(c.width)};
}

} // namespace nest
