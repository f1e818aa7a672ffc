#pragma once
// Runs planning jobs off the GUI thread (a JobTracker, Policy::LatestWins) and delivers
// their results by queued signals. Each job gets an id; the latest request wins: starting
// a job cancels the one running, and the results of any job but the current one are
// dropped. The job works on copies of its inputs, so the
// window may be edited meanwhile; the caller compares the input revision it passed with
// the current one to mark a late result stale.
//
// Cancel: sets the job's CancelToken (polled by the planners) and reports `cancelled` at
// once; the worker returns within the planners' polling interval. The destructor cancels
// and waits, so closing the window during a search is clean.
#include "JobTracker.h"
#include "PlanSnapshot.h"
#include "Workspace.h"

#include <QObject>
#include <QString>

#include <functional>
#include <memory>

namespace nest::ui {

class PlanRunner : public QObject {
    Q_OBJECT
public:
    explicit PlanRunner(QObject *parent = nullptr);

    // Plans `inputs` (cluster, model, search settings) with the planner its settings name.
    // The nest planner re-plans incrementally (PlanningSession: the previous optimum bounds
    // the search; the result is the one a search from scratch returns) and, with the
    // settings' top_k > 1, returns the best K distinct plans (the snapshot's alternatives).
    // `revision` is handed back with the result. Returns the job id (> 0).
    quint64 plan(const Workspace &inputs, quint64 revision, const QString &label);
    // Evaluates and simulates a given plan on `inputs`' cluster and model (an opened plan
    // file, a pinned plan) on the worker too.
    quint64 evaluate(const Workspace &inputs, const Plan &plan, quint64 revision, const QString &label,
                     const QString &planner);
    void cancel();
    bool isRunning() const { return m_jobs.isRunning(); }
    quint64 currentJob() const { return m_jobs.currentJob(); }
    // Blocks until no job runs any more (tests, shutdown).
    void waitForIdle();

signals:
    void started(quint64 job);
    // fraction in [0, 1]; bestSoFar = best iteration time so far in seconds (0 = none).
    void progress(quint64 job, double fraction, double bestSoFar);
    void finished(quint64 job, quint64 revision, nest::ui::PlanSnapshotPtr snapshot);
    void failed(quint64 job, const QString &message);
    void cancelled(quint64 job);

private:
    quint64 launch(std::function<PlanSnapshotPtr(JobTracker::Job &)> work, quint64 revision);

    // The nest planner's session, shared with the jobs (which outlive a cancel): one
    // replan() at a time, so a new job waits for the cancelled one to return.
    struct Session;
    std::shared_ptr<Session> m_session;

    JobTracker m_jobs;   // last: destroyed (cancelled and waited for) first
};

} // namespace nest::ui

