#include "PlannerRuns.h"

#include "PlannerRegistry.h"
#include "PrecisionSearch.h"
#include "SearchEstimate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <new>
#include <thread>

namespace nest {

std::vector<PlannerRun> runPlanners(const Topology &topo, const ModelProfile &model,
                                    const SearchOptions &options,
                                    const std::vector<std::string> &planners, int threads,
                                    const ComparisonProgressFn &progress, const CancelToken &cancel)
{
    std::vector<PlannerRun> runs(planners.size());
    std::atomic<size_t> next{0};
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = std::min<int>(threads, static_cast<int>(planners.size()));
    // The planners that run at once share the memory budget: each one's search is held to
    // its share, so that two 3.6 GB searches side by side are refused instead of killed
    // for memory (issue 25: compare on a 30,000-layer model).
    SearchOptions shared = options;
    shared.memoryBudgetBytes = memoryBudgetOf(options) / std::max(1, threads);
    auto worker = [&]() {
        for (size_t i = next++; i < planners.size(); i = next++) {
            runs[i].planner = planners[i];
            const std::unique_ptr<Planner> planner = makePlanner(planners[i]);
            if (!planner) {
                runs[i].result.message = "unknown planner '" + planners[i] + "' (known: " + plannerNameList() + ")";
                continue;
            }
            const int index = static_cast<int>(i);
            ProgressFn fn;
            if (progress)
                fn = [&progress, index](double f, double best) { progress(index, f, best); };
            const auto start = std::chrono::steady_clock::now();
            // A planner that throws ends its own row, not the process (a thread's uncaught
            // exception is std::terminate): the message says what happened.
            try {
                runs[i].result = planPrecisions(*planner, topo, model, shared, fn, cancel);
            } catch (const std::bad_alloc &) {
                runs[i].result = PlanResult{};
                runs[i].result.message = "ran out of memory (the search needed more than the machine could give)";
            } catch (const std::exception &e) {
                runs[i].result = PlanResult{};
                runs[i].result.message = std::string("failed: ") + e.what();
            }
            if (runs[i].result.stats.wallSeconds <= 0)   // planners that do not time themselves
                runs[i].result.stats.wallSeconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (progress)
                progress(index, 1.0, runs[i].result.found ? runs[i].result.report.iterationTime : 0.0);
        }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(worker);
    worker();
    for (std::thread &t : pool)
        t.join();
    return runs;
}

std::vector<PlannerRun> runPlanners(const Topology &topo, const ModelProfile &model,
                                    const SearchOptions &options,
                                    const std::vector<std::string> &planners, int threads)
{
    const CancelToken never;
    return runPlanners(topo, model, options, planners, threads, ComparisonProgressFn(), never);
}

} // namespace nest
