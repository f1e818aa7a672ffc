#pragma once
// "Run baselines": NEST and the baseline planners (flat-network DP, Megatron-style,
// MCMC; core/planners/PlannerRegistry.h) on the same inputs, in the background
// (core/studies/PlannerRuns.h runPlanners on a JobTracker's worker), with progress per
// planner by queued signals and a cancel that every planner polls. Each plan found becomes
// a snapshot (evaluated and simulated on the inputs' cluster), delivered together.
#include "JobTracker.h"
#include "PlanSnapshot.h"
#include "Workspace.h"

#include <QObject>
#include <QStringList>

namespace nest::ui {

class BaselineRunner : public QObject {
    Q_OBJECT
public:
    explicit BaselineRunner(QObject *parent = nullptr);

    // "nest", "flat", "megatron", "mcmc".
    static QStringList defaultPlanners();

    // Starts the planners on `inputs` (cluster, model, search settings); a run in progress
    // is cancelled first. `stamp` ends each label ("nest 14:02").
    void start(const Workspace &inputs, const QStringList &planners, const QString &stamp);
    void cancel();
    bool isRunning() const { return m_jobs.isRunning(); }
    QStringList planners() const { return m_planners; }
    void waitForIdle();

signals:
    void started(const QStringList &planners);
    // Planner `index` (into planners()) is `fraction` done; best iteration time so far (0 = none).
    void progress(int index, double fraction, double bestSoFar);
    // Every planner has ended: the plans found, in planner order, and one line per planner
    // that found none ("mcmc: no feasible plan: ...").
    void finished(const QList<nest::ui::PlanSnapshotPtr> &plans, const QStringList &failures);
    void failed(const QString &reason);
    void cancelled();

private:
    QStringList m_planners;
    JobTracker m_jobs;   // last: destroyed (cancelled and waited for) first
};

} // namespace nest::ui
