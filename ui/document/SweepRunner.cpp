#include "SweepRunner.h"

#include "Calibration.h"
#include "PlannerRegistry.h"
#include "SearchSettings.h"

#include <stdexcept>

namespace nest::ui {

namespace {

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
    connect(&m_jobs, &JobTracker::failed, this,
            [this](quint64, const QString &message) { emit failed(QStringLiteral("sweep: ") + message); });
}

void SweepRunner::waitForIdle()
{
    m_jobs.waitForIdle();
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
    m_base = inputs.cluster;
    m_request = {p, values, planners};
    const int threads = m_threads;
    // The latest request wins: the job running is superseded and its result dropped.
    m_jobs.start(
        [this, inputs, p, values, planners, threads](JobTracker::Job &job) -> SweepResult {
            Result<ModelProfile> model = workspaceModel(inputs, "workspace");
            if (!model)
                throw std::runtime_error(model.error());
            const SearchOptions options = calibratedSearchOptions(inputs.search, *model, inputs.cluster, inputs.calibration);
            // Calls come one at a time (runSweep serialises them): plain state is enough.
            int lastPoint = -1;   // a new point is reported at once
            const SweepProgressFn progress = [this, &job, &lastPoint](int point, int planner, double fraction) {
                const bool newPoint = point != lastPoint;
                lastPoint = point;
                job.reportProgress(0, fraction, [this, point, planner, fraction] { emit this->progress(point, planner, fraction); },
                                   newPoint);
            };
            return runSweep(inputs.cluster, *model, options, p, values, planners, threads, progress, job.cancelToken());
        },
        [this](quint64, const SweepResult &result) { emit finished(result); });
    emit started();
    return true;
}

void SweepRunner::cancel()
{
    m_jobs.stop();   // the sweep ends early and still delivers the points done
}

} // namespace nest::ui
