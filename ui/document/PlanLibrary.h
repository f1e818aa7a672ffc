#pragma once
// Every plan the user can look at, as one list: the pinned plans (the document's, saved in
// the workspace with the cluster and model they were planned on) followed by the recent
// runs of this session (newest first, at most maxRuns(), not saved). Each row keeps its
// inputs: planner, search settings, the cluster as it was, the model.
//
// User operations are undo steps on the document's stack: pin (a run moves into the
// pinned plans), unpin, rename, duplicate, delete. Adding a finished run is not an edit
// and is not undoable; the commands on runs find them by id, so they stay right whatever
// runs were added in between.
//
// Snapshots (what the plan views and the Compare tab show) are kept per row: a run has its
// own; a pinned plan's is computed on a worker (evaluated on its own cluster and model) the
// first time it is asked for, and cached by value, so undo/redo and reloads reuse it.
#include "JobTracker.h"
#include "PlanSnapshot.h"
#include "PinnedPlan.h"

#include <QList>
#include <QObject>
#include <QString>

#include <map>
#include <memory>
#include <utility>
#include <vector>

class QUndoCommand;

namespace nest::ui {

class WorkspaceDocument;

// The pinned form of a snapshot: label, planner, plan, settings, cluster, model, search time.
PinnedPlan pinnedPlanOf(const PlanSnapshot &snapshot);
// Evaluates and simulates a pinned plan on its own cluster and model (`workspaceModel` when
// it has none), with the workspace's calibration; throws std::runtime_error with the reason
// when the model does not load.
PlanSnapshotPtr snapshotOfPinned(const PinnedPlan &pin, const ModelSource &workspaceModel,
                                 const std::optional<Calibration> &calibration = std::nullopt);

class PlanLibrary : public QObject {
    Q_OBJECT
public:
    struct Run {
        quint64 id = 0;
        PlanSnapshotPtr snapshot;
        bool live = false;   // the one entry live mode keeps up to date
    };

    explicit PlanLibrary(WorkspaceDocument *document, QObject *parent = nullptr);

    WorkspaceDocument *document() const { return m_document; }
    static int maxRuns() { return 30; }

    // Rows: pinned plans 0..pinnedCount()-1, then the runs.
    int rowCount() const;
    int pinnedCount() const;
    bool isPinned(int row) const { return row >= 0 && row < pinnedCount(); }
    int rowOfRun(quint64 id) const;    // -1 when gone
    quint64 runIdAt(int row) const;    // 0 for pinned rows
    // The row as a pinned plan (a run's inputs in pinned form).
    PinnedPlan entry(int row) const;
    QString label(int row) const;
    QString planner(int row) const;
    // The cluster the row was planned on (no copy); an empty topology for a bad row.
    const Topology &clusterOf(int row) const;
    // The row's snapshot, or null while a pinned plan's evaluation is pending (asked for
    // here; snapshotsChanged() follows) or when it failed (evaluationError()).
    PlanSnapshotPtr snapshot(int row);
    QString evaluationError(int row) const;
    // True while pinned-plan evaluations run.
    bool isEvaluating() const { return !m_pending.empty(); }
    void waitForEvaluations();
    const std::vector<Run> &runs() const { return m_runs; }

    // A finished search: added at the top of the runs (not an undo step), followed by its
    // alternatives (the best K: ranks 2..K, each a run of its own). Returns its id.
    // A live-mode re-plan (`live`) replaces the live entry instead of adding one more (issue
    // 49: live mode filled the dock with timestamp-named runs); it is labelled "live".
    quint64 addRun(PlanSnapshotPtr snapshot, bool live = false);
    // Forgets this session's runs (another document was loaded: its runs are no plans of it).
    void clearRuns();
    // Pins several snapshots as one undo step (Run baselines); their snapshots are cached.
    bool pinSnapshots(const QList<PlanSnapshotPtr> &snapshots, const QString &text);

    // --- user operations, one undo step each; false (and nothing pushed) when impossible
    bool pin(int row);       // a run: pinned (and gone from the runs); a pinned row: false
    bool remove(int row);    // a pinned plan is unpinned, a run deleted
    bool rename(int row, const QString &label);
    bool duplicate(int row); // a pinned plan copied; a run pinned as a copy

    // Used by the undo commands on runs.
    void insertRun(const Run &run, int position);
    Run takeRun(quint64 id, int *position);
    void relabelRun(quint64 id, const std::string &label);

signals:
    // Rows were added, removed, reordered or relabelled.
    void rowsChanged();
    // A pinned plan's snapshot became available (or its evaluation failed).
    void snapshotsChanged();

private:
    struct Cached {
        PinnedPlan pin;
        PlanSnapshotPtr snapshot;
        QString error;
    };
    const Cached *cached(const PinnedPlan &pin) const;
    void cache(const PinnedPlan &pin, PlanSnapshotPtr snapshot, const QString &error);
    void evaluateLater(const PinnedPlan &pin);
    void evaluated(quint64 job, PlanSnapshotPtr snapshot, const QString &error);

    WorkspaceDocument *m_document;
    std::vector<Run> m_runs;               // newest first
    quint64 m_nextRunId = 1;
    std::vector<Cached> m_cache;           // pinned plans' snapshots, by value
    std::map<quint64, PinnedPlan> m_pending;   // being evaluated, by job
    JobTracker m_jobs{JobTracker::Policy::Parallel};   // last: destroyed (waited for) first
};

} // namespace nest::ui
