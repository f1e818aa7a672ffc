#pragma once
// The Breakdown view: where each pipeline stage spends one training iteration, as stacked
// bars in seconds per iteration, from the evaluator's Report (StageReport::cost and
// ::bubble); beside it, one stacked bar splitting the whole iteration over the same
// categories (the mean over pipeline positions, which adds up to the iteration time).
//
// What each bar is, for stage k with m = plan.numMicroBatches() micro-batches per
// iteration (the StageCost terms are seconds per micro-batch unless said otherwise); core's
// iterationSplit() (PlanComparison.h) defines them, the view only draws what it returns:
//   Compute        m * (forward + backward)
//   Recompute      m * recompute
//   TP / EP / CP   m * tpComm / m * epComm / m * cpComm
//   Pipeline p2p   m * p2p                  (activation send + gradient send)
//   Gradient sync  dpSync                   (per iteration, exposed part)
//   ZeRO           m * zeroComm + zeroGather (per-micro-batch traffic + post-step gather)
//   Optimizer      optimizer                (per iteration)
//   Bubble         StageReport::bubble      (idle time of the stage's devices)
// evaluate() sets bubble = iterationTime - (m * perMicroBatch + iterationExtra) per physical
// pipeline position, so with 1F1B / GPipe every stage's stack equals Report::iterationTime.
// With the interleaved schedule a device runs several stages (chunks); each stage's bar is
// its own work plus its device's idle time, and one device's chunks plus one bubble add up
// to the iteration time.
// Iteration split (right): per category, the sum over stages divided by the pipeline depth,
// the bubble counted once per physical position: the segments add up to iterationTime
// (core's iterationSplit(), PlanComparison.h, computes it for this view and the Compare tab).
//
// Split by layer kind (the "Split" box): the same bars, stacked by the kinds of the layers
// each stage holds (dense, moe, mamba, mtp, embedding, head, ...): each kind's compute,
// recompute, TP / EP / CP, gradient sync, ZeRO and optimizer seconds (core's
// layerKindSplit(), which shares every term of the report among the kinds), then the
// pipeline p2p and the bubble, which belong to no kind. Each stack adds up to the same total
// as by category, and so does the iteration split.
#include "PlotView.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

class QComboBox;
class QCPAxisRect;
class QCPBars;

namespace nest::ui {

class BreakdownChartView : public PlotView {
    Q_OBJECT
public:
    enum Split { ByCategory, ByKind };

    explicit BreakdownChartView(QWidget *parent = nullptr);

    void setSplit(Split split);
    Split split() const { return m_split; }
    QComboBox *splitBox() const { return m_splitBox; }

    // "Compute", "Recompute", "TP", "EP", "CP", "Pipeline p2p", "Gradient sync", "ZeRO",
    // "Optimizer", "Bubble": the stack order, bottom to top.
    static QStringList categoryNames();
    // The stacked series as drawn, bottom to top: categoryNames(), or by kind the plan's kinds
    // ("dense", "moe", ...) then "Pipeline p2p" and "Bubble".
    QStringList seriesNames() const { return m_series; }

    QCPAxisRect *splitRect() const { return m_splitRect; }
    QVector<double> keys() const { return m_keys; }  // stage indices
    // Seconds per iteration of the named series at each stage, as plotted.
    QVector<double> seriesValues(const QString &name) const;
    // The named series' segment of the iteration-split bar (seconds), as plotted.
    double splitValue(const QString &name) const;
    // What hovering at `pos` (plot pixels) shows; empty where there is nothing.
    QString toolTipAt(const QPoint &pos) const;

protected:
    void changeEvent(QEvent *event) override;

private:
    // What rebuild() draws: per series its colour, per stage value and tooltip detail, and
    // its segment of the iteration split.
    struct Table {
        QStringList series;
        std::vector<QColor> colours;
        std::vector<QVector<double>> values;   // [series][stage]
        std::vector<std::vector<QString>> details;  // [series][stage]; empty: none
        std::vector<double> split;             // [series]
    };
    Table categoryTable() const;
    Table kindTable() const;
    void addBars(const Table &table);
    void labelSplitBar(const std::vector<double> &split, double iterationTime);
    void rebuild() override;
    bool hasContent() const override { return !m_keys.isEmpty(); }
    void recolour();

    QComboBox *m_splitBox = nullptr;
    Split m_split = ByCategory;
    QCPAxisRect *m_splitRect = nullptr;
    QVector<double> m_keys;
    QStringList m_series;
    std::vector<std::vector<QString>> m_details;
    QVector<QCPBars *> m_bars;              // per series, main axis rect
    QVector<QCPBars *> m_splitBars;         // per series, iteration split
};

} // namespace nest::ui
