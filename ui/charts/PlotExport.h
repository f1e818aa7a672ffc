#pragma once
// Export of a QCustomPlot chart, and the few conventions every plan chart (memory,
// breakdown, timeline) shares so that what is exported looks like what is on screen:
//  * the title is a QCPTextElement in the plot's top layout row and the legend sits in the
//    row below it (not inside an axis rect), so PNG/SVG/PDF exports carry both;
//  * colours follow the widget palette (recoloured on QEvent::PaletteChange: dark themes);
//  * value axes label bytes in GB and times in s / ms / µs (custom tickers).
// exportPlot() picks the format by extension: .png (QCustomPlot::toPixmap), .svg
// (QSvgGenerator with viewBox and title) and .pdf (QPdfWriter, text stays text); all three
// render through QCPPainter + QCustomPlot::toPainter and write through QSaveFile
// (writeFileAtomically). Errors read "FILE: reason".
#include <QSharedPointer>
#include <QString>

#include <functional>

class QCustomPlot;
class QCPAxisTicker;
class QCPTextElement;
class QLabel;
class QPalette;
class QPoint;
class QWidget;

namespace nest::ui {

// Renders `plot` at width x height (logical pixels) into fileName. Replots first.
bool exportPlot(QCustomPlot *plot, const QString &fileName, QString *error, int width = 1200, int height = 700);

// Puts a title element in a new top row and the legend (visible, filled in columns, wrapped
// after `legendColumns` entries) in the row below. Call once on a fresh plot, before any
// other layout change. Returns the title element (owned by the plot).
QCPTextElement *setupPlotTitleAndLegend(QCustomPlot *plot, int legendColumns = 6);
// The title element that setupPlotTitleAndLegend() made (nullptr without one).
QCPTextElement *plotTitle(const QCustomPlot *plot);

// Axes, grids, legend, title and background in the palette's colours.
void applyPlotPalette(QCustomPlot *plot, const QPalette &palette);

// Tick labels for a byte axis in GB (1 GB = 1e9 bytes, as the evaluator reports).
QSharedPointer<QCPAxisTicker> makeBytesTicker();
// Tick labels for a time axis in seconds: "1.5 s", "250 ms", "40 µs" by the visible range.
QSharedPointer<QCPAxisTicker> makeSecondsTicker();

// Shows textAt(position in plot pixels) as a tooltip while the mouse moves over the plot
// (hidden where it returns an empty string).
void showToolTipsOnHover(QCustomPlot *plot, std::function<QString(const QPoint &)> textAt);

// The texts and labels every plan view shows the same way.
QString noPlanText();     // "No plan yet: press Run (Ctrl+R)"
QString staleText();      // "Stale: the cluster or model changed since this plan; re-run to update"
QLabel *makeStaleBanner(QWidget *parent);   // hidden until the view is marked stale
QLabel *makePlaceholder(QWidget *parent);   // centred, word-wrapped, shows noPlanText()

} // namespace nest::ui
