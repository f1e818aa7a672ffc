#include "Calibration.h"

#include "ClusterIO.h"
#include "ComputeModel.h"
#include "FileGuard.h"
#include "ModelIO.h"
#include "ModelSource.h"
#include "PlanBuilder.h"
#include "PlanIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace nest {

const std::vector<std::string> &calibrationParameterNames()
{
    static const std::vector<std::string> names{"gemm_efficiency", "step_overhead"};
    return names;
}

namespace {

namespace fs = std::filesystem;

// A run's cluster or model: a file next to RUNS.json (or as given), else a preset name.
std::string resolvePath(const std::string &value, const fs::path &folder)
{
    // error_code: a name longer than NAME_MAX or a symlink loop is no file here (the preset
    // lookup then names the problem), not a filesystem_error (issue 48).
    std::error_code ec;
    if (!value.empty() && fs::path(value).is_relative() && fs::exists(folder / value, ec))
        return (folder / value).string();
    return value;
}

Schedule scheduleOf(const std::string &text, int &virtualStages, const std::string &path)
{
    const size_t colon = text.find(':');
    Schedule s;
    if (!scheduleFromString(text.substr(0, colon), s))
        throw JsonError(path, "expected 1f1b, gpipe or interleaved:V, found \"" + text + "\"");
    virtualStages = 1;
    if (s == Schedule::Interleaved) {
        const std::string v = colon == std::string::npos ? "" : text.substr(colon + 1);
        char *end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || !limits::virtualStages.contains(static_cast<double>(n)))
            throw JsonError(path, "interleaved needs its chunks per device, e.g. \"interleaved:2\"; found \"" + text + "\"");
        virtualStages = static_cast<int>(n);
    } else if (colon != std::string::npos) {
        throw JsonError(path, "only interleaved takes :V, found \"" + text + "\"");
    }
    return s;
}

// The device type that holds most of the plan's devices (its step overhead applies).
int majorDeviceType(const Plan &plan, const Topology &topo)
{
    std::map<int, int> count;
    for (const StagePlan &st : plan.stages)
        for (const auto &replica : st.devices)
            for (int d : replica)
                if (d >= 0 && d < topo.deviceCount())
                    ++count[topo.devices[static_cast<size_t>(d)].type];
    int best = 0, most = -1;
    for (const auto &[type, n] : count)
        if (n > most) {
            best = type;
            most = n;
        }
    return best;
}

// The run's cluster and model: a file (next to RUNS.json, or as given) or a preset name, or
// the object itself (a cluster as ClusterIO reads it; a model as a workspace names it).
void readRunInputs(MeasuredRun &run, const Json &r, const std::string &path, const fs::path &folder, int batch,
                   int seq)
{
    const Json &clusterValue = requireKey(r, "cluster", path);
    auto topo = clusterValue.is_object() ? clusterFromJson(clusterValue, "")
                                         : resolveCluster(resolvePath(getString(r, "cluster", path), folder));
    if (!topo)
        throw JsonError(childPath(path, "cluster"), topo.error());
    run.topology = std::move(topo).value();
    ModelOptions mo;
    mo.seqLength = seq;
    mo.globalBatch = batch;
    const Json &modelValue = requireKey(r, "model", path);
    auto model = modelValue.is_object() ? modelSourceFromJson(modelValue, childPath(path, "model")).profile("", mo)
                                        : resolveModel(resolvePath(getString(r, "model", path), folder), mo);
    if (!model)
        throw JsonError(childPath(path, "model"), model.error());
    run.model = std::move(model).value();
}

// The run's plan: a plan file, or a uniform layout built on its cluster.
void readRunPlan(MeasuredRun &run, const Json &r, const std::string &path, const fs::path &folder, int batch, int seq)
{
    if (has(r, "layout") == has(r, "plan"))
        throw JsonError(path, "give exactly one of \"layout\" and \"plan\"");
    if (has(r, "plan")) {
        auto plan = loadPlan(resolvePath(getString(r, "plan", path), folder));
        if (!plan)
            throw JsonError(childPath(path, "plan"), plan.error());
        run.plan = std::move(plan).value();
    } else {
        const std::string lp = childPath(path, "layout");
        const Json &l = requireKey(r, "layout", path);
        requireObject(l, lp);
        requireKnownKeys(l, lp, {"tp", "pp", "dp", "cp", "ep", "microbatch", "schedule", "zero", "recompute", "sp"});
        UniformLayout u;
        // tp, cp, ep, sp, zero and recompute: the keys and ranges of a plan's stage.
        u.config() = readStageConfig(l, lp);
        u.pp = static_cast<int>(getInt(l, "pp", lp, 1, limits::devices.max, 1));
        u.dp = static_cast<int>(getInt(l, "dp", lp, 1, limits::devices.max, 1));
        u.microBatch = static_cast<int>(getInt(l, "microbatch", lp, 1, limits::microBatch.max, 1));
        u.schedule = scheduleOf(getString(l, "schedule", lp, "1f1b"), u.virtualStages, childPath(lp, "schedule"));
        u.globalBatch = batch;
        u.seqLength = seq;
        auto plan = buildUniformPlan(u, run.topology, run.model);
        if (!plan)
            throw JsonError(lp, plan.error());
        run.plan = std::move(plan).value();
    }
    const std::vector<std::string> problems = planErrors(run.plan, run.topology, run.model);
    if (!problems.empty())
        throw JsonError(path, "the run's plan does not fit its cluster and model: " + problems.front());
}

// The measurement, exactly one of three, as a step time.
void readRunMeasurement(MeasuredRun &run, const Json &r, const std::string &path, int batch, int seq)
{
    int given = 0;
    for (const char *k : {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu"})
        given += has(r, k) ? 1 : 0;
    if (given != 1)
        throw JsonError(path, "give exactly one measurement: step_time_s, tokens_per_s_per_gpu or tflops_per_gpu");
    const double gpus = run.plan.deviceCount();
    if (has(r, "step_time_s")) {
        run.measuredSeconds = getPositive(r, "step_time_s", path);
        run.measurement = "step_time_s " + std::to_string(run.measuredSeconds);
    } else if (has(r, "tokens_per_s_per_gpu")) {
        const double tps = getPositive(r, "tokens_per_s_per_gpu", path);
        run.measuredSeconds = static_cast<double>(batch) * seq / (tps * gpus);
        run.measurement = "tokens_per_s_per_gpu " + std::to_string(tps);
    } else {
        const double tflops = getPositive(r, "tflops_per_gpu", path);
        const std::string formula = getString(r, "flops_formula", path);
        if (formula != "megatron" && formula != "6nd")
            throw JsonError(childPath(path, "flops_formula"), "expected \"megatron\" or \"6nd\", found \"" + formula + "\"");
        run.measuredSeconds = stepFlops(run.model, formula, batch, seq) / (tflops * 1e12 * gpus);
        run.measurement = "tflops_per_gpu " + std::to_string(tflops) + " (" + formula + " formula)";
    }
    if (!std::isfinite(run.measuredSeconds) || run.measuredSeconds <= 0)
        throw JsonError(path, "the measurement gives no finite step time");
    if (const auto why = rangeProblem(run.measuredSeconds, limits::stepSeconds)) {
        const char *key = has(r, "step_time_s") ? "step_time_s" : has(r, "tokens_per_s_per_gpu") ? "tokens_per_s_per_gpu"
                                                                                                 : "tflops_per_gpu";
        throw JsonError(childPath(path, key), std::string(key) == "step_time_s"
                                                  ? *why
                                                  : "gives a step time of " + std::to_string(run.measuredSeconds) +
                                                        " s, which " + *why);
    }
}

MeasuredRun runFromJson(const Json &r, const std::string &path, const fs::path &folder)
{
    requireObject(r, path);
    requireKnownKeys(r, path,
                     {"name", "cluster", "model", "batch", "seq", "framework", "layout", "plan", "step_time_s",
                      "tokens_per_s_per_gpu", "tflops_per_gpu", "flops_formula", "source", "notes"});
    MeasuredRun run;
    run.name = getString(r, "name", path);
    const int batch = static_cast<int>(getInRange(r, "batch", path, limits::batch));
    const int seq = static_cast<int>(getInRange(r, "seq", path, limits::seqLength));
    const std::string fwName = getString(r, "framework", path, "megatron-core");
    const auto fw = frameworkFromString(fwName);
    if (!fw)
        throw JsonError(childPath(path, "framework"), "expected one of " + frameworkNameList() + ", found \"" + fwName + "\"");
    run.framework = *fw;
    readRunInputs(run, r, path, folder, batch, seq);
    readRunPlan(run, r, path, folder, batch, seq);
    readRunMeasurement(run, r, path, batch, seq);
    return run;
}

} // namespace

double stepFlops(const ModelProfile &model, const std::string &formula, int globalBatch, int seqLength)
{
    const double tokens = static_cast<double>(globalBatch) * seqLength;
    if (formula == "6nd")
        return 6.0 * model.activeParams() * tokens;
    // Megatron: the matrix parameters a token passes through, the logits, the attention scores.
    double blockMatrix = 0, attention = 0;
    for (const LayerProfile &l : model.layers) {
        if (!isDecoderBlock(l.kind))
            continue;
        for (const GemmShape &g : l.gemms) {
            if (g.perSequence)
                continue;
            const double perToken = g.n * g.k * g.count * g.rowsPerToken / (g.expert ? std::max(model.numExperts, 1) : 1);
            blockMatrix += perToken;
        }
        attention += model.hidden;  // 12 s^2 h per layer: QK^T and PV, forward and backward
    }
    const double logits = static_cast<double>(model.hidden) * model.vocab;
    return 6.0 * tokens * (blockMatrix + logits) + 12.0 * globalBatch * static_cast<double>(seqLength) * seqLength * attention;
}

CostOptions applyCalibration(CostOptions base, const Calibration &calibration, const Topology &topo)
{
    const std::string fw = toString(base.framework);
    std::map<int, int> perType;
    for (const Device &d : topo.devices)
        ++perType[d.type];
    int major = -1, most = -1;
    for (const auto &[type, n] : perType)
        if (n > most) {
            major = type;
            most = n;
        }
    for (size_t t = 0; t < topo.deviceTypes.size(); ++t) {
        const std::string &device = topo.deviceTypes[t].name;
        // The GEMM efficiency is the hardware's: this framework's entry, else any of the device's.
        std::optional<double> gemm;
        std::optional<double> overhead;
        for (const CalibrationEntry &e : calibration.parameters) {
            if (e.device != device)
                continue;
            if (e.gemmEfficiency && (!gemm || e.framework == fw))
                gemm = e.gemmEfficiency;
            if (e.framework == fw && e.stepOverhead)
                overhead = e.stepOverhead;
        }
        if (gemm) {
            base.deviceGemmEfficiency.erase(std::remove_if(base.deviceGemmEfficiency.begin(), base.deviceGemmEfficiency.end(),
                                                           [&](const auto &p) { return p.first == device; }),
                                            base.deviceGemmEfficiency.end());
            base.deviceGemmEfficiency.push_back({device, *gemm});
        }
        if (overhead && static_cast<int>(t) == major)
            base.stepOverhead = *overhead;
    }
    return base;
}

CostOptions calibratedOptions(CostOptions base, const std::optional<Calibration> &calibration, const Topology &topo)
{
    return calibration ? applyCalibration(std::move(base), *calibration, topo) : base;
}

SearchOptions calibratedSearchOptions(const SearchSettings &settings, const ModelProfile &model, const Topology &topo,
                                      const std::optional<Calibration> &calibration)
{
    SearchOptions o = searchOptionsFrom(settings, model);
    o.cost = calibratedOptions(o.cost, calibration, topo);
    // The precisions searched on this cluster; a listed one the devices lack leaves bf16
    // alone (the window offers only the supported ones; the CLI refuses with the reason).
    if (auto precisions = searchPrecisionsFor(settings, topo, o.cost.framework))
        o.precisions = std::move(precisions).value();
    return o;
}

ErrorBand modelErrorBand(Framework framework, Stack stack, int gpus, const std::optional<Calibration> &calibration)
{
    ErrorBand band = validationErrorBand(framework, stack, gpus);
    // A calibration of other frameworks says nothing of this one's times.
    const std::string fw = toString(framework);
    if (!calibration || std::none_of(calibration->parameters.begin(), calibration->parameters.end(),
                                     [&](const CalibrationEntry &e) { return e.framework == fw; }))
        return band;
    size_t fitted = 0;
    for (const CalibrationEntry &e : calibration->parameters)
        fitted += (e.gemmEfficiency ? 1 : 0) + (e.stepOverhead ? 1 : 0);
    const size_t n = calibration->runs.size();
    const std::string runs = "calibrated (" + std::to_string(n) + (n == 1 ? " run)" : " runs)");
    const std::vector<double> residuals = calibration->residuals();
    if (n > fitted)
        if (auto own = conformalBand(residuals, runs))
            return *own;
    ErrorBand scatter = withinSourceBand();
    if (n > fitted)
        for (const double r : residuals) {
            scatter.low = std::min(scatter.low, r);
            scatter.high = std::max(scatter.high, r);
        }
    scatter.basis = runs + ", " + scatter.basis;
    return scatter;
}

ErrorBand modelErrorBand(const CostOptions &cost, const std::optional<Calibration> &calibration, const Topology &topo)
{
    const int gpus = topo.deviceCount();
    if (!calibration)
        return validationErrorBand(cost.framework, cost.stack, gpus);
    CostOptions base;
    base.framework = cost.framework;
    base.stack = cost.stack;
    const CostOptions applied = applyCalibration(base, *calibration, topo);
    const bool gemm = applied.deviceGemmEfficiency != base.deviceGemmEfficiency;
    const bool overhead = applied.stepOverhead != base.stepOverhead;
    if (!gemm && !overhead)
        return validationErrorBand(cost.framework, cost.stack, gpus);  // fitted on other devices: nothing changed here
    const std::string fw = toString(cost.framework);
    if (std::any_of(calibration->parameters.begin(), calibration->parameters.end(),
                    [&](const CalibrationEntry &e) { return e.framework == fw; }))
        return modelErrorBand(cost.framework, cost.stack, gpus, calibration);
    // Only the hardware's GEMM efficiency, fitted under other frameworks.
    std::set<std::string> others;
    for (const CalibrationEntry &e : calibration->parameters)
        if (e.gemmEfficiency)
            others.insert(e.framework);
    std::string names;
    for (const std::string &o : others)
        names += (names.empty() ? "" : ", ") + o;
    const size_t n = calibration->runs.size();
    ErrorBand band = validationErrorBand(cost.framework, cost.stack, gpus);
    band.basis = fw + " " + toString(cost.stack) + ", " + scaleBucket(gpus) + " GPUs band; GEMM efficiency calibrated (" +
                 std::to_string(n) + (n == 1 ? " run" : " runs") + (names.empty() ? std::string() : " of " + names) + ")";
    return band;
}

namespace {

// The free parameters of a fit: one GEMM efficiency per device type, one step overhead per
// (major device type, framework) of the runs.
struct FitSpace {
    std::vector<std::string> gemmDevices;
    std::vector<std::pair<std::string, Framework>> overheadKeys;
    std::vector<double> gemmStart, overheadStart;  // the uncalibrated values
    size_t size() const { return gemmDevices.size() + overheadKeys.size(); }
};

CostOptions optionsFor(const MeasuredRun &run, const FitSpace &space, const std::vector<double> &theta,
                       const CostOptions &base)
{
    CostOptions o = base;
    o.framework = run.framework;
    for (size_t i = 0; i < space.gemmDevices.size(); ++i)
        o.deviceGemmEfficiency.push_back({space.gemmDevices[i], theta[i]});
    const std::string major = run.topology.deviceTypes[static_cast<size_t>(majorDeviceType(run.plan, run.topology))].name;
    for (size_t k = 0; k < space.overheadKeys.size(); ++k)
        if (space.overheadKeys[k].first == major && space.overheadKeys[k].second == run.framework)
            o.stepOverhead = theta[space.gemmDevices.size() + k];
    return o;
}

double clampParameter(const FitSpace &space, size_t i, double v)
{
    return i < space.gemmDevices.size() ? std::clamp(v, 0.05, 1.0) : std::clamp(v, -0.5, 3.0);
}

// Solves (A) x = b for a small dense system (Gaussian elimination with partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b)
{
    const size_t n = b.size();
    for (size_t c = 0; c < n; ++c) {
        size_t p = c;
        for (size_t r = c + 1; r < n; ++r)
            if (std::abs(a[r][c]) > std::abs(a[p][c]))
                p = r;
        std::swap(a[c], a[p]);
        std::swap(b[c], b[p]);
        if (std::abs(a[c][c]) < 1e-300)
            return std::vector<double>(n, 0.0);
        for (size_t r = c + 1; r < n; ++r) {
            const double f = a[r][c] / a[c][c];
            for (size_t k = c; k < n; ++k)
                a[r][k] -= f * a[c][k];
            b[r] -= f * b[c];
        }
    }
    std::vector<double> x(n);
    for (size_t c = n; c-- > 0;) {
        double s = b[c];
        for (size_t k = c + 1; k < n; ++k)
            s -= a[c][k] * x[k];
        x[c] = s / a[c][c];
    }
    return x;
}

// The free parameters of `runs`: one GEMM efficiency per device type the plans use, one step
// overhead per (major device type, framework).
FitSpace fitSpace(const std::vector<MeasuredRun> &runs, const CostOptions &base, bool fitGemm, bool fitOverhead)
{
    FitSpace space;
    std::set<std::string> gemmSeen;
    std::set<std::pair<std::string, Framework>> overheadSeen;
    for (const MeasuredRun &r : runs) {
        for (const StagePlan &st : r.plan.stages)
            for (const auto &replica : st.devices)
                for (int d : replica) {
                    const DeviceSpec &spec = r.topology.spec(d);
                    if (fitGemm && gemmSeen.insert(spec.name).second) {
                        space.gemmDevices.push_back(spec.name);
                        const double start = base.gemmEfficiencyFor(spec);
                        space.gemmStart.push_back(start > 0 ? start : classGemmEfficiency(spec));
                    }
                }
        if (fitOverhead) {
            const auto key = std::make_pair(
                r.topology.deviceTypes[static_cast<size_t>(majorDeviceType(r.plan, r.topology))].name, r.framework);
            if (overheadSeen.insert(key).second) {
                space.overheadKeys.push_back(key);
                space.overheadStart.push_back(base.stepOverhead);
            }
        }
    }
    return space;
}

// The share of a run's predicted step time that scales with the GEMM efficiency:
// -d ln T / d ln eta, by a forward difference of 0.1 % on every device type it uses (1 for a
// step of large GEMMs alone, 0 for one without compute).
double gemmShare(const MeasuredRun &run, const CostOptions &base)
{
    const FitSpace space = fitSpace({run}, base, true, false);
    CostOptions o = base;
    o.framework = run.framework;
    const double t0 = evaluate(run.plan, run.topology, run.model, optionsFor(run, space, space.gemmStart, o)).iterationTime;
    constexpr double kStep = 1e-3;
    std::vector<double> up = space.gemmStart;
    for (double &e : up)
        e *= 1 + kStep;
    const double t1 = evaluate(run.plan, run.topology, run.model, optionsFor(run, space, up, o)).iterationTime;
    if (!(t0 > 0) || !(t1 > 0) || !std::isfinite(t0) || !std::isfinite(t1))
        return 0.0;
    return -(std::log(t1) - std::log(t0)) / std::log1p(kStep);
}

std::string percentText(double fraction)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f %%", 100 * fraction);
    return buf;
}

} // namespace

Result<Calibration> fitCalibration(const std::vector<MeasuredRun> &runs, const std::vector<std::string> &fit,
                                   const CostOptions &base)
{
    return fitCalibration(runs, fit, base, FitLimits{});
}

namespace {

// "fitting N parameters (...) needs at least N runs" when there are fewer runs than parameters.
std::string tooFewRuns(const FitSpace &space, size_t runs)
{
    if (space.size() <= runs)
        return {};
    std::string names;
    for (const std::string &d : space.gemmDevices)
        names += (names.empty() ? "" : ", ") + ("gemm_efficiency of " + d);
    for (const auto &[d, f] : space.overheadKeys)
        names += (names.empty() ? "" : ", ") + ("step_overhead of " + d + "/" + toString(f));
    return "fitting " + std::to_string(space.size()) + " parameters (" + names + ") needs at least " +
           std::to_string(space.size()) + " runs, found " + std::to_string(runs) +
           "; add runs or fit fewer parameters with --fit";
}

// The fit: Levenberg-Marquardt on the log residuals of the runs' predicted step times.
class CalibrationFit {
public:
    CalibrationFit(const std::vector<MeasuredRun> &runs, const CostOptions &base, const FitLimits &limits,
                   const FitSpace &space)
        : m_runs(runs), m_base(base), m_limits(limits), m_space(space)
    {
    }

    // The bound before the work (issue 48), in the search's units: evaluations are states,
    // each state stands for about 8 us of the limit. Empty when within it.
    std::string budgetProblem()
    {
        double unitsPerPass = 0;  // devices + layers of every run: one evaluation of each
        for (const MeasuredRun &r : m_runs)
            unitsPerPass += r.topology.deviceCount() + r.model.layerCount();
        const double params = static_cast<double>(m_space.size());
        const double iterationsGuess = 10;
        m_passes = 1 + iterationsGuess * (params + 2);
        const double evaluations = m_passes * static_cast<double>(m_runs.size());
        const double seconds = m_passes * unitsPerPass * 5e-7 + iterationsGuess * 2 * params * params * params * 1e-9;
        const double maxStates = m_limits.maxStates > 0 ? m_limits.maxStates : 2e9;
        const double maxSeconds = maxStates * 8e-6;
        if (seconds > maxSeconds || evaluations > maxStates) {
            char buf[320];
            std::snprintf(buf, sizeof buf,
                          "fitting %zu parameters to %zu runs would take about %.2g s (%.2g plan evaluations), above "
                          "the limit of about %.2g s (%.2g evaluations): fewer runs or device types, --fit fewer "
                          "parameters, or --max-states to allow more",
                          m_space.size(), m_runs.size(), seconds, evaluations, maxSeconds, maxStates);
            return buf;
        }
        if (m_limits.estimate)
            m_limits.estimate(seconds);
        return {};
    }

    Result<Calibration> run()
    {
        using R = Result<Calibration>;
        // Parameters in one vector: the GEMM efficiencies, then the step overheads.
        std::vector<double> theta = m_space.gemmStart;
        theta.insert(theta.end(), m_space.overheadStart.begin(), m_space.overheadStart.end());
        std::vector<double> before, now;
        // The starting point without any fitted parameter: the uncalibrated model.
        if (const std::string e = predict(theta, before); !e.empty())
            return R::failure(e);
        if (const std::string e = outOfReach(before, "the uncalibrated cost model predicts"); !e.empty())
            return R::failure(e);
        now = before;
        if (const std::string e = minimise(theta, now); !e.empty())
            return R::failure(e);
        // What calibrate writes, --calibration reads: the loader refuses the same factor.
        if (const std::string e = outOfReach(now, "the calibrated cost model gives"); !e.empty())
            return R::failure(e);
        return calibration(theta, before, now);
    }

private:
    const std::vector<MeasuredRun> &m_runs;
    const CostOptions &m_base;
    const FitLimits &m_limits;
    const FitSpace &m_space;
    double m_passes = 0;
    double m_passesDone = 0;

    // Each run's predicted step time under parameters `theta`; a message when one has none.
    std::string predict(const std::vector<double> &theta, std::vector<double> &out)
    {
        if (m_limits.progress)
            m_limits.progress(std::min(0.99, ++m_passesDone / m_passes));
        out.resize(m_runs.size());
        for (size_t i = 0; i < m_runs.size(); ++i) {
            const MeasuredRun &r = m_runs[i];
            const Report rep = evaluate(r.plan, r.topology, r.model, optionsFor(r, m_space, theta, m_base));
            if (!std::isfinite(rep.iterationTime) || rep.iterationTime <= 0)
                return "run '" + r.name + "' cannot be evaluated: " +
                       (rep.reasons.empty() ? std::string("no finite time") : rep.reasons.front());
            out[i] = rep.iterationTime;
        }
        return {};
    }

    // The sum of squared log residuals.
    double cost(const std::vector<double> &t) const
    {
        double s = 0;
        for (size_t i = 0; i < m_runs.size(); ++i) {
            const double r = std::log(t[i] / m_runs[i].measuredSeconds);
            s += r * r;
        }
        return s;
    }

    // A measurement the parameters cannot reach would pin them at their bounds and report
    // errors of thousands of per cent as a calibration (issue 48): refused, naming the run.
    std::string outOfReach(const std::vector<double> &times, const char *what) const
    {
        for (size_t i = 0; i < m_runs.size(); ++i) {
            const double factor = m_runs[i].measuredSeconds / times[i];
            if (factor > limits::maxCalibrationFactor || factor < 1 / limits::maxCalibrationFactor) {
                char buf[160];
                std::snprintf(buf, sizeof buf, "measured %.6g s, %s %.6g s (a factor of %.3g)",
                              m_runs[i].measuredSeconds, what, times[i], factor >= 1 ? factor : 1 / factor);
                return "run '" + m_runs[i].name + "': " + buf + ", more than " +
                       std::to_string(static_cast<int>(limits::maxCalibrationFactor)) +
                       ": beyond what a calibration can fit (GEMM efficiency 0.05..1, step overhead -0.5..3); check "
                       "the run's layout, batch, sequence and units";
            }
        }
        return {};
    }

    // Jacobian of the log residuals by forward differences, at theta (predictions `now`).
    std::string jacobian(const std::vector<double> &theta, const std::vector<double> &now,
                         std::vector<std::vector<double>> &jac)
    {
        const size_t n = m_space.size();
        jac.assign(m_runs.size(), std::vector<double>(n));
        for (size_t k = 0; k < n; ++k) {
            std::vector<double> t2 = theta, p2;
            const double h = std::max(1e-6, 1e-5 * std::abs(theta[k]));
            t2[k] += h;
            if (std::string e = predict(t2, p2); !e.empty())
                return e;
            for (size_t i = 0; i < m_runs.size(); ++i)
                jac[i][k] = (std::log(p2[i]) - std::log(now[i])) / h;
        }
        return {};
    }

    // Levenberg-Marquardt from theta (predictions `now`): both end at the fit.
    std::string minimise(std::vector<double> &theta, std::vector<double> &now)
    {
        double lambda = 1e-3;
        const size_t n = m_space.size();
        for (int iter = 0; iter < 100; ++iter) {
            std::vector<std::vector<double>> jac;
            if (std::string e = jacobian(theta, now, jac); !e.empty())
                return e;
            std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
            std::vector<double> g(n, 0.0);
            for (size_t i = 0; i < m_runs.size(); ++i) {
                const double r = std::log(now[i] / m_runs[i].measuredSeconds);
                for (size_t p = 0; p < n; ++p) {
                    g[p] -= jac[i][p] * r;
                    for (size_t q = 0; q < n; ++q)
                        a[p][q] += jac[i][p] * jac[i][q];
                }
            }
            bool improved = false;
            double step = 0;
            for (int tries = 0; tries < 20 && !improved; ++tries) {
                std::vector<std::vector<double>> damped = a;
                for (size_t p = 0; p < n; ++p)
                    damped[p][p] += lambda * std::max(a[p][p], 1e-12);
                const std::vector<double> delta = solve(damped, g);
                std::vector<double> t2(n), p2;
                step = 0;
                for (size_t p = 0; p < n; ++p) {
                    t2[p] = clampParameter(m_space, p, theta[p] + delta[p]);
                    step = std::max(step, std::abs(t2[p] - theta[p]));
                }
                if (std::string e = predict(t2, p2); !e.empty())
                    return e;
                if (cost(p2) <= cost(now)) {
                    theta = t2;
                    now = p2;
                    lambda = std::max(lambda / 10, 1e-9);
                    improved = true;
                } else {
                    lambda *= 10;
                }
            }
            if (!improved || step < 1e-10)
                break;
        }
        return {};
    }

    // The fitted parameters per (device, framework) and each run's error before and after.
    Calibration calibration(const std::vector<double> &theta, const std::vector<double> &before,
                            const std::vector<double> &now) const
    {
        Calibration c;
        std::map<std::pair<std::string, std::string>, CalibrationEntry> entries;
        auto entryOf = [&](const std::string &device, const std::string &fw) -> CalibrationEntry & {
            CalibrationEntry &e = entries[{device, fw}];
            e.device = device;
            e.framework = fw;
            return e;
        };
        for (const MeasuredRun &r : m_runs)
            for (size_t i = 0; i < m_space.gemmDevices.size(); ++i)
                for (const DeviceSpec &spec : r.topology.deviceTypes)
                    if (spec.name == m_space.gemmDevices[i])
                        entryOf(spec.name, toString(r.framework)).gemmEfficiency = theta[i];
        for (size_t k = 0; k < m_space.overheadKeys.size(); ++k)
            entryOf(m_space.overheadKeys[k].first, toString(m_space.overheadKeys[k].second)).stepOverhead =
                theta[m_space.gemmDevices.size() + k];
        for (auto &[key, e] : entries)
            c.parameters.push_back(e);
        for (size_t i = 0; i < m_runs.size(); ++i)
            c.runs.push_back({m_runs[i].name, m_runs[i].measuredSeconds, before[i], now[i]});
        return c;
    }
};

} // namespace

Result<Calibration> fitCalibration(const std::vector<MeasuredRun> &runs, const std::vector<std::string> &fit,
                                   const CostOptions &base, const FitLimits &limits)
{
    using R = Result<Calibration>;
    if (runs.empty())
        return R::failure("no runs to calibrate on");
    for (const std::string &f : fit)
        if (std::find(calibrationParameterNames().begin(), calibrationParameterNames().end(), f) ==
            calibrationParameterNames().end())
            return R::failure("unknown parameter '" + f + "' (fit gemm_efficiency, step_overhead)");
    const bool fitGemm = std::find(fit.begin(), fit.end(), "gemm_efficiency") != fit.end();
    const bool fitOverhead = std::find(fit.begin(), fit.end(), "step_overhead") != fit.end();
    const FitSpace space = fitSpace(runs, base, fitGemm, fitOverhead);
    if (space.size() == 0)
        return R::failure("nothing to fit: choose gemm_efficiency and/or step_overhead");
    if (const std::string e = tooFewRuns(space, runs.size()); !e.empty())
        return R::failure(e);
    CalibrationFit fitter(runs, base, limits, space);
    if (const std::string e = fitter.budgetProblem(); !e.empty())
        return R::failure(e);
    return fitter.run();
}

Result<std::vector<MeasuredRun>> measuredRunsFromJson(const Json &j, const std::string &origin,
                                                      const std::string &folder)
{
    using R = Result<std::vector<MeasuredRun>>;
    try {
        requireObject(j, "");
        if (getString(j, "format", "") != "nest-runs")
            throw JsonError("format", "expected \"nest-runs\", found \"" + getString(j, "format", "") + "\"");
        requireKnownKeys(j, "", {"format", "version", "comment", "runs"});
        const Json &rows = requireKey(j, "runs", "");
        requireArray(rows, "runs");
        std::vector<MeasuredRun> runs;
        std::set<std::string> names;
        for (size_t i = 0; i < rows.size(); ++i) {
            runs.push_back(runFromJson(rows[i], childPath("runs", i), fs::path(folder)));
            if (!names.insert(runs.back().name).second)
                throw JsonError(childPath(childPath("runs", i), "name"), "\"" + runs.back().name + "\" is used twice");
        }
        if (runs.empty())
            throw JsonError("runs", "lists no run");
        return runs;
    } catch (const JsonError &e) {
        return R::failure(formatError(origin, e.path(), e.reason()));
    }
}

Result<std::vector<MeasuredRun>> loadMeasuredRuns(const std::string &file)
{
    auto j = readJsonFile(file);
    if (!j)
        return Result<std::vector<MeasuredRun>>::failure(j.error());
    return measuredRunsFromJson(*j, file, fs::path(file).parent_path().string());
}

Result<FitChoice> identifiedFitParameters(const std::vector<MeasuredRun> &runs, const CostOptions &base)
{
    using R = Result<FitChoice>;
    if (runs.empty())
        return R::failure("no runs to calibrate on");
    const size_t n = runs.size();
    const FitSpace gemm = fitSpace(runs, base, true, false), overhead = fitSpace(runs, base, false, true);
    FitChoice choice;
    if (gemm.size() + overhead.size() <= n) {
        choice.parameters = calibrationParameterNames();
        return choice;
    }
    // Fewer runs than the default parameters: a measured step time fixes one number per run.
    // It identifies the GEMM efficiency when the GEMMs are most of the step (the time then
    // moves with 1 / eta); otherwise the step overhead, which scales every micro-batch's
    // compute and communication alike. Telling the two apart needs runs whose compute /
    // communication mix differs.
    double share = 0;
    for (const MeasuredRun &r : runs)
        share += gemmShare(r, base);
    share /= static_cast<double>(n);
    const bool computeBound = share >= 0.5;
    const std::string runsText = std::to_string(n) + (n == 1 ? " run identifies " : " runs identify ");
    const std::string shareText = "the GEMMs are " + percentText(share) + " of the predicted step time";
    if ((computeBound || overhead.size() > n) && gemm.size() <= n) {
        choice.parameters = {"gemm_efficiency"};
        choice.reason = runsText + std::to_string(gemm.size()) +
                        " parameter(s), not the default " + std::to_string(gemm.size() + overhead.size()) +
                        ": fitted gemm_efficiency alone, since " + shareText +
                        (computeBound ? " (compute-bound: the time moves with the GEMM efficiency)"
                                      : " (the step overhead would need more runs)") +
                        "; step_overhead is kept at its default and needs runs that differ in compute / "
                        "communication mix (--fit names the parameters)";
        return choice;
    }
    if (overhead.size() <= n) {
        choice.parameters = {"step_overhead"};
        choice.reason = runsText + std::to_string(overhead.size()) +
                        " parameter(s), not the default " + std::to_string(gemm.size() + overhead.size()) +
                        ": fitted step_overhead alone, since only " + shareText +
                        " (not compute-bound: the overhead scales its compute and communication alike); "
                        "gemm_efficiency is kept at its default and needs compute-bound runs (--fit names the "
                        "parameters)";
        return choice;
    }
    return R::failure("the runs use " + std::to_string(gemm.size()) + " device types: fitting even one GEMM "
                      "efficiency per device type needs at least " + std::to_string(gemm.size()) + " runs, found " +
                      std::to_string(n));
}

} // namespace nest
