#include "BaselineRunner.h"

#include "Calibration.h"
#include "PlannerRuns.h"

#include <stdexcept>

namespace nest::ui {

namespace {

// What the worker hands back: the plans found and one line per planner that found none.
struct Outcome {
    QList<PlanSnapshotPtr> plans;
    QStringList failures;
};

} // namespace

BaselineRunner::BaselineRunner(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<nest::ui::PlanSnapshotPtr>();
    connect(&m_jobs, &JobTracker::failed, this, [this](quint64, const QString &reason) { emit failed(reason); });
    connect(&m_jobs, &JobTracker::cancelled, this, [this] { emit cancelled(); });
}

QStringList BaselineRunner::defaultPlanners()
{
    return {QStringLiteral("nest"), QStringLiteral("flat"), QStringLiteral("megatron"), QStringLiteral("mcmc")};
}

void BaselineRunner::waitForIdle()
{
    m_jobs.waitForIdle();
}

void BaselineRunner::cancel()
{
    m_jobs.cancel();
}

void BaselineRunner::start(const Workspace &inputs, const QStringList &planners, const QString &stamp)
{
    m_jobs.cancel();
    m_planners = planners;
    std::vector<std::string> names;
    for (const QString &p : planners)
        names.push_back(p.toStdString());
    const std::string suffix = stamp.isEmpty() ? std::string() : " " + stamp.toStdString();

    const auto work = [this, inputs, names, suffix](JobTracker::Job &job) -> Outcome {
        Outcome out;
        Result<ModelProfile> m = workspaceModel(inputs, "workspace");
        if (!m)
            throw std::runtime_error(m.error());
        const ModelProfile model = std::move(m).value();
        const SearchOptions options = calibratedSearchOptions(inputs.search, model, inputs.cluster, inputs.calibration);
        // Throttled per planner (they report from several threads), queued into the GUI thread.
        const ComparisonProgressFn progress = [this, &job](int index, double fraction, double best) {
            job.reportProgress(index, fraction, [this, index, fraction, best] { emit this->progress(index, fraction, best); });
        };
        // At most two planners at once: the window stays responsive on small machines.
        const std::vector<PlannerRun> runs = runPlanners(inputs.cluster, model, options, names, 2, progress, job.cancelToken());
        if (job.cancelled())
            return out;
        for (const PlannerRun &run : runs) {
            const PlanResult &r = run.result;
            if (!r.found) {
                out.failures << QString::fromStdString(run.planner + ": " + (r.message.empty() ? "no plan found" : r.message));
                continue;
            }
            SearchSettings settings = inputs.search;
            settings.planner = run.planner;
            auto snap = analysedSnapshot(r.plan, run.planner + suffix, run.planner, inputs.cluster, model, inputs.model,
                                         settings, inputs.calibration, options.cost);
            snap->searched = true;
            snap->stats = r.stats;
            snap->objective = r.objective;
            snap->verified = r.verified;
            out.plans << PlanSnapshotPtr(std::move(snap));
        }
        return out;
    };
    m_jobs.start(work, [this](quint64, const Outcome &out) { emit finished(out.plans, out.failures); });
    emit started(planners);
}

} // namespace nest::ui
