#include "SweepRunner.h"

#include "PlannerRegistry.h"
#include "SearchSettings.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include <atomic>
#include <chrono>
#include <stdexcept>

namespace nest::ui {

// Shared by the GUI thread and the worker.
struct SweepRunner::Job {
    CancelToken cancel;
    std::string error;                       // written by the worker before it returns
    std::atomic<long long> lastReportNs{0};
    int lastPoint = -1;                      // a new point is reported at once
};

namespace {

long long nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Empty when the request can run on `cluster`, else why not.
std::string requestProblem(const Topology &cluster, const SweepParameter &p, const std::vector<double> &values,
                           const std::vector<std::string> &planners)
{
    if (values.empty())
        return "the sweep has no values";
    if (planners.empty())
        return "no planner chosen";
    for (const std::string &name : planners)
        if (!makePlanner(name))
            return "unknown planner '" + name + "' (known: " + plannerNameList() + ")";
    for (double v : values)
        if (const Result<Topology> t = withParameter(cluster, p, v); !t)
            return t.error();
    return {};
}

} // namespace

SweepRunner::SweepRunner(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<nest::SweepResult>();
}

SweepRunner::~SweepRunner()
{
    if (m_job)
        m_job->cancel.cancel();
    waitForIdle();
}

void SweepRunner::waitForIdle()
{
    for (QFutureWatcher<SweepResult> *w : m_watchers)
        w->waitForFinished();
}

bool SweepRunner::start(const Workspace &inputs, const SweepRequest &request)
{
    return start(inputs, request.parameter, request.values, request.planners);
}

bool SweepRunner::start(const Workspace &inputs, const SweepParameter &p, const std::vector<double> &values,
                        const std::vector<std::string> &planners)
{
    if (const std::string why = requestProblem(inputs.cluster, p, values, planners); !why.empty()) {
        emit failed(QString::fromStdString("sweep: " + why));
        return false;
    }
    cancel();  // the latest request wins; the old job's result is dropped in deliver()
    auto job = std::make_shared<Job>();
    m_job = job;
    m_base = inputs.cluster;
    m_request = {p, values, planners};
    auto *watcher = new QFutureWatcher<SweepResult>(this);
    m_watchers.append(watcher);
    connect(watcher, &QFutureWatcher<SweepResult>::finished, this, [this, job, watcher] { deliver(job, watcher); });
    QPointer<SweepRunner> self(this);
    const int threads = m_threads;
    watcher->setFuture(QtConcurrent::run([job, self, inputs, p, values, planners, threads]() -> SweepResult {
        try {
            Result<ModelProfile> model = workspaceModel(inputs, "workspace");
            if (!model)
                throw std::runtime_error(model.error());
            const SearchOptions options = searchOptionsFrom(inputs.search, *model);
            Job *raw = job.get();
            // Calls come one at a time (runSweep serialises them): plain state is enough.
            const SweepProgressFn progress = [raw, self](int point, int planner, double fraction) {
                const long long now = nowNs();
                const bool newPoint = point != raw->lastPoint;
                if (!newPoint && fraction < 1.0 && now - raw->lastReportNs.load() < 15'000'000)
                    return;
                raw->lastPoint = point;
                raw->lastReportNs.store(now);
                QMetaObject::invokeMethod(self, [self, raw, point, planner, fraction] {
                    if (self && self->m_job.get() == raw)
                        emit self->progress(point, planner, fraction);
                }, Qt::QueuedConnection);
            };
            return runSweep(inputs.cluster, *model, options, p, values, planners, threads, progress, job->cancel);
        } catch (const std::exception &e) {
            job->error = e.what();
        } catch (...) {
            job->error = "internal error";
        }
        return SweepResult{};
    }));
    emit started();
    return true;
}

void SweepRunner::deliver(const std::shared_ptr<Job> &job, QFutureWatcher<SweepResult> *watcher)
{
    const SweepResult result = watcher->result();
    m_watchers.removeOne(watcher);
    watcher->deleteLater();
    if (job != m_job)
        return;  // superseded by a newer start()
    m_job.reset();
    if (!job->error.empty()) {
        emit failed(QString::fromStdString("sweep: " + job->error));
        return;
    }
    emit finished(result);
}

void SweepRunner::cancel()
{
    if (m_job)
        m_job->cancel.cancel();
}

} // namespace nest::ui
