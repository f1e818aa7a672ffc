#include "PlanSession.h"

#include "MeasuredDevice.h"

#include "WindowWording.h"
#include "WorkspaceDocument.h"
#include "PlanLibrary.h"
#include "PlanRunner.h"

#include <QTime>

namespace nest::ui {

PlanSession::PlanSession(WorkspaceDocument *document, QObject *parent)
    : QObject(parent)
    , m_document(document)
    , m_runner(new PlanRunner(this))
{
    m_liveTimer.setSingleShot(true);
    m_liveTimer.setInterval(150);
    connect(&m_liveTimer, &QTimer::timeout, this, &PlanSession::run);
    connect(m_document, &WorkspaceDocument::clusterChanged, this, &PlanSession::inputsEdited);
    connect(m_document, &WorkspaceDocument::modelChanged, this, &PlanSession::inputsEdited);
    connect(m_document, &WorkspaceDocument::searchChanged, this, &PlanSession::inputsEdited);
    connect(m_document, &WorkspaceDocument::calibrationChanged, this, &PlanSession::inputsEdited);
    connect(m_document, &WorkspaceDocument::clusterReset, this, &PlanSession::documentReset);
    connect(m_runner, &PlanRunner::progress, this,
            [this](quint64, double fraction, double best) { emit progress(fraction, best); });
    connect(m_runner, &PlanRunner::finished, this, &PlanSession::finished);
    connect(m_runner, &PlanRunner::failed, this, [this](quint64, const QString &coreReason) {
        const QString reason = windowWording(coreReason);
        emit failed(reason);
        emit message(tr("Planning failed: %1").arg(reason));
        emit runEnded();
    });
    connect(m_runner, &PlanRunner::cancelled, this, [this](quint64) {
        emit message(tr("Cancelled"));
        emit runEnded();
    });
}

PlanSession::~PlanSession() = default;

bool PlanSession::isRunning() const
{
    return m_runner->isRunning();
}

void PlanSession::run()
{
    m_liveTimer.stop();
    const std::string problem = m_document->topology().validate();
    if (!problem.empty()) {
        const QString reason = tr("the cluster is invalid: %1").arg(QString::fromStdString(problem));
        emit failed(reason);
        emit message(tr("Not planned: %1").arg(reason));
        return;
    }
    const QString label = tr("%1 %2").arg(QString::fromStdString(m_document->search().planner),
                                          QTime::currentTime().toString(QStringLiteral("HH:mm:ss")));
    m_runner->plan(m_document->workspace(), m_revision, label);
    emit runStarted(tr("Planning with %1…").arg(QString::fromStdString(m_document->search().planner)));
}

void PlanSession::cancel()
{
    m_liveTimer.stop();
    m_runner->cancel();
}

void PlanSession::setLive(bool live)
{
    if (live == m_live)
        return;
    m_live = live;
    emit liveChanged(live);
    if (live && (!m_current || m_stale))
        m_liveTimer.start();
    if (!live)
        m_liveTimer.stop();
}

void PlanSession::showPlan(const Plan &plan, const QString &label, const QString &planner)
{
    m_runner->evaluate(m_document->workspace(), plan, m_revision, label, planner);
    emit runStarted(tr("Evaluating %1…").arg(label));
}

void PlanSession::showPinned(int index)
{
    const auto &plans = m_document->plans();
    if (index < 0 || index >= static_cast<int>(plans.size()))
        return;
    const PinnedPlan &pin = plans[index];
    Workspace inputs = m_document->workspace();
    // Evaluated on the cluster, settings and model it was planned with (a pin without its
    // own model was planned with the workspace's).
    const bool ownModel = pin.model && !(*pin.model == inputs.model);
    inputs.cluster = pin.cluster;
    inputs.search = pin.settings;
    if (pin.model)
        inputs.model = *pin.model;
    // Stale when that is not today's cluster or model.
    const quint64 revision = pin.cluster == m_document->topology() && !ownModel ? m_revision : ~quint64(0);
    m_runner->evaluate(inputs, pin.plan, revision, QString::fromStdString(pin.label),
                       QString::fromStdString(pin.planner));
    emit runStarted(tr("Evaluating the pinned plan %1…").arg(QString::fromStdString(pin.label)));
}

bool PlanSession::pinCurrent()
{
    if (!m_current)
        return false;
    const PinnedPlan pin = pinnedPlanOf(*m_current);
    m_document->pinPlan(pin);
    emit message(tr("Pinned %1").arg(QString::fromStdString(pin.label)));
    return true;
}

void PlanSession::inputsEdited()
{
    ++m_revision;
    if (m_current)
        setStale(true);
    if (m_live)
        m_liveTimer.start();   // debounced: restarts on every edit
}

void PlanSession::documentReset()
{
    // Another document: its plans, not the last one's.
    m_runner->cancel();
    m_liveTimer.stop();
    m_previous.reset();
    m_current.reset();
    setStale(false);
    emit planChanged(nullptr, nullptr);
    // After the load's own change signals, so the revision it records is the loaded one.
    QTimer::singleShot(0, this, [this] {
        if (!m_document->plans().empty() && !m_runner->isRunning())
            showPinned(static_cast<int>(m_document->plans().size()) - 1);
    });
}

void PlanSession::finished(quint64, quint64 revision, PlanSnapshotPtr snapshot)
{
    if (m_current)
        m_previous = m_current;
    m_current = std::move(snapshot);
    setStale(revision != m_revision);
    emit planChanged(m_current, m_previous);
    emit message(planHeadline(*m_current, m_previous.get()) + (m_stale ? tr(" — stale: inputs changed meanwhile") : QString()));
    emit runEnded();
}

void PlanSession::setStale(bool stale)
{
    if (stale == m_stale)
        return;
    m_stale = stale;
    emit staleChanged(stale);
}

QString planHeadline(const PlanSnapshot &current, const PlanSnapshot *previous)
{
    const Report &r = current.report();
    if (!r.feasible)
        return QObject::tr("%1: infeasible: %2")
            .arg(QString::fromStdString(current.label),
                 r.reasons.empty() ? QObject::tr("no reason given") : QString::fromStdString(r.reasons.front()));
    QString text = QObject::tr("%1: %2 samples/s, iteration %3 s, %4")
                       .arg(QString::fromStdString(current.label))
                       .arg(r.samplesPerSecond, 0, 'f', 2)
                       .arg(r.iterationTime, 0, 'f', 4)
                       .arg(mfuKnown(r) ? QObject::tr("MFU %1 %").arg(100 * r.mfu, 0, 'f', 1) : QObject::tr("MFU unknown"));
    if (const QString change = throughputChangeText(current, previous); !change.isEmpty())
        text += QStringLiteral(" (%1)").arg(change);
    if (current.groupSize > 1)
        text += QObject::tr("; the %1 best distinct plans are in the plan list").arg(current.groupSize);
    return text;
}

QString throughputChangeText(const PlanSnapshot &current, const PlanSnapshot *previous)
{
    if (!previous || !current.report().feasible || !previous->report().feasible || previous->report().samplesPerSecond <= 0)
        return {};
    const double delta = current.report().samplesPerSecond / previous->report().samplesPerSecond - 1;
    return QObject::tr("%1%2 % vs the previous plan").arg(delta >= 0 ? QStringLiteral("+") : QString()).arg(100 * delta, 0, 'f', 2);
}

QString searchTimeText(const PlanSnapshot &snapshot)
{
    if (!snapshot.searched)
        return {};
    const double s = snapshot.stats.wallSeconds;
    const QString time = s < 0.01   ? QObject::tr("%1 ms").arg(1000 * s, 0, 'f', 1)
                         : s < 1.0 ? QObject::tr("%1 ms").arg(1000 * s, 0, 'f', 0)
                                   : QObject::tr("%1 s").arg(s, 0, 'f', 2);
    return snapshot.replanned ? QObject::tr("re-planned in %1").arg(time) : QObject::tr("planned in %1").arg(time);
}

} // namespace nest::ui
