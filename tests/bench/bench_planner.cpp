// NEST planner benchmark: wall time, DP states and the plan found, for the paper's models on
// its clusters with every strategy and micro-batch sizes {1, 2, 4, 8}; scaling with devices
// and with layer count. A plain main() printing a table (one core; build in Release).
//   bench_planner            the whole table
//   bench_planner quick      the 1024-GPU GPT3-175B point only
//   bench_planner devices N  GPT3-175B on the spine-leaf template with N devices only
//   bench_planner layers N   GPT-3 shape with N blocks on paper-spineleaf-1024 (issue 24)
//   bench_planner ops N P    the same with every block split into P entries
//   bench_planner pods N     GPT3-175B on a 4-tier H100 tree of N devices (up to 1,048,576)
//   bench_planner model M [CLUSTER]  any model (preset, model file, config.json) on CLUSTER
//                            (default paper-spineleaf-1024), e.g. the heterogeneous stacks of
//                            issue 45: sample_configs/models/hf/deepseek-v3.json
//   bench_planner replan CLUSTER MODEL [REPS]  PlanningSession vs from scratch after edits
//   bench_planner top CLUSTER K                 --top K on GPT3-175B
//   (each prints the peak RSS of its process: run one row per process)
//   NEST_BENCH_THREADS=N  every row with SearchOptions::threads = N (the second core)
//   NEST_BENCH_PRECISIONS=bf16,fp8,mxfp8  every row searches these precisions (issue 46,
//                            planPrecisions: one search each, the best kept; default bf16 alone)
//   NEST_BENCH_KEEP_HEAP=1   (environment, replan rows) keep freed memory as the window does
//   NEST_BENCH_PLANS=DIR     (environment) also write each row's plan and objective as JSON to
//                            DIR/<case>.json, to compare plans before / after a planner change
//   ... narrow               (last argument) the space before issue 10: cp {1}, interleaving
//                            depth 2 only, recompute none / full (to measure what the larger
//                            default space costs on the same cost model)
#include "SourceDir.h"
#include "ClusterTemplates.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "PrecisionSearch.h"
#include "PlanIO.h"
// The rows of issue 24's points 3 and 4 need PlanningSession and SearchOptions::topK; the
// others also build against the tree before them (for before / after tables).
#if __has_include("PlanningSession.h")
#include "PlanningSession.h"
#define NEST_BENCH_SESSION 1
#endif

#include <algorithm>
#include <cctype>
#include <chrono>
#include <vector>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace nest;

namespace {

bool g_narrow = false;

// Peak resident memory of this process so far (getrusage ru_maxrss, MB): run one row per
// process (`devices N`, `layers N`, `ops N`) to read it per row.
double peakMegabytes()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_maxrss) / 1024.0;
}

// The width rows (issue 24): H100s, 8 per node, 32 nodes per rack, 64 racks per pod, pods
// above (oversubscribed 2:1 at the pod tier and 4:1 at the top), `devices` in all; smaller
// clusters fill fewer racks / nodes, keeping the tiers.
Topology podCluster(int devices)
{
    const int node = 8;
    const int rack = std::max(1, std::min(32, devices / node));
    const int pod = std::max(1, std::min(64, devices / (node * rack)));
    const int pods = std::max(1, devices / (node * rack * pod));
    return Topology::uniform("pods-" + std::to_string(devices), devicePreset("h100-sxm-80gb").value(),
                             {{"node", node, linkFromUnits(450, 1)},
                              {"rack", rack, linkFromUnits(50, 2)},
                              {"pod", pod, linkFromUnits(50, 4, 2)},
                              {"cluster", pods, linkFromUnits(50, 8, 4)}});
}

// NEST_BENCH_PLANS=DIR: the row's objective (to the last bit) and plan as DIR/<label>.json.
void writePlan(const std::string &label, const PlanResult &r)
{
    const char *dir = std::getenv("NEST_BENCH_PLANS");
    if (!dir || !*dir)
        return;
    std::string name;
    for (char c : label)
        name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
    char objective[64];
    std::snprintf(objective, sizeof objective, "%a", r.objective);
    Json j{{"found", r.found}, {"objective", objective}, {"plan", r.found ? planToJson(r.plan) : Json()}};
#ifdef NEST_BENCH_SESSION
    for (const RankedPlan &t : r.top) {
        std::snprintf(objective, sizeof objective, "%a", t.objective);
        j["top"].push_back(Json{{"objective", objective}, {"plan", planToJson(t.plan)}});
    }
#endif
    std::ofstream(std::string(dir) + "/" + name + ".json") << j.dump(1) << "\n";
}

// NEST_BENCH_THREADS=N: the outer points dealt to N searches (SearchOptions::threads; every
// row, the replan and top rows too); the plan is the same, the counters the N searches'.
void applyThreads(SearchOptions &o)
{
    if (const char *threads = std::getenv("NEST_BENCH_THREADS"); threads && *threads)
        o.threads = std::atoi(threads);
}

// NEST_BENCH_PRECISIONS (a comma list of bf16, fp8, mxfp8, nvfp4): the precisions searched.
void applyPrecisions(SearchOptions &o)
{
    const char *list = std::getenv("NEST_BENCH_PRECISIONS");
    if (list == nullptr)
        return;
    std::string text = list;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        Precision p;
        if (precisionFromString(text.substr(at, comma - at), Fp8Recipe::Delayed, p))
            o.precisions.push_back(p);
        at = comma + 1;
    }
}

void row(const std::string &label, const Topology &topo, const ModelProfile &model)
{
    SearchOptions o;  // defaults: every strategy, micro-batches {1, 2, 4, 8}
    applyThreads(o);
    applyPrecisions(o);
    if (g_narrow) {
        o.cpCandidates = {1};
        o.virtualStages = {2};
        o.recomputeModes = {Recompute::None, Recompute::Full};
    }
    const PlanResult r = planPrecisions(NestPlanner(), topo, model, o, {}, CancelToken{});
    writePlan(label, r);
    if (!r.found) {
        std::printf("%-34s %7d %5d %9.3f  no plan: %s\n", label.c_str(), topo.deviceCount(),
                    model.layerCount(), r.stats.wallSeconds, r.message.c_str());
        std::fflush(stdout);
        return;
    }
    const Plan &p = r.plan;
    int tpMin = 1 << 30, tpMax = 0;
    for (const StagePlan &s : p.stages) {
        tpMin = std::min(tpMin, s.tp);
        tpMax = std::max(tpMax, s.tp);
    }
    std::printf("%-34s %7d %5d %9.3f %10lld %11lld %8lld %4lld/%-4lld  %-11s mb=%d dp=%d pp=%d tp=%d-%d  "
                "T=%.3f s  %.0f tok/s  MFU %.1f%%  %s  %s\n",
                label.c_str(), topo.deviceCount(), model.layerCount(), r.stats.wallSeconds,
                r.stats.states, r.stats.transitions, r.stats.stageCostCalls, r.stats.configs,
                r.stats.configs + r.stats.configsSkipped, toString(p.schedule), p.microBatch, p.dp,
                p.pipelineDepth(), tpMin, tpMax, r.objective, r.report.tokensPerSecond,
                100 * r.report.mfu, r.verified ? "verified" : "NOT VERIFIED", precisionLabel(p.precision).c_str());
    // The objective to the last bit (before / after comparisons) and the peak memory.
    std::printf("    objective %a  peak %.0f MB\n", r.objective, peakMegabytes());
    std::fflush(stdout);
}

#ifdef NEST_BENCH_SESSION
// Incremental vs from scratch (issue 24.3): one plan of the cluster, then `reps` edits of
// the rack level's bandwidth (x0.5 .. x0.9 of the original), each re-planned by a
// PlanningSession and by NestPlanner::plan(); median ms of each, DP cells of each, whether
// the two results are the same plan with the same objective bit for bit.
void replanRow(const std::string &label, const Topology &base, const ModelProfile &model, int reps)
{
    SearchOptions o;
    applyThreads(o);
    PlanningSession session;
    session.replan(base, model, o);
    std::vector<double> inc, scratch;
    long long incStates = 0, scratchStates = 0;
    bool same = true;
    int bounded = 0;
    for (int k = 0; k < reps; ++k) {
        Topology t = base;
        t.levels[1].link.bandwidth *= 0.5 + 0.1 * (k % 5);
        auto t0 = std::chrono::steady_clock::now();
        const PlanResult a = session.replan(t, model, o);
        auto t1 = std::chrono::steady_clock::now();
        const PlanResult b = NestPlanner().plan(t, model, o);
        auto t2 = std::chrono::steady_clock::now();
        writePlan(label + " edit " + std::to_string(k), b);
        inc.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        scratch.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
        incStates += a.stats.states;
        scratchStates += b.stats.states;
        bounded += session.lastReuse().boundedByPrevious ? 1 : 0;
        same = same && a.found == b.found && a.plan == b.plan && a.objective == b.objective;
    }
    std::sort(inc.begin(), inc.end());
    std::sort(scratch.begin(), scratch.end());
    std::printf("%-40s %7d  incremental %8.1f ms (%lld cells)  scratch %8.1f ms (%lld cells)  bounded %d/%d  %s"
                "  peak %.0f MB\n",
                label.c_str(), base.deviceCount(), inc[inc.size() / 2], incStates / reps, scratch[scratch.size() / 2],
                scratchStates / reps, bounded, reps, same ? "identical" : "DIFFERENT", peakMegabytes());
    std::fflush(stdout);
}

// --top 1 vs --top K (issue 24.4): wall time, DP cells, and the spread of the K plans.
void topRow(const std::string &label, const Topology &topo, const ModelProfile &model, int keep)
{
    SearchOptions o;
    applyThreads(o);
    o.topK = keep;
    const PlanResult r = NestPlanner().plan(topo, model, o);
    writePlan(label + " top " + std::to_string(keep), r);
    const double last = r.top.empty() ? r.objective : r.top.back().objective;
    std::printf("%-40s top %2d  %8.3f s  %10lld cells  %zu plans  best %.4f s  last +%.2f %%  peak %.0f MB\n",
                label.c_str(), keep, r.stats.wallSeconds, r.stats.states, std::max<size_t>(1, r.top.size()),
                r.objective, 100 * (last - r.objective) / r.objective, peakMegabytes());
    std::fflush(stdout);
}
#endif

ModelProfile preset(const std::string &name)
{
    return resolveModel(name).value();
}

ModelProfile withLayers(const std::string &name, int layers)
{
    ModelConfig c = modelPreset(name).value();
    c.layers = layers;
    return buildProfile(c);
}

// An operator-level profile (issue 24: the extractor's op-level output gives 2-6 entries per
// block): every block of `name` with `blocks` blocks split into `parts` consecutive entries,
// each carrying 1/parts of the block's compute, parameters, activations and communication
// (the first keeps the GEMM list and kernel bytes scaled likewise). `blocks * parts + 2`
// entries in all.
ModelProfile opLevel(const std::string &name, int blocks, int parts)
{
    const ModelProfile whole = withLayers(name, blocks);
    ModelProfile out = whole;
    out.layers.clear();
    for (const LayerProfile &l : whole.layers) {
        if (l.kind != LayerKind::Transformer) {
            out.layers.push_back(l);
            continue;
        }
        for (int k = 0; k < parts; ++k) {
            LayerProfile p = l;
            const double f = 1.0 / parts;
            p.name = l.name + "." + std::to_string(k);
            p.fwdFlops *= f;
            p.bwdFlops *= f;
            for (GemmShape &g : p.gemms)
                g.count *= f;
            p.attentionFlops *= f;
            p.elementwiseSpBytes *= f;
            p.elementwiseTpBytes *= f;
            p.rmsNormSpBytes *= f;
            p.rotaryTpBytes *= f;
            p.attentionStashBytes *= f;
            p.params *= f;
            p.tpParams *= f;
            p.expertParams *= f;
            p.activeParams *= f;
            p.stashTpBytes *= f;
            p.stashSpBytes *= f;
            p.recomputeStashBytes *= f;
            p.workingBytes *= f;
            p.tpAllReduceBytes *= f;
            p.epAllToAllBytes *= f;
            p.cpExchangeBytes *= f;
            out.layers.push_back(p);
        }
    }
    return out;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc > 1 && std::strcmp(argv[argc - 1], "narrow") == 0) {
        g_narrow = true;
        --argc;
    }
    const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
    if (argc > 2 && std::strcmp(argv[1], "devices") == 0) {
        const int n = std::atoi(argv[2]);
        const Topology t = makeCluster("paper-spineleaf", {{"devices", n}}).value();
        row("gpt3-175b  spineleaf-" + std::to_string(n), t, preset("gpt3-175b"));
        return 0;
    }
    if (argc > 2 && std::strcmp(argv[1], "layers") == 0) {
        const int n = std::atoi(argv[2]);
        row("gpt3-175b-shape " + std::to_string(n) + " blocks", clusterPreset("paper-spineleaf-1024").value(),
            withLayers("gpt3-175b", n));
        return 0;
    }
    if (argc > 2 && std::strcmp(argv[1], "ops") == 0) {
        const int blocks = std::atoi(argv[2]);
        const int parts = argc > 3 ? std::atoi(argv[3]) : 4;
        row("gpt3-175b-shape " + std::to_string(blocks) + "x" + std::to_string(parts) + " ops",
            clusterPreset("paper-spineleaf-1024").value(), opLevel("gpt3-175b", blocks, parts));
        return 0;
    }
#ifdef NEST_BENCH_SESSION
    if (argc > 3 && std::strcmp(argv[1], "replan") == 0) {
#ifdef __GLIBC__
        // NEST_BENCH_KEEP_HEAP=1: glibc keeps freed memory as the window does (gui_main.cpp),
        // so a re-plan does not fault the planner's tables in again: the live-mode figure.
        if (const char *keep = std::getenv("NEST_BENCH_KEEP_HEAP"); keep && std::strcmp(keep, "1") == 0) {
            mallopt(M_MMAP_MAX, 0);
            mallopt(M_TRIM_THRESHOLD, 1 << 30);
        }
#endif
        replanRow(std::string(argv[2]) + " " + argv[3], clusterPreset(argv[2]).value(), preset(argv[3]),
                  argc > 4 ? std::atoi(argv[4]) : 5);
        return 0;
    }
    if (argc > 3 && std::strcmp(argv[1], "top") == 0) {
        topRow(std::string("gpt3-175b ") + argv[2], clusterPreset(argv[2]).value(), preset("gpt3-175b"),
               std::atoi(argv[3]));
        return 0;
    }
#endif
    if (argc > 2 && std::strcmp(argv[1], "model") == 0) {
        const std::string cluster = argc > 3 ? argv[3] : "paper-spineleaf-1024";
        const auto model = resolveModel(argv[2]);
        if (!model) {
            std::fprintf(stderr, "%s\n", model.error().c_str());
            return 2;
        }
        row(model->name + " " + cluster, clusterPreset(cluster).value(), *model);
        return 0;
    }
    if (argc > 2 && std::strcmp(argv[1], "pods") == 0) {
        const int n = std::atoi(argv[2]);
        row("gpt3-175b  pods-" + std::to_string(n), podCluster(n), preset("gpt3-175b"));
        return 0;
    }
    std::printf("%-34s %7s %5s %9s %10s %11s %8s %9s  %s\n", "case", "devices", "layers", "wall_s",
                "states", "transitions", "costs", "configs", "best plan");
    const Topology sl1024 = clusterPreset("paper-spineleaf-1024").value();
    row("gpt3-175b  paper-spineleaf-1024", sl1024, preset("gpt3-175b"));
    if (quick)
        return 0;
    row("llama3-70b paper-spineleaf-1024", sl1024, preset("llama3-70b"));
    row("mixtral-8x7b paper-spineleaf-1024", sl1024, preset("mixtral-8x7b"));
    // A heterogeneous stack (issue 45): DeepSeek-V3's 3 dense + 58 MoE blocks (MLA) + MTP.
    row("deepseek-v3 paper-spineleaf-1024", sl1024,
        preset(NEST_SOURCE_DIR "/sample_configs/models/hf/deepseek-v3.json"));
    row("gpt3-175b  paper-fattree-1024", clusterPreset("paper-fattree-1024").value(), preset("gpt3-175b"));

    // Scaling with devices (spine-leaf template, GPT3-175B).
    for (int n : {64, 256, 1024, 4096, 16384}) {
        const Topology t = makeCluster("paper-spineleaf", {{"devices", n}}).value();
        row("gpt3-175b  spineleaf-" + std::to_string(n), t, preset("gpt3-175b"));
    }
    // Scaling with layer count (GPT3-175B shape, 1024 GPUs).
    for (int layers : {24, 48, 96, 192})
        row("gpt3-175b-shape " + std::to_string(layers) + " blocks", sl1024, withLayers("gpt3-175b", layers));
    return 0;
}
