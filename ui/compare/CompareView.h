#pragma once
// The Compare tab: 2-4 plans side by side. A metric table (core's compareMetrics: rows =
// metrics, one column per plan; non-reference cells add the difference and ratio to the
// reference; the best cell of each row bold on light green with the tooltip "best"; the
// raw value in Qt::UserRole, the difference in UserRole + 1, the ratio in UserRole + 2),
// a reference combo, and one column per plan: a header (label, planner, the plan's OWN
// cluster and its device count), its placement thumbnail, its memory and breakdown charts
// (memory charts share one value axis, breakdown charts another) or, for an infeasible plan,
// why. The view computes no cost: numbers come from the snapshots and core.
// On a narrow window nothing scrolls sideways but the metric table itself (its metric names,
// the vertical header, stay put), and the plan columns wrap (chartsPerRow()) so that no
// chart is narrower than kMinChartWidth.
#include "PlanComparison.h"
#include "PlanSnapshot.h"

#include <QList>
#include <QWidget>

#include <array>
#include <vector>

class QComboBox;
class QGridLayout;
class QLabel;
class QScrollArea;
class QTableWidget;

namespace nest::ui {

class BreakdownChartView;
class MemoryChartView;
class PlacementThumbnail;

class CompareView : public QWidget {
    Q_OBJECT
public:
    static constexpr int maxPlans = 4;

    explicit CompareView(QWidget *parent = nullptr);

    // 0..4 plans (more: the first four are shown, and a note says so); reference index.
    void setSnapshots(const QList<PlanSnapshotPtr> &plans, int reference = 0);
    // The plans shown (at most four).
    QList<PlanSnapshotPtr> snapshots() const { return m_plans; }
    int reference() const { return m_reference; }
    void setReference(int index);   // clamped; also the combo
    const std::vector<MetricRow> &metrics() const { return m_metrics; }

    QTableWidget *metricTable() const { return m_table; }
    QComboBox *referenceCombo() const { return m_referenceCombo; }
    QList<MemoryChartView *> memoryCharts() const { return m_memoryCharts; }
    QList<BreakdownChartView *> breakdownCharts() const { return m_breakdownCharts; }
    QList<PlacementThumbnail *> thumbnails() const { return m_thumbnails; }
    QList<QLabel *> columnHeaders() const { return m_headers; }
    // "Pin two or more plans and select them in the plan list to compare" when < 2 plans.
    QLabel *placeholder() const { return m_placeholder; }
    // "Showing the first 4 of N plans"; hidden unless more than four were given.
    QLabel *note() const { return m_note; }

    // .png/.svg: one sheet with the title, metric table, charts and placements
    // (ComparisonReport's exportComparisonImage); .pdf: the multi-page report
    // (writeComparisonReport); .json/.csv: comparisonJson / comparisonCsv.
    // false + "FILE: reason" on failure (fewer than two plans, unknown extension, ...).
    bool exportTo(const QString &fileName, QString *error);

    // Plans per row of charts at the current width (1..number of plans).
    int chartsPerRow() const { return m_perRow; }
    static constexpr int kMinChartWidth = 330;
    static constexpr int kMemoryChartHeight = 380;
    static constexpr int kBreakdownChartHeight = 440;

signals:
    void referenceChanged(int index);

private:
    void rebuildColumns();
    void fillTable();
    void fitTableHeight();  // rows to their contents, the table to its rows (no vertical scroll bar)
    void layoutColumns();   // the plans' widgets in the grid, chartsPerRow() per row
    void resizeEvent(QResizeEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

    QList<PlanSnapshotPtr> m_plans;
    int m_reference = 0;
    std::vector<MetricRow> m_metrics;

    QComboBox *m_referenceCombo;
    QLabel *m_placeholder;
    QLabel *m_note;
    QScrollArea *m_scroll;
    QTableWidget *m_table;
    QGridLayout *m_columns;
    QList<QWidget *> m_columnWidgets;  // everything in m_columns, deleted on rebuild
    QList<QLabel *> m_headers;
    QList<MemoryChartView *> m_memoryCharts;
    QList<BreakdownChartView *> m_breakdownCharts;
    QList<PlacementThumbnail *> m_thumbnails;
    // Per plan: header, thumbnail, then the memory and breakdown charts (or the reason an
    // infeasible plan has none, and nullptr).
    QList<std::array<QWidget *, 4>> m_planWidgets;
    int m_perRow = 0;
};

} // namespace nest::ui
