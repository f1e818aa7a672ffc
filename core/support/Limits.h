#pragma once
// The documented ranges of every number the tool reads (files and flags), in one place.
// Loaders check them where the number is read and report "FILE: at PATH: REASON (range ...)";
// the CLI checks its flags against the same constants through checkRange(). The table with
// the reasons for each bound is in docs/reliability.md. Units are the JSON keys' units.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nest {

// A closed interval [min, max], or half-open at the bottom when minExclusive ("(0, 1]").
struct Range {
    double min = 0;
    double max = 0;
    const char *unit = "";       // printed after the bounds ("GB/s"); empty for counts
    bool minExclusive = false;
    bool integer = false;        // whole numbers only (counts)

    bool contains(double x) const
    {
        if (!(x == x) || x > max)  // NaN never passes
            return false;
        return minExclusive ? x > min : x >= min;
    }
};

// "range 1 to 1024", "range (0.001, 1]", "range 1e-06 to 1e+07 GB/s".
std::string describeRange(const Range &r);
// nullopt when `value` is finite and inside `r`, else the message
// "WHAT: must be at most 1e+07 GB/s, found 1e+300 (range 1e-06 to 1e+07 GB/s)".
// `what` may be empty (then the message starts at "must"). For the CLI's flags and loaders.
std::optional<std::string> checkRange(double value, const Range &r, std::string_view what);
// The reason alone, without `what:` (what loaders put after "at PATH: ").
std::optional<std::string> rangeProblem(double value, const Range &r);

namespace limits {

// Files.
inline constexpr std::uintmax_t maxFileBytes = 256ull * 1024 * 1024;  // 256 MB per input file
// Nesting of JSON objects and arrays, checked before the parse (issue 48): nlohmann_json
// copies, compares and dumps recursively, so a 100,000-deep model overflowed the stack
// (SIGSEGV in `inspect`). The deepest file NEST writes (a workspace holding an explicit
// cluster of 16 levels) nests about 40 levels.
inline constexpr int maxJsonDepth = 256;

// Links (cluster levels and overrides).
inline constexpr Range bandwidthGBps{1e-6, 1e7, "GB/s"};       // 1 kB/s .. 10 PB/s per device
inline constexpr Range latencyUs{0, 1e6, "us"};                // up to 1 s per message
inline constexpr Range oversubscription{1, 1024, ""};          // 1 = non-blocking

// Devices.
inline constexpr Range peakTflops{1e-3, 1e6, "TFLOP/s"};       // 1 GFLOP/s .. 1 EFLOP/s
inline constexpr Range memoryGB{1e-3, 1e5, "GB"};              // 1 MB .. 100 TB
inline constexpr Range memoryBandwidthGBps{1e-3, 1e7, "GB/s"}; // 1 MB/s .. 10 PB/s
inline constexpr Range efficiency{1e-3, 1, "", true};          // (0.001, 1]: fraction of peak
inline constexpr Range matmulEfficiency{0, 1, ""};             // 0 = the cost model's default
// A data-parallel bucket, MiB (--grad-bucket-mb): 1 KiB .. 1 TiB. Smaller buckets are no
// setting: a gradient buffer in calls of a few bytes costs 1e290 s and more (issue 48).
inline constexpr Range gradBucketMiB{0.001, 1048576, "MiB"};

// Measured runs and calibrations (issue 48): a step time of 1e308 s was accepted, fitted to
// parameters stuck at their bounds, and gave "+inf %" errors and an error band of infinity.
inline constexpr Range stepSeconds{1e-6, 1e6, "s"};   // a microsecond .. 11.6 days per step
// A measured step time more than this factor from the uncalibrated prediction is beyond
// what the fitted parameters (GEMM efficiency 0.05..1, step overhead -0.5..3) can reach, and
// a calibrated time this far from its measurement is no calibration.
inline constexpr double maxCalibrationFactor = 100;

// Model shapes (counts). Any integer count a model, profile or Hugging Face config file
// gives (layers, widths, sequence, graph ids) is read within 1 .. modelCountMax before the
// shape's own range applies.
inline constexpr long long modelCountMax = 100'000'000;
inline constexpr Range layers{1, 100'000, "", false, true};
inline constexpr Range hidden{1, 1'048'576, "", false, true};
inline constexpr Range heads{1, 65'536, "", false, true};
inline constexpr Range ffnHidden{1, 16'777'216, "", false, true};
inline constexpr Range vocab{1, 100'000'000, "", false, true};
inline constexpr Range experts{1, 65'536, "", false, true};
inline constexpr Range seqLength{1, 16'777'216, "", false, true};   // 16 Mi tokens
inline constexpr Range batch{1, 16'777'216, "", false, true};       // global batch (samples)
inline constexpr Range microBatch{1, 65'536, "", false, true};
inline constexpr Range profileLayers{1, 100'000, "", false, true};  // after "repeat" expansion

// Clusters and plans.
inline constexpr Range devices{1, 1'048'576, "", false, true};      // Topology::maxDevices
// One parallel width of a stage (tp, cp, ep, etp): a group of at most 65,536 devices (the
// model limits bound tp by the heads and ep by the experts already; StageConfig::widthKey()).
inline constexpr Range parallelWidth{1, 65'536, "", false, true};
inline constexpr Range stages{1, 100'000, "", false, true};         // never more than layers

// Measured times and sizes in profiles (per layer): finite, and below absurd.
inline constexpr Range layerTimeMs{0, 3.6e6, "ms"};                 // up to an hour per layer
inline constexpr Range layerBytes{0, 1e15, "bytes"};                // up to 1 PB per layer
inline constexpr Range layerFlops{0, 1e21, "FLOP"};                 // per layer and sample

inline constexpr Range virtualStages{1, 1'024, "", false, true};    // interleaved chunks per device (plans)
// The best K distinct plans a search keeps (nest-cli plan --top, the workspace's "top_k"): each
// is evaluated and simulated for the window, so a handful, not thousands.
inline constexpr Range topPlans{1, 100, "", false, true};

// Names a user types: a pinned plan's label, in characters (UTF-8 bytes). A 5,000,000-character
// label took the window 66 s and 1.6 GB to lay out (issue 25).
inline constexpr Range labelChars{0, 1'000, "characters", false, true};

// Search: the settings a workspace's "search" object stores (SearchSettings.h). The loader,
// nest-cli's flags and the window's search panel all read these, so that a value one of
// them accepts the others accept too (the panel's spin boxes span exactly these ranges).
inline constexpr Range memoryHeadroom{0, 0.99, ""};                 // fraction of capacity kept free
// MoE (CostOptions; "moe_imbalance" and "capacity_factor", --moe-imbalance, --capacity-factor):
// the most loaded rank's routed tokens over the mean (1 = balanced; 64: every token of a
// 64-way group on one rank), and an expert's capacity over its mean share (0 = dropless).
inline constexpr Range moeImbalance{1, 64, ""};
inline constexpr Range capacityFactor{0, 64, ""};
// --vpp: 1 = the non-interleaved schedules, 2..64 interleaving depths; the workspace's
// "virtual_stages" and the panel's depths list hold only the depths (interleavingDepth).
inline constexpr Range searchDepths{1, 64, "", false, true};
inline constexpr Range interleavingDepth{2, 64, "", false, true};   // model chunks per device searched
inline constexpr Range maxStages{0, 100'000, "", false, true};      // "max_stages", --max-stages; 0 = the layer count
inline constexpr Range evaluationBudget{1, 100'000'000, "", false, true};  // mcmc plan evaluations
// The candidate widths searched ("tp_candidates", "ep_candidates", "cp_candidates",
// "etp_candidates" where 0 = the stage's tp; --ep, --etp, --cp): one stage's parallel group.
inline constexpr Range candidateWidth = parallelWidth;
inline constexpr Range searchSeed{0, 2'147'483'647, "", false, true};  // "seed", --seed: the mcmc planner's seed
// "cp_min_tokens_per_rank": a cp > 1 is searched only when sequence / cp reaches it (0 = off).
inline constexpr Range cpMinTokensPerRank{0, 1 << 30, "", false, true};
// --max-states: the search limit (SearchOptions::maxStates; default 2e9, about 16,000 s); each
// state stands for about 8 us, so 1e12 is three months.
inline constexpr Range searchStates{1e3, 1e12, ""};
inline constexpr Range threads{1, 1'024, "", false, true};          // planners run at once
// Searches one NestPlanner run deals its outer points to (SearchOptions::threads, --threads).
inline constexpr Range searchThreads{1, 64, "", false, true};

} // namespace limits

} // namespace nest
