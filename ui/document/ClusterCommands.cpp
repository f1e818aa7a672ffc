#include "ClusterCommands.h"

namespace nest::ui {

ChangeCluster::ChangeCluster(WorkspaceDocument *document, ClusterState before, ClusterState after,
                             ClusterChange change, const QString &text, int mergeId)
    : QUndoCommand(text)
    , m_document(document)
    , m_before(std::move(before))
    , m_after(std::move(after))
    , m_change(change)
    , m_mergeId(mergeId)
{
}

void ChangeCluster::undo()
{
    m_document->applyState(m_before, m_change);
}

void ChangeCluster::redo()
{
    m_document->applyState(m_after, m_change);
}

bool ChangeCluster::mergeWith(const QUndoCommand *other)
{
    const auto *o = dynamic_cast<const ChangeCluster *>(other);
    if (!o || m_mergeId < 0 || o->m_mergeId != m_mergeId || o->m_change.kind != m_change.kind ||
        o->m_change.index != m_change.index)
        return false;
    m_after = o->m_after;
    setObsolete(m_after == m_before);
    return true;
}

ChangeModel::ChangeModel(WorkspaceDocument *document, ModelSource before, ModelSource after, bool mergeable)
    : QUndoCommand(QObject::tr("Change model"))
    , m_document(document)
    , m_before(std::move(before))
    , m_after(std::move(after))
    , m_mergeable(mergeable)
{
}

void ChangeModel::undo()
{
    m_document->applyModel(m_before);
}

void ChangeModel::redo()
{
    m_document->applyModel(m_after);
}

bool ChangeModel::mergeWith(const QUndoCommand *other)
{
    const auto *o = dynamic_cast<const ChangeModel *>(other);
    if (!o || !m_mergeable || !o->m_mergeable)
        return false;
    m_after = o->m_after;
    setObsolete(m_after == m_before);
    return true;
}

ChangeSearchSettings::ChangeSearchSettings(WorkspaceDocument *document, SearchSettings before,
                                           SearchSettings after)
    : QUndoCommand(QObject::tr("Change search settings"))
    , m_document(document)
    , m_before(std::move(before))
    , m_after(std::move(after))
{
}

void ChangeSearchSettings::undo()
{
    m_document->applySearch(m_before);
}

void ChangeSearchSettings::redo()
{
    m_document->applySearch(m_after);
}

bool ChangeSearchSettings::mergeWith(const QUndoCommand *other)
{
    const auto *o = dynamic_cast<const ChangeSearchSettings *>(other);
    if (!o)
        return false;
    m_after = o->m_after;
    setObsolete(m_after == m_before);
    return true;
}

ChangeCalibration::ChangeCalibration(WorkspaceDocument *document, WorkspaceCalibration before,
                                     WorkspaceCalibration after, const QString &text)
    : QUndoCommand(text)
    , m_document(document)
    , m_before(std::move(before))
    , m_after(std::move(after))
{
}

void ChangeCalibration::undo()
{
    m_document->applyCalibration(m_before);
}

void ChangeCalibration::redo()
{
    m_document->applyCalibration(m_after);
}

ChangePinnedPlans::ChangePinnedPlans(WorkspaceDocument *document, std::vector<PinnedPlan> before,
                                     std::vector<PinnedPlan> after, const QString &text)
    : QUndoCommand(text)
    , m_document(document)
    , m_before(std::move(before))
    , m_after(std::move(after))
{
}

void ChangePinnedPlans::undo()
{
    m_document->applyPlans(m_before);
}

void ChangePinnedPlans::redo()
{
    m_document->applyPlans(m_after);
}

} // namespace nest::ui
