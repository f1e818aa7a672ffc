#include "SeriesChart.h"

#include "PlotExport.h"

#include <qcustomplot.h>

#include <cmath>

namespace nest::ui {

namespace {

const QColor kSeriesColours[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xd6, 0x27, 0x28), QColor(0x2c, 0xa0, 0x2c),
                           QColor(0xff, 0x7f, 0x0e), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b)};
const QCPScatterStyle::ScatterShape kShapes[] = {QCPScatterStyle::ssDisc, QCPScatterStyle::ssSquare,
                                                 QCPScatterStyle::ssTriangle, QCPScatterStyle::ssDiamond,
                                                 QCPScatterStyle::ssCross, QCPScatterStyle::ssStar};

} // namespace

void drawSeriesChart(QCustomPlot *plot, const SeriesChartData &data)
{
    plot->clearGraphs();
    QCPTextElement *title = setupPlotTitleAndLegend(plot, 6);
    title->setText(data.title);
    plot->xAxis->setLabel(data.xLabel);
    plot->yAxis->setLabel(data.yLabel);
    if (data.logX) {
        plot->xAxis->setScaleType(QCPAxis::stLogarithmic);
        QSharedPointer<QCPAxisTickerLog> log(new QCPAxisTickerLog);
        log->setLogBase(2);
        plot->xAxis->setTicker(log);
    }
    if (!data.xTicks.empty()) {
        QSharedPointer<QCPAxisTickerText> text(new QCPAxisTickerText);
        for (double t : data.xTicks)
            text->addTick(t, QLocale().toString(t, 'g', 3));   // 1.41, not 1.41421
        plot->xAxis->setTicker(text);
    }
    double xMin = INFINITY, xMax = -INFINITY, yMax = 0;
    for (size_t i = 0; i < data.series.size(); ++i) {
        const ChartSeries &s = data.series[i];
        QCPGraph *g = plot->addGraph();
        g->setName(s.name);
        const QColor c = kSeriesColours[i % std::size(kSeriesColours)];
        g->setPen(QPen(c, 2));
        g->setScatterStyle(QCPScatterStyle(kShapes[i % std::size(kShapes)], c, 8));
        QVector<double> xs, ys;
        for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
            xs << s.x[k];
            ys << (std::isfinite(s.y[k]) ? s.y[k] : qQNaN());
            xMin = std::min(xMin, s.x[k]);
            xMax = std::max(xMax, s.x[k]);
            if (std::isfinite(s.y[k]))
                yMax = std::max(yMax, s.y[k]);
        }
        g->setData(xs, ys, true);
    }
    if (std::isfinite(xMin)) {
        if (data.logX)
            plot->xAxis->setRange(xMin / 1.3, xMax * 1.3);
        else {
            const double pad = xMax > xMin ? 0.05 * (xMax - xMin) : 1;
            plot->xAxis->setRange(xMin - pad, xMax + pad);
        }
    }
    plot->yAxis->setRange(0, yMax > 0 ? yMax * 1.1 : 1);
}

bool exportSeriesChart(const SeriesChartData &data, const QString &fileName, QString *error, int width,
                       int height)
{
    QCustomPlot plot;
    plot.resize(width, height);
    drawSeriesChart(&plot, data);
    return exportPlot(&plot, fileName, error, width, height);
}

} // namespace nest::ui
