#pragma once
// What the three chart views (Memory, Breakdown, Timeline) share: the snapshot and its
// stale flag, a stale banner, a toolbar row, and a stack that shows either a placeholder
// (no plan, or a plan these charts cannot draw) or the QCustomPlot, whose title and legend
// are part of the plot so that exports carry them. A view builds its axes in its
// constructor, draws in rebuild() and says in hasContent() whether there is anything to
// export.
// Narrow plots (four plans side by side in the Compare tab) keep their title and legend
// whole: before every replot the title is wrapped at word boundaries to the plot's width and
// the legend takes as many columns (at most legendColumns) as fit, the rest in more rows.
// The mouse wheel over a plot that sits in a scrolled page (the Compare tab) scrolls the
// page; Ctrl + wheel zooms the chart there. A plot that is the whole tab zooms on the wheel.
#include "PlanSnapshot.h"

#include <QWidget>

#include <algorithm>

class QCustomPlot;
class QHBoxLayout;
class QLabel;
class QStackedWidget;

namespace nest::ui {

class PlotView : public QWidget {
    Q_OBJECT
public:
    void setSnapshot(PlanSnapshotPtr snapshot);
    PlanSnapshotPtr snapshot() const { return m_snapshot; }
    void setStale(bool stale);
    bool isStale() const { return m_stale; }
    // .png/.svg/.pdf by extension, with the title and the legend; "FILE: reason" on failure
    // (nothing to export, unknown extension, unwritable file).
    bool exportTo(const QString &fileName, QString *error);

    QCustomPlot *plot() const { return m_plot; }
    QLabel *placeholder() const { return m_placeholder; }
    QLabel *staleBanner() const { return m_staleBanner; }
    QString title() const;   // the whole title, before wrapping
    // The width the title and legend are fitted to at the next replots, for a plot drawn at
    // another size than its widget's (toPainter into a report); 0: the widget's own width.
    void setExportWidth(int width) { m_exportWidth = std::max(width, 0); }

    // Shared value axes (the Compare tab): the value axis shows 0..maximum instead of the
    // chart's own range; 0 = automatic (the default). Kept across snapshots and modes.
    void setValueAxisMaximum(double maximum);
    double valueAxisMaximum() const { return m_valueAxisMax; }
    // The largest value the chart draws (top of the highest stack, capacity), 0 without
    // content: what a shared maximum must cover.
    double dataMaximum() const { return m_dataMax; }

protected:
    // objectName names the view, plotName its QCustomPlot; legendColumns before wrapping.
    PlotView(const QString &objectName, const QString &plotName, int legendColumns, QWidget *parent);

    // Draws m_snapshot; calls showPlaceholder() or showPlot().
    virtual void rebuild() = 0;
    virtual bool hasContent() const = 0;
    virtual void showPlaceholder(const QString &text);
    // The placeholder every chart shows for no snapshot ("No plan yet") or one whose plan
    // does not fit its cluster or model (the analysis' first error): shown, and true; false
    // (nothing shown) when the snapshot can be drawn. Called first by rebuild().
    bool showPlaceholderIfNoPlan();
    void showPlot();
    // The value axis from 0 to valueAxisMaximum() when set, else to dataMax * padding (or
    // `fallback` when dataMax is 0); remembers dataMax. Called by rebuild().
    void setValueRange(double dataMax, double padding, double fallback);
    // The row above the plot, for the view's own controls (empty by default).
    QHBoxLayout *toolbar() const { return m_toolbar; }
    // The plot's title ('\n' starts a line); shown wrapped to the plot's width.
    void setTitle(const QString &title);
    bool eventFilter(QObject *watched, QEvent *event) override;

    QCustomPlot *const m_plot;
    PlanSnapshotPtr m_snapshot;

private:
    // Wraps the title and sets the legend's columns for a plot `width` pixels wide.
    void fitTitleAndLegend(int width);
    QLabel *m_staleBanner;
    QLabel *m_placeholder;
    QStackedWidget *m_stack;
    QHBoxLayout *m_toolbar;
    bool m_stale = false;
    double m_valueAxisMax = 0;
    double m_dataMax = 0;
    QString m_title;
    int m_legendColumns;
    int m_exportWidth = 0;   // while exporting: the width the title and legend fit
};

} // namespace nest::ui
