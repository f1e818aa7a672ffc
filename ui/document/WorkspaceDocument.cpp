#include "WorkspaceDocument.h"

#include "ClusterCommands.h"
#include "Limits.h"

#include <QUndoStack>

namespace nest::ui {

namespace {

template <typename Command>
bool pushEdit(WorkspaceDocument *doc, Result<ClusterState> result, const QString &text,
              ClusterChange change, int mergeId = -1)
{
    if (!result) {
        emit doc->editRefused(QString::fromStdString(result.error()));
        return false;
    }
    if (result.value() == doc->state())
        return true;  // nothing changed: no undo entry
    doc->undoStack()->push(new Command(doc, doc->state(), std::move(result).value(), change,
                                       text, mergeId));
    return true;
}

QString nameOf(const Topology &t, int g)
{
    return g >= 0 && g < static_cast<int>(t.groups.size())
               ? QString::fromStdString(t.groups[g].name) : QString();
}

// The last level-1 group in tree order, -1 when none.
int lastRack(const Topology &t, int g)
{
    if (g < 0)
        return -1;
    if (t.groups[g].level == 1)
        return g;
    for (auto it = t.groups[g].children.rbegin(); it != t.groups[g].children.rend(); ++it) {
        const int r = lastRack(t, *it);
        if (r >= 0)
            return r;
    }
    return -1;
}

} // namespace

WorkspaceDocument::WorkspaceDocument(QObject *parent)
    : QObject(parent)
    , m_undo(new QUndoStack(this))
{
    m_undo->setUndoLimit(500);
}

WorkspaceDocument::~WorkspaceDocument() = default;

Workspace WorkspaceDocument::workspace() const
{
    Workspace w;
    w.cluster = m_state.topology;
    w.model = m_model;
    w.search = m_search;
    w.plans = m_plans;
    w.calibration = m_calibration.calibration;
    w.calibrationFile = m_calibration.file;
    return w;
}

bool WorkspaceDocument::isClusterModified() const
{
    return m_clusterUnsaved || !(m_state.topology == m_saved.cluster);
}

bool WorkspaceDocument::isSettingsModified() const
{
    return m_settingsUnsaved || m_model != m_saved.model || !(m_search == m_saved.search) ||
           m_plans != m_saved.plans || m_calibration.calibration != m_saved.calibration ||
           m_calibration.file != m_saved.calibrationFile;
}

void WorkspaceDocument::updateModified()
{
    const bool modified = isClusterModified() || isSettingsModified();
    if (modified == m_modified)
        return;
    m_modified = modified;
    emit modifiedChanged(m_modified);
}

void WorkspaceDocument::markSaved(const QString &fileName, FileKind kind)
{
    m_fileKind = kind;
    m_saved.cluster = m_state.topology;
    m_clusterUnsaved = false;
    if (kind == FileKind::Workspace) {
        m_saved.model = m_model;
        m_saved.search = m_search;
        m_saved.plans = m_plans;
        m_saved.calibration = m_calibration.calibration;
        m_saved.calibrationFile = m_calibration.file;
        m_settingsUnsaved = false;
        m_undo->setClean();
    }
    if (m_fileName != fileName) {
        m_fileName = fileName;
        emit fileNameChanged(m_fileName);
    }
    updateModified();
}

void WorkspaceDocument::markUnsaved()
{
    m_clusterUnsaved = true;
    m_settingsUnsaved = true;
    updateModified();
}

void WorkspaceDocument::setContent(Workspace workspace)
{
    m_undo->clear();
    m_state = makeClusterState(std::move(workspace.cluster), m_nextUid);
    m_state.topology.reindex();
    m_model = std::move(workspace.model);
    m_search = workspace.search;
    m_plans = std::move(workspace.plans);
    m_calibration = {std::move(workspace.calibration), std::move(workspace.calibrationFile)};
    rebuildUidIndex();
    m_selection.clear();
}

void WorkspaceDocument::load(Workspace workspace, const QString &fileName, FileKind kind)
{
    setContent(std::move(workspace));
    m_saved = this->workspace();
    m_clusterUnsaved = false;
    m_settingsUnsaved = false;
    m_fileName = fileName;
    m_fileKind = kind;
    emit clusterReset();
    emit clusterChanged();
    emit modelChanged();
    emit searchChanged();
    emit calibrationChanged();
    emit plansChanged();
    emit selectionChanged();
    emit fileNameChanged(m_fileName);
    updateModified();
}

void WorkspaceDocument::replaceContent(Workspace workspace)
{
    setContent(std::move(workspace));
    emit clusterReset();
    emit clusterChanged();
    emit modelChanged();
    emit searchChanged();
    emit calibrationChanged();
    emit plansChanged();
    emit selectionChanged();
    updateModified();
}

GroupUid WorkspaceDocument::uidOf(int group) const
{
    return group >= 0 && group < static_cast<int>(m_state.uids.size()) ? m_state.uids[group] : 0;
}

int WorkspaceDocument::groupOf(GroupUid uid) const
{
    return m_uidIndex.value(uid, -1);
}

void WorkspaceDocument::setSelection(const QList<GroupUid> &uids)
{
    QList<GroupUid> valid;
    for (GroupUid u : uids)
        if (m_uidIndex.contains(u) && !valid.contains(u))
            valid.append(u);
    if (valid == m_selection)
        return;
    m_selection = valid;
    emit selectionChanged();
}

QList<int> WorkspaceDocument::selectedGroups() const
{
    QList<int> groups;
    for (GroupUid u : m_selection)
        groups.append(groupOf(u));
    return groups;
}

bool WorkspaceDocument::moveNode(int node, int rack, int row)
{
    const Topology &t = topology();
    return pushEdit<MoveNode>(this, nest::moveNode(m_state, node, rack, row),
                              tr("Move %1 to %2").arg(nameOf(t, node), nameOf(t, rack)),
                              {ClusterChange::Structure});
}

int WorkspaceDocument::rackNear(int group) const
{
    const Topology &t = topology();
    if (group < 0 || group >= static_cast<int>(t.groups.size()))
        return lastRack(t, t.root);
    if (t.groups[group].level == 1)
        return group;
    if (t.groups[group].level == 0)
        return t.groups[group].parent;
    return lastRack(t, group);
}

bool WorkspaceDocument::moveNodes(const QList<int> &nodes, int rack)
{
    if (nodes.size() == 1)
        return moveNode(nodes.first(), rack);
    // Applied one after another to a copy, by uid (a move may renumber groups), then pushed as
    // one command: one undo step, and nothing changes when any move is refused.
    Result<ClusterState> state = m_state;
    const GroupUid rackUid = uidOf(rack);
    for (int node : nodes) {
        const GroupUid uid = uidOf(node);
        state = nest::moveNode(*state, groupIndexOf(*state, uid), groupIndexOf(*state, rackUid));
        if (!state)
            break;
    }
    const Topology &t = topology();
    return pushEdit<MoveNode>(this, std::move(state),
                              tr("Move %n node(s) to %1", nullptr, static_cast<int>(nodes.size()))
                                  .arg(nameOf(t, rack)),
                              {ClusterChange::Structure});
}

bool WorkspaceDocument::addRack(int near)
{
    const Topology &t = topology();
    int parent = -1;
    if (near >= 0 && near < static_cast<int>(t.groups.size()) && t.groups[near].level == 2)
        parent = near;
    else {
        const int rack = rackNear(near);
        parent = rack >= 0 ? t.groups[rack].parent : -1;
    }
    GroupUid next = m_nextUid;
    auto result = nest::addRack(m_state, parent, next);
    const bool ok = pushEdit<AddRack>(this, std::move(result), tr("Add %1").arg(
        t.levelCount() > 1 ? QString::fromStdString(t.levels[1].name) : tr("rack")),
        {ClusterChange::Structure});
    m_nextUid = next;
    return ok;
}

bool WorkspaceDocument::addNode(int near)
{
    const Topology &t = topology();
    const int rack = rackNear(near);
    int row = -1;
    if (near >= 0 && near < static_cast<int>(t.groups.size()) && t.groups[near].level == 0)
        row = rowInParent(t, near) + 1;
    GroupUid next = m_nextUid;
    auto result = nest::addNode(m_state, rack, row, next);
    const bool ok = pushEdit<AddNode>(this, std::move(result), tr("Add node"),
                                      {ClusterChange::Structure});
    m_nextUid = next;
    return ok;
}

bool WorkspaceDocument::removeGroups(const QList<int> &groups)
{
    const std::vector<int> list(groups.begin(), groups.end());
    const QString text = groups.size() == 1 ? tr("Delete %1").arg(nameOf(topology(), groups[0]))
                                            : tr("Delete %n groups", nullptr, int(groups.size()));
    return pushEdit<RemoveGroups>(this, nest::removeGroups(m_state, list), text,
                                  {ClusterChange::Structure});
}

bool WorkspaceDocument::duplicateGroup(int group)
{
    GroupUid next = m_nextUid;
    auto result = nest::duplicateGroup(m_state, group, next);
    const bool ok = pushEdit<DuplicateGroup>(this, std::move(result),
                                             tr("Duplicate %1").arg(nameOf(topology(), group)),
                                             {ClusterChange::Structure});
    m_nextUid = next;
    return ok;
}

bool WorkspaceDocument::setClusterName(const QString &name)
{
    return pushEdit<ChangeGroupProperty>(this, nest::setClusterName(m_state, name.toStdString()),
                                         tr("Rename cluster"), {ClusterChange::Cluster});
}

bool WorkspaceDocument::setLevelName(int level, const QString &name)
{
    return pushEdit<ChangeLevelLink>(this, nest::setLevelName(m_state, level, name.toStdString()),
                                     tr("Rename level"), {ClusterChange::Level, level});
}

bool WorkspaceDocument::setLevelLink(int level, const LinkParams &link)
{
    return pushEdit<ChangeLevelLink>(this, nest::setLevelLink(m_state, level, link),
                                     tr("Change level %1 link").arg(level),
                                     {ClusterChange::Level, level}, MergeLevelLink + level);
}

bool WorkspaceDocument::setGroupName(int group, const QString &name)
{
    return pushEdit<ChangeGroupProperty>(this, nest::setGroupName(m_state, group, name.toStdString()),
                                         tr("Rename %1").arg(nameOf(topology(), group)),
                                         {ClusterChange::Group, group});
}

bool WorkspaceDocument::setGroupOverride(int group, const std::optional<LinkParams> &link)
{
    return pushEdit<ChangeGroupProperty>(this, nest::setGroupOverride(m_state, group, link),
                                         tr("Change %1 link").arg(nameOf(topology(), group)),
                                         {ClusterChange::Group, group}, MergeGroupLink);
}

bool WorkspaceDocument::replaceCluster(const Topology &topology, const QString &text)
{
    Topology t = topology;
    t.reindex();
    if (const std::string why = t.validate(); !why.empty())
        return pushEdit<ReplaceCluster>(this, Result<ClusterState>::failure(why), text, {ClusterChange::Structure});
    // Fresh uids: nothing of the old tree is the same group, so views rebuild what they show.
    return pushEdit<ReplaceCluster>(this, makeClusterState(std::move(t), m_nextUid), text, {ClusterChange::Structure});
}

bool WorkspaceDocument::setNodeDevices(int node, int count, const DeviceSpec &type)
{
    return pushEdit<ChangeGroupProperty>(this, nest::setNodeDevices(m_state, node, count, type),
                                         tr("Change devices of %1").arg(nameOf(topology(), node)),
                                         {ClusterChange::Group, node}, MergeNodeDevices);
}

bool WorkspaceDocument::setModel(const ModelSource &model, bool mergeable)
{
    if (model == m_model)
        return true;
    m_undo->push(new ChangeModel(this, m_model, model, mergeable));
    return true;
}

bool WorkspaceDocument::setModelPreset(const QString &preset, const std::optional<RunSettings> &run)
{
    return setModel(run ? ModelSource::preset(preset.toStdString(), run->seqLength, run->globalBatch)
                        : ModelSource::preset(preset.toStdString()));
}

bool WorkspaceDocument::setModelConfig(const ModelConfig &config, QString *refusal)
{
    if (const std::string problem = validate(config); !problem.empty()) {
        if (refusal)
            *refusal = QString::fromStdString(problem);
        return false;
    }
    return setModel(ModelSource::fromConfig(config), true);
}

bool WorkspaceDocument::setModelRunSettings(int seqLength, int globalBatch, QString *refusal)
{
    Result<ModelSource> next = m_model.withRunSettings(seqLength, globalBatch, "model");
    if (!next) {
        if (refusal)
            *refusal = QString::fromStdString(next.error());
        return false;
    }
    return setModel(*next, true);
}

bool WorkspaceDocument::setCalibration(const std::optional<Calibration> &calibration, const QString &text)
{
    const WorkspaceCalibration next{calibration, {}};
    if (next == m_calibration)
        return true;
    m_undo->push(new ChangeCalibration(this, m_calibration, next, text));
    return true;
}

bool WorkspaceDocument::setSearch(const SearchSettings &search)
{
    if (search == m_search)
        return true;
    m_undo->push(new ChangeSearchSettings(this, m_search, search));
    return true;
}

void WorkspaceDocument::applyState(const ClusterState &state, const ClusterChange &change)
{
    if (change.kind == ClusterChange::Structure) {
        emit structureAboutToChange();
        m_state = state;
        rebuildUidIndex();
        pruneSelection();
        emit structureChanged();
    } else {
        m_state = state;
        rebuildUidIndex();
        if (change.kind == ClusterChange::Group)
            emit groupChanged(change.index);
        else if (change.kind == ClusterChange::Level)
            emit levelChanged(change.index);
    }
    emit clusterChanged();
    updateModified();
}

void WorkspaceDocument::applyModel(const ModelSource &model)
{
    m_model = model;
    emit modelChanged();
    updateModified();
}

bool WorkspaceDocument::pinPlan(const PinnedPlan &plan)
{
    std::vector<PinnedPlan> after = m_plans;
    after.push_back(plan);
    m_undo->push(new ChangePinnedPlans(this, m_plans, std::move(after),
                                       tr("Pin plan %1").arg(QString::fromStdString(plan.label))));
    return true;
}

bool WorkspaceDocument::pinPlans(const std::vector<PinnedPlan> &plans, const QString &text)
{
    if (plans.empty())
        return false;
    std::vector<PinnedPlan> after = m_plans;
    after.insert(after.end(), plans.begin(), plans.end());
    m_undo->push(new ChangePinnedPlans(this, m_plans, std::move(after), text));
    return true;
}

bool WorkspaceDocument::checkPlanIndex(int index)
{
    if (index >= 0 && index < static_cast<int>(m_plans.size()))
        return true;
    emit editRefused(tr("there is no pinned plan %1").arg(index));
    return false;
}

bool WorkspaceDocument::renamePlan(int index, const QString &label)
{
    if (!checkPlanIndex(index))
        return false;
    const std::string name = label.trimmed().toStdString();
    if (name.empty()) {
        emit editRefused(tr("a plan needs a name"));
        return false;
    }
    if (name.size() > static_cast<size_t>(limits::labelChars.max)) {   // what the workspace loader accepts
        emit editRefused(tr("a plan's name may have at most %1 characters (this one has %2)")
                             .arg(static_cast<int>(limits::labelChars.max))
                             .arg(name.size()));
        return false;
    }
    if (name == m_plans[index].label)
        return false;
    std::vector<PinnedPlan> after = m_plans;
    after[index].label = name;
    m_undo->push(new ChangePinnedPlans(this, m_plans, std::move(after),
                                       tr("Rename plan %1 to %2").arg(QString::fromStdString(m_plans[index].label), label.trimmed())));
    return true;
}

bool WorkspaceDocument::duplicatePlan(int index)
{
    if (!checkPlanIndex(index))
        return false;
    std::vector<PinnedPlan> after = m_plans;
    PinnedPlan copy = m_plans[index];
    if (copy.label.size() + 7 <= static_cast<size_t>(limits::labelChars.max))  // stays loadable
        copy.label += " (copy)";
    after.insert(after.begin() + index + 1, std::move(copy));
    m_undo->push(new ChangePinnedPlans(this, m_plans, std::move(after),
                                       tr("Duplicate plan %1").arg(QString::fromStdString(m_plans[index].label))));
    return true;
}

bool WorkspaceDocument::unpinPlan(int index)
{
    if (!checkPlanIndex(index))
        return false;
    std::vector<PinnedPlan> after = m_plans;
    after.erase(after.begin() + index);
    m_undo->push(new ChangePinnedPlans(this, m_plans, std::move(after),
                                       tr("Unpin plan %1").arg(QString::fromStdString(m_plans[index].label))));
    return true;
}

void WorkspaceDocument::applyPlans(const std::vector<PinnedPlan> &plans)
{
    m_plans = plans;
    emit plansChanged();
    updateModified();
}

void WorkspaceDocument::applyCalibration(const WorkspaceCalibration &calibration)
{
    m_calibration = calibration;
    emit calibrationChanged();
    updateModified();
}

void WorkspaceDocument::applySearch(const SearchSettings &search)
{
    m_search = search;
    emit searchChanged();
    updateModified();
}

void WorkspaceDocument::rebuildUidIndex()
{
    m_uidIndex.clear();
    m_uidIndex.reserve(static_cast<qsizetype>(m_state.uids.size()));
    for (int i = 0; i < static_cast<int>(m_state.uids.size()); ++i)
        m_uidIndex.insert(m_state.uids[i], i);
}

void WorkspaceDocument::pruneSelection()
{
    QList<GroupUid> kept;
    for (GroupUid u : m_selection)
        if (m_uidIndex.contains(u))
            kept.append(u);
    if (kept != m_selection) {
        m_selection = kept;
        emit selectionChanged();
    }
}

} // namespace nest::ui
