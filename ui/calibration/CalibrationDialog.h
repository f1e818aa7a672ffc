#pragma once
// Model ▸ Calibrate from Measured Runs… (issue 23): the runs a user measured, loaded from a
// "nest-runs" file or entered as rows on the current cluster and model, fitted in core
// (core/studies/Calibration.h: measuredRunsFromJson, fitCalibration) on the window's one
// worker lifecycle, a JobTracker (ui/support), and the table of errors before and after.
// Apply hands the calibration to the window, which puts it in the workspace as one undo step.
//
// The fit runs as every long job of the window does: on copies of the rows, the latest
// request wins (a fit started while one runs supersedes it: its token is set and what it
// still delivers is dropped), its progress comes by the queued, throttled fitProgress()
// signal, its result by a queued call; closing the dialog cancels it. The window never waits.
//
// A row is a run object of the nest-runs format (docs/validation.md, "Calibration"); the
// table edits its name, framework, batch, sequence, layout and measurement, and keeps what
// it does not show (a cluster or model file, a plan file, the source) as it was read.
#include "Calibration.h"
#include "JobTracker.h"
#include "JsonUtil.h"
#include "ModelSource.h"
#include "Topology.h"

#include <QDialog>

#include <optional>
#include <vector>

class QCheckBox;
class QLabel;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace nest::ui {

class CalibrationDialog : public QDialog {
    Q_OBJECT
public:
    // `cluster`, `model` and `framework`: what an added row runs on; `current`: the
    // workspace's calibration (shown, and kept unless a new one is applied).
    CalibrationDialog(Topology cluster, ModelSource model, Framework framework,
                      const std::optional<Calibration> &current, QWidget *parent = nullptr);
    ~CalibrationDialog() override;

    // The nest-runs rows: load a file (false, with the reason in *error, when it is not one),
    // add a row on the current cluster and model, read them back as a nest-runs object
    // (or the reason a cell is not valid: "row 2, TP: ...").
    bool loadRuns(const QString &file, QString *error);
    int addRun();
    int runCount() const;
    Result<Json> runsJson() const;
    // Sets a cell by column title ("Name", "TP", "Measurement", "Value", ...); for tests and
    // for callers that fill the form.
    bool setCell(int row, const QString &column, const QString &text);

    // Which parameters the fit frees (calibrationParameterNames()); this turns "What the runs
    // identify" off. With it on (the default) the fit frees what core's
    // identifiedFitParameters() chooses, as nest-cli calibrate without --fit, and the message
    // says the choice.
    void setFitParameters(bool gemmEfficiency, bool stepOverhead);
    void setFitIdentified(bool on);
    // Starts the fit on a worker; fitFinished() follows. False (with the reason shown in the
    // dialog) when the rows do not make valid runs. A fit still running is superseded: only
    // the latest one delivers.
    bool fit();
    bool isFitting() const;
    // Blocks until no fit's worker runs any more (tests); its result still comes from the
    // event loop.
    void waitForFit();
    // The last fit, and whether Apply was chosen.
    const std::optional<Calibration> &result() const { return m_result; }
    QString message() const;

signals:
    // The fit's fraction done, in [0, 1], on the GUI thread (at most every
    // JobTracker::progressInterval).
    void fitProgress(double fraction);
    void fitFinished(bool ok);

private:
    struct FitOutcome {
        std::optional<Calibration> calibration;
        QString error;
        QString choice;  // identifiedFitParameters()'s reason, when it chose fewer
    };
    Result<Json> rowJson(int row) const;
    void addRunButtons(QVBoxLayout *layout);
    void addRunsTable(QVBoxLayout *layout);
    void addFitRow(QVBoxLayout *layout);
    void addResults(QVBoxLayout *layout);
    void fitDone(const FitOutcome &out);
    void fitFailed(const QString &reason);
    void showResult();
    void saveRuns();
    void chooseRunsFile();
    void setRowFromJson(int row, const Json &run);
    void updateButtons();
    void showMessage(const QString &text, bool error);

    Topology m_cluster;
    ModelSource m_model;
    Framework m_framework;
    std::vector<Json> m_runs;          // the rows' run objects, as read or added
    QString m_folder;                  // where relative files of loaded rows are looked up
    std::optional<Calibration> m_result;
    QTableWidget *m_table = nullptr;
    QTableWidget *m_errors = nullptr;
    QCheckBox *m_fitIdentified = nullptr;
    QString m_choice;  // the last fit's choice of parameters, said with its result
    QCheckBox *m_fitGemm = nullptr;
    QCheckBox *m_fitOverhead = nullptr;
    QLabel *m_message = nullptr;
    QLabel *m_parameters = nullptr;
    QPushButton *m_fitButton = nullptr;
    QPushButton *m_removeButton = nullptr;
    QPushButton *m_applyButton = nullptr;
    JobTracker m_jobs{JobTracker::Policy::LatestWins};   // last: destroyed (cancelled, waited for) first
};

} // namespace nest::ui
