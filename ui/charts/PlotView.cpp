#include "PlotView.h"

#include "PlotExport.h"

#include <QAbstractScrollArea>
#include <QCoreApplication>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <qcustomplot.h>

#include <algorithm>

namespace nest::ui {

PlotView::PlotView(const QString &objectName, const QString &plotName, int legendColumns, QWidget *parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_staleBanner(makeStaleBanner(this))
    , m_placeholder(makePlaceholder(this))
    , m_stack(new QStackedWidget(this))
    , m_toolbar(new QHBoxLayout)
    , m_legendColumns(std::max(legendColumns, 1))
{
    setObjectName(objectName);
    m_plot->setObjectName(plotName);
    // A long title or legend must not widen the window: the docks keep their room.
    m_plot->setMinimumSize(320, 240);
    setupPlotTitleAndLegend(m_plot, legendColumns);
    connect(m_plot, &QCustomPlot::beforeReplot, this,
            [this] { fitTitleAndLegend(m_exportWidth > 0 ? m_exportWidth : m_plot->width()); });
    m_plot->installEventFilter(this);
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
    constexpr int width = 1200;   // exportPlot's default size
    setExportWidth(width);
    const bool ok = exportPlot(m_plot, fileName, error, width);
    setExportWidth(0);
    m_plot->replot(QCustomPlot::rpQueuedRefresh);   // back to the widget's width
    return ok;
}

QString PlotView::title() const
{
    return m_title;
}

void PlotView::setTitle(const QString &title)
{
    m_title = title;
    if (QCPTextElement *t = plotTitle(m_plot))
        t->setText(title);   // wrapped at the next replot
}

namespace {

// `text` broken at spaces into lines no wider than `width`; a word wider than that is elided.
QString wrapped(const QString &text, const QFontMetrics &metrics, int width)
{
    QStringList out;
    for (const QString &paragraph : text.split(QLatin1Char('\n'))) {
        QString line;
        for (const QString &word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (metrics.horizontalAdvance(longer) <= width || line.isEmpty()) {
                line = longer;
                continue;
            }
            out << line;
            line = word;
        }
        out << metrics.elidedText(line, Qt::ElideRight, width);
    }
    return out.join(QLatin1Char('\n'));
}

// The width of a legend of these items in `columns` columns, filled row by row.
int legendWidth(const QCPLegend *legend, int columns)
{
    std::vector<int> widest(static_cast<size_t>(columns), 0);
    int k = 0;
    for (int i = 0; i < legend->itemCount(); ++i) {
        const QCPAbstractLegendItem *item = legend->item(i);   // empty cells of the grid: nullptr
        if (!item)
            continue;
        int &w = widest[static_cast<size_t>(k++ % columns)];
        w = std::max(w, item->minimumOuterSizeHint().width());
    }
    int total = legend->margins().left() + legend->margins().right() + (columns - 1) * legend->columnSpacing() + 2;
    for (int w : widest)
        total += w;
    return total;
}

} // namespace

void PlotView::fitTitleAndLegend(int width)
{
    const int room = std::max(width - 12, 40);
    if (QCPTextElement *t = plotTitle(m_plot))
        t->setText(wrapped(m_title, QFontMetrics(t->font()), room));
    QCPLegend *legend = m_plot->legend;
    int items = 0;
    for (int i = 0; i < legend->itemCount(); ++i)
        items += legend->item(i) ? 1 : 0;
    int columns = std::clamp(std::min(m_legendColumns, items), 1, std::max(m_legendColumns, 1));
    while (columns > 1 && legendWidth(legend, columns) > room)
        --columns;
    if (legend->wrap() != columns) {
        legend->setWrap(columns);
        legend->setFillOrder(legend->fillOrder(), true);   // re-arrange the items in the new columns
    }
}

bool PlotView::eventFilter(QObject *watched, QEvent *event)
{
    if (watched != m_plot || event->type() != QEvent::Wheel)
        return QWidget::eventFilter(watched, event);
    auto *wheel = static_cast<QWheelEvent *>(event);
    if (wheel->modifiers() & Qt::ControlModifier)
        return false;   // Ctrl + wheel: the chart zooms
    QAbstractScrollArea *page = nullptr;
    for (QWidget *w = parentWidget(); w && !page; w = w->parentWidget())
        page = qobject_cast<QAbstractScrollArea *>(w);
    if (!page)
        return false;   // the chart is the whole view: the wheel zooms
    // The page scrolls, as it would over any other widget on it.
    const QPointF at = page->viewport()->mapFromGlobal(wheel->globalPosition());
    QWheelEvent forwarded(at, wheel->globalPosition(), wheel->pixelDelta(), wheel->angleDelta(), wheel->buttons(),
                          wheel->modifiers(), wheel->phase(), wheel->inverted(), wheel->source());
    QCoreApplication::sendEvent(page->viewport(), &forwarded);
    return true;
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
