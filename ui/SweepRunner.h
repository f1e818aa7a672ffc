#pragma once
// Runs a cluster sweep (core/ClusterSweep.h) off the GUI thread on a JobTracker, as
// PlanRunner does. The job works on copies of its inputs; the model
// comes from the workspace (workspaceModel) and the planners' options from its search
// settings (searchOptionsFrom), so every point is planned as the Run action would.
//
// The latest request wins: start() while a sweep runs cancels it and drops its result.
// cancel() sets the job's CancelToken; the sweep stops within the planners' polling
// interval and `finished` still comes, with the points done so far and cancelled = true.
// Progress is queued into the GUI thread (at most about every 15 ms). The destructor
// cancels and waits.
#include "ClusterSweep.h"
#include "JobTracker.h"
#include "Workspace.h"

#include <QMetaType>
#include <QObject>
#include <QString>

namespace nest::ui {

class SweepRunner : public QObject {
    Q_OBJECT
public:
    explicit SweepRunner(QObject *parent = nullptr);

    // Sweeps `p` over `values` on `inputs` (cluster, model, search settings) with every
    // planner named. Checks the request first (at least one value and one planner, known
    // planner names, every value accepted by withParameter): on a problem emits failed()
    // and returns false without starting anything.
    bool start(const Workspace &inputs, const SweepParameter &p, const std::vector<double> &values,
               const std::vector<std::string> &planners);
    bool start(const Workspace &inputs, const SweepRequest &request);
    void cancel();
    bool isRunning() const { return m_jobs.isRunning(); }
    // Blocks until no worker runs any more (tests, shutdown); signals still come from the
    // event loop afterwards.
    void waitForIdle();
    // The cluster of the latest start() (what the result's values are relative to).
    const Topology &baseCluster() const { return m_base; }
    // The request of the latest start() (for progress texts: "point 2 of 5").
    const SweepRequest &request() const { return m_request; }
    // Worker threads each point uses (0 = the machine's; runPlanners' meaning).
    void setThreads(int threads) { m_threads = threads; }

signals:
    void started();
    // point and planner indices; fraction of the whole sweep in [0, 1].
    void progress(int point, int planner, double fraction);
    // Also after cancel(): the finished points, cancelled = true.
    void finished(const nest::SweepResult &result);
    void failed(const QString &message);

private:
    Topology m_base;
    SweepRequest m_request;
    int m_threads = 0;
    JobTracker m_jobs;   // last: destroyed (cancelled and waited for) first
};

} // namespace nest::ui

Q_DECLARE_METATYPE(nest::SweepResult)
