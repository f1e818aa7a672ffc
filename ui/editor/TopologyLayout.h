#pragma once
// Geometry of the topology canvas, computed from the tree alone (no items): switch glyphs
// on top, level-1 groups (racks) as containers with their nodes stacked inside, higher
// groups side by side below their switch (wrapped into rows when there are many), links
// routed per level. Racks with many nodes stack them in columns, and the root's children are
// wrapped into rows so that the whole diagram best fills a view of a given aspect ratio.
// Sizes are in scene units (pixels at 100 % zoom).
#include "Topology.h"

#include <QColor>
#include <QPainterPath>
#include <QRectF>

#include <vector>

namespace nest::ui {

struct TopologyLayout {
    struct Box {
        int group = -1;
        QRectF rect;          // container frame (level >= 1) or node box (level 0)
        QRectF switchRect;    // the switch glyph (level >= 1), empty for nodes
        QRectF dropSlot;      // racks: the "drop a node here" slot at the bottom
        // Level >= 2: the header band its name may fill when zoomed out (below its switch;
        // the root's right of it), above its children's links; empty for racks and nodes.
        QRectF labelBand;
        bool container = false;
    };
    struct Link {
        int group = -1;       // the group whose switch the links lead into
        int level = 0;        // the tree level whose link parameters apply
        double bandwidth = 0; // bytes/s per device (effective: override or level)
        bool overridden = false;  // the group has its own link parameters
        QPainterPath path;
    };
    std::vector<Box> boxes;   // one per group, indexed by group index
    std::vector<Link> links;
    QRectF bounds;
    int rackColumns = 1;      // node columns in racks with many nodes
    int rootPerRow = 0;       // children per row under the root (0 = automatic)
};

namespace layout {
inline constexpr double kDevice = 16;       // device square
inline constexpr double kDeviceGap = 4;
inline constexpr double kNodePad = 7;
inline constexpr double kNodeTitle = 17;
inline constexpr double kRackPad = 10;
inline constexpr double kBackplane = 12;    // left margin of a rack for its backplane line
inline constexpr double kRackHeader = 46;
inline constexpr double kNodeGap = 8;
inline constexpr double kSlot = 24;
inline constexpr double kSwitchW = 76;
inline constexpr double kSwitchH = 22;
inline constexpr double kGroupHeader = 64;
// A level >= 2 group's header grows with its children (kGroupHeader + kHeaderShare of the
// tallest, up to kMaxGroupHeader): zoomed out far enough to see whole pods of tall racks, a
// 64-unit header is a few pixels, and its name would spill over the racks' own names.
inline constexpr double kHeaderShare = 0.25;
inline constexpr double kMaxGroupHeader = 480;
inline constexpr double kChildGap = 26;
inline constexpr double kRowGap = 34;
} // namespace layout

// Devices per row inside a node box.
int deviceColumns(int deviceCount);
// Rectangle of device `i` of a node whose box is `nodeRect`.
QRectF deviceRect(const QRectF &nodeRect, int deviceCount, int i);

// aspect = width / height of the view the diagram should fill; 0 = no preference (racks in
// one column, rows of roughly square groups).
TopologyLayout computeLayout(const Topology &t, double aspect = 0);

// The colour of a tree level's links (and switches): Okabe-Ito, colour-blind safe, distinct
// for the first seven levels. Colour says the level; bandwidth is in the pen width.
QColor levelColor(int level);
// Pen width for a link of this bandwidth (bytes/s): thin for slow, thick for fast, on a log
// scale from 1 GB/s to 1 TB/s.
double bandwidthWidth(double bytesPerSecond);
// A stable colour per device type name.
QColor deviceColor(const std::string &typeName);

} // namespace nest::ui
