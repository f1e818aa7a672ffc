#pragma once
// The Placement view's colouring as plain data: from a plan snapshot and the cluster the
// canvas shows, the colour, tooltip and capacity state of every device, the colour bands of
// every node (drawn when devices are too small to see), the legend, and whether the plan
// still fits the cluster. Everything is read from the snapshot's Report (DeviceReport:
// stage, replica, shard, memory) and Plan; nothing is computed here. No scene, no widget:
// the canvas items read it when they paint, so it survives every rebuild of the items.
#include "PlanSnapshot.h"

#include <QColor>
#include <QString>

#include <vector>

namespace nest::ui {

class PlacementOverlay {
public:
    enum class ColourBy { Stage, Replica };
    // One band of a node: the devices of one stage (or replica); key -1 = unused devices.
    struct Band {
        int key = -1;
        int devices = 0;
        QColor colour;
        bool operator==(const Band &) const = default;
    };
    struct LegendEntry {
        QColor colour;
        QString text;   // "stage 0 (layers 0-7)", "replica 3"
    };

    // `current` is the cluster the canvas shows (the document's), `forcedStale` marks the
    // overlay stale whatever the fit (the model changed, say).
    PlacementOverlay(PlanSnapshotPtr snapshot, const Topology &current, ColourBy by, bool forcedStale);

    ColourBy colourBy() const { return m_by; }
    const PlanSnapshotPtr &snapshot() const { return m_snapshot; }
    // Stale: forced, or the plan no longer fits `current` (other topology, device ids out of
    // range). Colours stay for the devices that still exist.
    bool isStale() const { return m_stale; }
    // "Stale: ...; re-run to update", empty when not stale.
    QString bannerText() const;

    // Device ids are those of `current`. Invalid colour for unused or unknown devices.
    QColor deviceColour(int device) const;
    bool isUsed(int device) const;
    bool isOverCapacity(int device) const;
    // "device 17 (node3, rack0): stage 2 (layers 16-23), replica 1, tp rank 1 / cp rank 0 /
    // ep rank 0, memory 41.2 GB of 80.0 GB (51 %)" plus the memory terms; empty when unknown.
    QString deviceToolTip(int device) const;
    // Bands of node `group` (a group index of `current`) in key order, unused last; empty
    // for a group that is not a node.
    const std::vector<Band> &nodeBands(int group) const;
    bool nodeOverCapacity(int group) const;
    const std::vector<LegendEntry> &legend() const { return m_legend; }

    // Colour `index` of `count` (stages or replicas): a qualitative palette, then spread hues.
    static QColor paletteColour(int index, int count);
    static QColor unusedColour();
    static QColor overCapacityColour();

private:
    struct DeviceState {
        int stage = -1;     // physical stage (pipeline position)
        int replica = -1;
        int shard = -1;
        bool over = false;
    };
    void checkFit(const Topology &current);
    void readDevices(const Topology &current);
    void buildBands(const Topology &current);
    void buildLegend();
    int keyOf(const DeviceState &d) const { return m_by == ColourBy::Stage ? d.stage : d.replica; }
    QColor colourOfKey(int key) const;
    QString stageText(int stage, bool withChunks) const;

    PlanSnapshotPtr m_snapshot;
    Topology m_current;          // a copy: names for tooltips, nodes for bands
    ColourBy m_by;
    bool m_stale = false;
    QString m_misfit;
    int m_stageCount = 0;        // physical stages
    int m_replicaCount = 0;
    std::vector<DeviceState> m_devices;       // by device id of `current`
    std::vector<std::vector<Band>> m_bands;   // by group index of `current`
    std::vector<char> m_nodeOver;             // by group index
    std::vector<LegendEntry> m_legend;
};

} // namespace nest::ui
