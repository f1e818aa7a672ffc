#include "CalibrationDialog.h"

#include "ClusterIO.h"
#include "SaveFile.h"
#include "ToolVersion.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nest::ui {

namespace {

enum Column {
    Name, RunsOn, FrameworkCol, Batch, Seq, Tp, Pp, Dp, Cp, Ep, MicroBatch, ScheduleCol, Zero, RecomputeCol, Sp,
    Measurement, Value, ColumnCount
};

QStringList columnTitles()
{
    return {QObject::tr("Name"), QObject::tr("Runs on"), QObject::tr("Framework"), QObject::tr("Batch"),
            QObject::tr("Seq"), QObject::tr("TP"), QObject::tr("PP"), QObject::tr("DP"), QObject::tr("CP"),
            QObject::tr("EP"), QObject::tr("Micro-batch"), QObject::tr("Schedule"), QObject::tr("ZeRO"),
            QObject::tr("Recompute"), QObject::tr("SP"), QObject::tr("Measurement"), QObject::tr("Value")};
}

// The measurement kinds of a nest-runs row, as the Measurement column spells them.
const QStringList &measurementKinds()
{
    static const QStringList kinds{QStringLiteral("step_time_s"), QStringLiteral("tokens_per_s_per_gpu"),
                                   QStringLiteral("tflops_per_gpu (megatron)"), QStringLiteral("tflops_per_gpu (6nd)")};
    return kinds;
}

const char *kLayoutKeys[] = {"tp", "pp", "dp", "cp", "ep", "microbatch"};
const Column kLayoutColumns[] = {Tp, Pp, Dp, Cp, Ep, MicroBatch};

QString text(const Json &j, const char *key, const QString &fallback)
{
    const auto it = j.find(key);
    if (it == j.end())
        return fallback;
    if (it->is_string())
        return QString::fromStdString(it->get<std::string>());
    if (it->is_boolean())
        return it->get<bool>() ? QStringLiteral("yes") : QStringLiteral("no");
    if (it->is_number_integer())
        return QString::number(it->get<long long>());
    if (it->is_number())
        return QString::number(it->get<double>(), 'g', 10);
    return QString::fromStdString(it->dump());
}

QString percentText(double fraction)
{
    return QStringLiteral("%1%2 %").arg(fraction >= 0 ? QStringLiteral("+") : QString()).arg(100 * fraction, 0, 'f', 1);
}

} // namespace

namespace {

// The cost options the dialog's band texts stand for: the framework's, at the default stack
// (the dialog is not told the workspace's).
CostOptions bandOptions(Framework framework)
{
    CostOptions o;
    o.framework = framework;
    return o;
}

} // namespace

CalibrationDialog::CalibrationDialog(Topology cluster, ModelSource model, Framework framework,
                                     const std::optional<Calibration> &current, QWidget *parent)
    : QDialog(parent)
    , m_cluster(std::move(cluster))
    , m_model(std::move(model))
    , m_framework(framework)
{
    setWindowTitle(tr("Calibrate from Measured Runs"));
    setObjectName(QStringLiteral("calibrationDialog"));
    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(tr("Each row is a run you measured: where it ran, its layout and one measurement. "
                                "The fit finds the large-GEMM efficiency of each device type and the step "
                                "overhead of each framework (least squares on log time) and shows every run's "
                                "error before and after. %1")
                                 .arg(current ? tr("The workspace is %1.")
                                                    .arg(QString::fromStdString(modelErrorBand(bandOptions(framework), current, m_cluster).basis))
                                              : tr("The workspace is uncalibrated.")));
    intro->setWordWrap(true);
    layout->addWidget(intro);

    addRunButtons(layout);
    addRunsTable(layout);
    addFitRow(layout);
    addResults(layout);

    auto *buttons = new QDialogButtonBox;
    m_applyButton = buttons->addButton(tr("A&pply to Workspace"), QDialogButtonBox::AcceptRole);
    buttons->addButton(QDialogButtonBox::Close);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(&m_jobs, &JobTracker::failed, this, [this](quint64, const QString &reason) { fitFailed(reason); });
    connect(this, &CalibrationDialog::fitProgress, this, [this](double fraction) {
        if (isFitting())
            showMessage(tr("Fitting %n run(s)… %1 %", nullptr, runCount()).arg(qRound(100 * fraction)), false);
    });
    // Wide enough for the runs table, never wider than the screen (issue 49: at 1024 x 768
    // it opened 1,100 px wide with its Close button off-screen); the table scrolls.
    const QRect available = (parent ? parent->screen() : screen())->availableGeometry();
    resize(std::min(1100, available.width() * 9 / 10), std::min(620, available.height() * 9 / 10));
    updateButtons();
}

// Load, Add, Remove and Save above the runs.
void CalibrationDialog::addRunButtons(QVBoxLayout *layout)
{
    auto *rowButtons = new QHBoxLayout;
    auto *load = new QPushButton(tr("&Load Runs…"));
    auto *add = new QPushButton(tr("&Add Run"));
    add->setToolTip(tr("A run on the current cluster and model; fill in its layout and measurement"));
    m_removeButton = new QPushButton(tr("&Remove Run"));
    auto *save = new QPushButton(tr("&Save Runs…"));
    for (QPushButton *b : {load, add, m_removeButton, save})
        rowButtons->addWidget(b);
    rowButtons->addStretch();
    layout->addLayout(rowButtons);

    connect(load, &QPushButton::clicked, this, &CalibrationDialog::chooseRunsFile);
    connect(add, &QPushButton::clicked, this, [this] { addRun(); });
    connect(m_removeButton, &QPushButton::clicked, this, [this] {
        const int row = m_table->currentRow();
        if (row < 0 || row >= runCount())
            return;
        m_table->removeRow(row);
        m_runs.erase(m_runs.begin() + row);
        updateButtons();
    });
    connect(save, &QPushButton::clicked, this, &CalibrationDialog::saveRuns);
}

// The runs, one row each; an edit withdraws the last fit.
void CalibrationDialog::addRunsTable(QVBoxLayout *layout)
{
    m_table = new QTableWidget(0, ColumnCount);
    m_table->setObjectName(QStringLiteral("calibrationRuns"));
    m_table->setHorizontalHeaderLabels(columnTitles());
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setToolTip(tr("Measurement: step_time_s, tokens_per_s_per_gpu, tflops_per_gpu (megatron) or "
                           "tflops_per_gpu (6nd). Schedule: 1f1b, gpipe or interleaved:V. "
                           "Recompute: none, selective or full."));
    layout->addWidget(m_table, 2);

    connect(m_table, &QTableWidget::itemChanged, this, [this] {
        // An edited row makes the last fit's table out of date: fit again before applying.
        if (m_result && !isFitting()) {
            m_result.reset();
            showMessage(tr("The runs changed: fit again to apply."), false);
            updateButtons();
        }
    });
}

// Which parameters to fit, and Fit.
void CalibrationDialog::addFitRow(QVBoxLayout *layout)
{
    auto *fitRow = new QHBoxLayout;
    m_fitIdentified = new QCheckBox(tr("What the runs identify"));
    m_fitIdentified->setObjectName(QStringLiteral("fitIdentified"));
    m_fitIdentified->setToolTip(tr("Both parameters when there are at least as many runs as they make; with fewer, "
                                   "the one the runs determine (the GEMM efficiency of a compute-bound run, else "
                                   "the step overhead), as nest-cli calibrate without --fit"));
    m_fitIdentified->setChecked(true);
    m_fitGemm = new QCheckBox(tr("GEMM efficiency"));
    m_fitGemm->setChecked(true);
    m_fitOverhead = new QCheckBox(tr("Step overhead"));
    m_fitOverhead->setChecked(true);
    m_fitGemm->setEnabled(false);
    m_fitOverhead->setEnabled(false);
    connect(m_fitIdentified, &QCheckBox::toggled, this, [this](bool on) {
        m_fitGemm->setEnabled(!on);
        m_fitOverhead->setEnabled(!on);
    });
    m_fitButton = new QPushButton(tr("&Fit"));
    fitRow->addWidget(new QLabel(tr("Fit:")));
    fitRow->addWidget(m_fitIdentified);
    fitRow->addWidget(m_fitGemm);
    fitRow->addWidget(m_fitOverhead);
    fitRow->addWidget(m_fitButton);
    fitRow->addStretch();
    layout->addLayout(fitRow);

    connect(m_fitButton, &QPushButton::clicked, this, [this] { fit(); });
}

// The message, each run's error before and after, and the fitted parameters.
void CalibrationDialog::addResults(QVBoxLayout *layout)
{
    m_message = new QLabel;
    m_message->setWordWrap(true);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_message);

    m_errors = new QTableWidget(0, 5);
    m_errors->setObjectName(QStringLiteral("calibrationErrors"));
    m_errors->setHorizontalHeaderLabels({tr("Run"), tr("Measured (s)"), tr("Before (s)"), tr("After (s)"),
                                         tr("Error before → after")});
    m_errors->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_errors->horizontalHeader()->setStretchLastSection(true);
    m_errors->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layout->addWidget(m_errors, 1);
    m_parameters = new QLabel;
    m_parameters->setWordWrap(true);
    m_parameters->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_parameters);
}

CalibrationDialog::~CalibrationDialog() = default;   // m_jobs cancels the fit and waits for it

int CalibrationDialog::runCount() const
{
    return static_cast<int>(m_runs.size());
}

void CalibrationDialog::setRowFromJson(int row, const Json &run)
{
    const QSignalBlocker block(m_table);
    const auto set = [&](int column, const QString &value, bool editable) {
        auto *item = new QTableWidgetItem(value);
        if (!editable)
            item->setFlags(item->flags() & ~Qt::ItemIsEditable);
        m_table->setItem(row, column, item);
    };
    set(Name, text(run, "name", QString()), true);
    const auto where = [&](const char *key, const QString &current) {
        const auto it = run.find(key);
        return it != run.end() && it->is_object() ? current : text(run, key, QStringLiteral("?"));
    };
    set(RunsOn, where("cluster", tr("this cluster")) + QStringLiteral(" · ") + where("model", tr("this model")), false);
    set(FrameworkCol, text(run, "framework", QStringLiteral("megatron-core")), true);
    set(Batch, text(run, "batch", QString()), true);
    set(Seq, text(run, "seq", QString()), true);
    const auto layoutIt = run.find("layout");
    const bool hasLayout = layoutIt != run.end() && layoutIt->is_object();
    const Json layout = hasLayout ? *layoutIt : Json::object();
    const QString planText = tr("plan %1").arg(text(run, "plan", QString()));
    for (size_t k = 0; k < std::size(kLayoutKeys); ++k)
        set(kLayoutColumns[k], hasLayout ? text(layout, kLayoutKeys[k], QStringLiteral("1")) : planText, hasLayout);
    set(ScheduleCol, hasLayout ? text(layout, "schedule", QStringLiteral("1f1b")) : planText, hasLayout);
    set(Zero, hasLayout ? text(layout, "zero", QStringLiteral("0")) : planText, hasLayout);
    set(RecomputeCol, hasLayout ? text(layout, "recompute", QStringLiteral("none")) : planText, hasLayout);
    set(Sp, hasLayout ? text(layout, "sp", QStringLiteral("no")) : planText, hasLayout);
    QString kind = QStringLiteral("step_time_s"), value;
    for (const char *k : {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu"})
        if (run.contains(k)) {
            kind = QString::fromLatin1(k);
            value = text(run, k, QString());
        }
    if (kind == QLatin1String("tflops_per_gpu"))
        kind += QStringLiteral(" (%1)").arg(text(run, "flops_formula", QStringLiteral("megatron")));
    set(Measurement, kind, true);
    set(Value, value, true);
}

bool CalibrationDialog::loadRuns(const QString &file, QString *error)
{
    const Result<Json> j = readJsonFile(file.toStdString());
    const auto fail = [&](const QString &why) {
        if (error)
            *error = why;
        showMessage(why, true);
        return false;
    };
    if (!j)
        return fail(QString::fromStdString(j.error()));
    const auto runs = j->find("runs");
    if (!j->is_object() || j->value("format", std::string()) != "nest-runs" || runs == j->end() || !runs->is_array())
        return fail(tr("%1: not a nest-runs file (expected {\"format\": \"nest-runs\", \"runs\": [...]})").arg(file));
    for (size_t i = 0; i < runs->size(); ++i)
        if (!(*runs)[i].is_object())
            return fail(tr("%1: at runs[%2]: expected an object").arg(file).arg(i));
    m_folder = QFileInfo(file).absolutePath();
    m_table->setRowCount(0);
    m_runs.clear();
    for (const Json &run : *runs) {
        m_runs.push_back(run);
        m_table->insertRow(runCount() - 1);
        setRowFromJson(runCount() - 1, run);
    }
    m_result.reset();
    showMessage(tr("Loaded %n run(s) from %1.", nullptr, runCount()).arg(QFileInfo(file).fileName()), false);
    updateButtons();
    return true;
}

int CalibrationDialog::addRun()
{
    Json model = m_model.toJson();
    int batch = 512, seq = 2048;
    if (const Result<ModelProfile> p = m_model.profile("model"); p) {
        batch = p->globalBatch;
        seq = p->seqLength;
    }
    Json run{{"name", "run " + std::to_string(runCount() + 1)},
             {"cluster", clusterToJson(m_cluster)},
             {"model", model},
             {"framework", toString(m_framework)},
             {"batch", batch},
             {"seq", seq},
             {"layout", {{"tp", 1}, {"pp", 1}, {"dp", m_cluster.deviceCount()}, {"microbatch", 1}}},
             {"step_time_s", 1.0}};
    m_runs.push_back(run);
    m_table->insertRow(runCount() - 1);
    setRowFromJson(runCount() - 1, run);
    {
        const QSignalBlocker block(m_table);
        m_table->item(runCount() - 1, Value)->setText(QString());   // the user's measurement, not a guess
    }
    m_table->setCurrentCell(runCount() - 1, Value);
    m_result.reset();
    updateButtons();
    return runCount() - 1;
}

bool CalibrationDialog::setCell(int row, const QString &column, const QString &value)
{
    const int c = static_cast<int>(columnTitles().indexOf(column));
    if (row < 0 || row >= runCount() || c < 0)
        return false;
    QTableWidgetItem *item = m_table->item(row, c);
    if (!item || !(item->flags() & Qt::ItemIsEditable))
        return false;
    item->setText(value);
    return true;
}

Result<Json> CalibrationDialog::runsJson() const
{
    Json runs = Json::array();
    for (int r = 0; r < runCount(); ++r) {
        Result<Json> run = rowJson(r);
        if (!run)
            return run;
        runs.push_back(*run);
    }
    return Json{{"format", "nest-runs"}, {"version", 1}, {"runs", runs}};
}

// Row r as a nest-runs run object: the object it was read or added as, with the table's
// cells written over it (or the reason a cell is not valid: "row 2, TP: ...").
Result<Json> CalibrationDialog::rowJson(int r) const
{
    const QStringList titles = columnTitles();
    Json run = m_runs[static_cast<size_t>(r)];
    const auto cell = [&](int c) { return m_table->item(r, c) ? m_table->item(r, c)->text().trimmed() : QString(); };
    const auto bad = [&](int c, const QString &why) {
        return Result<Json>::failure(tr("row %1, %2: %3").arg(r + 1).arg(titles[c], why).toStdString());
    };
    const auto positiveInt = [&](int c, long long &out) {
        bool ok = false;
        out = cell(c).toLongLong(&ok);
        return ok && out >= 0;
    };
    if (cell(Name).isEmpty())
        return bad(Name, tr("give the run a name"));
    run["name"] = cell(Name).toStdString();
    run["framework"] = cell(FrameworkCol).toStdString();
    long long n = 0;
    for (int c : {Batch, Seq}) {
        if (!positiveInt(c, n) || n == 0)
            return bad(c, tr("expected a positive whole number, found \"%1\"").arg(cell(c)));
        run[c == Batch ? "batch" : "seq"] = n;
    }
    if (run.contains("layout")) {
        Json layout = run["layout"].is_object() ? run["layout"] : Json::object();
        for (size_t k = 0; k < std::size(kLayoutKeys); ++k) {
            if (!positiveInt(kLayoutColumns[k], n) || n == 0)
                return bad(kLayoutColumns[k], tr("expected a positive whole number, found \"%1\"")
                                                  .arg(cell(kLayoutColumns[k])));
            layout[kLayoutKeys[k]] = n;
        }
        if (!positiveInt(Zero, n) || n > 3)
            return bad(Zero, tr("expected 0, 1, 2 or 3, found \"%1\"").arg(cell(Zero)));
        layout["zero"] = n;
        layout["schedule"] = cell(ScheduleCol).toStdString();
        layout["recompute"] = cell(RecomputeCol).toStdString();
        const QString sp = cell(Sp).toLower();
        if (sp != QLatin1String("yes") && sp != QLatin1String("no"))
            return bad(Sp, tr("expected yes or no, found \"%1\"").arg(cell(Sp)));
        layout["sp"] = sp == QLatin1String("yes");
        run["layout"] = layout;
    }
    const int kind = static_cast<int>(measurementKinds().indexOf(cell(Measurement)));
    if (kind < 0)
        return bad(Measurement, tr("expected one of %1").arg(measurementKinds().join(QStringLiteral(", "))));
    bool ok = false;
    const double value = cell(Value).toDouble(&ok);
    if (!ok || !std::isfinite(value) || value <= 0)
        return bad(Value, tr("expected a positive number, found \"%1\"").arg(cell(Value)));
    for (const char *k : {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "flops_formula"})
        run.erase(k);
    if (kind == 0)
        run["step_time_s"] = value;
    else if (kind == 1)
        run["tokens_per_s_per_gpu"] = value;
    else {
        run["tflops_per_gpu"] = value;
        run["flops_formula"] = kind == 2 ? "megatron" : "6nd";
    }
    return run;
}

void CalibrationDialog::setFitParameters(bool gemmEfficiency, bool stepOverhead)
{
    m_fitIdentified->setChecked(false);
    m_fitGemm->setChecked(gemmEfficiency);
    m_fitOverhead->setChecked(stepOverhead);
}

void CalibrationDialog::setFitIdentified(bool on)
{
    m_fitIdentified->setChecked(on);
}

bool CalibrationDialog::isFitting() const
{
    return m_jobs.isRunning();
}

void CalibrationDialog::waitForFit()
{
    m_jobs.waitForIdle();
}

namespace {

// Thrown from the fit's progress callback when its job is superseded or the dialog closes:
// core's fit polls no token, so this ends it at its next step. The job is dropped by then,
// so nothing is reported.
struct FitCancelled : std::exception {
    const char *what() const noexcept override { return "calibration fit cancelled"; }
};

} // namespace

bool CalibrationDialog::fit()
{
    const bool identified = m_fitIdentified->isChecked();
    std::vector<std::string> parameters;
    if (m_fitGemm->isChecked())
        parameters.push_back("gemm_efficiency");
    if (m_fitOverhead->isChecked())
        parameters.push_back("step_overhead");
    if (!identified && parameters.empty()) {
        showMessage(tr("Choose at least one parameter to fit."), true);
        return false;
    }
    if (m_runs.empty()) {
        showMessage(tr("Load or add at least one run."), true);
        return false;
    }
    const Result<Json> runs = runsJson();
    if (!runs) {
        showMessage(QString::fromStdString(runs.error()), true);
        return false;
    }
    m_result.reset();
    m_choice.clear();
    showMessage(tr("Fitting %n run(s)…", nullptr, runCount()), false);
    const std::string folder = m_folder.toStdString();
    // The latest request wins: a fit still running is superseded and its result dropped.
    m_jobs.start(
        [this, json = *runs, folder, parameters, identified](JobTracker::Job &job) -> FitOutcome {
            const auto measured = measuredRunsFromJson(json, "runs", folder);
            if (!measured)
                return {std::nullopt, QString::fromStdString(measured.error()), QString()};
            std::vector<std::string> free = parameters;
            QString choice;
            if (identified) {  // core chooses, as nest-cli calibrate without --fit
                const auto chosen = identifiedFitParameters(*measured);
                if (!chosen)
                    return {std::nullopt, QString::fromStdString(chosen.error()), QString()};
                free = chosen->parameters;
                choice = QString::fromStdString(chosen->reason);
            }
            FitLimits limits;   // the default bound, as fitCalibration(runs, fit) has
            limits.progress = [this, &job](double fraction) {
                if (job.cancelled())
                    throw FitCancelled();
                job.reportProgress(0, fraction, [this, fraction] { emit fitProgress(fraction); });
            };
            auto fitted = fitCalibration(*measured, free, CostOptions{}, limits);
            if (!fitted)
                return {std::nullopt, QString::fromStdString(fitted.error()), choice};
            return {std::move(fitted).value(), QString(), choice};
        },
        [this](quint64, const FitOutcome &out) { fitDone(out); });
    updateButtons();
    return true;
}

void CalibrationDialog::fitDone(const FitOutcome &out)
{
    if (!out.calibration) {
        fitFailed(out.error);
        return;
    }
    emit fitProgress(1.0);
    m_result = out.calibration;
    m_choice = out.choice;
    showResult();
    updateButtons();
    emit fitFinished(true);
}

void CalibrationDialog::fitFailed(const QString &reason)
{
    showMessage(reason, true);
    updateButtons();
    emit fitFinished(false);
}

void CalibrationDialog::showResult()
{
    const Calibration &c = *m_result;
    m_errors->setRowCount(static_cast<int>(c.runs.size()));
    double before = 0, after = 0;
    for (int i = 0; i < static_cast<int>(c.runs.size()); ++i) {
        const CalibratedRun &r = c.runs[static_cast<size_t>(i)];
        const double eb = r.beforeSeconds / r.measuredSeconds - 1, ea = r.afterSeconds / r.measuredSeconds - 1;
        before += std::abs(eb);
        after += std::abs(ea);
        const QStringList cells{QString::fromStdString(r.name), QString::number(r.measuredSeconds, 'g', 5),
                                QString::number(r.beforeSeconds, 'g', 5), QString::number(r.afterSeconds, 'g', 5),
                                percentText(eb) + QStringLiteral(" → ") + percentText(ea)};
        for (int col = 0; col < cells.size(); ++col)
            m_errors->setItem(i, col, new QTableWidgetItem(cells[col]));
    }
    QStringList params;
    for (const CalibrationEntry &e : c.parameters) {
        QStringList values;
        if (e.gemmEfficiency)
            values << tr("GEMM efficiency %1").arg(*e.gemmEfficiency, 0, 'f', 3);
        if (e.stepOverhead)
            values << tr("step overhead %1 %").arg(100 * *e.stepOverhead, 0, 'f', 1);
        params << QStringLiteral("%1 / %2: %3").arg(QString::fromStdString(e.device), QString::fromStdString(e.framework),
                                                     values.join(QStringLiteral(", ")));
    }
    const double n = std::max<double>(1, static_cast<double>(c.runs.size()));
    if (!m_choice.isEmpty())  // which parameters the runs identified, and why (core's words)
        params.prepend(m_choice);
    m_parameters->setText(params.join(QLatin1Char('\n')));
    // The band of the frameworks the runs were fitted for (a calibration leaves the others').
    Framework fitted = m_framework;
    if (!c.parameters.empty())
        fitted = frameworkFromString(c.parameters.front().framework).value_or(m_framework);
    showMessage(tr("Mean |error| %1 % before, %2 % after; %3 times will say \"%4\".")
                    .arg(100 * before / n, 0, 'f', 1)
                    .arg(100 * after / n, 0, 'f', 1)
                    .arg(QString::fromLatin1(toString(fitted)))
                    .arg(QString::fromStdString(modelErrorBand(bandOptions(fitted), c, m_cluster).text())),
                false);
}

void CalibrationDialog::chooseRunsFile()
{
    const QString file = QFileDialog::getOpenFileName(this, tr("Load Measured Runs"), m_folder,
                                                      tr("Measured runs (*.json);;All files (*)"));
    if (!file.isEmpty())
        loadRuns(file, nullptr);
}

void CalibrationDialog::saveRuns()
{
    const Result<Json> runs = runsJson();
    if (!runs) {
        showMessage(QString::fromStdString(runs.error()), true);
        return;
    }
    const QString file = QFileDialog::getSaveFileName(this, tr("Save Measured Runs"), m_folder,
                                                      tr("Measured runs (*.json)"));
    if (file.isEmpty())
        return;
    QString error;
    if (!writeFileAtomically(file, QByteArray::fromStdString(jsonFileText(*runs)), &error))
        showMessage(tr("Could not save %1: %2").arg(file, error), true);
    else
        showMessage(tr("Saved %n run(s) to %1.", nullptr, runCount()).arg(QFileInfo(file).fileName()), false);
}

void CalibrationDialog::updateButtons()
{
    const bool fitting = isFitting();
    m_fitButton->setEnabled(!fitting && !m_runs.empty());
    m_removeButton->setEnabled(!fitting && !m_runs.empty());
    m_applyButton->setEnabled(!fitting && m_result.has_value());
    m_table->setEnabled(!fitting);
}

void CalibrationDialog::showMessage(const QString &text, bool error)
{
    m_message->setText(text);
    QPalette pal = m_message->palette();
    pal.setColor(QPalette::WindowText, error ? QColor(0xb0, 0x20, 0x20) : palette().color(QPalette::WindowText));
    m_message->setPalette(pal);
}

QString CalibrationDialog::message() const
{
    return m_message->text();
}

} // namespace nest::ui
