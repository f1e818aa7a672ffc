#pragma once
// Graphics items of the topology canvas. They mirror the document (group index + uid, read
// from the scene's layout) and hold no state of their own: the scene recreates them when
// the document changes. Devices are painted inside their node item (no item per device),
// and fold into one glyph when zoomed out (with the scene's overlay: one colour band per
// stage or replica). Fonts are sized in scene units (pixels at 100 %), so text has the same
// size on screen, in PNG, SVG and PDF.
#include "ClusterEdits.h"
#include "PlacementOverlay.h"
#include "TopologyLayout.h"

#include <QGraphicsItem>

namespace nest::ui {

class TopologyScene;

enum ItemType { GroupItemType = QGraphicsItem::UserType + 1, NodeItemType, LinkItemType, LabelItemType };

// A level >= 1 group: a container frame (racks, pods) and its switch glyph.
class GroupItem : public QGraphicsItem {
public:
    GroupItem(const TopologyScene *scene, int group, GroupUid uid, const TopologyLayout::Box &box);
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

private:
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
    int type() const override { return LabelItemType; }
    int group() const { return m_group; }
    QRectF boundingRect() const override;
    QPainterPath shape() const override { return {}; }
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QRectF naturalRect() const;

    QString m_text;
    int m_group;
    TopologyLayout::Box m_box;
    bool m_root;
    double m_widthPerPixel;   // text advance per pixel of font size
};

// All links of one group's switch, drawn with its level's pen.
class LinkItem : public QGraphicsItem {
public:
    explicit LinkItem(const TopologyLayout::Link &link);
    int type() const override { return LinkItemType; }
    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QPainterPath m_path;
    QRectF m_bounds;
    QColor m_color;
    double m_width;
};

} // namespace nest::ui
