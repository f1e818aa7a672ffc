#pragma once
// Undo commands, named as verbs (Tiled's habit). A cluster command stores the state before
// and after the edit, so undo restores the tree exactly (a removal keeps what it removed).
// Property edits from spin boxes merge while they target the same property of the same
// item, so dragging a spin box is one undo step.
#include "WorkspaceDocument.h"

#include <QUndoCommand>

namespace nest::ui {

// Merge ids of the mergeable commands (QUndoCommand::id()).
enum CommandId {
    MergeLevelLink = 1000,   // + level
    MergeGroupLink = 2000,
    MergeNodeDevices = 3000,
    MergeModel = 4000,
    MergeSearch = 5000,
};

class ChangeCluster : public QUndoCommand {
public:
    ChangeCluster(WorkspaceDocument *document, ClusterState before, ClusterState after,
                  ClusterChange change, const QString &text, int mergeId = -1);
    void undo() override;
    void redo() override;
    int id() const override { return m_mergeId; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    WorkspaceDocument *m_document;
    ClusterState m_before;
    ClusterState m_after;
    ClusterChange m_change;
    int m_mergeId;
};

// The named commands of the editor; each is a ChangeCluster with its text.
class MoveNode : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
class AddRack : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
class AddNode : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
class RemoveGroups : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
class DuplicateGroup : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
class ChangeLevelLink : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
class ChangeGroupProperty : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };
// The whole cluster replaced by another (File > Import Topology): one undo step back to the old.
class ReplaceCluster : public ChangeCluster { public: using ChangeCluster::ChangeCluster; };

class ChangeModel : public QUndoCommand {
public:
    ChangeModel(WorkspaceDocument *document, ModelSource before, ModelSource after, bool mergeable);
    void undo() override;
    void redo() override;
    int id() const override { return m_mergeable ? MergeModel : -1; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    WorkspaceDocument *m_document;
    ModelSource m_before;
    ModelSource m_after;
    bool m_mergeable;
};

class ChangeSearchSettings : public QUndoCommand {
public:
    ChangeSearchSettings(WorkspaceDocument *document, SearchSettings before, SearchSettings after);
    void undo() override;
    void redo() override;
    int id() const override { return MergeSearch; }
    bool mergeWith(const QUndoCommand *other) override;

private:
    WorkspaceDocument *m_document;
    SearchSettings m_before;
    SearchSettings m_after;
};

// Applying, replacing or removing the cost model's calibration (Model ▸ Calibrate from
// Measured Runs…): the calibration and the file it was named by, before and after.
class ChangeCalibration : public QUndoCommand {
public:
    ChangeCalibration(WorkspaceDocument *document, WorkspaceCalibration before, WorkspaceCalibration after,
                      const QString &text);
    void undo() override;
    void redo() override;

private:
    WorkspaceDocument *m_document;
    WorkspaceCalibration m_before;
    WorkspaceCalibration m_after;
};

// Pinning or unpinning plans: the whole list before and after.
class ChangePinnedPlans : public QUndoCommand {
public:
    ChangePinnedPlans(WorkspaceDocument *document, std::vector<PinnedPlan> before, std::vector<PinnedPlan> after,
                      const QString &text);
    void undo() override;
    void redo() override;

private:
    WorkspaceDocument *m_document;
    std::vector<PinnedPlan> m_before;
    std::vector<PinnedPlan> m_after;
};

} // namespace nest::ui
