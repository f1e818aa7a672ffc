#pragma once
// The model's stack as a compact strip: its decoder blocks and MTP modules as coloured runs
// by layer kind (dense, moe, mamba, sliding, global, mla, attention, mlp, mtp, or a kind the
// model defines), each run as wide as its share of the layers, and below it a legend with
// the count of each kind ("dense 3 · moe 58 · mtp 1"). The runs come from core (layerRuns()
// and layerKindCounts() of the model's profile); the widget only draws them.
//
// It draws runs, never layers, and at most one segment per pixel column: runs narrower than
// a pixel share their column, which is drawn as bands, one per kind, as tall as the kind's
// share of the column's layers (a 100,000-layer stack of "5*sliding, global" draws as fast as
// a short one, as a sliding band over a thinner global one). While the runs
// fit, each is drawn at least kMinRunWidth pixels wide, so that one MTP module after 58 MoE
// blocks stays visible. A tooltip names the run under the mouse: its kind, count and blocks.
#include "LayerStack.h"
#include "ModelProfile.h"

#include <QWidget>

#include <utility>
#include <vector>

class QLabel;

namespace nest::ui {

class LayerStripView : public QWidget {
    Q_OBJECT
public:
    explicit LayerStripView(QWidget *parent = nullptr);

    // The blocks and MTP modules of `profile`; an empty profile clears the strip.
    void setProfile(const ModelProfile &profile);
    void clear();

    // What is shown, for tests and the panel: the runs (layerRuns()), the count per kind
    // (layerKindCounts()) and the legend as plain text ("dense 3 · moe 58 · mtp 1").
    const std::vector<LayerRun> &runs() const { return m_runs; }
    const std::vector<LayerRun> &counts() const { return m_counts; }
    QString legendText() const;
    QLabel *legend() const { return m_legend; }

    // One drawn segment of the bar: pixels [x0, x1), the kind (an index into counts()) that
    // holds most of its layers, the runs [firstRun, endRun) whose layers it covers (one run, or
    // several narrower than a pixel), and where several kinds share it, their bands top to
    // bottom as (kind, pixel rows), in counts() order; empty for one kind.
    struct Segment {
        double x0 = 0, x1 = 0;
        int kind = 0;
        int firstRun = 0, endRun = 0;
        std::vector<std::pair<int, int>> bands;
    };
    const std::vector<Segment> &segments() const { return m_segments; }
    // The bar's rectangle in widget coordinates.
    QRect barRect() const;
    // The tooltip at `pos` (widget coordinates); empty outside the bar.
    QString toolTipAt(const QPoint &pos) const;

    static constexpr int kBarHeight = 18;
    static constexpr double kMinRunWidth = 3;

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    bool event(QEvent *event) override;

private:
    void layOut();
    void layOutRuns(double width);
    void layOutColumns(int width);
    int kindIndex(const std::string &kind) const;
    static std::vector<std::pair<int, int>> pixelBands(const std::vector<double> &perKind, double layers, int rows);

    std::vector<LayerRun> m_runs;
    std::vector<LayerRun> m_counts;
    std::vector<long long> m_runStart;   // first position (0-based over the strip) of each run
    std::vector<int> m_runKind;          // each run's kind, an index into m_counts
    long long m_total = 0;               // positions in the strip (blocks + MTP modules)
    long long m_blocks = 0;              // of which decoder blocks (the rest: MTP modules)
    std::vector<Segment> m_segments;
    bool m_perRun = false;               // one segment per run (else per pixel column)
    QLabel *m_legend;
};

} // namespace nest::ui
