#include "BaselineRunner.h"

#include "PlannerComparison.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>

namespace nest::ui {

struct BaselineRunner::Job {
    CancelToken cancel;
    QList<PlanSnapshotPtr> plans;
    QStringList failures;
    std::string error;
    std::mutex reportMutex;
    std::vector<long long> lastReportNs;
};

namespace {

long long nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

BaselineRunner::BaselineRunner(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<nest::ui::PlanSnapshotPtr>();
}

BaselineRunner::~BaselineRunner()
{
    if (m_job)
        m_job->cancel.cancel();
    waitForIdle();
}

QStringList BaselineRunner::defaultPlanners()
{
    return {QStringLiteral("nest"), QStringLiteral("flat"), QStringLiteral("megatron"), QStringLiteral("mcmc")};
}

void BaselineRunner::waitForIdle()
{
    for (QFutureWatcher<void> *w : m_watchers)
        w->waitForFinished();
}

void BaselineRunner::cancel()
{
    if (!m_job)
        return;
    m_job->cancel.cancel();
    m_job.reset();
    emit cancelled();
}

void BaselineRunner::start(const Workspace &inputs, const QStringList &planners, const QString &stamp)
{
    cancel();
    auto job = std::make_shared<Job>();
    job->lastReportNs.assign(static_cast<size_t>(planners.size()), 0);
    m_job = job;
    m_planners = planners;
    std::vector<std::string> names;
    for (const QString &p : planners)
        names.push_back(p.toStdString());
    const std::string suffix = stamp.isEmpty() ? std::string() : " " + stamp.toStdString();
    QPointer<BaselineRunner> self(this);

    auto *watcher = new QFutureWatcher<void>(this);
    m_watchers.append(watcher);
    connect(watcher, &QFutureWatcher<void>::finished, this, [this, job, watcher] {
        m_watchers.removeOne(watcher);
        watcher->deleteLater();
        if (job != m_job)
            return;   // cancelled or superseded: already reported
        m_job.reset();
        if (!job->error.empty())
            emit failed(QString::fromStdString(job->error));
        else
            emit finished(job->plans, job->failures);
    });
    watcher->setFuture(QtConcurrent::run([job, inputs, names, suffix, self] {
        try {
            Result<ModelProfile> m = workspaceModel(inputs, "workspace");
            if (!m)
                throw std::runtime_error(m.error());
            const ModelProfile model = std::move(m).value();
            const SearchOptions options = searchOptionsFrom(inputs.search, model);
            // Progress at most every 15 ms per planner, queued into the GUI thread.
            const ComparisonProgressFn progress = [job, self](int index, double fraction, double best) {
                {
                    std::lock_guard lock(job->reportMutex);
                    const long long now = nowNs();
                    long long &last = job->lastReportNs[static_cast<size_t>(index)];
                    if (fraction < 1.0 && now - last < 15'000'000)
                        return;
                    last = now;
                }
                QMetaObject::invokeMethod(self, [self, job, index, fraction, best] {
                    if (self && self->m_job == job)
                        emit self->progress(index, fraction, best);
                }, Qt::QueuedConnection);
            };
            // At most two planners at once: the window stays responsive on small machines.
            const std::vector<PlannerRun> runs = runPlanners(inputs.cluster, model, options, names, 2, progress, job->cancel);
            if (job->cancel.cancelled())
                return;
            for (const PlannerRun &run : runs) {
                const PlanResult &r = run.result;
                if (!r.found) {
                    job->failures << QString::fromStdString(run.planner + ": " + (r.message.empty() ? "no plan found" : r.message));
                    continue;
                }
                auto snap = std::make_shared<PlanSnapshot>();
                snap->label = run.planner + suffix;
                snap->planner = run.planner;
                snap->topology = inputs.cluster;
                snap->model = model;
                snap->modelSource = inputs.model;
                snap->settings = inputs.search;
                snap->settings.planner = run.planner;
                snap->analysis = analyzePlan(r.plan, inputs.cluster, model, options.cost);
                snap->searched = true;
                snap->stats = r.stats;
                snap->objective = r.objective;
                snap->verified = r.verified;
                job->plans << PlanSnapshotPtr(std::move(snap));
            }
        } catch (const std::exception &e) {
            job->error = e.what();
        } catch (...) {
            job->error = "internal error";
        }
    }));
    emit started(planners);
}

} // namespace nest::ui
