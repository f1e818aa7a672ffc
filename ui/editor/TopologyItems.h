#pragma once
// Graphics items of the topology canvas. They mirror the document (group index + uid, read
// from the scene's layout) and hold no state of their own: on a change of the document the
// scene hands each item its group's new index and geometry (sync), creates the items of new
// groups and deletes those of removed ones, so an item lives as long as its group. Devices are painted inside their node item (no item per device),
// and fold into one glyph when zoomed out (with the scene's overlay: one colour band per
// stage or replica). Further out (without overlay) a rack or pod whose content would be
// specks is drawn as one labelled block (name, devices, device type; TopologyScene::
// isCollapsed). Links and switches take their level's colour (levelColor); a group with its
// own link parameters keeps that colour and is marked: dashed links, a "*" badge, the value in
// its label and tooltip. Fonts are sized in scene units (pixels at 100 %), so text has the
// same size on screen, in PNG, SVG and PDF.
#include "ClusterEdits.h"
#include "PlacementOverlay.h"
#include "TopologyLayout.h"

#include <QGraphicsItem>

namespace nest::ui {

class TopologyScene;

// A font sized in scene units (pixels at 100 % zoom).
QFont canvasFont(double pixels, bool bold = false);

// A node's header: its name (left, bold) and device type (right), elided so that they never
// overlap; in a narrow node the type is elided first, then dropped, then the name elided.
struct NodeHeader {
    QString name, type;       // as drawn ("" = not drawn)
    QRectF nameRect, typeRect;
};
NodeHeader nodeHeaderLayout(const QRectF &nodeRect, const QString &name, const QString &type);

enum ItemType { GroupItemType = QGraphicsItem::UserType + 1, NodeItemType, LinkItemType, LabelItemType };

// A level >= 1 group: a container frame (racks, pods) and its switch glyph.
class GroupItem : public QGraphicsItem {
public:
    GroupItem(const TopologyScene *scene, int group, GroupUid uid, const TopologyLayout::Box &box);
    // The group's index and box after an edit; `refresh`: its name, devices or links may have
    // changed. Returns false when only the index changed (or nothing) and `refresh` is false:
    // the group reads and looks the same, nothing is redrawn.
    bool sync(int group, const TopologyLayout::Box &box, bool refresh);
    int type() const override { return GroupItemType; }
    int group() const { return m_group; }
    GroupUid uid() const { return m_uid; }
    int level() const { return m_level; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;
    // Highlight while a node is dragged over it: 0 none, 1 valid target, 2 refused.
    void setDropHighlight(int state);
    const TopologyLayout::Box &box() const { return m_box; }
    // "level · N dev · bandwidth" (with "*" and "(level: X)" when overridden).
    QString detailText() const;
    // The lines of the zoomed-out block: name, "N devices · type", "M nodes".
    QStringList blockLines() const;

private:
    void readGroup();
    QRectF detailRect() const;
    void paintBlock(QPainter *painter, double lod) const;
    void paintContainer(QPainter *painter, double lod, bool selected) const;
    void paintDropSlot(QPainter *painter, double lod) const;
    void paintOverrideBadge(QPainter *painter, const QColor &accent) const;

    const TopologyScene *m_scene;
    int m_group;
    GroupUid m_uid;
    int m_level = 1;
    TopologyLayout::Box m_box;
    int m_highlight = 0;
};

// A node: a box with its device squares (or a folded glyph when zoomed out).
class NodeItem : public QGraphicsItem {
public:
    NodeItem(const TopologyScene *scene, int group, GroupUid uid, const QRectF &rect);
    // As GroupItem::sync.
    bool sync(int group, const QRectF &rect, bool refresh);
    int type() const override { return NodeItemType; }
    int group() const { return m_group; }
    GroupUid uid() const { return m_uid; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;
    // Device index (within the node) under an item-local point, -1 when none.
    int deviceAt(const QPointF &itemPos) const;
    QRectF rect() const { return m_rect; }
    // The overlay's colour bands of this node (drawn when folded); empty without overlay.
    std::vector<PlacementOverlay::Band> bands() const;

private:
    void readGroup();
    void paintBands(QPainter *painter, const PlacementOverlay &overlay, double lod) const;
    void paintDevices(QPainter *painter, const PlacementOverlay *overlay, const QColor &typeColour) const;

    const TopologyScene *m_scene;
    int m_group;
    GroupUid m_uid;
    QRectF m_rect;   // in item coordinates (origin at the layout's top-left)
};

// The name of a level >= 1 group. At readable zoom it sits under the switch glyph; zoomed
// out it keeps a readable size on screen (scaled against the zoom, shrunk to fit its box)
// and is drawn above the nodes on a light plate. Takes no mouse events.
class LabelItem : public QGraphicsItem {
public:
    LabelItem(const TopologyScene *scene, int group, const TopologyLayout::Box &box);
    // As GroupItem::sync.
    bool sync(int group, const TopologyLayout::Box &box, bool refresh);
    int type() const override { return LabelItemType; }
    int group() const { return m_group; }
    QString text() const { return m_text; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override { return {}; }
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    void readGroup();
    QRectF naturalRect() const;

    const TopologyScene *m_scene;
    QString m_text;
    int m_group;
    TopologyLayout::Box m_box;
    bool m_root;
    double m_widthPerPixel = 0;   // text advance per pixel of font size
};

// All links of one group's switch, drawn in its level's colour; width by bandwidth, dashed
// when the group overrides its level's link parameters.
class LinkItem : public QGraphicsItem {
public:
    LinkItem(const TopologyScene *scene, const TopologyLayout::Link &link);
    // Takes `link`'s group, level, bandwidth and path; false when they are the same.
    bool sync(const TopologyLayout::Link &link);
    int type() const override { return LinkItemType; }
    int group() const { return m_link.group; }
    int level() const { return m_link.level; }
    double bandwidth() const { return m_link.bandwidth; }
    bool isOverridden() const { return m_link.overridden; }
    QColor colour() const { return levelColor(m_link.level); }
    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    void readLink();

    const TopologyScene *m_scene;
    TopologyLayout::Link m_link;
    QRectF m_bounds;
    double m_width = 0;
};

} // namespace nest::ui
