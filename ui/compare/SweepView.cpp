#include "SweepView.h"

#include "WindowWording.h"

#include "PlotExport.h"
#include "SaveFile.h"
#include "SeriesChart.h"
#include "SweepDialog.h"
#include "SweepRunner.h"

#include <QComboBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
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
    addResultsRow(layout);
    addProgressRow(layout);
    addPlotAndTable(layout);
    rebuildChart();  // an empty plot, so that plot() is never null
    connectControls();
}

// Open Results and, for a Python sweep's results (nest_planner.sweep, docs/python.md), which
// keyword is x and which one draws a line each.
void SweepView::addResultsRow(QVBoxLayout *layout)
{
    auto *filesRow = new QHBoxLayout;
    m_openResults = new QPushButton(tr("Open Results…"), this);
    m_openResults->setObjectName(QStringLiteral("sweepOpenResults"));
    m_openResults->setToolTip(tr("Plot the results file of a Python sweep (nest_planner.sweep, JSON lines)"));
    m_axesRow = new QWidget(this);
    auto *axes = new QHBoxLayout(m_axesRow);
    axes->setContentsMargins(0, 0, 0, 0);
    m_xKey = new QComboBox(m_axesRow);
    m_xKey->setObjectName(QStringLiteral("sweepXKey"));
    m_seriesKey = new QComboBox(m_axesRow);
    m_seriesKey->setObjectName(QStringLiteral("sweepSeriesKey"));
    axes->addWidget(new QLabel(tr("x:"), m_axesRow));
    axes->addWidget(m_xKey);
    axes->addWidget(new QLabel(tr("one line per:"), m_axesRow));
    axes->addWidget(m_seriesKey);
    m_axesRow->hide();
    filesRow->addWidget(m_openResults);
    filesRow->addWidget(m_axesRow);
    filesRow->addStretch(1);
    layout->addLayout(filesRow);
}

// The running sweep's progress and its Cancel.
void SweepView::addProgressRow(QVBoxLayout *layout)
{
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
}

// The placeholder, or the plot above the table.
void SweepView::addPlotAndTable(QVBoxLayout *layout)
{
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
}

void SweepView::connectControls()
{
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (!m_runner)
            return;
        m_runner->cancel();
        m_cancel->setEnabled(false);
        m_status->setText(tr("Cancelling…"));
    });
    connect(m_openResults, &QPushButton::clicked, this, &SweepView::askForResults);
    const auto axesChosen = [this] {
        if (!m_opened || m_xKey->currentIndex() < 0)
            return;
        QString why;
        if (!setResultsAxes(m_xKey->currentText(), m_seriesKey->currentData().toString(), &why))
            m_status->setText(why);
    };
    connect(m_xKey, &QComboBox::activated, this, axesChosen);
    connect(m_seriesKey, &QComboBox::activated, this, axesChosen);
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
    m_opened.reset();
    m_axesRow->hide();
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
    m_opened.reset();
    m_axesRow->hide();
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
    drawChart();
}

void SweepView::drawChart()
{
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

void SweepView::askForResults()
{
    const QString file = QFileDialog::getOpenFileName(this, tr("Open Sweep Results"), QString(),
                                                      tr("Sweep results (*.jsonl *.json);;All files (*)"));
    if (file.isEmpty())
        return;
    QString error;
    if (!openResults(file, &error))
        QMessageBox::warning(this, tr("Open Sweep Results"), error);
}

bool SweepView::openResults(const QString &fileName, QString *error)
{
    Result<SweepResultsFile> f = loadSweepResults(fileName.toStdString());
    if (!f) {
        *error = QString::fromStdString(f.error());
        return false;
    }
    const Result<SweepChart> chart = sweepChart(*f);
    if (!chart) {
        *error = fileName + QStringLiteral(": ") + QString::fromStdString(chart.error());
        return false;
    }
    if (m_running) {
        *error = tr("%1: a sweep is running; cancel it first").arg(fileName);
        return false;
    }
    m_result.reset();
    setStale(false);
    m_opened = std::move(f).value();
    m_openedName = QFileInfo(fileName).fileName();
    m_xKey->clear();
    for (const std::string &k : numericVaryingKeys(*m_opened))
        m_xKey->addItem(QString::fromStdString(k));
    m_seriesKey->clear();
    m_seriesKey->addItem(tr("(one line)"), QString());
    for (const std::string &k : m_opened->varying)
        m_seriesKey->addItem(QString::fromStdString(k), QString::fromStdString(k));
    m_axesRow->show();
    return setResultsAxes(QString::fromStdString(chart->xKey), QString::fromStdString(chart->seriesKey), error);
}

bool SweepView::setResultsAxes(const QString &xKey, const QString &seriesKey, QString *error)
{
    if (!m_opened) {
        *error = tr("no results file is open");
        return false;
    }
    const Result<SweepChart> chart = sweepChart(*m_opened, xKey.toStdString(), seriesKey.toStdString());
    if (!chart) {
        *error = QString::fromStdString(chart.error());
        return false;
    }
    m_xKey->setCurrentText(xKey);
    m_seriesKey->setCurrentIndex(std::max(0, m_seriesKey->findData(seriesKey)));
    SeriesChartData data;
    data.title = tr("Throughput vs %1 (%2)").arg(xKey, m_openedName);
    data.xLabel = xKey;
    data.yLabel = tr("samples/s");
    std::vector<double> xs;  // every x of the chart, ascending
    for (const SweepSeriesData &s : chart->series) {
        data.series.push_back({QString::fromStdString(s.name), s.x, s.y});
        xs.insert(xs.end(), s.x.begin(), s.x.end());
    }
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    data.logX = xs.size() > 2 && isGeometric(xs);  // batch 256, 512, ..., 4096 on a log axis
    *m_chart = data;
    drawChart();
    showOpenedResults();
    QStringList reduced;
    for (const std::string &k : chart->reducedOver)
        reduced << QString::fromStdString(k);
    int failed = 0;
    for (const SweepRecord &r : m_opened->records)
        failed += r.ok ? 0 : 1;
    QString text = tr("%1 from %2 (%3 failed)")
                       .arg(counted(static_cast<long long>(m_opened->records.size()), tr("point"), tr("points")))
                       .arg(m_openedName)
                       .arg(failed);
    if (!reduced.isEmpty())
        text += tr("; each point of the chart is the best over %1").arg(reduced.join(QStringLiteral(", ")));
    if (m_opened->skippedLines > 0)
        text += tr("; %1 cut short skipped").arg(counted(m_opened->skippedLines, tr("line"), tr("lines")));
    m_status->setText(text);
    m_stack->setCurrentIndex(1);
    return true;
}

void SweepView::showOpenedResults()
{
    m_table->clear();
    const SweepResultsFile &f = *m_opened;
    QStringList headers;
    for (const std::string &k : f.keys)
        headers << QString::fromStdString(k);
    headers << tr("samples/s") << tr("iteration (s)") << tr("MFU (%)") << tr("error");
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setRowCount(static_cast<int>(f.records.size()));
    m_table->setHorizontalHeaderLabels(headers);
    const QLocale locale;
    for (int row = 0; row < static_cast<int>(f.records.size()); ++row) {
        const SweepRecord &r = f.records[row];
        int col = 0;
        for (const std::string &k : f.keys) {
            const nlohmann::json v = r.point.contains(k) ? r.point.at(k) : nlohmann::json();
            m_table->setItem(row, col++, new QTableWidgetItem(QString::fromStdString(v.is_string() ? v.get<std::string>() : v.dump())));
        }
        const auto number = [&](double v, int decimals) {
            auto *item = new QTableWidgetItem(r.ok ? locale.toString(v, 'f', decimals) : tr("—"));
            item->setData(Qt::UserRole, r.ok ? v : NAN);
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            return item;
        };
        m_table->setItem(row, col++, number(r.samplesPerSecond, 2));
        m_table->setItem(row, col++, number(r.iterationTime, 4));
        m_table->setItem(row, col++, number(100 * r.mfu, 1));
        m_table->setItem(row, col++, new QTableWidgetItem(QString::fromStdString(r.error)));
    }
    m_table->resizeColumnsToContents();
}

bool SweepView::exportTo(const QString &fileName, QString *error)
{
    if (m_opened && QFileInfo(fileName).suffix().toLower() != QLatin1String("csv"))
        return exportSeriesChart(*m_chart, fileName, error);  // the opened results' chart
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
