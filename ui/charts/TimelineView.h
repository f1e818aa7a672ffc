#pragma once
// The Timeline view: a Gantt chart of one simulated iteration (SimulationResult::events).
// One row per stage ("stage 0" at the top); forward, recompute and backward blocks per
// micro-batch coloured by kind, point-to-point transfers as thin bars at the row's edge
// (send at the bottom, receive at the top), then each stage's gradient sync and optimizer
// step. Micro-batch numbers are painted inside blocks wide enough to hold them, only when
// at most ~400 blocks of a kind are visible. The time axis zooms (wheel) and pans (drag);
// "Fit" shows the whole iteration. Blocks are painted by one light plottable per kind (no
// QCPItem per event), so 10k+ events replot in a few milliseconds.
#include "PlotView.h"

#include <QHash>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QPushButton;
class QCPRange;

namespace nest::ui {

class TimelineBlocks;  // the painting plottable (TimelineView.cpp)

class TimelineView : public PlotView {
    Q_OBJECT
public:
    explicit TimelineView(QWidget *parent = nullptr);

    // exportTo() writes the current zoom.

    // The simulator's event kinds this view draws, in legend order.
    static QStringList kinds();  // "forward","recompute","backward","send","recv","dp-sync","optimizer"

    QPushButton *fitButton() const { return m_fitButton; }
    // Blocks drawn for events of this simulator kind (0 for a kind with no event).
    int blockCount(const QString &kind) const;
    QCPRange timeRange() const;
    // What hovering at `pos` (plot pixels) shows; empty where there is nothing.
    QString toolTipAt(const QPoint &pos) const;

public slots:
    void fit();  // the whole iteration, every stage

protected:
    void changeEvent(QEvent *event) override;

private:
    void rebuild() override;
    bool hasContent() const override { return m_makespan > 0; }
    void showPlaceholder(const QString &text) override;
    void clampTimeRange(const QCPRange &range);

    QPushButton *m_fitButton = nullptr;
    QVector<TimelineBlocks *> m_layers;  // kinds() order, then "other"
    QHash<QString, int> m_otherCounts;   // events of kinds this view does not know
    double m_makespan = 0;
    int m_rows = 0;
};

} // namespace nest::ui
