#include "SweepView.h"

#include "WindowWording.h"

#include "PlotExport.h"
#include "SaveFile.h"
#include "SeriesChart.h"
#include "SweepDialog.h"
#include "SweepRunner.h"

#include <QEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace nest::ui {

namespace {

// Explicit ticks at the swept values while they stay legible.
constexpr size_t kMaxExplicitTicks = 8;

// A constant ratio (not 1) between at least three positive values, and not a constant step.
bool isGeometric(const std::vector<double> &v)
{
    if (v.size() < 3)
        return false;
    for (double x : v)
        if (!(x > 0))
            return false;
    const double ratio = v[1] / v[0], step = v[1] - v[0];
    if (std::abs(ratio - 1) < 1e-9)
        return false;
    bool sameRatio = true, sameStep = true;
    for (size_t i = 1; i < v.size(); ++i) {
        sameRatio = sameRatio && std::abs(v[i] / v[i - 1] - ratio) <= 1e-6 * ratio;
        sameStep = sameStep && std::abs((v[i] - v[i - 1]) - step) <= 1e-6 * std::abs(step);
    }
    return sameRatio && !sameStep;
}

} // namespace

SweepView::SweepView(QWidget *parent)
    : QWidget(parent)
    , m_chart(std::make_unique<SeriesChartData>())
{
    setObjectName(QStringLiteral("sweepView"));
    auto *layout = new QVBoxLayout(this);
    m_staleBanner = makeStaleBanner(this);
    m_staleBanner->setText(tr("Stale: the cluster or model changed since this sweep; re-run to update"));
    layout->addWidget(m_staleBanner);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("sweepStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);

    m_progressRow = new QWidget(this);
    auto *row = new QHBoxLayout(m_progressRow);
    row->setContentsMargins(0, 0, 0, 0);
    m_progress = new QProgressBar(m_progressRow);
    m_progress->setObjectName(QStringLiteral("sweepProgress"));
    m_progress->setRange(0, 1000);
    m_cancel = new QPushButton(tr("Cancel"), m_progressRow);
    m_cancel->setObjectName(QStringLiteral("sweepCancel"));
    row->addWidget(m_progress, 1);
    row->addWidget(m_cancel);
    m_progressRow->hide();
    layout->addWidget(m_progressRow);

    m_stack = new QStackedWidget(this);
    m_placeholder = makePlaceholder(m_stack);
    m_placeholder->setText(noSweepText());
    m_stack->addWidget(m_placeholder);
    auto *split = new QSplitter(Qt::Vertical, m_stack);
    m_plotHost = new QWidget(split);
    m_plotLayout = new QVBoxLayout(m_plotHost);
    m_plotLayout->setContentsMargins(0, 0, 0, 0);
    m_table = new QTableWidget(split);
    m_table->setObjectName(QStringLiteral("sweepTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    split->addWidget(m_plotHost);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    m_stack->addWidget(split);
    layout->addWidget(m_stack, 1);
    rebuildChart();  // an empty plot, so that plot() is never null

    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (!m_runner)
            return;
        m_runner->cancel();
        m_cancel->setEnabled(false);
        m_status->setText(tr("Cancelling…"));
    });
}

SweepView::~SweepView() = default;

QString SweepView::noSweepText()
{
    return tr("No sweep yet: Plan > Sweep Cluster Parameter…");
}

QString SweepView::runningText()
{
    return tr("Sweeping… the chart and table appear when the sweep finishes; progress is above.");
}

void SweepView::clear()
{
    setRunning(false);
    m_result.reset();
    setStale(false);
    m_status->clear();
    m_table->clear();
    m_table->setRowCount(0);
    m_table->setColumnCount(0);
    rebuildChart();
    m_placeholder->setText(noSweepText());
    m_stack->setCurrentIndex(0);
}

void SweepView::setRunner(SweepRunner *runner)
{
    if (m_runner)
        disconnect(m_runner, nullptr, this, nullptr);
    m_runner = runner;
    if (!runner)
        return;
    connect(runner, &SweepRunner::started, this, [this] { setRunning(true); });
    connect(runner, &SweepRunner::progress, this, &SweepView::setProgress);
    connect(runner, &SweepRunner::failed, this, &SweepView::showFailure);
    connect(runner, &SweepRunner::finished, this, [this](const SweepResult &r) {
        setResult(r, m_runner ? m_runner->baseCluster() : m_base);
    });
    setRunning(runner->isRunning());
}

void SweepView::setRunning(bool running)
{
    m_running = running;
    m_progressRow->setVisible(running);
    m_cancel->setEnabled(running);
    if (running) {
        m_progress->setValue(0);
        m_status->setText(tr("Sweeping…"));
    }
    if (m_stack->currentIndex() == 0)
        m_placeholder->setText(running ? runningText() : noSweepText());
}

void SweepView::setProgress(int point, int planner, double fraction)
{
    if (!m_running)
        setRunning(true);
    m_progress->setValue(static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * 1000)));
    if (!m_cancel->isEnabled())
        return;  // "Cancelling…" stays until the result comes
    QString text = tr("Sweeping: point %1").arg(point + 1);
    if (m_runner) {
        const SweepRequest &r = m_runner->request();
        text = tr("Sweeping %1: point %2 of %3")
                   .arg(SweepDialog::parameterText(r.parameter, m_runner->baseCluster()))
                   .arg(point + 1)
                   .arg(r.values.size());
        if (planner >= 0 && planner < static_cast<int>(r.planners.size()))
            text += QStringLiteral(" (%1)").arg(QString::fromStdString(r.planners[planner]));
    }
    m_status->setText(text);
}

void SweepView::showFailure(const QString &message)
{
    setRunning(false);
    m_status->setText(message);
}

void SweepView::setResult(const SweepResult &result, const Topology &base)
{
    setRunning(false);
    m_result = result;
    m_base = base;
    setStale(false);
    rebuildChart();
    rebuildTable();
    updateStatus();
    m_stack->setCurrentIndex(m_result->points.empty() ? 0 : 1);
    if (m_result->points.empty())
        m_placeholder->setText(m_result->cancelled ? tr("Cancelled before the first point finished.") : noSweepText());
}

void SweepView::rebuildChart()
{
    SeriesChartData data;
    data.yLabel = tr("samples/s");
    if (m_result) {
        const SweepResult &r = *m_result;
        const QString what = SweepDialog::parameterText(r.parameter, m_base);
        data.title = tr("Throughput vs %1").arg(what);
        data.xLabel = what;
        for (size_t k = 0; k < r.planners.size(); ++k) {
            ChartSeries s;
            s.name = QString::fromStdString(r.planners[k]);
            for (const SweepPoint &pt : r.points) {
                s.x.push_back(displayValue(r.parameter.field, pt.value));
                s.y.push_back(k < pt.runs.size() ? sweepSamplesPerSecond(pt.runs[k]) : NAN);
            }
            data.series.push_back(std::move(s));
        }
        // Geometric spacing (a constant ratio) on a log axis, where its points are evenly spaced.
        data.logX = isGeometric(r.values);
        // Ticks at the swept values, every k-th so that at most kMaxExplicitTicks labels share
        // the axis (labels rounded to 3 significant digits, SeriesChart.h).
        const size_t stride = (r.points.size() + kMaxExplicitTicks - 1) / kMaxExplicitTicks;
        for (size_t i = 0; i < r.points.size(); i += std::max<size_t>(stride, 1))
            data.xTicks.push_back(displayValue(r.parameter.field, r.points[i].value));
    }
    *m_chart = data;
    // drawSeriesChart lays out a fresh plot (title and legend rows): a new one each time.
    delete m_plot;
    m_plot = new QCustomPlot(m_plotHost);
    m_plot->setObjectName(QStringLiteral("sweepPlot"));
    m_plot->setMinimumHeight(220);
    m_plotLayout->addWidget(m_plot);
    drawSeriesChart(m_plot, *m_chart);
    applyPlotPalette(m_plot, palette());
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SweepView::rebuildTable()
{
    m_table->clear();
    const SweepResult &r = *m_result;
    m_table->setColumnCount(static_cast<int>(r.planners.size()) + 1);
    m_table->setRowCount(static_cast<int>(r.points.size()));
    QStringList headers{SweepDialog::parameterText(r.parameter, m_base)};
    for (const std::string &name : r.planners)
        headers << tr("%1 (samples/s)").arg(QString::fromStdString(name));
    m_table->setHorizontalHeaderLabels(headers);
    const QLocale locale;
    for (int row = 0; row < static_cast<int>(r.points.size()); ++row) {
        const SweepPoint &pt = r.points[row];
        const double x = displayValue(r.parameter.field, pt.value);
        auto *valueItem = new QTableWidgetItem(locale.toString(x, 'g', 6));
        valueItem->setData(Qt::UserRole, x);
        m_table->setItem(row, 0, valueItem);
        double best = -1;
        for (const PlannerRun &run : pt.runs)
            if (const double y = sweepSamplesPerSecond(run); std::isfinite(y))
                best = std::max(best, y);
        for (int k = 0; k < static_cast<int>(pt.runs.size()); ++k) {
            const PlannerRun &run = pt.runs[k];
            const double y = sweepSamplesPerSecond(run);
            auto *item = new QTableWidgetItem(std::isfinite(y) ? locale.toString(y, 'f', 2) : tr("—"));
            item->setData(Qt::UserRole, y);
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (std::isfinite(y) && y == best) {
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
            }
            QString why = QString::fromStdString(run.result.message);
            if (run.result.found && !run.result.report.reasons.empty())
                why = QString::fromStdString(run.result.report.reasons.front());
            if (!std::isfinite(y))
                item->setToolTip(why.isEmpty() ? tr("no feasible plan") : why);
            m_table->setItem(row, k + 1, item);
        }
    }
    m_table->resizeColumnsToContents();
}

void SweepView::updateStatus()
{
    const SweepResult &r = *m_result;
    const int done = static_cast<int>(r.points.size());
    const int asked = static_cast<int>(r.values.size());
    if (r.cancelled)
        m_status->setText(tr("Cancelled after %1 of %2 points").arg(done).arg(asked));
    else
        m_status->setText(tr("%1 × %2: %3")
                              .arg(counted(done, tr("point"), tr("points")))
                              .arg(counted(static_cast<long long>(r.planners.size()), tr("planner"), tr("planners")))
                              .arg(SweepDialog::parameterText(r.parameter, m_base)));
}

void SweepView::setStale(bool stale)
{
    m_stale = stale;
    m_staleBanner->setVisible(stale);
}

bool SweepView::exportTo(const QString &fileName, QString *error)
{
    if (!m_result || m_result->points.empty()) {
        *error = tr("%1: nothing to export (no sweep yet)").arg(fileName);
        return false;
    }
    if (QFileInfo(fileName).suffix().toLower() == QLatin1String("csv"))
        return writeFileAtomically(fileName, QByteArray::fromStdString(sweepCsv(*m_result, m_base)), error);
    return exportSeriesChart(*m_chart, fileName, error);  // .png/.svg/.pdf; unknown -> error
}

void SweepView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && m_plot) {
        applyPlotPalette(m_plot, palette());
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

} // namespace nest::ui
