#pragma once
// The sweep's result: throughput (samples/s, the evaluator's figure of each planner's plan)
// against the swept parameter in display units (GB/s, µs or a ratio), one line per planner
// (ui/charts/SeriesChart.h; gaps where a planner found no feasible plan), and a table of the same
// numbers with the best planner of each point in bold. While a SweepRunner works, a
// progress bar and a Cancel button; a status line says how the sweep ended ("Cancelled
// after 3 of 5 points"). Exports the chart (.png/.svg/.pdf) or the numbers (.csv, core's
// sweepCsv), written atomically. Open Results… shows the results file of a Python sweep
// (nest_planner.sweep(), core's SweepResultsFile): throughput against a chosen numeric keyword,
// one line per value of another, the best over the remaining keywords.
#include "ClusterSweep.h"
#include "SweepResultsFile.h"

#include <QPointer>
#include <QWidget>

#include <memory>
#include <optional>

class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTableWidget;
class QVBoxLayout;

namespace nest::ui {

class SweepRunner;
struct SeriesChartData;

class SweepView : public QWidget {
    Q_OBJECT
public:
    explicit SweepView(QWidget *parent = nullptr);
    ~SweepView() override;

    // Follows `runner` (started / progress / finished / failed) and cancels it from the
    // Cancel button. nullptr detaches.
    void setRunner(SweepRunner *runner);

    // Shows `result`; `base` is the cluster the sweep varied (labels the parameter).
    void setResult(const nest::SweepResult &result, const Topology &base);
    // Null before the first result.
    const SweepResult *result() const { return m_result ? &*m_result : nullptr; }

    // Back to "No sweep yet" (another document was opened); a running sweep is the
    // runner's to cancel.
    void clear();

    // The cluster changed since this sweep.
    void setStale(bool stale);
    bool isStale() const { return m_stale; }

    // A results file of nest_planner.sweep() (JSON lines): plotted and tabled in place of a
    // cluster sweep. false and *error "FILE: line N: at PATH: reason" when it cannot be read.
    bool openResults(const QString &fileName, QString *error);
    // The x keyword and the series keyword of an opened results file (empty series: one line).
    bool setResultsAxes(const QString &xKey, const QString &seriesKey, QString *error);
    const SweepResultsFile *openedResults() const { return m_opened ? &*m_opened : nullptr; }
    QPushButton *openResultsButton() const { return m_openResults; }
    QComboBox *xKeyBox() const { return m_xKey; }
    QComboBox *seriesKeyBox() const { return m_seriesKey; }

    // .png/.svg/.pdf: the chart with its title and legend; .csv: sweepCsv. false and
    // *error = "FILE: reason" on failure (no sweep yet, unknown extension, unwritable).
    bool exportTo(const QString &fileName, QString *error);

    // For tests.
    QCustomPlot *plot() const { return m_plot; }
    QTableWidget *table() const { return m_table; }
    QProgressBar *progressBar() const { return m_progress; }
    QPushButton *cancelButton() const { return m_cancel; }
    QLabel *statusLabel() const { return m_status; }
    QLabel *placeholder() const { return m_placeholder; }
    QLabel *staleBanner() const { return m_staleBanner; }
    bool isRunning() const { return m_running; }

    static QString noSweepText();  // "No sweep yet: Plan > Sweep Cluster Parameter…"
    static QString runningText();  // "Sweeping… the chart appears as the points finish"

public slots:
    void setRunning(bool running);
    void setProgress(int point, int planner, double fraction);
    void showFailure(const QString &message);

protected:
    void changeEvent(QEvent *event) override;

private:
    void addResultsRow(QVBoxLayout *layout);
    void addProgressRow(QVBoxLayout *layout);
    void addPlotAndTable(QVBoxLayout *layout);
    void connectControls();
    void rebuildChart();
    void drawChart();
    void rebuildTable();
    void showOpenedResults();
    void askForResults();
    void updateStatus();

    QPointer<SweepRunner> m_runner;
    std::optional<SweepResult> m_result;
    Topology m_base;
    std::unique_ptr<SeriesChartData> m_chart;
    QLabel *m_staleBanner;
    QLabel *m_status;
    QWidget *m_progressRow;
    QProgressBar *m_progress;
    QPushButton *m_cancel;
    QStackedWidget *m_stack;
    QLabel *m_placeholder;
    QWidget *m_plotHost;
    QVBoxLayout *m_plotLayout;
    QCustomPlot *m_plot = nullptr;
    QTableWidget *m_table;
    QPushButton *m_openResults;
    QComboBox *m_xKey;
    QComboBox *m_seriesKey;
    QWidget *m_axesRow;
    std::optional<SweepResultsFile> m_opened;
    QString m_openedName;
    bool m_stale = false;
    bool m_running = false;
};

} // namespace nest::ui
