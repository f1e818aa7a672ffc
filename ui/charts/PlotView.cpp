#include "PlotView.h"

#include "PlotExport.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

namespace nest::ui {

PlotView::PlotView(const QString &objectName, const QString &plotName, int legendColumns, QWidget *parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_staleBanner(makeStaleBanner(this))
    , m_placeholder(makePlaceholder(this))
    , m_stack(new QStackedWidget(this))
    , m_toolbar(new QHBoxLayout)
{
    setObjectName(objectName);
    m_plot->setObjectName(plotName);
    // A long title or legend must not widen the window: the docks keep their room.
    m_plot->setMinimumSize(320, 240);
    setupPlotTitleAndLegend(m_plot, legendColumns);
    m_stack->addWidget(m_placeholder);
    m_stack->addWidget(m_plot);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_staleBanner);
    layout->addLayout(m_toolbar);
    layout->addWidget(m_stack, 1);
}

void PlotView::setSnapshot(PlanSnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void PlotView::setStale(bool stale)
{
    m_stale = stale;
    m_staleBanner->setVisible(stale);
}

bool PlotView::exportTo(const QString &fileName, QString *error)
{
    if (!hasContent()) {
        *error = tr("%1: nothing to export: %2").arg(fileName, m_placeholder->text());
        return false;
    }
    return exportPlot(m_plot, fileName, error);
}

QString PlotView::title() const
{
    const QCPTextElement *t = plotTitle(m_plot);
    return t ? t->text() : QString();
}

void PlotView::setValueAxisMaximum(double maximum)
{
    m_valueAxisMax = maximum > 0 ? maximum : 0;
    if (!hasContent())
        return;
    if (m_valueAxisMax == 0)
        return rebuild();  // back to the chart's own padding
    m_plot->yAxis->setRange(0, m_valueAxisMax);
    m_plot->replot(QCustomPlot::rpQueuedRefresh);
}

void PlotView::setValueRange(double dataMax, double padding, double fallback)
{
    m_dataMax = dataMax;
    m_plot->yAxis->setRange(0, m_valueAxisMax > 0 ? m_valueAxisMax : dataMax > 0 ? dataMax * padding : fallback);
}

void PlotView::showPlaceholder(const QString &text)
{
    m_dataMax = 0;
    m_placeholder->setText(text);
    m_stack->setCurrentWidget(m_placeholder);
}

bool PlotView::showPlaceholderIfNoPlan()
{
    if (!m_snapshot) {
        showPlaceholder(noPlanText());
        return true;
    }
    if (!m_snapshot->analysis.wellFormed()) {
        showPlaceholder(tr("This plan does not fit the cluster or model:\n%1")
                            .arg(QString::fromStdString(m_snapshot->analysis.errors.front())));
        return true;
    }
    return false;
}

void PlotView::showPlot()
{
    m_stack->setCurrentWidget(m_plot);
}

} // namespace nest::ui
