#include "JobTracker.h"

#include <QMetaObject>
#include <QtConcurrent/QtConcurrent>

#include <algorithm>
#include <exception>
#include <mutex>

namespace nest::ui {

bool JobTracker::Job::progressDue(int stream, double fraction, bool force)
{
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(m_reportMutex);   // runPlanners reports from several threads at once
    const size_t s = static_cast<size_t>(std::max(stream, 0));
    if (s >= m_lastReport.size())
        m_lastReport.resize(s + 1);   // the epoch: the first report is always due
    if (!force && fraction < 1.0 && now - m_lastReport[s] < progressInterval)
        return false;
    m_lastReport[s] = now;
    return true;
}

void JobTracker::Job::post(std::function<void()> deliver)
{
    JobTracker *tracker = m_tracker;
    const quint64 id = m_id;
    QMetaObject::invokeMethod(tracker, [tracker, id, deliver = std::move(deliver)] {
        if (tracker->isActive(id))
            deliver();
    }, Qt::QueuedConnection);
}

JobTracker::JobTracker(Policy policy, QObject *parent)
    : QObject(parent)
    , m_policy(policy)
{
}

JobTracker::~JobTracker()
{
    for (const std::shared_ptr<Job> &job : m_active)
        job->m_cancel.cancel();
    waitForIdle();   // the workers are gone before the queued deliveries are discarded
}

quint64 JobTracker::launch(std::function<Delivery(Job &)> work)
{
    if (m_policy == Policy::LatestWins)
        cancel();   // the latest request wins
    m_workers.removeIf([](const QFuture<void> &f) { return f.isFinished(); });

    auto job = std::shared_ptr<Job>(new Job(this, m_nextId++));
    m_active.push_back(job);
    // Held until the task is queued; the worker takes it first. Qt's pool orders the two
    // threads as well, but ThreadSanitizer cannot see inside Qt: this hand-over is what
    // tells it that the job's inputs were written before the worker reads them.
    auto handover = std::make_shared<std::mutex>();
    std::unique_lock handing(*handover);
    m_workers.append(QtConcurrent::run([job, handover, work = std::move(work)] {
        { std::lock_guard taken(*handover); }
        Delivery delivery;
        QString error;
        bool threw = true;
        try {
            delivery = work(*job);
            threw = false;
        } catch (const std::exception &e) {
            error = QString::fromUtf8(e.what());
        } catch (...) {
            error = QStringLiteral("internal error");
        }
        JobTracker *tracker = job->m_tracker;
        const quint64 id = job->id();
        QMetaObject::invokeMethod(tracker, [tracker, id, threw, error, delivery = std::move(delivery)] {
            if (!tracker->isActive(id))
                return;   // cancelled or superseded: already reported
            tracker->retire(id);
            if (threw)
                emit tracker->failed(id, error);
            else
                delivery();
        }, Qt::QueuedConnection);
    }));
    handing.unlock();
    return job->id();
}

void JobTracker::cancel()
{
    // Dropped before the signals, so that a slot sees no job running.
    const std::vector<std::shared_ptr<Job>> dropped = std::exchange(m_active, {});
    for (const std::shared_ptr<Job> &job : dropped)
        job->m_cancel.cancel();
    for (const std::shared_ptr<Job> &job : dropped)
        emit cancelled(job->id());
}

void JobTracker::stop()
{
    for (const std::shared_ptr<Job> &job : m_active)
        job->m_cancel.cancel();
}

quint64 JobTracker::currentJob() const
{
    return m_active.empty() ? 0 : m_active.back()->id();
}

void JobTracker::waitForIdle()
{
    for (QFuture<void> &f : m_workers)
        f.waitForFinished();
    m_workers.clear();
}

bool JobTracker::isActive(quint64 id) const
{
    return std::any_of(m_active.begin(), m_active.end(), [id](const auto &job) { return job->id() == id; });
}

void JobTracker::retire(quint64 id)
{
    std::erase_if(m_active, [id](const auto &job) { return job->id() == id; });
}

} // namespace nest::ui
