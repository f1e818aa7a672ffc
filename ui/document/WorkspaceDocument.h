#pragma once
// The open document: the workspace being edited (cluster, model, search settings, pinned
// plans), its undo stack, file name and selection. The topology held here is the truth:
// the tree model, the canvas and the property editor only mirror it and resync on the
// typed change signals below. Loading sets the state directly (no undo entry); every user
// edit goes through an undo command (ClusterCommands.h).
#include "ClusterEdits.h"
#include "Workspace.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>

class QUndoStack;

namespace nest::ui {

// The workspace's calibration and the file that named it (empty: kept inline).
struct WorkspaceCalibration {
    std::optional<Calibration> calibration;
    std::string file;
    bool operator==(const WorkspaceCalibration &) const = default;
};

// What an applied state change touched, so that views update only what they must.
struct ClusterChange {
    enum Kind { Structure, Group, Level, Cluster };
    Kind kind = Structure;
    int index = -1;   // group (Group) or level (Level) index
};

class WorkspaceDocument : public QObject {
    Q_OBJECT
public:
    enum class FileKind { Workspace, Cluster };

    explicit WorkspaceDocument(QObject *parent = nullptr);
    ~WorkspaceDocument() override;

    const Topology &topology() const { return m_state.topology; }
    const ClusterState &state() const { return m_state; }
    QUndoStack *undoStack() const { return m_undo; }

    // The model, typed (parsed when the workspace was read or the edit made).
    const ModelSource &model() const { return m_model; }
    const SearchSettings &search() const { return m_search; }
    const std::vector<PinnedPlan> &plans() const { return m_plans; }
    // The cost model's calibration (none: uncalibrated).
    const std::optional<Calibration> &calibration() const { return m_calibration.calibration; }
    // The whole workspace as it would be saved.
    Workspace workspace() const;

    QString fileName() const { return m_fileName; }
    FileKind fileKind() const { return m_fileKind; }
    // Modified = the content differs from what was last loaded or written (compared by
    // value, per part), or the document was never saved (markUnsaved). The cluster and the
    // settings (model, search settings, pinned plans) are tracked apart because a cluster
    // file holds only the cluster.
    bool isModified() const { return m_modified; }
    bool isClusterModified() const;
    bool isSettingsModified() const;
    // After a successful save to `fileName`: records the name and kind. A workspace holds
    // everything, so nothing stays modified; a cluster file holds only the cluster, so
    // modified model or search settings stay modified.
    void markSaved(const QString &fileName, FileKind kind);
    // Marks every part as unsaved (a new document, or one restored from a recovery file).
    void markUnsaved();

    // Replaces everything and clears the undo stack (no undo entry); the loaded content is
    // what "modified" compares against.
    void load(Workspace workspace, const QString &fileName, FileKind kind);
    // Replaces the content but keeps the file name, kind and saved baseline (a recovery
    // restored over the file it belongs to); clears the undo stack.
    void replaceContent(Workspace workspace);

    GroupUid uidOf(int group) const;
    int groupOf(GroupUid uid) const;

    // Selected groups by uid; views set and follow it.
    const QList<GroupUid> &selection() const { return m_selection; }
    void setSelection(const QList<GroupUid> &uids);
    QList<int> selectedGroups() const;

    // --- user edits: push one undo command, or emit editRefused(reason) and return false
    bool moveNode(int node, int rack, int row = -1);
    // Moves several nodes into `rack` as one undo step; all or none (refused as a whole).
    bool moveNodes(const QList<int> &nodes, int rack);
    bool addRack(int near);   // near: a selected group (or -1) that says where
    bool addNode(int near);
    bool removeGroups(const QList<int> &groups);
    bool duplicateGroup(int group);
    bool setClusterName(const QString &name);
    bool setLevelName(int level, const QString &name);
    bool setLevelLink(int level, const LinkParams &link);
    bool setGroupName(int group, const QString &name);
    bool setGroupOverride(int group, const std::optional<LinkParams> &link);
    bool setNodeDevices(int node, int count, const DeviceSpec &type);
    // Replaces the whole cluster (an imported topology) as one undo step; the model, search
    // settings and pinned plans stay. Refused (editRefused) when `topology` is invalid.
    bool replaceCluster(const Topology &topology, const QString &text);
    // Model edits, one undo step each (mergeable ones merge into one: a form being typed
    // in). A refused edit changes nothing, returns false and says why in `refusal`.
    bool setModel(const ModelSource &model, bool mergeable = false);
    // {"preset": NAME}, keeping `run` (sequence length, global batch) when given.
    bool setModelPreset(const QString &preset, const std::optional<RunSettings> &run);
    // Full hyperparameters (mergeable); refused when validate() finds a problem.
    bool setModelConfig(const ModelConfig &config, QString *refusal = nullptr);
    // The model's sequence length and global batch (mergeable; hyperparameters only).
    bool setModelRunSettings(int seqLength, int globalBatch, QString *refusal = nullptr);
    bool setSearch(const SearchSettings &search);
    // Applies (or with nullopt removes) the calibration, kept inline in the workspace; one
    // undo step named `text`.
    bool setCalibration(const std::optional<Calibration> &calibration, const QString &text);
    // Keeps a plan in the workspace (one undo step); unpinPlan removes plan `index`.
    bool pinPlan(const PinnedPlan &plan);
    // Several plans as one undo step ("Run baselines"); `text` names the step.
    bool pinPlans(const std::vector<PinnedPlan> &plans, const QString &text);
    bool unpinPlan(int index);
    bool renamePlan(int index, const QString &label);
    // A copy of pinned plan `index` right after it, labelled "<label> (copy)".
    bool duplicatePlan(int index);

    // --- used by the undo commands only
    void applyState(const ClusterState &state, const ClusterChange &change);
    void applyModel(const ModelSource &model);
    void applySearch(const SearchSettings &search);
    void applyCalibration(const WorkspaceCalibration &calibration);
    void applyPlans(const std::vector<PinnedPlan> &plans);

signals:
    void clusterReset();                 // a new document was loaded
    void structureAboutToChange();       // groups are about to be added, removed or moved
    void structureChanged();
    void groupChanged(int group);        // a group's properties (name, devices, override)
    void levelChanged(int level);        // a level's name or link parameters
    void clusterChanged();               // after any change of the cluster (incl. reset)
    void modelChanged();
    void searchChanged();
    void calibrationChanged();
    void plansChanged();
    void selectionChanged();
    void editRefused(const QString &reason);
    void modifiedChanged(bool modified);
    void fileNameChanged(const QString &fileName);

private:
    // True for an index of m_plans; otherwise refuses the edit (editRefused) and returns false.
    bool checkPlanIndex(int index);
    void rebuildUidIndex();
    void pruneSelection();
    void updateModified();
    void setContent(Workspace workspace);
    int rackNear(int group) const;

    ClusterState m_state;
    ModelSource m_model;
    SearchSettings m_search;
    std::vector<PinnedPlan> m_plans;
    WorkspaceCalibration m_calibration;
    QUndoStack *m_undo = nullptr;
    QString m_fileName;
    FileKind m_fileKind = FileKind::Workspace;
    // What was last loaded or written, per part; a forced flag marks a part never saved.
    Workspace m_saved;
    bool m_clusterUnsaved = false;
    bool m_settingsUnsaved = false;
    bool m_modified = false;
    QHash<GroupUid, int> m_uidIndex;
    QList<GroupUid> m_selection;
    GroupUid m_nextUid = 1;
};

} // namespace nest::ui
