// JobTracker (ui/JobTracker.h), the worker lifecycle PlanRunner, BaselineRunner, SweepRunner
// and PlanLibrary share: the latest request wins, cancel drops at once, stop lets a partial
// result through, progress is throttled per stream, an exception becomes failed(), results
// come queued on the GUI thread, and the destructor cancels and waits.
#include "JobTracker.h"

#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

using namespace nest::ui;
using namespace std::chrono_literals;

namespace {

constexpr int kTimeoutMs = 10000;

// Spins until the job's token is set (or a long time passed), like a planner polling it.
bool waitUntilCancelled(const JobTracker::Job &job)
{
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!job.cancelled() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    return job.cancelled();
}

} // namespace

class TestJobTracker : public QObject {
    Q_OBJECT
private slots:
    void resultComesQueuedOnTheGuiThread()
    {
        JobTracker tracker;
        QThread *workerThread = nullptr;
        QThread *deliveryThread = nullptr;
        int delivered = 0;
        const quint64 id = tracker.start(
            [&](JobTracker::Job &) {
                workerThread = QThread::currentThread();
                return 42;
            },
            [&](quint64 job, int value) {
                QCOMPARE(job, quint64(1));
                QCOMPARE(value, 42);
                deliveryThread = QThread::currentThread();
                ++delivered;
            });
        QCOMPARE(id, quint64(1));
        QVERIFY(tracker.isRunning());
        QCOMPARE(tracker.currentJob(), id);
        tracker.waitForIdle();
        QCOMPARE(delivered, 0);   // queued: only from the event loop
        QTRY_COMPARE_WITH_TIMEOUT(delivered, 1, kTimeoutMs);
        QCOMPARE(deliveryThread, QThread::currentThread());
        QVERIFY(workerThread != nullptr);
        QVERIFY(!tracker.isRunning());
        QCOMPARE(tracker.currentJob(), quint64(0));
    }

    void latestRequestWins()
    {
        JobTracker tracker;
        QSignalSpy cancelled(&tracker, &JobTracker::cancelled);
        std::atomic<bool> firstSawCancel{false};
        QList<quint64> delivered;
        const auto record = [&delivered](quint64 job, int) { delivered << job; };
        const quint64 first = tracker.start(
            [&](JobTracker::Job &job) {
                firstSawCancel = waitUntilCancelled(job);
                return 1;
            },
            record);
        const quint64 second = tracker.start([](JobTracker::Job &) { return 2; }, record);
        QVERIFY(second > first);
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.at(0).at(0).toULongLong(), first);
        QCOMPARE(tracker.currentJob(), second);
        tracker.waitForIdle();
        QVERIFY(firstSawCancel);
        QTRY_COMPARE_WITH_TIMEOUT(delivered.size(), 1, kTimeoutMs);
        QCoreApplication::processEvents();
        QCOMPARE(delivered, QList<quint64>{second});   // the superseded result is dropped
        QVERIFY(!tracker.isRunning());
    }

    void cancelDropsAtOnce()
    {
        JobTracker tracker;
        QSignalSpy cancelled(&tracker, &JobTracker::cancelled);
        QSignalSpy failed(&tracker, &JobTracker::failed);
        std::atomic<bool> sawCancel{false};
        int delivered = 0;
        const quint64 id = tracker.start(
            [&](JobTracker::Job &job) {
                sawCancel = waitUntilCancelled(job);
                job.post([&delivered] { ++delivered; });   // a late progress report
                return 0;
            },
            [&delivered](quint64, int) { ++delivered; });
        tracker.cancel();
        QCOMPARE(cancelled.count(), 1);   // at once, not when the worker returns
        QCOMPARE(cancelled.at(0).at(0).toULongLong(), id);
        QVERIFY(!tracker.isRunning());
        tracker.waitForIdle();
        QVERIFY(sawCancel);
        QTest::qWait(50);
        QCOMPARE(delivered, 0);
        QCOMPARE(failed.count(), 0);
        tracker.cancel();   // nothing left to cancel
        QCOMPARE(cancelled.count(), 1);
    }

    void stopStillDeliversThePartialResult()
    {
        JobTracker tracker;
        QSignalSpy cancelled(&tracker, &JobTracker::cancelled);
        int result = -1;
        tracker.start(
            [](JobTracker::Job &job) {
                int done = 0;
                while (!job.cancelled() && done < 1'000'000) {
                    ++done;
                    std::this_thread::sleep_for(1ms);
                }
                return done;
            },
            [&result](quint64, int done) { result = done; });
        QTest::qWait(20);
        tracker.stop();
        QVERIFY(tracker.isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(result >= 0, kTimeoutMs);
        QVERIFY(result < 1'000'000);
        QCOMPARE(cancelled.count(), 0);
        QVERIFY(!tracker.isRunning());
    }

    void progressIsThrottledPerStream()
    {
        JobTracker tracker;
        struct Seen {
            bool first = false, again = false, otherStream = false, whole = false, forced = false, later = false;
            std::chrono::nanoseconds spent{};
        };
        Seen seen;
        tracker.start(
            [&seen](JobTracker::Job &job) {
                const auto t0 = std::chrono::steady_clock::now();
                seen.first = job.progressDue(0, 0.1);
                seen.again = job.progressDue(0, 0.2);
                seen.otherStream = job.progressDue(3, 0.2);
                seen.whole = job.progressDue(0, 1.0);
                seen.forced = job.progressDue(0, 0.3, true);
                seen.spent = std::chrono::steady_clock::now() - t0;
                std::this_thread::sleep_for(JobTracker::progressInterval + 5ms);
                seen.later = job.progressDue(0, 0.4);
                return 0;
            },
            [](quint64, int) {});
        tracker.waitForIdle();
        QVERIFY(seen.first);
        if (seen.spent < JobTracker::progressInterval)   // not preempted for a whole interval
            QVERIFY(!seen.again);
        QVERIFY(seen.otherStream);
        QVERIFY(seen.whole);
        QVERIFY(seen.forced);
        QVERIFY(seen.later);
    }

    void throttledReportsReachTheGuiThread()
    {
        JobTracker tracker;
        QList<double> reports;
        std::chrono::nanoseconds spent{};
        bool done = false;
        tracker.start(
            [&reports, &spent](JobTracker::Job &job) {
                const auto t0 = std::chrono::steady_clock::now();
                const int n = 200'000;
                for (int i = 1; i <= n; ++i) {
                    const double f = double(i) / n;
                    job.reportProgress(0, f, [&reports, f] { reports << f; });
                }
                spent = std::chrono::steady_clock::now() - t0;
                return 0;
            },
            [&done](quint64, int) { done = true; });
        QTRY_VERIFY_WITH_TIMEOUT(done, kTimeoutMs);
        QVERIFY(!reports.isEmpty());
        QCOMPARE(reports.last(), 1.0);   // the end always comes
        const auto bound = spent / JobTracker::progressInterval + 2;
        QVERIFY2(reports.size() <= bound, qPrintable(QString("%1 reports in %2 ms").arg(reports.size()).arg(spent.count() / 1e6)));
        QVERIFY(std::is_sorted(reports.begin(), reports.end()));   // in order, before the result
    }

    void exceptionBecomesAnError()
    {
        JobTracker tracker;
        QSignalSpy failed(&tracker, &JobTracker::failed);
        int delivered = 0;
        const quint64 id = tracker.start([](JobTracker::Job &) -> int { throw std::runtime_error("model 'x' not found"); },
                                         [&delivered](quint64, int) { ++delivered; });
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kTimeoutMs);
        QCOMPARE(failed.at(0).at(0).toULongLong(), id);
        QCOMPARE(failed.at(0).at(1).toString(), QString("model 'x' not found"));
        QCOMPARE(delivered, 0);
        QVERIFY(!tracker.isRunning());

        tracker.start([](JobTracker::Job &) -> int { throw 7; }, [&delivered](quint64, int) { ++delivered; });
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 2, kTimeoutMs);
        QCOMPARE(failed.at(1).at(1).toString(), QString("internal error"));
        QCOMPARE(delivered, 0);
    }

    void parallelJobsAllDeliver()
    {
        JobTracker tracker(JobTracker::Policy::Parallel);
        QSignalSpy cancelled(&tracker, &JobTracker::cancelled);
        QList<int> delivered;
        for (int i = 0; i < 4; ++i)
            tracker.start([i](JobTracker::Job &) { return i; }, [&delivered](quint64, int v) { delivered << v; });
        QCOMPARE(cancelled.count(), 0);
        QVERIFY(tracker.isRunning());
        QTRY_COMPARE_WITH_TIMEOUT(delivered.size(), 4, kTimeoutMs);
        std::sort(delivered.begin(), delivered.end());
        QCOMPARE(delivered, (QList<int>{0, 1, 2, 3}));
        QVERIFY(!tracker.isRunning());
    }

    void destructionCancelsAndWaits()
    {
        std::atomic<bool> sawCancel{false};
        std::atomic<bool> returned{false};
        int delivered = 0;
        {
            JobTracker tracker;
            tracker.start(
                [&](JobTracker::Job &job) {
                    sawCancel = waitUntilCancelled(job);
                    std::this_thread::sleep_for(20ms);   // still busy when the token is seen
                    returned = true;
                    return 0;
                },
                [&delivered](quint64, int) { ++delivered; });
            QTest::qWait(10);
        }
        QVERIFY(sawCancel);
        QVERIFY(returned);
        QCoreApplication::processEvents();
        QCOMPARE(delivered, 0);
    }
};

QTEST_MAIN(TestJobTracker)
#include "test_job_tracker.moc"
