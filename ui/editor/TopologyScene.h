#pragma once
// The topology canvas scene. Items mirror WorkspaceDocument: on each typed change of the
// cluster (ClusterChange: structure, group, level, cluster name) the scene lays the tree out
// again and updates its items by group uid: it creates the items of new groups, deletes those
// of removed ones and moves (or refreshes) only those whose index, box or content changed, so
// an item, its selection and whatever points at it survive an edit. Only a new document, the
// read-only switch and a new arrangement for the view's aspect recreate every item (rebuild).
// Selection is synced both ways with the document.
// Dragging a node box onto another rack asks the document to move it (one undo command);
// dragging one of several selected nodes moves them all (one undo step); a drop anywhere
// else is refused with the reason (dropRefused).
// The layout is chosen for the aspect ratio of the view showing it (setLayoutAspect).
// A read-only scene (the Placement view's) allows no drag and keeps its own selection out
// of the document. An overlay (PlacementOverlay) colours the devices; it lives in the scene,
// not in the items, so it survives every rebuild.
#include "WorkspaceDocument.h"
#include "ClusterEdits.h"
#include "TopologyLayout.h"

#include <QGraphicsScene>
#include <QHash>
#include <QPointer>

#include <memory>
#include <optional>
#include <vector>

class QPainter;

namespace nest::ui {

class GroupItem;
class LabelItem;
class LinkItem;
class NodeItem;
class PlacementOverlay;

class TopologyScene : public QGraphicsScene {
    Q_OBJECT
public:
    explicit TopologyScene(WorkspaceDocument *document, QObject *parent = nullptr);
    ~TopologyScene() override;

    WorkspaceDocument *document() const { return m_document; }
    const TopologyLayout &topologyLayout() const { return m_layout; }
    // Scene rectangle of a group's box (node box or container), empty when unknown.
    QRectF groupRect(int group) const;
    NodeItem *nodeItem(int group) const;
    GroupItem *groupItem(int group) const;
    // Where a dragged node would land on a rack: its drop slot's centre.
    QPointF dropPoint(int rack) const;

    // Read-only: nodes cannot be dragged or selected, the document's selection is neither
    // shown nor changed. Rebuilds the items.
    void setReadOnly(bool readOnly);
    bool isReadOnly() const { return m_readOnly; }
    // The colouring of devices and nodes; null = plain device-type colours.
    void setOverlay(std::shared_ptr<const PlacementOverlay> overlay);
    const PlacementOverlay *overlay() const { return m_overlay.get(); }
    // Device id (of the document's topology) at a scene point, -1 when none.
    int deviceAt(const QPointF &scenePos) const;
    // What the tooltip at a scene point says: the overlay's device tooltip, else empty.
    QString toolTipAt(const QPointF &scenePos) const;

    // Width / height of the view: the layout is rebuilt when another arrangement of racks
    // and pods fills it better (0 = no preference).
    void setLayoutAspect(double aspect);
    double layoutAspect() const { return m_aspect; }
    // Level of detail at `lod` (scene-to-device scale): a collapsed group (rack or pod, never
    // the root, never with an overlay) is drawn as one labelled block because its content
    // would be specks; everything inside a collapsed group is hidden.
    bool isCollapsed(int group, double lod) const;
    bool isHidden(int group, double lod) const;

    // True while exporting: items hide selection and drag feedback.
    bool isPrinting() const { return m_printing; }
    // Paints the whole diagram into `target` (one routine for PNG, SVG and PDF export).
    void renderDiagram(QPainter *painter, const QRectF &target);
    QRectF diagramRect() const;

    // What the last change of the document did to the items (tests and measurements).
    struct SyncStats {
        bool rebuilt = false;   // every item recreated
        int created = 0, deleted = 0, updated = 0;
    };
    const SyncStats &lastSync() const { return m_lastSync; }

public slots:
    void rebuild();

signals:
    void dropRefused(const QString &reason);
    void hoverMessage(const QString &message);

protected:
    void mousePressEvent(QGraphicsSceneMouseEvent *event) override;
    void mouseMoveEvent(QGraphicsSceneMouseEvent *event) override;
    void mouseReleaseEvent(QGraphicsSceneMouseEvent *event) override;
    void helpEvent(QGraphicsSceneHelpEvent *event) override;

private:
    // The document's clusterChanged: applies the typed change its other signals announced.
    void clusterChanged();
    // Items updated for `change` (see the header comment); the layout recomputed.
    void apply(const ClusterChange &change);
    void syncGroupItems(const std::vector<char> &refresh);
    void syncLinkItems();
    void dropItem(QGraphicsItem *item);
    void syncSelectionFromDocument();
    void syncSelectionToDocument();
    // The rack a node dropped at `scenePos` would go to, or -1 with the reason.
    int dropTarget(const QPointF &scenePos, int node, QString *reason) const;
    void clearDropHighlight();

    WorkspaceDocument *m_document;
    TopologyLayout m_layout;
    QHash<int, NodeItem *> m_nodes;     // by group index (renumbered on every change)
    QHash<int, GroupItem *> m_groups;
    QHash<GroupUid, LabelItem *> m_labels;
    std::vector<LinkItem *> m_links;     // parallel to m_layout.links
    // Announced by the document's typed signals, applied on its clusterChanged.
    std::optional<ClusterChange> m_pending;
    bool m_pendingReset = false;
    SyncStats m_lastSync;
    bool m_syncing = false;
    bool m_printing = false;
    bool m_readOnly = false;
    std::shared_ptr<const PlacementOverlay> m_overlay;

    double m_aspect = 0;

    struct Drag {
        NodeItem *item = nullptr;   // the grabbed node
        int node = -1;
        QList<NodeItem *> items;    // every dragged node (the grabbed one first)
        QPointF pressScenePos;
        bool moving = false;
    } m_drag;
    GroupItem *m_highlighted = nullptr;
};

} // namespace nest::ui
