#pragma once
// The Memory view: stacked bars of what each device (or each pipeline stage) holds —
// weights, gradients, optimizer state, activations, stash, runtime overhead — against its
// capacity (a step line, since devices may differ), straight from the evaluator's Report:
// per device from Report::devices (used devices only, x = device id), per stage from
// StageReport::cost (the worst device of the stage). Bars over capacity get a red outline
// and marker, and the title counts them. Stays usable with thousands of devices (bars of
// width 1 without outlines, a readable number of ticks, horizontal zoom and pan).
#include "PlanSnapshot.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

#include <array>

class QComboBox;
class QCustomPlot;
class QCPBars;
class QCPGraph;
class QLabel;
class QStackedWidget;

namespace nest::ui {

class MemoryChartView : public QWidget {
    Q_OBJECT
public:
    enum Mode { PerDevice, PerStage };

    explicit MemoryChartView(QWidget *parent = nullptr);

    void setSnapshot(PlanSnapshotPtr snapshot);
    PlanSnapshotPtr snapshot() const { return m_snapshot; }
    void setStale(bool stale);
    bool isStale() const { return m_stale; }
    // .png/.svg/.pdf by extension, with the title and the legend; "FILE: reason" on failure.
    bool exportTo(const QString &fileName, QString *error);

    void setMode(Mode mode);
    Mode mode() const { return m_mode; }

    // The stacked components, bottom to top, as named in the legend.
    static QStringList componentNames();  // "Weights", ..., "Overhead"
    static QString capacityName();         // "Capacity"
    static QString overCapacityName();     // "Over capacity"

    // For tests and the window: the chart as drawn.
    QCustomPlot *plot() const { return m_plot; }
    QComboBox *modeBox() const { return m_modeBox; }
    QLabel *placeholder() const { return m_placeholder; }
    QLabel *staleBanner() const { return m_staleBanner; }
    // Bar positions: device ids (per device) or stage indices (per stage), ascending.
    QVector<double> keys() const { return m_keys; }
    // Values (bytes) of the named series at each key, read back from the plotted data: a
    // component, capacityName() (the capacity line over each bar) or overCapacityName()
    // (the bar's total where it exceeds capacity, else 0). Empty for an unknown name.
    QVector<double> seriesValues(const QString &name) const;
    int overCapacityCount() const { return m_overCount; }
    QString title() const;
    // What hovering at `pos` (plot pixels) shows; empty where there is nothing.
    QString toolTipAt(const QPoint &pos) const;

protected:
    void changeEvent(QEvent *event) override;

private:
    struct Row {
        double key = 0;
        std::array<double, 6> parts{};  // componentNames() order
        double total = 0, capacity = 0;
        bool over = false;
        QString name;
    };
    std::vector<Row> collectRows() const;
    void rebuild();
    void showPlaceholder(const QString &text);
    void recolour();

    QCustomPlot *m_plot = nullptr;
    QComboBox *m_modeBox = nullptr;
    QLabel *m_placeholder = nullptr;
    QLabel *m_staleBanner = nullptr;
    QStackedWidget *m_stack = nullptr;
    QCPGraph *m_capacity = nullptr;
    PlanSnapshotPtr m_snapshot;
    Mode m_mode = PerDevice;
    bool m_stale = false;
    QVector<double> m_keys;
    std::vector<Row> m_rows;
    int m_overCount = 0;
};

} // namespace nest::ui
