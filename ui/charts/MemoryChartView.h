#pragma once
// The Memory view: stacked bars of what each device (or each pipeline stage) holds —
// weights, gradients, optimizer state, activations, stash, runtime overhead — against its
// capacity (a step line, since devices may differ), straight from the evaluator's Report:
// per device from Report::devices (used devices only, x = device id), per stage from
// StageReport::cost (the worst device of the stage). Per stage by layer kind, each stage's
// bar is split by the kinds of the layers it holds (dense, moe, mamba, mtp, embedding, head,
// ...: weights, gradients, optimizer state and stash of those layers, from core's
// layerKindSplit()), with what belongs to no kind (the working activations, the runtime
// overhead) on top: the same totals as per stage. Bars over capacity get a red outline
// and marker, and the title counts them. Stays usable with thousands of devices (bars of
// width 1 without outlines, a readable number of ticks, horizontal zoom and pan).
#include "PlotView.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

#include <vector>

class QComboBox;
class QCPBars;
class QCPGraph;

namespace nest::ui {

class MemoryChartView : public PlotView {
    Q_OBJECT
public:
    enum Mode { PerDevice, PerStage, PerStageByKind };

    explicit MemoryChartView(QWidget *parent = nullptr);

    void setMode(Mode mode);
    Mode mode() const { return m_mode; }

    // The stacked components, bottom to top, as named in the legend.
    static QStringList componentNames();  // "Weights", ..., "Overhead"
    static QString capacityName();         // "Capacity"
    static QString overCapacityName();     // "Over capacity"
    // The stacked series as drawn, bottom to top: componentNames(), or by kind the plan's
    // kinds ("dense", "moe", ...) then "Activations" and "Overhead".
    QStringList seriesNames() const { return m_series; }

    // For tests and the window: the chart as drawn.
    QComboBox *modeBox() const { return m_modeBox; }
    // Bar positions: device ids (per device) or stage indices (per stage), ascending.
    QVector<double> keys() const { return m_keys; }
    // Values (bytes) of the named series at each key, read back from the plotted data: a
    // component, capacityName() (the capacity line over each bar) or overCapacityName()
    // (the bar's total where it exceeds capacity, else 0). Empty for an unknown name.
    QVector<double> seriesValues(const QString &name) const;
    int overCapacityCount() const { return m_overCount; }
    // What hovering at `pos` (plot pixels) shows; empty where there is nothing.
    QString toolTipAt(const QPoint &pos) const;

protected:
    void changeEvent(QEvent *event) override;

private:
    struct Row {
        double key = 0;
        std::vector<double> parts;  // m_series order
        double total = 0, capacity = 0;
        bool over = false;
        QString name;
        std::vector<QString> details;  // per part, what it holds (by kind), else empty
    };
    // What the chart draws of m_rows: per series the bar heights, the capacity step line
    // (NaN where device ids are not consecutive), the bars over capacity, the tallest value.
    struct Bars {
        QVector<double> keys, capKeys, capValues, overKeys, overValues;
        std::vector<QVector<double>> values;  // per series
        double top = 0;
    };
    std::vector<Row> collectRows();
    std::vector<Row> collectKindRows();
    Bars barsOfRows() const;
    void addBars(const Bars &bars);
    QString chartTitle() const;
    void rebuild() override;
    bool hasContent() const override { return !m_keys.isEmpty(); }
    void recolour();

    QComboBox *m_modeBox = nullptr;
    QCPGraph *m_capacity = nullptr;
    Mode m_mode = PerDevice;
    QVector<double> m_keys;
    std::vector<Row> m_rows;
    QStringList m_series;
    std::vector<QColor> m_colours;
    int m_overCount = 0;
};

} // namespace nest::ui
