#include "PlanRunner.h"

#include "ModelIO.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include <atomic>
#include <chrono>
#include <stdexcept>

namespace nest::ui {

// Shared by the GUI thread and the worker.
struct PlanRunner::Job {
    quint64 id = 0;
    quint64 revision = 0;
    CancelToken cancel;
    std::string error;                 // written by the worker before it returns
    std::atomic<long long> lastReportNs{0};
};

namespace {

long long nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The model of a workspace, or an exception with the reason.
ModelProfile modelOf(const Workspace &inputs)
{
    Result<ModelProfile> m = workspaceModel(inputs, "workspace");
    if (!m)
        throw std::runtime_error(m.error());
    return std::move(m).value();
}

} // namespace

PlanRunner::PlanRunner(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<nest::ui::PlanSnapshotPtr>();
}

PlanRunner::~PlanRunner()
{
    if (m_job)
        m_job->cancel.cancel();
    waitForIdle();
}

void PlanRunner::waitForIdle()
{
    for (QFutureWatcher<PlanSnapshotPtr> *w : m_watchers)
        w->waitForFinished();
}

quint64 PlanRunner::launch(std::function<PlanSnapshotPtr(Job &)> work, quint64 revision)
{
    cancel();   // the latest request wins
    auto job = std::make_shared<Job>();
    job->id = m_nextId++;
    job->revision = revision;
    m_job = job;
    m_current = job->id;
    auto *watcher = new QFutureWatcher<PlanSnapshotPtr>(this);
    m_watchers.append(watcher);
    connect(watcher, &QFutureWatcher<PlanSnapshotPtr>::finished, this, [this, job, watcher] { deliver(job, watcher); });
    watcher->setFuture(QtConcurrent::run([job, work = std::move(work)]() -> PlanSnapshotPtr {
        try {
            return work(*job);
        } catch (const std::exception &e) {
            job->error = e.what();
        } catch (...) {
            job->error = "internal error";
        }
        return nullptr;
    }));
    emit started(job->id);
    return job->id;
}

void PlanRunner::deliver(const std::shared_ptr<Job> &job, QFutureWatcher<PlanSnapshotPtr> *watcher)
{
    const PlanSnapshotPtr result = watcher->result();
    m_watchers.removeOne(watcher);
    watcher->deleteLater();
    if (job->id != m_current)
        return;   // cancelled or superseded: already reported
    m_current = 0;
    m_job.reset();
    if (!result || !job->error.empty()) {
        emit failed(job->id, QString::fromStdString(job->error.empty() ? std::string("no result") : job->error));
        return;
    }
    emit finished(job->id, job->revision, result);
}

void PlanRunner::cancel()
{
    if (!m_job)
        return;
    m_job->cancel.cancel();
    const quint64 id = m_current;
    m_job.reset();
    m_current = 0;
    emit cancelled(id);
}

quint64 PlanRunner::plan(const Workspace &inputs, quint64 revision, const QString &label)
{
    const std::string name = label.toStdString();
    QPointer<PlanRunner> self(this);
    return launch([inputs, name, self](Job &job) -> PlanSnapshotPtr {
        const ModelProfile model = modelOf(inputs);
        const std::unique_ptr<Planner> planner = makePlanner(inputs.search.planner);
        if (!planner)
            throw std::runtime_error("unknown planner '" + inputs.search.planner + "'");
        const SearchOptions options = searchOptionsFrom(inputs.search, model);
        // Progress at most every 15 ms, as queued calls into the GUI thread.
        const ProgressFn progress = [&job, self](double fraction, double best) {
            const long long now = nowNs();
            if (fraction < 1.0 && now - job.lastReportNs.load() < 15'000'000)
                return;
            job.lastReportNs.store(now);
            const quint64 id = job.id;
            QMetaObject::invokeMethod(self, [self, id, fraction, best] {
                if (self && self->m_current == id)
                    emit self->progress(id, fraction, best);
            }, Qt::QueuedConnection);
        };
        const PlanResult r = planner->plan(inputs.cluster, model, options, progress, job.cancel);
        if (r.cancelled || job.cancel.cancelled())
            return nullptr;
        if (!r.found)  // a refusal before work (SearchEstimate.h) is said as such, at once
            throw std::runtime_error((r.message.rfind("search would", 0) == 0 ? "search refused: " : "no plan found: ") +
                                     r.message);
        auto snap = std::make_shared<PlanSnapshot>();
        snap->jobId = job.id;
        snap->label = name;
        snap->planner = planner->name();
        snap->topology = inputs.cluster;
        snap->model = model;
        snap->modelSource = inputs.model;
        snap->settings = inputs.search;
        snap->analysis = analyzePlan(r.plan, inputs.cluster, model, options.cost);
        snap->searched = true;
        snap->stats = r.stats;
        snap->objective = r.objective;
        snap->verified = r.verified;
        return snap;
    }, revision);
}

quint64 PlanRunner::evaluate(const Workspace &inputs, const Plan &plan, quint64 revision, const QString &label,
                             const QString &planner)
{
    const std::string name = label.toStdString();
    const std::string plannerName = planner.toStdString();
    return launch([inputs, plan, name, plannerName](Job &job) -> PlanSnapshotPtr {
        // The model with the plan's own batch and sequence length (as `nest-cli evaluate
        // --plan` builds it), so that the plan re-evaluates to the same time.
        ModelProfile model = modelOf(inputs);
        if (model.seqLength != plan.seqLength || model.globalBatch != plan.globalBatch) {
            ModelOptions mo;
            mo.seqLength = plan.seqLength;
            mo.globalBatch = plan.globalBatch;
            Result<ModelProfile> m = modelFromJson(inputs.model, "workspace", mo);
            if (!m)
                throw std::runtime_error(m.error());
            model = std::move(m).value();
        }
        const SearchOptions options = searchOptionsFrom(inputs.search, model);
        auto snap = std::make_shared<PlanSnapshot>();
        snap->jobId = job.id;
        snap->label = name;
        snap->planner = plannerName;
        snap->topology = inputs.cluster;
        snap->model = model;
        snap->modelSource = inputs.model;
        snap->settings = inputs.search;
        snap->analysis = analyzePlan(plan, inputs.cluster, model, options.cost);
        return job.cancel.cancelled() ? nullptr : PlanSnapshotPtr(std::move(snap));
    }, revision);
}

} // namespace nest::ui
