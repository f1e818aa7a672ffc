#include "PlanRunner.h"

#include "PrecisionSearch.h"

#include "Calibration.h"
#include "FrameworkSearch.h"
#include "PlanningSession.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace nest::ui {

namespace {

// The model of a workspace, or an exception with the reason.
ModelProfile modelOf(const Workspace &inputs)
{
    Result<ModelProfile> m = workspaceModel(inputs, "workspace");
    if (!m)
        throw std::runtime_error(m.error());
    return std::move(m).value();
}

// A snapshot of `plan` on `inputs`' cluster with `model`, analysed (evaluated, simulated)
// with `options`' cost model (analysedSnapshot), from job `job`: what every job delivers;
// the caller adds the search's part.
std::shared_ptr<PlanSnapshot> jobSnapshot(quint64 job, const std::string &label, const std::string &planner,
                                               const Workspace &inputs, const ModelProfile &model,
                                               const SearchOptions &options, const Plan &plan)
{
    auto snap = analysedSnapshot(plan, label, planner, inputs.cluster, model, inputs.model, inputs.search,
                                 inputs.calibration, options.cost);
    snap->jobId = job;
    return snap;
}

} // namespace

namespace {

// "Plan for: F" (issue 47): the search restricted to what that framework runs as it is.
PlanResult frameworkSearch(const Workspace &inputs, const ModelProfile &model, ExportFormat target,
                           const SearchOptions &options, const JobTracker::Job &job)
{
    std::optional<ModelConfig> config;
    if (auto c = inputs.model.config("model"))
        config = *c;
    const TargetResult t = searchForFramework(inputs.cluster, model, target, options, config, job.cancelToken());
    PlanResult r;
    r.found = t.found;
    r.message = t.message;
    r.cancelled = job.cancelled();
    r.plan = t.plan;
    r.report = t.report;
    r.objective = t.report.iterationTime;
    r.verified = true;
    return r;
}

// The snapshots of a search's plans: the best, with the next K - 1 (--top K) as its
// alternatives, each with its rank and its difference to the best; null when the job was
// cancelled meanwhile.
std::shared_ptr<PlanSnapshot> rankedSnapshots(const JobTracker::Job &job, const std::string &name,
                                              const std::string &plannerName, const Workspace &inputs,
                                              const ModelProfile &model, const SearchOptions &options,
                                              const PlanResult &r, bool replanned)
{
    auto snapshotOf = [&](const Plan &plan, const std::string &title, double objective, bool verified) {
        std::shared_ptr<PlanSnapshot> snap = jobSnapshot(job.id(), title, plannerName, inputs, model, options, plan);
        snap->searched = true;
        snap->stats = r.stats;
        snap->objective = objective;
        snap->verified = verified;
        snap->replanned = replanned;
        return snap;
    };
    std::shared_ptr<PlanSnapshot> best = snapshotOf(r.plan, name, r.objective, r.verified);
    if (r.top.size() > 1) {
        const int size = static_cast<int>(r.top.size());
        best->rank = 1;
        best->groupSize = size;
        for (int i = 1; i < size; ++i) {
            if (job.cancelled())
                return nullptr;
            const RankedPlan &t = r.top[static_cast<size_t>(i)];
            std::shared_ptr<PlanSnapshot> alt =
                snapshotOf(t.plan, name + " #" + std::to_string(i + 1), t.objective, t.verified);
            alt->rank = i + 1;
            alt->groupSize = size;
            alt->deltaPercent = r.objective > 0 ? 100.0 * (t.objective - r.objective) / r.objective : 0.0;
            best->alternatives.push_back(std::move(alt));
        }
    }
    return best;
}

} // namespace

struct PlanRunner::Session {
    std::mutex mutex;
    PlanningSession planning;
};

PlanRunner::PlanRunner(QObject *parent)
    : QObject(parent)
    , m_session(std::make_shared<Session>())
{
    qRegisterMetaType<nest::ui::PlanSnapshotPtr>();
    connect(&m_jobs, &JobTracker::failed, this, &PlanRunner::failed);
    connect(&m_jobs, &JobTracker::cancelled, this, &PlanRunner::cancelled);
}

void PlanRunner::waitForIdle()
{
    m_jobs.waitForIdle();
}

quint64 PlanRunner::launch(std::function<PlanSnapshotPtr(JobTracker::Job &)> work, quint64 revision)
{
    const quint64 id = m_jobs.start(std::move(work), [this, revision](quint64 job, const PlanSnapshotPtr &result) {
        if (!result)
            emit failed(job, QStringLiteral("no result"));
        else
            emit finished(job, revision, result);
    });
    emit started(id);
    return id;
}

void PlanRunner::cancel()
{
    m_jobs.cancel();
}

quint64 PlanRunner::plan(const Workspace &inputs, quint64 revision, const QString &label)
{
    const std::string name = label.toStdString();
    return launch([this, inputs, name, session = m_session](JobTracker::Job &job) -> PlanSnapshotPtr {
        const ModelProfile model = modelOf(inputs);
        const std::unique_ptr<Planner> planner = makePlanner(inputs.search.planner);
        if (!planner)
            throw std::runtime_error("unknown planner '" + inputs.search.planner + "'");
        SearchOptions options = calibratedSearchOptions(inputs.search, model, inputs.cluster, inputs.calibration);
        // A second search where a core is left for the GUI thread (docs/planner.md, "Outer
        // points in parallel"): the same plan sooner. On two cores two searches starved the
        // event loop (eventLoopStaysResponsive: stalls of 45-118 ms, 54-69 ms with one).
        options.threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()) - 1, 1, 2);
        // Throttled, queued into the GUI thread; dropped once the job is.
        const ProgressFn progress = [this, &job](double fraction, double best) {
            job.reportProgress(0, fraction, [this, id = job.id(), fraction, best] { emit this->progress(id, fraction, best); });
        };
        PlanResult r;
        bool replanned = false;
        // One precision: the live session (it reuses the previous search); several: one
        // search each, the best kept (PrecisionSearch.h).
        if (options.precisions.size() == 1) {
            options.cost.precision = options.precisions.front();
            options.precisions.clear();
        }
        if (const auto target = inputs.search.target.empty() ? std::nullopt : targetFromString(inputs.search.target)) {
            r = frameworkSearch(inputs, model, *target, options, job);
        } else if (planner->name() == "nest" && options.precisions.empty()) {
            const std::lock_guard<std::mutex> lock(session->mutex);
            if (job.cancelled())
                return nullptr;
            r = session->planning.replan(inputs.cluster, model, options, progress, job.cancelToken());
            const PlanningSession::Reuse &reuse = session->planning.lastReuse();
            replanned = reuse.sameInputs || reuse.boundedByPrevious;
            if (reuse.sameInputs)
                r.stats.wallSeconds = reuse.seconds;  // this answer's time, not the search it repeats
        } else {
            r = planPrecisions(*planner, inputs.cluster, model, options, progress, job.cancelToken());
        }
        if (r.cancelled || job.cancelled())
            return nullptr;
        if (!r.found)  // a refusal before work (SearchEstimate.h) is said as such, at once
            throw std::runtime_error((r.message.rfind("search would", 0) == 0 ? "search refused: " : "no plan found: ") +
                                     r.message);
        return rankedSnapshots(job, name, planner->name(), inputs, model, options, r, replanned);
    }, revision);
}

quint64 PlanRunner::evaluate(const Workspace &inputs, const Plan &plan, quint64 revision, const QString &label,
                             const QString &planner)
{
    const std::string name = label.toStdString();
    const std::string plannerName = planner.toStdString();
    return launch([inputs, plan, name, plannerName](JobTracker::Job &job) -> PlanSnapshotPtr {
        // The model with the plan's own batch and sequence length (as `nest-cli evaluate
        // --plan` builds it), so that the plan re-evaluates to the same time.
        ModelProfile model = modelOf(inputs);
        if (model.seqLength != plan.seqLength || model.globalBatch != plan.globalBatch) {
            ModelOptions mo;
            mo.seqLength = plan.seqLength;
            mo.globalBatch = plan.globalBatch;
            Result<ModelProfile> m = inputs.model.profile("workspace", mo);   // typed: no JSON read
            if (!m)
                throw std::runtime_error(m.error());
            model = std::move(m).value();
        }
        const SearchOptions options = calibratedSearchOptions(inputs.search, model, inputs.cluster, inputs.calibration);
        PlanSnapshotPtr snap = jobSnapshot(job.id(), name, plannerName, inputs, model, options, plan);
        return job.cancelled() ? nullptr : snap;
    }, revision);
}

} // namespace nest::ui
