#include "PaperEvaluation.h"

#include "ClusterTemplates.h"
#include "Csv.h"
#include "ModelIO.h"
#include "PlanShape.h"
#include "TextCase.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace nest {

namespace {

struct PaperFamily {
    const char *name, *templ;
};
const PaperFamily kFatTree{"fat-tree", "paper-fattree"};
const PaperFamily kSpineLeaf{"spine-leaf", "paper-spineleaf"};
const PaperFamily kV100{"v100", "paper-v100"};

EvaluationPoint point(EvaluationPart part, const PaperFamily &f, int devices, const std::string &model)
{
    EvaluationPoint p;
    p.part = part;
    p.family = f.name;
    p.clusterTemplate = f.templ;
    p.devices = devices;
    p.model = model;
    return p;
}

const PlannerRun *find(const std::vector<EvaluationRow> &rows, const EvaluationPoint &p, const std::string &planner)
{
    for (const EvaluationRow &r : rows)
        if (r.point.part == p.part && r.point.family == p.family && r.point.devices == p.devices &&
            r.point.model == p.model && r.point.microBatch == p.microBatch && r.point.memoryGB == p.memoryGB &&
            r.point.variant == p.variant && r.run.planner == planner)
            return &r.run;
    return nullptr;
}


const char *partName(EvaluationPart p)
{
    switch (p) {
    case EvaluationPart::MicroBatch:
        return "microbatch";
    case EvaluationPart::Memory:
        return "memory";
    default:
        return "throughput";
    }
}

// The distinct points of one part, in row order.
std::vector<EvaluationPoint> pointsOf(const std::vector<EvaluationRow> &rows, EvaluationPart part)
{
    std::vector<EvaluationPoint> out;
    for (const EvaluationRow &r : rows) {
        if (r.point.part != part)
            continue;
        bool seen = false;
        for (const EvaluationPoint &p : out)
            seen = seen || (p.family == r.point.family && p.devices == r.point.devices && p.model == r.point.model &&
                            p.microBatch == r.point.microBatch && p.memoryGB == r.point.memoryGB &&
                            p.variant == r.point.variant);
        if (!seen)
            out.push_back(r.point);
    }
    return out;
}

std::string throughputCell(const PlannerRun *run)
{
    if (!run)
        return "";
    if (!run->result.found)
        return run->result.cancelled ? "cancelled" : "no plan";
    return fixedDecimals(run->result.report.samplesPerSecond, 1);
}

} // namespace

EvaluationGrid paperEvaluationGrid(bool quick)
{
    EvaluationGrid g;
    g.planners = {"nest", "flat", "megatron", "mcmc"};
    const std::vector<std::string> models =
        quick ? std::vector<std::string>{"bert-large", "llama2-7b"}
              : std::vector<std::string>{"bert-large", "llama2-7b", "llama3-70b", "mixtral-8x7b", "gpt3-175b"};
    const std::vector<int> sizes = quick ? std::vector<int>{64, 128} : std::vector<int>{64, 128, 256, 512, 1024};
    for (const PaperFamily &f : {kFatTree, kSpineLeaf})
        for (const std::string &m : models)
            for (int n : sizes)
                g.points.push_back(point(EvaluationPart::Throughput, f, n, m));
    for (int n : quick ? std::vector<int>{8} : std::vector<int>{8, 16})
        for (const std::string &m : quick ? std::vector<std::string>{"bert-large"}
                                          : std::vector<std::string>{"bert-large", "llama2-7b"})
            g.points.push_back(point(EvaluationPart::Throughput, kV100, n, m));

    // Micro-batch sweep (the paper's Fig. 6 / 11): 256 devices of the fat-tree.
    const int sweepDevices = quick ? 64 : 256;
    for (const std::string &m : quick ? std::vector<std::string>{"llama2-7b"}
                                      : std::vector<std::string>{"bert-large", "llama2-7b", "llama3-70b"})
        for (int mb : {1, 2, 4, 8}) {
            EvaluationPoint p = point(EvaluationPart::MicroBatch, kFatTree, sweepDevices, m);
            p.microBatch = mb;
            g.points.push_back(p);
        }

    // Memory ablation: H100 spine-leaf with less memory per device; NEST with ZeRO and
    // recomputation switched off in turn.
    for (const std::string &m : quick ? std::vector<std::string>{"llama2-7b"}
                                      : std::vector<std::string>{"llama2-7b", "llama3-70b"})
        for (double gb : quick ? std::vector<double>{80, 16} : std::vector<double>{80, 40, 24, 16, 12})
            for (const char *variant : {"all", "no-zero", "no-recompute", "neither"}) {
                EvaluationPoint p = point(EvaluationPart::Memory, kSpineLeaf, 32, m);
                p.memoryGB = gb;
                p.variant = variant;
                g.points.push_back(p);
            }
    g.mcmcBudget = quick ? 300 : 0;
    return g;
}

Result<Topology> evaluationCluster(const EvaluationPoint &p)
{
    Result<Topology> topo = makeCluster(p.clusterTemplate, {{"devices", double(p.devices)}});
    if (!topo || p.memoryGB <= 0)
        return topo;
    Topology t = std::move(topo).value();
    for (DeviceSpec &d : t.deviceTypes)
        d.memoryBytes = p.memoryGB * 1e9;
    t.name += " (" + fixedDecimals(p.memoryGB, 0) + " GB devices)";
    return t;
}

Result<ModelProfile> evaluationModel(const EvaluationPoint &p)
{
    return resolveModel(p.model);
}

std::vector<std::string> evaluationPlanners(const EvaluationGrid &grid, const EvaluationPoint &p)
{
    return p.part == EvaluationPart::Memory ? std::vector<std::string>{"nest"} : grid.planners;
}

SearchOptions evaluationOptions(const EvaluationGrid &grid, const EvaluationPoint &p)
{
    SearchOptions o;
    if (p.microBatch > 0)
        o.microBatches = {p.microBatch};
    o.allowZero = p.variant != "no-zero" && p.variant != "neither";
    o.allowRecompute = p.variant != "no-recompute" && p.variant != "neither";
    o.evaluationBudget = grid.mcmcBudget;
    o.seed = 1;
    return o;
}

std::string evaluationCsv(const std::vector<EvaluationRow> &rows)
{
    std::ostringstream s;
    s << "part,family,cluster,devices,model,micro_batch_fixed,memory_GB,variant,planner,feasible,"
         "samples_per_s,tokens_per_s,iteration_s,peak_memory_GB,mfu,tp,pp,dp,ep,cp,zero,recompute,"
         "micro_batch,schedule,solve_time_s,message\n";
    for (const EvaluationRow &r : rows) {
        const PlanResult &res = r.run.result;
        s << partName(r.point.part) << ',' << r.point.family << ',' << csvField(r.cluster) << ',' << r.point.devices
          << ',' << r.point.model << ',' << r.point.microBatch << ',' << r.point.memoryGB << ',' << r.point.variant
          << ',' << r.run.planner << ',' << (res.found ? "true" : "false") << ',';
        if (res.found) {
            const PlanShape sh = shapeOf(res.plan);
            const Report &rep = res.report;
            s << fixedDecimals(rep.samplesPerSecond, 4) << ',' << fixedDecimals(rep.tokensPerSecond, 1) << ','
              << fixedDecimals(rep.iterationTime, 6) << ',' << fixedDecimals(rep.peakMemoryBytes / 1e9, 3) << ','
              << fixedDecimals(rep.mfu, 4) << ',' << rangeText(sh.least.tp, sh.most.tp) << ',' << sh.pp << ',' << sh.dp << ','
              << rangeText(sh.least.ep, sh.most.ep) << ',' << rangeText(sh.least.cp, sh.most.cp) << ','
              << rangeText(sh.least.zero, sh.most.zero) << ',' << sh.recompute << ',' << sh.microBatch << ','
              << scheduleText(sh) << ',';
        } else {
            s << ",,,,,,,,,,,,,,";
        }
        s << fixedDecimals(res.stats.wallSeconds, 3) << ',' << csvField(res.found ? "" : res.message) << '\n';
    }
    return s.str();
}

double geometricMeanRatio(const std::vector<EvaluationRow> &rows, const std::string &family,
                          const std::string &baseline, int *count)
{
    double logSum = 0;
    int n = 0;
    for (const EvaluationPoint &p : pointsOf(rows, EvaluationPart::Throughput)) {
        if (!family.empty() && p.family != family)
            continue;
        const PlannerRun *nest = find(rows, p, "nest");
        const PlannerRun *other = find(rows, p, baseline);
        if (!nest || !other || !nest->result.found || !other->result.found)
            continue;
        logSum += std::log(other->result.report.iterationTime / nest->result.report.iterationTime);
        ++n;
    }
    if (count)
        *count = n;
    return n > 0 ? std::exp(logSum / n) : 0;
}

std::string evaluationMarkdown(const std::vector<EvaluationRow> &rows, const std::vector<std::string> &planners)
{
    std::ostringstream s;
    std::vector<std::string> baselines;
    for (const std::string &p : planners)
        if (p != "nest")
            baselines.push_back(p);

    const std::vector<EvaluationPoint> tp = pointsOf(rows, EvaluationPart::Throughput);
    std::vector<std::string> families;
    for (const EvaluationPoint &p : tp)
        if (std::find(families.begin(), families.end(), p.family) == families.end())
            families.push_back(p.family);
    for (const std::string &family : families) {
        s << "### Throughput, " << family << " cluster (samples/s; NEST/x = x's iteration time over NEST's)\n\n";
        s << "| model | devices |";
        for (const std::string &p : planners)
            s << ' ' << p << " |";
        for (const std::string &b : baselines)
            s << " NEST/" << b << " |";
        s << "\n|---|---:|";
        for (size_t i = 0; i < planners.size() + baselines.size(); ++i)
            s << "---:|";
        s << '\n';
        for (const EvaluationPoint &p : tp) {
            if (p.family != family)
                continue;
            s << "| " << p.model << " | " << p.devices << " |";
            for (const std::string &pl : planners)
                s << ' ' << throughputCell(find(rows, p, pl)) << " |";
            const PlannerRun *nest = find(rows, p, "nest");
            for (const std::string &b : baselines) {
                const PlannerRun *o = find(rows, p, b);
                if (nest && o && nest->result.found && o->result.found)
                    s << ' ' << fixedDecimals(o->result.report.iterationTime / nest->result.report.iterationTime, 2) << " |";
                else
                    s << " — |";
            }
            s << '\n';
        }
        s << "\nGeometric mean of NEST/x over the points where both found a plan:";
        for (const std::string &b : baselines) {
            int n = 0;
            const double g = geometricMeanRatio(rows, family, b, &n);
            s << ' ' << b << ' ' << (n ? fixedDecimals(g, 3) + "x" : std::string("—")) << " (" << n << " points)"
              << (&b == &baselines.back() ? "." : ";");
        }
        s << "\n\n";
    }

    const std::vector<EvaluationPoint> mb = pointsOf(rows, EvaluationPart::MicroBatch);
    if (!mb.empty()) {
        s << "### Micro-batch sweep (samples/s, micro-batch fixed; " << mb.front().family << ", "
          << mb.front().devices << " devices)\n\n| model | micro-batch |";
        for (const std::string &p : planners)
            s << ' ' << p << " |";
        s << "\n|---|---:|";
        for (size_t i = 0; i < planners.size(); ++i)
            s << "---:|";
        s << '\n';
        for (const EvaluationPoint &p : mb) {
            s << "| " << p.model << " | " << p.microBatch << " |";
            for (const std::string &pl : planners)
                s << ' ' << throughputCell(find(rows, p, pl)) << " |";
            s << '\n';
        }
        s << '\n';
    }

    const std::vector<EvaluationPoint> mem = pointsOf(rows, EvaluationPart::Memory);
    if (!mem.empty()) {
        s << "### Memory ablation (NEST, samples/s; " << mem.front().family << ", " << mem.front().devices
          << " devices with reduced memory)\n\n"
          << "| model | GB per device | all | no ZeRO | no recompute | neither | plan with all (ZeRO, recompute) |\n"
          << "|---|---:|---:|---:|---:|---:|---|\n";
        std::set<std::pair<std::string, double>> done;
        for (const EvaluationPoint &p : mem) {
            if (!done.insert({p.model, p.memoryGB}).second)
                continue;
            s << "| " << p.model << " | " << fixedDecimals(p.memoryGB, 0) << " |";
            std::string used = "—";
            for (const char *variant : {"all", "no-zero", "no-recompute", "neither"}) {
                EvaluationPoint q = p;
                q.variant = variant;
                const PlannerRun *run = find(rows, q, "nest");
                s << ' ' << throughputCell(run) << " |";
                if (run && run->result.found && q.variant == "all") {
                    const PlanShape sh = shapeOf(run->result.plan);
                    used = "ZeRO " + rangeText(sh.least.zero, sh.most.zero) + ", " + sh.recompute + "; " + widthsText(sh);
                }
            }
            s << ' ' << used << " |\n";
        }
        s << '\n';
    }
    return s.str();
}

} // namespace nest
