#pragma once
// The planning side of the open document: runs the search on the document's current
// inputs (PlanRunner, off the GUI thread), evaluates opened or pinned plans, keeps the
// current plan and the one before it (for the difference the views show), knows whether
// the current plan is stale (its inputs were edited since), and in live mode re-plans,
// debounced, after every edit. The window wires its actions and views to this object.
#include "PlanSnapshot.h"

#include <QObject>
#include <QString>
#include <QTimer>

namespace nest::ui {

class WorkspaceDocument;
class PlanRunner;

class PlanSession : public QObject {
    Q_OBJECT
public:
    explicit PlanSession(WorkspaceDocument *document, QObject *parent = nullptr);
    ~PlanSession() override;

    PlanRunner *runner() const { return m_runner; }
    bool isRunning() const;
    PlanSnapshotPtr current() const { return m_current; }
    PlanSnapshotPtr previous() const { return m_previous; }
    bool isStale() const { return m_stale; }
    // Counts the edits of the cluster, model and search settings since the start.
    quint64 revision() const { return m_revision; }

    bool isLive() const { return m_live; }
    void setLiveDelayMs(int ms) { m_liveTimer.setInterval(ms); }

public slots:
    // Plans the document's current cluster, model and search settings.
    void run();
    void cancel();
    void setLive(bool live);
    // Evaluates `plan` on the document's current cluster and model and shows it.
    void showPlan(const nest::Plan &plan, const QString &label, const QString &planner = QStringLiteral("file"));
    // Shows pinned plan `index` (evaluated on the cluster it was planned on).
    void showPinned(int index);
    // Pins the current plan in the document (an undo step); false when there is none.
    bool pinCurrent();

signals:
    void runStarted(const QString &what);
    void progress(double fraction, double bestSoFar);
    void runEnded();                 // finished, failed or cancelled: idle again
    void planChanged(nest::ui::PlanSnapshotPtr current, nest::ui::PlanSnapshotPtr previous);
    void staleChanged(bool stale);
    void liveChanged(bool live);
    void message(const QString &text);
    void failed(const QString &reason);

private:
    void inputsEdited();
    void documentReset();
    void finished(quint64 job, quint64 revision, nest::ui::PlanSnapshotPtr snapshot);
    void setStale(bool stale);

    WorkspaceDocument *m_document;
    PlanRunner *m_runner;
    PlanSnapshotPtr m_current, m_previous;
    bool m_stale = false;
    bool m_live = false;
    quint64 m_revision = 0;
    QTimer m_liveTimer;
};

// "412.3 samples/s (+3.2 % vs the previous plan)" and the like, for the status bar.
QString planHeadline(const PlanSnapshot &current, const PlanSnapshot *previous);
// "+3.20 % vs the previous plan" (throughput, 2 decimals); empty without a feasible previous
// plan. The headline and the status bar's permanent plan label both show it.
QString throughputChangeText(const PlanSnapshot &current, const PlanSnapshot *previous);
// How long the search took: "re-planned in 48 ms" (the nest planner reused the previous
// search, as after each edit in live mode), "planned in 1.23 s"; empty when not searched.
QString searchTimeText(const PlanSnapshot &snapshot);

} // namespace nest::ui
