#pragma once
// The worker lifecycle every background job in the GUI shares (hotspot's JobTracker habit):
// a job is a function run on a QtConcurrent worker, on copies of its inputs, given a
// JobTracker::Job that carries its id, its CancelToken (core's, polled by the planners) and a
// throttled way to report progress. What it returns is handed to the GUI thread by a queued
// call; an exception it throws becomes failed(id, reason) there, never a swallowed error.
//
// Policy::LatestWins (the runners): starting a job supersedes the one running: its token is
// set, cancelled(id) is emitted, and whatever it still delivers (progress, result) is
// dropped. Policy::Parallel (the plan library's evaluations): every job runs and delivers.
//
// cancel() sets the tokens and drops the jobs at once (cancelled(id) for each); stop() only
// sets the tokens, so a job that returns a partial result still delivers it. The destructor
// sets every token and waits for the workers; waitForIdle() waits for them too (tests,
// shutdown). Deliveries are queued: they come from the event loop, after waitForIdle().
#include "Planner.h"

#include <QFuture>
#include <QList>
#include <QObject>
#include <QString>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace nest::ui {

class JobTracker : public QObject {
    Q_OBJECT
public:
    enum class Policy { LatestWins, Parallel };

    // Progress of one stream is passed on at most this often (a fraction of 1 always is).
    static constexpr std::chrono::milliseconds progressInterval{15};

    // What the work sees; shared by the GUI thread and the worker.
    class Job {
    public:
        quint64 id() const { return m_id; }
        const CancelToken &cancelToken() const { return m_cancel; }
        bool cancelled() const { return m_cancel.cancelled(); }

        // Thread-safe. True when a report of `fraction` on `stream` is due: `force`, a
        // fraction of 1, or progressInterval since the stream's last report. Records it.
        bool progressDue(int stream, double fraction, bool force = false);
        // Runs `deliver` on the GUI thread (queued), unless the job was dropped by then.
        void post(std::function<void()> deliver);
        // Both: `deliver` (typically emitting a progress signal) is posted when due.
        template <typename Deliver>
        void reportProgress(int stream, double fraction, Deliver &&deliver, bool force = false)
        {
            if (progressDue(stream, fraction, force))
                post(std::function<void()>(std::forward<Deliver>(deliver)));
        }

    private:
        friend class JobTracker;
        Job(JobTracker *tracker, quint64 id) : m_tracker(tracker), m_id(id) {}

        JobTracker *m_tracker;   // outlives the worker: ~JobTracker waits for it
        quint64 m_id;
        CancelToken m_cancel;
        std::mutex m_reportMutex;
        std::vector<std::chrono::steady_clock::time_point> m_lastReport;   // per stream
    };

    explicit JobTracker(Policy policy = Policy::LatestWins, QObject *parent = nullptr);
    ~JobTracker() override;

    // Runs `work(Job &)` on a worker; `deliver(id, result)` gets its result on the GUI thread
    // unless the job was dropped meanwhile. Returns the job's id (> 0, increasing).
    template <typename Work, typename Deliver>
    quint64 start(Work work, Deliver deliver)
    {
        using Result = std::invoke_result_t<Work &, Job &>;
        return launch([work = std::move(work), deliver = std::move(deliver)](Job &job) mutable -> Delivery {
            Result result = work(job);
            return [deliver, result = std::move(result), id = job.id()]() mutable { deliver(id, std::move(result)); };
        });
    }

    // Sets the tokens of the jobs running and drops them: cancelled(id) for each, at once.
    void cancel();
    // Sets the tokens only: the jobs end early and still deliver what they return.
    void stop();
    // True while a job has not delivered nor been dropped.
    bool isRunning() const { return !m_active.empty(); }
    // The newest such job, 0 when none.
    quint64 currentJob() const;
    // Blocks until no worker runs any more.
    void waitForIdle();

signals:
    // The work threw: what() (or "internal error"), for a job not dropped.
    void failed(quint64 job, const QString &message);
    // A job was dropped by cancel() or superseded by start() (Policy::LatestWins).
    void cancelled(quint64 job);

private:
    using Delivery = std::function<void()>;
    quint64 launch(std::function<Delivery(Job &)> work);
    bool isActive(quint64 id) const;
    void retire(quint64 id);

    Policy m_policy;
    quint64 m_nextId = 1;
    std::vector<std::shared_ptr<Job>> m_active;   // not delivered, not dropped; oldest first
    QList<QFuture<void>> m_workers;               // until waited for or seen finished
};

} // namespace nest::ui
