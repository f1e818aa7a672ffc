#pragma once
// A line chart of several named series over one x axis (throughput against devices, micro-
// batch or a swept cluster parameter, one line per planner), drawn with QCustomPlot in the
// plan charts' conventions (title and legend part of the plot, PlotExport.h). Used by
// `nest-cli reproduce` for its figures and by the window's sweep view.
#include <QString>

#include <vector>

class QCustomPlot;

namespace nest::ui {

struct ChartSeries {
    QString name;
    std::vector<double> x, y;  // same length; NaN y = no point (planner found no plan)
};

struct SeriesChartData {
    QString title, xLabel, yLabel;
    bool logX = false;         // log2 axis (device counts 64 ... 1024)
    std::vector<double> xTicks;  // explicit ticks (empty = automatic), labelled to 3 significant digits
    std::vector<ChartSeries> series;
};

// Fills `plot` (a fresh QCustomPlot) with the chart: one line with markers per series, a
// distinct colour and marker each; gaps where y is NaN.
void drawSeriesChart(QCustomPlot *plot, const SeriesChartData &data);
// Draws into an off-screen plot and exports it (.png/.svg/.pdf by extension) at
// width x height; needs a QApplication. false + *error "FILE: reason" on failure.
bool exportSeriesChart(const SeriesChartData &data, const QString &fileName, QString *error,
                       int width = 900, int height = 560);

} // namespace nest::ui
