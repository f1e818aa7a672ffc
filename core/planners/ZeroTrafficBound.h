#pragma once
// A lower bound on the iteration time of every plan of an outer point from the ZeRO-3
// traffic its memory forces (docs/planner.md, "ZeRO-3 that memory forces"). The compute bound
// (LayerComputeBound) cannot see it: where a data-parallel replica has too few devices to
// hold the weights whole, some stages must shard them over the replicas and gather them for
// every micro-batch, and on a wide dp group that traffic, not the compute, sets the time.
#include "PlanSpace.h"

namespace nest {

class StageCostCache;

// For the cache's current outer point (StageCostCache::setConfig()) of `space`:
//   forced = (belowZero3 x P - usable x capacity) / (belowZero3 - atZero3)
// dense parameters at least sit on ZeRO-3 stages (ZeroFloor; P = replicaDenseParams() over
// the model, usable = the devices a replica's pipeline can reach, capacity = the largest
// device memory after the headroom), and
//   T >= m x computeTimeFloor() x leastZero3PerByte() x zero3Traffic x forced / usable:
// a ZeRO-3 stage of width w holding p of them has w x t >= that floor x per-byte x traffic
// x p, the widths of a pipeline add up to at most usable, so its largest t is at least the
// sum of w x t over usable, and T >= m x the largest t (1F1B, GPipe, and interleaved per
// device). 0 where memory forces nothing (or dp = 1); +infinity where no plan of the point
// fits (forced > P, or no option is ZeRO-3).
double zeroTrafficBound(const PlanSpace &space, StageCostCache &cache);

} // namespace nest
