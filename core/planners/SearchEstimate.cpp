#include "SearchEstimate.h"

#include "Limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace nest {

namespace {

// Rough seconds per visited cell on one core (stage costs included), measured on the
// sample clusters; an order of magnitude, not a promise.
constexpr double kSecondsPerCell = 8e-6;
constexpr double kVisitedFraction = 2.5e-3;
// Seconds per complete plan the exhaustive planner evaluates.
constexpr double kSecondsPerPlan = 2e-5;
// Seconds per plan the Megatron-style planner builds and evaluates, per device plus layer
// (5e-4 s a plan for GPT-3 on 1,024 devices).
constexpr double kSecondsPerPlanUnit = 5e-7;

double log2AtLeast1(double x)
{
    return std::max(1.0, std::log2(std::max(x, 1.0)));
}

// Layouts the exhaustive planner enumerates at one outer point: sum over S = 1..maxStages
// of C(L - 1, S - 1) cut choices x the width sequences of S stages whose sum fits the
// positions (counted exactly when small, else widths^S), saturating at 1e300.
double exhaustiveLayouts(int layers, int maxStages, const std::vector<int> &widths, int positions)
{
    const int stagesMax = std::min(maxStages, layers);
    const bool exact = static_cast<double>(positions) * stagesMax <= 2e6;
    // sequences[used] = width sequences of the current length with that sum.
    std::vector<double> sequences;
    if (exact) {
        sequences.assign(static_cast<size_t>(positions) + 1, 0.0);
        sequences[0] = 1;
    }
    double total = 0, binom = 1;  // C(L-1, S-1)
    for (int s = 1; s <= stagesMax; ++s) {
        double fits = 0;
        if (exact) {
            std::vector<double> next(sequences.size(), 0.0);
            for (size_t used = 0; used < sequences.size(); ++used) {
                if (sequences[used] == 0)
                    continue;
                for (int w : widths)
                    if (used + static_cast<size_t>(w) < next.size())
                        next[used + static_cast<size_t>(w)] = std::min(1e300, next[used + static_cast<size_t>(w)] + sequences[used]);
            }
            sequences.swap(next);
            for (double n : sequences)
                fits = std::min(1e300, fits + n);
            if (fits == 0)
                break;  // no longer pipeline fits the positions
        } else {
            fits = std::pow(static_cast<double>(widths.size()), s);
        }
        total += binom * fits;
        if (!std::isfinite(total) || total > 1e300)
            return 1e300;
        binom = binom * (layers - s) / s;  // C(L-1, S)
    }
    return total;
}

std::string gigabytes(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, bytes < 1e10 ? "%.1f GB" : "%.0f GB", bytes / 1e9);
    return buf;
}

std::string countText(double n)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, n < 1e6 ? "%.0f" : "%.1e", n);
    return buf;
}

} // namespace

namespace {

// The cgroup's memory limit in bytes (v2 memory.max, else v1 memory.limit_in_bytes); 0 when
// there is none or it cannot be read.
double cgroupMemoryLimit()
{
    for (const char *file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
        std::FILE *f = std::fopen(file, "r");
        if (!f)
            continue;
        char buf[64] = {};
        const bool read = std::fgets(buf, sizeof buf, f) != nullptr;
        std::fclose(f);
        if (!read)
            continue;
        char *end = nullptr;
        const double v = std::strtod(buf, &end);
        if (end != buf && v > 0 && v < 1e18)  // "max" and v1's "no limit" (~9.2e18) are none
            return v;
    }
    return 0;
}

} // namespace

double defaultMemoryBudgetBytes()
{
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long pageSize = ::sysconf(_SC_PAGESIZE);
    double usable = pages > 0 && pageSize > 0 ? static_cast<double>(pages) * static_cast<double>(pageSize) : 8e9;
    for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        rlimit l{};
        if (::getrlimit(resource, &l) == 0 && l.rlim_cur != RLIM_INFINITY)
            usable = std::min(usable, static_cast<double>(l.rlim_cur));
    }
    if (const double cgroup = cgroupMemoryLimit(); cgroup > 0)
        usable = std::min(usable, cgroup);
    return 0.5 * usable;
}

double memoryBudgetOf(const SearchOptions &options)
{
    return options.memoryBudgetBytes > 0 ? options.memoryBudgetBytes : defaultMemoryBudgetBytes();
}

double maxStatesOf(const SearchOptions &options)
{
    return options.maxStates > 0 ? options.maxStates : kDefaultMaxStates;
}

SearchEstimate estimateSearch(const PlanSpace &space, SearchKind kind)
{
    SearchEstimate e;
    if (kind == SearchKind::None || !space.problem().empty())
        return e;
    if (kind == SearchKind::Megatron) {
        // MegatronPlanner's grid: cp x ep x micro-batch x schedule (1F1B and each interleaving
        // depth) x recompute x ZeRO configurations, each trying the pipeline depths that
        // divide the blocks, fewest first; every try builds and evaluates a whole plan, whose
        // cost grows with the devices and the layers (0.64 s for 1,205 plans of GPT-3 on 1,024
        // devices). An upper side: every depth of every configuration.
        const SearchOptions &o = space.options();
        const ModelProfile &model = space.model();
        int blocks = 0;
        for (const LayerProfile &l : model.layers)
            blocks += l.kind == LayerKind::Transformer || l.kind == LayerKind::Moe ? 1 : 0;
        if (blocks == 0)
            blocks = model.layerCount();
        double depths = 0;
        for (int p = 1; p <= std::min(blocks, space.maxStages()); ++p)
            depths += blocks % p == 0 ? 1 : 0;
        double eps = 1;
        if (model.numExperts > 1)
            eps = std::max<double>(1, static_cast<double>(o.epCandidates.size()));
        double schedules = 0;
        const auto has = [&o](Schedule s) { return std::find(o.schedules.begin(), o.schedules.end(), s) != o.schedules.end(); };
        if (has(Schedule::OneFOneB) || has(Schedule::GPipe))
            schedules += 1;
        if (has(Schedule::Interleaved))
            for (int d : o.virtualStages)
                schedules += d >= 2 ? 1 : 0;
        // Only a micro-batch that divides the global batch gives a data-parallel degree and so
        // a plan to evaluate; the others still walk the depths and degrees (a few ns each).
        double dividing = 0;
        for (int mb : o.microBatches)
            dividing += mb > 0 && space.globalBatch() % mb == 0 ? 1 : 0;
        const double others = std::max<double>(1, static_cast<double>(space.cpDegrees().size())) * eps *
                              std::max(1.0, schedules) *
                              std::max<double>(1, static_cast<double>(space.recomputeModes().size())) *
                              (o.allowZero ? 2 : 1);
        const double configs = others * std::max<double>(1, static_cast<double>(o.microBatches.size()));
        const double devices = space.topology().deviceCount();
        e.states = others * dividing * std::max(1.0, depths);
        e.seconds = configs * std::max(1.0, depths) * devices * 2e-9 +
                    e.states * kSecondsPerPlanUnit * (devices + model.layerCount());
        e.bytes = (space.topology().deviceCount() + model.layerCount()) * 256.0;  // one plan at a time
        return e;
    }
    const double layers = space.layerCount();
    const double widths = std::max<size_t>(space.widths().size(), 1);
    const int wmin = space.widths().empty() ? 1 : space.widths().front();
    const auto &schedules = space.options().schedules;
    const bool has1F1B = std::find(schedules.begin(), schedules.end(), Schedule::OneFOneB) != schedules.end();
    // Options per stage: (tp, cp) splits per width x ep x zero x recompute, roughly.
    const double optionsPerStage =
        widths * std::max<size_t>(space.recomputeModes().size(), 1) * (space.options().allowZero ? 4 : 1);
    for (const OuterConfig &cfg : space.configs()) {
        if (cfg.schedule == Schedule::GPipe && has1F1B && kind == SearchKind::Nest)
            continue;  // dominated, skipped by the search
        const double q = std::max(1, cfg.positions / std::max(wmin, 1));
        const double stages = std::min<double>(space.maxStages(), q);
        if (cfg.schedule == Schedule::Interleaved) {
            // pp x v x width x options candidates, each a full evaluation.
            const double n = stages * std::max<size_t>(space.interleavingDepths().size(), 1) * optionsPerStage;
            e.states += n;
            e.seconds += n * kSecondsPerPlan;
            continue;
        }
        if (kind == SearchKind::Nest) {
            // Cells (k, j, q, v, w): j over the layers, k over the pipeline depths that fit,
            // w over the widths; the reachable positions and links grow like log(q).
            // Memory: an upper-side count of the cells one outer point may hold.
            const double cells = layers * stages * widths * log2AtLeast1(q) / 8;
            // Plus the stage-cost cache's index of layer ranges, (L + 1)^2 ints allocated
            // up front whatever the search visits (40 GB at 100,000 layers: issue 25).
            const double rangeIndex = (layers + 1) * (layers + 1) * sizeof(int);
            e.bytes = std::max(e.bytes, cells * kBytesPerSearchCell + rangeIndex);
            // Time: the cells the bounds let through grow about like L^2 (calibrated on the
            // sample clusters with 96 to 1000 layers, 64 to 1024 devices).
            const double visited = std::min(cells, layers * layers * widths * log2AtLeast1(q) * kVisitedFraction);
            e.states += visited;
            e.seconds += visited * kSecondsPerCell;
        } else {
            // States are layouts (cuts x widths); each costs every option of every stage.
            const double layouts = exhaustiveLayouts(space.layerCount(), space.maxStages(), space.widths(), cfg.positions);
            e.states = std::min(1e300, e.states + layouts);
            e.seconds = std::min(1e300, e.seconds + layouts * optionsPerStage * kSecondsPerPlan);
            e.bytes = std::max(e.bytes, layers * 64.0);  // the recursion: one plan at a time
        }
    }
    // SearchOptions::threads: each search holds its own caches and cells.
    if (kind == SearchKind::Nest && space.options().topK <= 1 && space.options().threads > 1)
        e.bytes *= std::min(space.options().threads, static_cast<int>(limits::searchThreads.max));
    return e;
}

Result<SearchEstimate> estimateSearch(const Topology &topo, const ModelProfile &model,
                                      const SearchOptions &options, const std::string &planner)
{
    const PlanSpace space(topo, model, options);
    if (!space.problem().empty())
        return Result<SearchEstimate>::failure(space.problem());
    const SearchKind kind = planner == "nest"         ? SearchKind::Nest
                            : planner == "exhaustive" ? SearchKind::Exhaustive
                            : planner == "megatron"   ? SearchKind::Megatron
                                                      : SearchKind::None;
    return estimateSearch(space, kind);
}

std::string searchLimitProblem(const SearchEstimate &estimate, const SearchOptions &options)
{
    const double budget = memoryBudgetOf(options);
    if (estimate.bytes > budget)
        return "search would need ~" + gigabytes(estimate.bytes) + " (" + countText(estimate.states) +
               " states), above the budget of " + gigabytes(budget) +
               " (fewer layers or devices, a smaller --max-stages, or a larger memory budget)";
    const double maxStates = maxStatesOf(options);
    // The time a search at the state limit takes (2e9 cells x 8 us: about 4.4 h). An
    // exhaustive search whose layouts are under the state limit can still cost hours
    // (every layout evaluates every option of every stage): refused the same way.
    const double maxSeconds = maxStates * kSecondsPerCell;
    if (estimate.seconds > maxSeconds && estimate.states <= maxStates)
        return "search would take about " + countText(estimate.seconds) + " s (" + countText(estimate.states) +
               " states), above the limit of about " + countText(maxSeconds) +
               " s (fewer layers, devices or micro-batch sizes, a smaller --max-stages, --max-states to allow "
               "more, or the nest planner)";
    if (estimate.states > maxStates)
        return "search would visit ~" + countText(estimate.states) + " states (about " +
               countText(estimate.seconds) + " s), above the limit of " + countText(maxStates) +
               " states (fewer layers or devices, a smaller --max-stages, --max-states to allow more, or the nest "
               "planner)";
    return {};
}

} // namespace nest
