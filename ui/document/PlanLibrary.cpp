#include "PlanLibrary.h"

#include "Calibration.h"
#include "WorkspaceDocument.h"

#include <QPointer>
#include <QUndoCommand>
#include <QUndoStack>

#include <algorithm>
#include <stdexcept>

namespace nest::ui {

PinnedPlan pinnedPlanOf(const PlanSnapshot &s)
{
    PinnedPlan pin;
    pin.label = s.label;
    pin.planner = s.planner;
    pin.plan = s.plan();
    pin.settings = s.settings;
    pin.cluster = s.topology;
    pin.model = s.modelSource;
    pin.searchSeconds = s.searched ? s.stats.wallSeconds : 0;
    return pin;
}

PlanSnapshotPtr snapshotOfPinned(const PinnedPlan &pin, const ModelSource &workspaceModel,
                                 const std::optional<Calibration> &calibration)
{
    Result<ModelProfile> model = pinnedPlanModel(pin, workspaceModel, "pinned plan '" + pin.label + "'");
    if (!model)
        throw std::runtime_error(model.error());
    const SearchOptions options = calibratedSearchOptions(pin.settings, *model, pin.cluster, calibration);
    auto snap = analysedSnapshot(pin.plan, pin.label, pin.planner, pin.cluster, std::move(model).value(),
                                 pin.model ? *pin.model : workspaceModel, pin.settings, calibration, options.cost);
    snap->stats.wallSeconds = pin.searchSeconds;
    return snap;
}

namespace {

// Deleting a run; undo puts it back where it was.
class RemoveRun : public QUndoCommand {
public:
    RemoveRun(PlanLibrary *library, quint64 id, const QString &text, QUndoCommand *parent = nullptr)
        : QUndoCommand(text, parent), m_library(library), m_id(id)
    {
    }
    void redo() override
    {
        if (m_library)
            m_run = m_library->takeRun(m_id, &m_position);
    }
    void undo() override
    {
        if (m_library && m_run.snapshot)
            m_library->insertRun(m_run, m_position);
    }

private:
    QPointer<PlanLibrary> m_library;
    quint64 m_id;
    PlanLibrary::Run m_run;
    int m_position = 0;
};

class RenameRun : public QUndoCommand {
public:
    RenameRun(PlanLibrary *library, quint64 id, std::string before, std::string after, const QString &text)
        : QUndoCommand(text), m_library(library), m_id(id), m_before(std::move(before)), m_after(std::move(after))
    {
    }
    void redo() override
    {
        if (m_library)
            m_library->relabelRun(m_id, m_after);
    }
    void undo() override
    {
        if (m_library)
            m_library->relabelRun(m_id, m_before);
    }

private:
    QPointer<PlanLibrary> m_library;
    quint64 m_id;
    std::string m_before, m_after;
};

} // namespace

PlanLibrary::PlanLibrary(WorkspaceDocument *document, QObject *parent)
    : QObject(parent)
    , m_document(document)
{
    connect(m_document, &WorkspaceDocument::plansChanged, this, &PlanLibrary::rowsChanged);
    // Another document (New, Open, a template, a sample): the runs were plans of the last one
    // (issue 49: after New, Show painted an 80-device plan onto the new 128-GPU cluster).
    connect(m_document, &WorkspaceDocument::clusterReset, this, &PlanLibrary::clearRuns);
    // Pinned plans are priced with the workspace's calibration: a new one prices them anew.
    connect(m_document, &WorkspaceDocument::calibrationChanged, this, [this] {
        m_cache.clear();
        m_pending.clear();
        emit snapshotsChanged();
    });
    connect(&m_jobs, &JobTracker::failed, this,
            [this](quint64 job, const QString &error) { evaluated(job, nullptr, error); });
}

void PlanLibrary::waitForEvaluations()
{
    m_jobs.waitForIdle();
}

int PlanLibrary::pinnedCount() const
{
    return static_cast<int>(m_document->plans().size());
}

int PlanLibrary::rowCount() const
{
    return pinnedCount() + static_cast<int>(m_runs.size());
}

int PlanLibrary::rowOfRun(quint64 id) const
{
    for (size_t i = 0; i < m_runs.size(); ++i)
        if (m_runs[i].id == id)
            return pinnedCount() + static_cast<int>(i);
    return -1;
}

quint64 PlanLibrary::runIdAt(int row) const
{
    const int r = row - pinnedCount();
    return r >= 0 && r < static_cast<int>(m_runs.size()) ? m_runs[r].id : 0;
}

PinnedPlan PlanLibrary::entry(int row) const
{
    if (isPinned(row))
        return m_document->plans()[row];
    const int r = row - pinnedCount();
    if (r < 0 || r >= static_cast<int>(m_runs.size()))
        return {};
    return pinnedPlanOf(*m_runs[r].snapshot);
}

QString PlanLibrary::label(int row) const
{
    if (isPinned(row))
        return QString::fromStdString(m_document->plans()[row].label);
    const int r = row - pinnedCount();
    if (r < 0 || r >= static_cast<int>(m_runs.size()))
        return {};
    return QString::fromStdString(m_runs[r].snapshot->label);
}

QString PlanLibrary::planner(int row) const
{
    if (isPinned(row))
        return QString::fromStdString(m_document->plans()[row].planner);
    const int r = row - pinnedCount();
    return r >= 0 && r < static_cast<int>(m_runs.size()) ? QString::fromStdString(m_runs[r].snapshot->planner) : QString();
}

const Topology &PlanLibrary::clusterOf(int row) const
{
    static const Topology none;
    if (isPinned(row))
        return m_document->plans()[row].cluster;
    const int r = row - pinnedCount();
    return r >= 0 && r < static_cast<int>(m_runs.size()) ? m_runs[r].snapshot->topology : none;
}

PlanSnapshotPtr PlanLibrary::snapshot(int row)
{
    if (!isPinned(row)) {
        const int r = row - pinnedCount();
        return r >= 0 && r < static_cast<int>(m_runs.size()) ? m_runs[r].snapshot : nullptr;
    }
    const PinnedPlan &pin = m_document->plans()[row];
    if (const Cached *c = cached(pin)) {
        if (c->snapshot && c->snapshot->label != pin.label) {   // renamed: same numbers
            auto copy = std::make_shared<PlanSnapshot>(*c->snapshot);
            copy->label = pin.label;
            return copy;
        }
        return c->snapshot;
    }
    evaluateLater(pin);
    return nullptr;
}

QString PlanLibrary::evaluationError(int row) const
{
    if (!isPinned(row))
        return {};
    const Cached *c = cached(m_document->plans()[row]);
    return c ? c->error : QString();
}

namespace {

// Same inputs, label aside (a rename does not change the numbers).
bool sameInputs(const PinnedPlan &a, const PinnedPlan &b)
{
    return a.planner == b.planner && a.plan == b.plan && a.settings == b.settings && a.model == b.model &&
           a.cluster == b.cluster;
}

} // namespace

const PlanLibrary::Cached *PlanLibrary::cached(const PinnedPlan &pin) const
{
    for (const Cached &c : m_cache)
        if (sameInputs(c.pin, pin))
            return &c;
    return nullptr;
}

void PlanLibrary::cache(const PinnedPlan &pin, PlanSnapshotPtr snapshot, const QString &error)
{
    if (cached(pin))
        return;
    m_cache.push_back({pin, std::move(snapshot), error});
    // Keep what the pinned plans need, and a few more for undo.
    if (m_cache.size() > 64) {
        const auto &plans = m_document->plans();
        std::erase_if(m_cache, [&](const Cached &c) {
            return std::none_of(plans.begin(), plans.end(), [&](const PinnedPlan &p) { return sameInputs(p, c.pin); });
        });
    }
}

void PlanLibrary::evaluateLater(const PinnedPlan &pin)
{
    if (std::any_of(m_pending.begin(), m_pending.end(), [&pin](const auto &p) { return p.second == pin; }))
        return;
    const ModelSource model = m_document->model();   // typed, shared: the worker reads no JSON
    const std::optional<Calibration> calibration = m_document->calibration();
    const quint64 job = m_jobs.start([pin, model, calibration](JobTracker::Job &) {
                                         return snapshotOfPinned(pin, model, calibration);
                                     },
                                     [this](quint64 id, const PlanSnapshotPtr &s) { evaluated(id, s, QString()); });
    m_pending.emplace(job, pin);
}

void PlanLibrary::evaluated(quint64 job, PlanSnapshotPtr snapshot, const QString &error)
{
    const auto it = m_pending.find(job);
    if (it == m_pending.end())
        return;
    const PinnedPlan pin = it->second;
    m_pending.erase(it);
    cache(pin, std::move(snapshot), error);
    emit snapshotsChanged();
}

quint64 PlanLibrary::addRun(PlanSnapshotPtr snapshot, bool live)
{
    if (!snapshot)
        return 0;
    if (live) {
        m_runs.erase(std::remove_if(m_runs.begin(), m_runs.end(), [](const Run &r) { return r.live; }), m_runs.end());
        auto labelled = std::make_shared<PlanSnapshot>(*snapshot);
        labelled->label = "live";
        labelled->alternatives.clear();
        snapshot = labelled;
    }
    const quint64 id = m_nextRunId++;
    // The best K of one search stay together, best first, right below one another.
    std::vector<Run> group{Run{id, snapshot, live}};
    for (const auto &alternative : snapshot->alternatives)
        group.push_back(Run{m_nextRunId++, alternative});
    m_runs.insert(m_runs.begin(), group.begin(), group.end());
    while (m_runs.size() > static_cast<size_t>(std::max<int>(maxRuns(), static_cast<int>(group.size()))))
        m_runs.pop_back();
    emit rowsChanged();
    return id;
}

void PlanLibrary::clearRuns()
{
    if (m_runs.empty())
        return;
    m_runs.clear();
    emit rowsChanged();
}

bool PlanLibrary::pinSnapshots(const QList<PlanSnapshotPtr> &snapshots, const QString &text)
{
    std::vector<PinnedPlan> pins;
    for (const PlanSnapshotPtr &s : snapshots) {
        if (!s)
            continue;
        pins.push_back(pinnedPlanOf(*s));
        cache(pins.back(), s, QString());
    }
    return m_document->pinPlans(pins, text);
}

bool PlanLibrary::pin(int row)
{
    const quint64 id = runIdAt(row);
    if (id == 0)
        return false;
    const PlanSnapshotPtr s = m_runs[row - pinnedCount()].snapshot;
    const PinnedPlan pinned = pinnedPlanOf(*s);
    cache(pinned, s, QString());
    QUndoStack *stack = m_document->undoStack();
    const QString text = tr("Pin plan %1").arg(QString::fromStdString(pinned.label));
    stack->beginMacro(text);
    m_document->pinPlan(pinned);
    stack->push(new RemoveRun(this, id, text));
    stack->endMacro();
    return true;
}

bool PlanLibrary::remove(int row)
{
    if (isPinned(row))
        return m_document->unpinPlan(row);
    const quint64 id = runIdAt(row);
    if (id == 0)
        return false;
    m_document->undoStack()->push(new RemoveRun(this, id, tr("Delete run %1").arg(label(row))));
    return true;
}

bool PlanLibrary::rename(int row, const QString &text)
{
    if (isPinned(row))
        return m_document->renamePlan(row, text);
    const quint64 id = runIdAt(row);
    const std::string name = text.trimmed().toStdString();
    if (id == 0 || name.empty() || name == label(row).toStdString())
        return false;
    m_document->undoStack()->push(new RenameRun(this, id, label(row).toStdString(), name,
                                                tr("Rename run %1 to %2").arg(label(row), text.trimmed())));
    return true;
}

bool PlanLibrary::duplicate(int row)
{
    if (isPinned(row))
        return m_document->duplicatePlan(row);
    if (runIdAt(row) == 0)
        return false;
    const PlanSnapshotPtr s = m_runs[row - pinnedCount()].snapshot;
    PinnedPlan copy = pinnedPlanOf(*s);
    copy.label += " (copy)";
    cache(copy, s, QString());
    return m_document->pinPlan(copy);
}

void PlanLibrary::insertRun(const Run &run, int position)
{
    position = std::clamp(position, 0, static_cast<int>(m_runs.size()));
    m_runs.insert(m_runs.begin() + position, run);
    emit rowsChanged();
}

PlanLibrary::Run PlanLibrary::takeRun(quint64 id, int *position)
{
    for (size_t i = 0; i < m_runs.size(); ++i) {
        if (m_runs[i].id != id)
            continue;
        Run run = m_runs[i];
        m_runs.erase(m_runs.begin() + static_cast<std::ptrdiff_t>(i));
        *position = static_cast<int>(i);
        emit rowsChanged();
        return run;
    }
    return {};
}

void PlanLibrary::relabelRun(quint64 id, const std::string &label)
{
    for (Run &r : m_runs) {
        if (r.id != id)
            continue;
        auto copy = std::make_shared<PlanSnapshot>(*r.snapshot);
        copy->label = label;
        r.snapshot = std::move(copy);
        emit rowsChanged();
        return;
    }
}

} // namespace nest::ui
