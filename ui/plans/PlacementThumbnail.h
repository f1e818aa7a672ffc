#pragma once
// A small picture of where a plan's stages sit on the cluster the plan was planned on (the
// snapshot's own topology, not the document's): racks (level-1 groups, or the whole cluster
// when there are none) side by side (wrapped into rows when there are many), each a column
// of node boxes, each device a square in its stage's colour
// (PlacementOverlay::paletteColour(stage, pipeline depth); unused devices grey). When the
// squares would be under 2 px a node is drawn as one band per run of equal colours, so a
// 16384-device cluster paints quickly. A one-line caption names the cluster and its size.
// Colours are read from the snapshot's Report (DeviceReport::stage); nothing is computed.
#include "PlanSnapshot.h"

#include <QColor>
#include <QImage>
#include <QWidget>

#include <vector>

namespace nest::ui {

class PlacementThumbnail : public QWidget {
    Q_OBJECT
public:
    explicit PlacementThumbnail(QWidget *parent = nullptr);

    void setSnapshot(PlanSnapshotPtr snapshot);
    PlanSnapshotPtr snapshot() const { return m_snapshot; }

    // "paper-v100-16 — 16 devices"; empty without a snapshot.
    QString caption() const { return m_caption; }
    // The colour drawn for `device` (an id of the snapshot's topology); invalid when unknown.
    QColor deviceColour(int device) const;
    // Racks drawn (level-1 groups; 1 when the cluster has none; 0 without a snapshot).
    int rackCount() const { return static_cast<int>(m_racks.size()); }

    // The thumbnail at `size` (for reports), white background, caption included.
    QImage render(QSize size) const;
    // Paints into `rect` of any painter (widget, image, PDF).
    void paint(QPainter &painter, const QRect &rect) const;

    QSize sizeHint() const override { return {260, 150}; }
    QSize minimumSizeHint() const override { return {120, 70}; }

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    void paintDevices(QPainter &painter, const QRect &area) const;

    PlanSnapshotPtr m_snapshot;
    QString m_caption;
    std::vector<std::vector<int>> m_racks;  // per rack: its node groups
    std::vector<QColor> m_colours;          // per device id
    int m_maxNodes = 0;                     // most nodes in one rack
    int m_maxDevices = 0;                   // most devices in one node
};

} // namespace nest::ui
