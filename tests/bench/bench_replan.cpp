// Re-plan latency in the GUI's live mode: after each edit of the cluster the window re-plans
// with the workspace's SearchSettings. This measures that whole step — copy the topology,
// apply the edit, searchOptionsFrom(), NestPlanner::plan() (which ends with evaluate()) — for
// three kinds of edit on 256- and 1024-device clusters, with the default settings
// (micro-batches {1, 2, 4, 8}, every schedule) and with micro-batches {1} only; then a sweep
// of narrower settings. A plain main() printing markdown tables (one core; figures in
// docs/planner.md, "Re-plan latency (live mode)").
//
// Each case runs in a fresh child process (so no case inherits the allocator state of the
// ones before it): one untimed plan of the unedited cluster, then `reps` edits, each timed
// from the edit to the returned plan. Columns: wall clock; this thread's CPU time (user +
// system, i.e. including page faults; on a machine shared with other jobs it is what an idle
// core would take); the CPU time again with glibc's heap kept instead of handed back to the
// kernel between plans (see Heap below).
//   bench_replan              both tables, 5 repetitions per case
//   bench_replan quick        the 256-device clusters only
//   bench_replan reps N       N repetitions per case (N >= 1)
//   bench_replan narrow       every settings row with the search space before issue 10
//                             (cp {1}, interleaving depth 2, recompute none / full), to
//                             measure what the larger default space costs (combinable)
#include "ClusterIO.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "SearchSettings.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __unix__
#include <sys/wait.h>
#include <unistd.h>
#endif

using namespace nest;

namespace {

// One edit as the GUI would make it; repetition k makes a slightly different edit so that
// every re-plan sees a new input.
struct Edit {
    std::string label;
    std::function<Topology(const Topology &, int k)> apply;
};

// (a) The rack/leaf level's bandwidth per device (level 1) scaled down, 0.5x .. 0.9x.
Topology scaleRackBandwidth(const Topology &base, int k)
{
    Topology t = base;
    t.levels[1].link.bandwidth *= 0.5 + 0.1 * (k % 5);
    return t;
}

// (b) The top level's (spine / core) oversubscription raised by 1, 1.5, 2, ...
Topology raiseSpineOversubscription(const Topology &base, int k)
{
    Topology t = base;
    t.levels.back().link.oversubscription += 1 + 0.5 * k;
    return t;
}

// Removes a leaf group (a node) from the tree, renumbering the group indices above it.
void removeNode(Topology &t, int node)
{
    auto &siblings = t.groups[static_cast<size_t>(t.groups[node].parent)].children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), node));
    t.groups.erase(t.groups.begin() + node);
    const auto renumber = [node](int &g) {
        if (g > node)
            --g;
    };
    for (TopoGroup &g : t.groups) {
        renumber(g.parent);
        for (int &c : g.children)
            renumber(c);
    }
    renumber(t.root);
}

// (c) One node moved to another rack (what ui/ClusterEdits' moveNode does, on the Topology
// directly): the last node of rack k % racks goes to the end of the next rack, leaving a
// non-uniform tree. A cluster with a single rack has no other rack; there the node is
// removed instead (the rack one node shorter).
Topology moveOneNode(const Topology &base, int k)
{
    Topology t = base;
    const std::vector<int> racks = t.groupsAtLevel(1);
    const int from = racks[static_cast<size_t>(k) % racks.size()];
    const int node = t.groups[from].children.back();
    if (racks.size() > 1) {
        const int to = racks[(static_cast<size_t>(k) + 1) % racks.size()];
        t.groups[from].children.pop_back();
        t.groups[to].children.push_back(node);
        t.groups[node].parent = to;
    } else {
        removeNode(t, node);
    }
    t.reindex();
    return t;
}

std::string moveLabel(const Topology &base)
{
    return base.groupsAtLevel(1).size() > 1 ? "move a node to next rack" : "drop a node (1 rack only)";
}

struct Sample {
    std::vector<double> ms;     // wall clock
    std::vector<double> cpuMs;  // this thread's CPU time, system time included (page faults)
    std::string summary;        // the plan after the last edit
};

double threadCpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

std::string planSummary(const PlanResult &r, const std::string &problem);

Sample measure(const Topology &base, const Edit &edit, const ModelProfile &model, const SearchSettings &settings,
               int reps)
{
    const NestPlanner planner;
    // Warm-up on the unedited cluster (caches, allocator), not timed.
    (void)planner.plan(base, model, searchOptionsFrom(settings, model));
    Sample s;
    PlanResult last;
    std::string problem;
    for (int k = 0; k < reps; ++k) {
        const double c0 = threadCpuMs();
        const auto t0 = std::chrono::steady_clock::now();
        const Topology edited = edit.apply(base, k);
        const SearchOptions options = searchOptionsFrom(settings, model);
        PlanResult r = planner.plan(edited, model, options);
        const auto t1 = std::chrono::steady_clock::now();
        s.cpuMs.push_back(threadCpuMs() - c0);
        s.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (problem.empty())
            problem = edited.validate();
        last = std::move(r);
    }
    s.summary = planSummary(last, problem);
    return s;
}

// How glibc's allocator treats the planner's large tables. By default a freed block above
// the (adaptive) mmap threshold goes back to the kernel, and so does free memory at the top
// of the heap above the trim threshold; the next plan page-faults it in again, which the
// CPU time counts. KeptHeap turns both off, as a long-running process that has planned
// something larger before effectively has.
enum class Heap { Default, Kept };

void setHeap(Heap heap)
{
#ifdef __GLIBC__
    if (heap == Heap::Kept) {
        mallopt(M_MMAP_MAX, 0);
        mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    }
#else
    (void)heap;
#endif
}

#ifdef __unix__
bool writeAll(int fd, const void *data, size_t size)
{
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
        const ssize_t n = write(fd, p, size);
        if (n <= 0)
            return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

bool readAll(int fd, void *data, size_t size)
{
    char *p = static_cast<char *>(data);
    while (size > 0) {
        const ssize_t n = read(fd, p, size);
        if (n <= 0)
            return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}
#endif

// measure() in a fresh child process, so that no case inherits the allocator state of the
// cases before it (the figures then do not depend on the order of the table).
Sample measureIsolated(const Topology &base, const Edit &edit, const ModelProfile &model,
                       const SearchSettings &settings, int reps, Heap heap)
{
#ifdef __unix__
    std::fflush(stdout);
    int fds[2];
    if (pipe(fds) != 0)
        return {};
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        setHeap(heap);
        const Sample s = measure(base, edit, model, settings, reps);
        const size_t n = s.ms.size(), len = s.summary.size();
        const bool ok = writeAll(fds[1], &n, sizeof n) && writeAll(fds[1], s.ms.data(), n * sizeof(double)) &&
                        writeAll(fds[1], s.cpuMs.data(), n * sizeof(double)) && writeAll(fds[1], &len, sizeof len) &&
                        writeAll(fds[1], s.summary.data(), len);
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    Sample s;
    size_t n = 0, len = 0;
    if (pid > 0 && readAll(fds[0], &n, sizeof n) && n < 100000) {
        s.ms.resize(n);
        s.cpuMs.resize(n);
        if (readAll(fds[0], s.ms.data(), n * sizeof(double)) && readAll(fds[0], s.cpuMs.data(), n * sizeof(double)) &&
            readAll(fds[0], &len, sizeof len) && len < 100000) {
            s.summary.resize(len);
            if (!readAll(fds[0], s.summary.data(), len))
                s.summary = "(lost)";
        }
    }
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, nullptr, 0);
    if (s.ms.empty())
        s.summary = "measurement failed";
    return s;
#else
    (void)heap;  // no fork: in process, default heap
    return measure(base, edit, model, settings, reps);
#endif
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string planSummary(const PlanResult &r, const std::string &problem)
{
    if (!problem.empty())
        return "edit invalid: " + problem;
    if (!r.found)
        return "no plan: " + r.message;
    int tpMin = 1 << 30, tpMax = 0;
    for (const StagePlan &st : r.plan.stages) {
        tpMin = std::min(tpMin, st.tp);
        tpMax = std::max(tpMax, st.tp);
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s mb %d dp %d pp %d tp %d%s, T %.3f s%s", toString(r.plan.schedule),
                  r.plan.microBatch, r.plan.dp, r.plan.pipelineDepth(), tpMin,
                  tpMax != tpMin ? ("-" + std::to_string(tpMax)).c_str() : "", r.objective,
                  r.verified ? "" : " NOT VERIFIED");
    return buf;
}

double maxOf(const std::vector<double> &v)
{
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// One case measured twice, each in a fresh process: with glibc's default heap and with the
// heap kept (see Heap).
void row(const std::string &cluster, const Topology &base, const std::string &modelName, const ModelProfile &model,
         const Edit &edit, const std::string &settingsLabel, const SearchSettings &settings, int reps)
{
    const Sample d = measureIsolated(base, edit, model, settings, reps, Heap::Default);
    const Sample k = measureIsolated(base, edit, model, settings, reps, Heap::Kept);
    const auto med = [](const std::vector<double> &v) { return v.empty() ? 0 : median(v); };
    std::printf("| %-20s | %5d | %-10s | %-26s | %-36s | %7.1f | %7.1f | %7.1f | %7.1f | %7.1f | %7.1f | %s |\n",
                cluster.c_str(), base.deviceCount(), modelName.c_str(), edit.label.c_str(), settingsLabel.c_str(),
                med(d.ms), maxOf(d.ms), med(d.cpuMs), maxOf(d.cpuMs), med(k.cpuMs), maxOf(k.cpuMs),
                d.summary.c_str());
    std::fflush(stdout);
}

void printHeader()
{
    std::printf("| %-20s | %5s | %-10s | %-26s | %-36s | %7s | %7s | %7s | %7s | %7s | %7s | %s |\n", "cluster", "GPUs",
                "model", "edit", "settings", "wall", "wall", "CPU", "CPU", "CPU kept", "CPU kept",
                "plan after the last edit");
    std::printf("| %-20s | %5s | %-10s | %-26s | %-36s | %7s | %7s | %7s | %7s | %7s | %7s | %s |\n", "", "", "", "", "",
                "median", "max", "median", "max", "median", "max", "");
    std::printf("| --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
}

struct NamedSettings {
    std::string label;
    SearchSettings settings;
};

SearchSettings microBatchesOne()
{
    SearchSettings s;
    s.microBatches = {1};
    return s;
}

} // namespace

int main(int argc, char **argv)
{
    bool quick = false;
    bool narrow = false;
    int reps = 5;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "quick") == 0)
            quick = true;
        else if (std::strcmp(argv[i], "narrow") == 0)
            narrow = true;
        else if (std::strcmp(argv[i], "reps") == 0 && i + 1 < argc)
            reps = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: bench_replan [quick] [narrow] [reps N]\n");
            return 2;
        }
    }

    std::vector<std::string> clusters{"superpod-h100-256", "paper-fattree-256"};
    if (!quick) {
        clusters.push_back("superpod-h100-1024");
        clusters.push_back("paper-spineleaf-1024");
    }
    const std::vector<std::string> models{"llama2-7b", "llama3-70b", "gpt3-175b"};
    // The space before issue 10 (cp 1, depth 2, recompute none / full) when `narrow`.
    const auto space = [narrow](SearchSettings s) {
        if (narrow) {
            s.cpCandidates = {1};
            s.virtualStages = 2;
            s.recomputeModes = {Recompute::None, Recompute::Full};
        }
        return s;
    };
    const std::vector<NamedSettings> settings{{"defaults (mb 1,2,4,8)", space(SearchSettings{})},
                                              {"mb {1}", space(microBatchesOne())}};

    std::printf("Re-plan latency after one edit: edit + searchOptionsFrom + NestPlanner::plan, %d repetitions, "
                "milliseconds%s\n\n",
                reps, narrow ? "; search space before issue 10 (cp 1, depth 2, recompute none/full)" : "");
    printHeader();
    for (const std::string &clusterName : clusters) {
        const Result<Topology> loaded = resolveCluster(clusterName);
        if (!loaded) {
            std::fprintf(stderr, "%s\n", loaded.error().c_str());
            return 1;
        }
        const Topology &base = *loaded;
        const std::vector<Edit> edits{{"rack bandwidth x0.5-0.9", scaleRackBandwidth},
                                      {"spine oversubscription +1+", raiseSpineOversubscription},
                                      {moveLabel(base), moveOneNode}};
        for (const std::string &modelName : models) {
            const ModelProfile model = resolveModel(modelName).value();
            for (const NamedSettings &ns : settings)
                for (const Edit &edit : edits)
                    row(clusterName, base, modelName, model, edit, ns.label, ns.settings, reps);
        }
    }

    // Which settings meet the live-mode target (< 100 ms at 256 devices): narrower spaces,
    // measured with edit (a).
    std::vector<NamedSettings> sweep;
    const auto add = [&sweep, &space](std::string label, const std::function<void(SearchSettings &)> &change) {
        SearchSettings s;
        change(s);
        sweep.push_back({std::move(label), space(s)});
    };
    const auto oneFOneB = [](SearchSettings &s) { s.schedules = {Schedule::OneFOneB}; };
    add("defaults (mb 1,2,4,8)", [](SearchSettings &) {});
    add("1F1B only", oneFOneB);
    add("mb {1}", [](SearchSettings &s) { s.microBatches = {1}; });
    add("mb {1}, 1F1B", [&](SearchSettings &s) {
        s.microBatches = {1};
        oneFOneB(s);
    });
    add("mb {1}, 1F1B, outside", [&](SearchSettings &s) {
        s.microBatches = {1};
        oneFOneB(s);
        s.layouts = {Layout::ReplicasOutside};
    });
    add("mb {1}, 1F1B, outside, no recompute", [&](SearchSettings &s) {
        s.microBatches = {1};
        oneFOneB(s);
        s.layouts = {Layout::ReplicasOutside};
        s.allowRecompute = false;
    });
    add("defaults, <= 8 stages", [](SearchSettings &s) { s.maxStages = 8; });
    add("mb {1}, <= 8 stages", [](SearchSettings &s) {
        s.microBatches = {1};
        s.maxStages = 8;
    });
    add("mb {1}, 1F1B, <= 8 stages", [&](SearchSettings &s) {
        s.microBatches = {1};
        oneFOneB(s);
        s.maxStages = 8;
    });
    std::printf("\nSettings sweep (edit: rack bandwidth), %d repetitions, milliseconds\n\n", reps);
    printHeader();
    for (const std::string &clusterName : clusters) {
        const Topology base = resolveCluster(clusterName).value();
        const Edit edit{"rack bandwidth x0.5-0.9", scaleRackBandwidth};
        for (const std::string &modelName : models) {
            const ModelProfile model = resolveModel(modelName).value();
            for (const NamedSettings &ns : sweep)
                row(clusterName, base, modelName, model, edit, ns.label, ns.settings, reps);
        }
    }
    return 0;
}
