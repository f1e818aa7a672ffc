#pragma once
// The comparison of 2-4 plans as files: a multi-page PDF report (one section per page:
// "Inputs", "Metrics", "Charts", "Placement"; real text, so pdftotext finds it), a one-sheet
// PNG / SVG of the same content (title, metric table, charts, placements), and the metric
// table as JSON / CSV (core's comparisonJson / comparisonCsv). Numbers come from core
// (PlanComparison.h) and the snapshots' Reports; charts are the plan chart views rendered
// off-screen with shared value axes. Every file is written through writeFileAtomically();
// errors read "FILE: reason".
#include "PlanComparison.h"
#include "PlanSnapshot.h"

#include <QList>
#include <QString>

#include <vector>

namespace nest::ui {

class PlotView;

// The plans as core compares them; the pointers point into the snapshots of `plans`.
std::vector<ComparedPlan> comparedPlans(const QList<PlanSnapshotPtr> &plans);
// "Throughput (samples/s)"; "Shape" for text rows.
QString metricRowTitle(const MetricRow &row);
// A cell of the metric table: the value's text, and for a plan other than the reference
// its relative difference and ratio to it: "398.1 (-3.4 %, 0.97×)".
QString metricCellText(const MetricRow &row, int plan, int reference);
// "planner nest; micro-batches 1/2/4/8; schedules 1f1b/gpipe/interleaved; headroom 0 %;
// framework megatron-core".
QString settingsSummary(const PlanSnapshot &snapshot);
// "paper-v100-16 — 16 devices".
QString clusterText(const PlanSnapshot &snapshot);
// Why a plan has no charts (its evaluation errors or Report::reasons); empty when feasible.
QString infeasibleText(const PlanSnapshot &snapshot);
// One value axis for all views: 0 .. (largest dataMaximum()) * padding.
void shareValueAxes(const QList<PlotView *> &views, double padding);

// The PDF report (4 pages). Needs at least one plan.
bool writeComparisonReport(const QString &pdfFile, const QList<PlanSnapshotPtr> &plans, int reference,
                           QString *error);
// .png or .svg: one sheet with the title, the metric table, the charts and the placements.
bool exportComparisonImage(const QString &fileName, const QList<PlanSnapshotPtr> &plans, int reference,
                           QString *error);
// .json or .csv: the metric table.
bool exportComparisonData(const QString &fileName, const QList<PlanSnapshotPtr> &plans, int reference,
                          QString *error);

} // namespace nest::ui
