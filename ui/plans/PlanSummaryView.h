#pragma once
// The plan in words and numbers: what the evaluator, the simulator and the search say of
// one PlanSnapshot, a per-stage table and the plan JSON. It computes no cost: every number
// is read from the snapshot's Report, SimulationResult, Plan and SearchStats.
//
// Values (valueText(key)) and their documented precision:
//   "throughput"  samplesPerSecond, 2 decimals: "412.35 samples/s"
//   "tokens"      tokensPerSecond, 0 decimals: "1688986 tokens/s"
//   "mfu"         100 x mfu, 1 decimal: "38.8 %"
//   "iteration"   iterationTime, 4 decimals: "1.2345 s"
//   "memory"      peak vs the smallest usable capacity of the devices in use (GB = 1e9
//                 bytes, 2 decimals; share 1 decimal): "61.23 GB of 76.00 GB (80.6 %)"
//   "shape"       per dimension one width or its range over the pipeline stages:
//                 "tp 2, pp 2, dp 4, ep 1, cp 1"; "tp 4-8, pp 9, ..."; interleaved pp adds
//                 " (x2 virtual)"
//   "zero"        "off" (all 0), "ZeRO-1" (all 1), "mixed: ZeRO-0 to ZeRO-3" otherwise
//   "recompute", "sp"  "off", "on" (every stage) or "on for 3 of 9 stages"
//   "microbatch"  "2 x 64 micro-batches (global batch 512)"
//   "schedule"    "1f1b", "gpipe" or "interleaved, 2 virtual stages per device"
//   "simulation"  makespan 4 decimals, signed gap to the evaluator 2 decimals:
//                 "1.2400 s simulated, +0.45 % vs the evaluator"; or "not simulated: WHY"
//   "search"      "not searched (planner: file)" or "0.123 s, 10 states, 20 transitions,
//                 3 pruned, 40 stage-cost calls, 5 of 8 outer points searched (3 skipped);
//                 search value matches the evaluator" ("... DIFFERS from the evaluator")
//   "feasibility" "feasible" or "infeasible: REASON; REASON" (in red, bold)
//   "mfu" of a model without FLOPs (a measured profile such as the NEST artifact's):
//                 "unknown (the model gives no FLOPs)"
//   "device"      "Warning: the model's times were measured on tpuv4-like, but ..." when the
//                 profile was measured on another device (measuredDeviceWarning), else empty
// deltaText(): with a previous snapshot and both plans feasible,
//   "Δ throughput +3.2 % (was 412.0 samples/s), Δ iteration time -0.0123 s (-3.1 %)"
//   (percentages 1 decimal, was-throughput 1 decimal, time 4 decimals); empty otherwise.
#include "PlanSnapshot.h"

#include <QColor>
#include <QHash>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <utility>
#include <vector>

class QLabel;
class QVBoxLayout;
class QPlainTextEdit;
class QTableWidget;
class QTextDocument;

namespace nest::ui {

class PlanSummaryView : public QWidget {
    Q_OBJECT
public:
    explicit PlanSummaryView(QWidget *parent = nullptr);

    void setSnapshot(PlanSnapshotPtr snapshot);  // null = placeholder "No plan yet: ..."
    PlanSnapshotPtr snapshot() const { return m_snapshot; }
    // The plan to compare with (the previous run); null = no delta line.
    void setPrevious(PlanSnapshotPtr previous);
    PlanSnapshotPtr previous() const { return m_previous; }
    void setStale(bool stale);
    bool isStale() const { return m_stale; }
    // .png / .svg / .pdf render exportDocument() (the whole content, whatever the view's
    // size: no scroll bars, every stage, every line of the plan JSON); .json writes the plan
    // JSON (planToJson). False with *error = "FILE: reason" on failure.
    bool exportTo(const QString &fileName, QString *error);
    // The texts this view shows (title, feasibility, hint, values, delta, the stage table and
    // the plan JSON) laid out kExportWidth wide, as tall as they need. Needs a snapshot.
    std::unique_ptr<QTextDocument> exportDocument() const;
    static constexpr double kExportWidth = 960;   // logical pixels
    static constexpr double kExportMargin = 16;

    // For tests and the window: the texts shown (keys in the header comment).
    QString valueText(const QString &key) const;
    QString titleText() const;
    QString deltaText() const;
    QString planJsonText() const;
    QTableWidget *stageTable() const { return m_table; }
    QPlainTextEdit *planJsonView() const { return m_json; }
    QLabel *feasibilityLabel() const { return m_feasibility; }
    QLabel *deviceWarningLabel() const { return m_deviceWarning; }
    QLabel *staleBanner() const { return m_staleBanner; }
    QLabel *placeholder() const { return m_placeholder; }

    // The colour of the feasibility line for an infeasible plan.
    static QColor infeasibleColor();
    // The table's column headers, in order.
    static QStringList stageColumns();
    // The value rows in order: key (valueText) and caption.
    static std::vector<std::pair<const char *, QString>> valueRows();

private:
    void addTitle(QVBoxLayout *outer);
    void addNotes(QVBoxLayout *content);
    void addValueGrid(QVBoxLayout *content);
    void addStagesAndJson(QVBoxLayout *content);
    void rebuild();
    void fillValues(const PlanSnapshot &s);
    void fillTable(const PlanSnapshot &s);
    void updateDelta();

    PlanSnapshotPtr m_snapshot;
    PlanSnapshotPtr m_previous;
    bool m_stale = false;
    QLabel *m_title = nullptr;
    QLabel *m_staleBanner = nullptr;
    QLabel *m_placeholder = nullptr;
    QWidget *m_content = nullptr;
    QLabel *m_feasibility = nullptr;
    QLabel *m_hint = nullptr;   // batchSizeHint (core): why a large cluster's MFU is low
    QLabel *m_deviceWarning = nullptr;   // measuredDeviceWarning (core)
    QLabel *m_delta = nullptr;
    QHash<QString, QLabel *> m_values;
    QTableWidget *m_table = nullptr;
    QPlainTextEdit *m_json = nullptr;
};

} // namespace nest::ui
