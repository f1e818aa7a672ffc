#include "PlanSummaryView.h"

#include "BatchHint.h"
#include "Glossary.h"
#include "WindowWording.h"

#include "DiagramExport.h"
#include "MeasuredDevice.h"
#include "MonospaceFont.h"

#include "PlanIO.h"
#include "PlotExport.h"
#include "SaveFile.h"

#include <QFontDatabase>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QTextCursor>
#include <QTextDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace nest::ui {

namespace {

// The plan JSON with one line per stage: dump(2) puts every device id on a line of its
// own (tens of thousands of lines at 1024 devices, ~15 ms of text layout on delivery).
std::string readablePlanJson(const Json &j)
{
    std::string out = "{\n";
    size_t i = 0;
    for (const auto &[key, value] : j.items()) {
        out += "  " + Json(key).dump() + ": ";
        if (value.is_array() && !value.empty() && value.front().is_object()) {
            out += "[\n";
            for (size_t k = 0; k < value.size(); ++k)
                out += "    " + value[k].dump() + (k + 1 < value.size() ? ",\n" : "\n");
            out += "  ]";
        } else {
            out += value.dump();
        }
        out += ++i < j.size() ? ",\n" : "\n";
    }
    return out + "}";
}

QString signedNumber(double v, int decimals)
{
    return (v >= 0 ? QStringLiteral("+") : QString()) + QString::number(v, 'f', decimals);
}

// The physical stages (one per pipeline position): what the devices hold.
std::vector<const StagePlan *> physicalStages(const Plan &p)
{
    std::vector<const StagePlan *> out;
    const int depth = std::min<int>(p.pipelineDepth(), static_cast<int>(p.stages.size()));
    for (int i = 0; i < depth; ++i)
        out.push_back(&p.stages[static_cast<size_t>(i)]);
    return out;
}

// "tp 2" or "tp 4-8" over the stages.
template <typename Get>
QString widthText(const char *name, const std::vector<const StagePlan *> &stages, Get get)
{
    int lo = std::numeric_limits<int>::max(), hi = 0;
    for (const StagePlan *s : stages) {
        lo = std::min(lo, get(*s));
        hi = std::max(hi, get(*s));
    }
    if (stages.empty())
        return QStringLiteral("%1 ?").arg(QLatin1String(name));
    if (lo == hi)
        return QStringLiteral("%1 %2").arg(QLatin1String(name)).arg(lo);
    return QStringLiteral("%1 %2-%3").arg(QLatin1String(name)).arg(lo).arg(hi);
}

// "off", "on" or "on for K of N stages".
QString onOffText(const std::vector<StagePlan> &stages, bool StagePlan::*flag)
{
    const auto on = std::count_if(stages.begin(), stages.end(), [&](const StagePlan &s) { return s.*flag; });
    if (on == 0)
        return QObject::tr("off");
    if (on == static_cast<long>(stages.size()))
        return QObject::tr("on");
    return QObject::tr("on for %1 of %2").arg(on).arg(counted(static_cast<long long>(stages.size()), QObject::tr("stage"), QObject::tr("stages")));
}

// "none", "full" or "none on 1, full on 1 (of 2 stages)".
QString recomputeText(const std::vector<StagePlan> &stages)
{
    QStringList parts;
    QString only;
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
        const auto k = std::count_if(stages.begin(), stages.end(), [&](const StagePlan &s) { return s.recompute == r; });
        if (k == 0)
            continue;
        only = QLatin1String(toString(r));
        parts << QObject::tr("%1 on %2").arg(only).arg(k);
    }
    if (parts.size() <= 1)
        return only;
    return QObject::tr("%1 (of %2)").arg(parts.join(QStringLiteral(", ")))
        .arg(counted(static_cast<long long>(stages.size()), QObject::tr("stage"), QObject::tr("stages")));
}

QString zeroText(const std::vector<StagePlan> &stages)
{
    std::set<int> levels;
    for (const StagePlan &s : stages)
        levels.insert(s.zero);
    if (levels.empty())
        return QString();
    if (levels.size() == 1)
        return *levels.begin() == 0 ? QObject::tr("off") : QStringLiteral("ZeRO-%1").arg(*levels.begin());
    return QObject::tr("mixed: ZeRO-%1 to ZeRO-%2").arg(*levels.begin()).arg(*levels.rbegin());
}

QString memoryText(const Report &r)
{
    double smallest = std::numeric_limits<double>::infinity();
    for (const DeviceReport &d : r.devices)
        if (d.stage >= 0)
            smallest = std::min(smallest, d.capacity);
    QString peak = QStringLiteral("%1 GB").arg(r.peakMemoryBytes / 1e9, 0, 'f', 2);
    if (!(smallest < std::numeric_limits<double>::infinity()) || smallest <= 0)
        return peak;
    return QObject::tr("%1 of %2 GB (%3 %)")
        .arg(peak)
        .arg(smallest / 1e9, 0, 'f', 2)
        .arg(100 * r.peakMemoryBytes / smallest, 0, 'f', 1);
}

QString searchText(const PlanSnapshot &s)
{
    if (!s.searched)
        return QObject::tr("not searched (planner: %1)").arg(QString::fromStdString(s.planner));
    const SearchStats &st = s.stats;
    return QObject::tr("%1 s, %2 states, %3 transitions, %4 pruned, %5 stage-cost calls, "
                       "%6 of %7 outer points searched (%8 skipped); search value %9")
        .arg(st.wallSeconds, 0, 'f', 3)
        .arg(st.states)
        .arg(st.transitions)
        .arg(st.pruned)
        .arg(st.stageCostCalls)
        .arg(st.configs)
        .arg(st.configs + st.configsSkipped)
        .arg(st.configsSkipped)
        .arg(s.verified ? QObject::tr("matches the evaluator")
                        : QObject::tr("DIFFERS from the evaluator (%1 s vs %2 s)")
                              .arg(s.objective, 0, 'f', 6)
                              .arg(s.report().iterationTime, 0, 'f', 6));
}

QString simulationText(const PlanSnapshot &s)
{
    const SimulationResult &sim = s.simulation();
    if (!sim.error.empty())
        return QObject::tr("not simulated: %1").arg(QString::fromStdString(sim.error));
    const double t = s.report().iterationTime;
    QString made = QObject::tr("%1 s simulated").arg(sim.makespan, 0, 'f', 4);
    if (t <= 0)
        return made;
    return QObject::tr("%1, %2 % vs the evaluator").arg(made, signedNumber(100 * (sim.makespan - t) / t, 2));
}

QString feasibilityText(const PlanSnapshot &s)
{
    if (s.report().feasible)
        return QObject::tr("feasible");
    QStringList reasons;
    for (const std::string &r : s.report().reasons)
        reasons << QString::fromStdString(r);
    for (const std::string &e : s.analysis.errors)
        if (!reasons.contains(QString::fromStdString(e)))
            reasons << QString::fromStdString(e);
    return reasons.isEmpty() ? QObject::tr("infeasible") : QObject::tr("infeasible: %1").arg(reasons.join(QStringLiteral("; ")));
}

} // namespace

PlanSummaryView::PlanSummaryView(QWidget *parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("planSummaryView"));
    setAutoFillBackground(true);
    auto *outer = new QVBoxLayout(this);
    addTitle(outer);
    m_staleBanner = makeStaleBanner(this);
    outer->addWidget(m_staleBanner);
    m_placeholder = makePlaceholder(this);
    outer->addWidget(m_placeholder, 1);

    m_content = new QWidget(this);
    auto *content = new QVBoxLayout(m_content);
    content->setContentsMargins(0, 0, 0, 0);
    addNotes(content);
    addValueGrid(content);
    m_delta = new QLabel(m_content);
    m_delta->setObjectName(QStringLiteral("delta"));
    m_delta->setTextFormat(Qt::PlainText);
    content->addWidget(m_delta);
    addStagesAndJson(content);
    outer->addWidget(m_content, 1);
    rebuild();
}

// The plan's title, bold and larger.
void PlanSummaryView::addTitle(QVBoxLayout *outer)
{
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("summaryTitle"));
    m_title->setTextFormat(Qt::PlainText);
    m_title->setWordWrap(true);   // a long plan title wraps instead of widening the window
    QFont titleFont = m_title->font();
    titleFont.setBold(true);
    if (titleFont.pointSizeF() > 0)
        titleFont.setPointSizeF(titleFont.pointSizeF() * 1.25);
    m_title->setFont(titleFont);
    outer->addWidget(m_title);
}

// Feasibility, the batch hint and the measured-device warning above the values.
void PlanSummaryView::addNotes(QVBoxLayout *content)
{
    m_feasibility = new QLabel(m_content);
    m_feasibility->setObjectName(QStringLiteral("feasibility"));
    m_feasibility->setTextFormat(Qt::PlainText);
    m_feasibility->setWordWrap(true);
    QFont bold = m_feasibility->font();
    bold.setBold(true);
    m_feasibility->setFont(bold);
    content->addWidget(m_feasibility);
    m_hint = new QLabel(m_content);
    m_hint->setObjectName(QStringLiteral("batchHint"));
    m_hint->setTextFormat(Qt::PlainText);
    m_hint->setWordWrap(true);
    m_hint->setStyleSheet(QStringLiteral("QLabel { background: #fff4ce; color: #3a2c00; padding: 4px; }"));
    m_hint->hide();
    content->addWidget(m_hint);
    m_deviceWarning = new QLabel(m_content);
    m_deviceWarning->setObjectName(QStringLiteral("measuredDeviceWarning"));
    m_deviceWarning->setTextFormat(Qt::PlainText);
    m_deviceWarning->setWordWrap(true);
    m_deviceWarning->setStyleSheet(QStringLiteral("QLabel { background: #fde2d8; color: #5c1a00; padding: 4px; }"));
    m_deviceWarning->hide();
    content->addWidget(m_deviceWarning);
}

// One row per value (valueRows()), each with its glossary tooltip.
void PlanSummaryView::addValueGrid(QVBoxLayout *content)
{
    auto *grid = new QGridLayout;
    content->addLayout(grid);
    for (const auto &[key, caption] : valueRows()) {
        auto *name = new QLabel(caption + QLatin1Char(':'), m_content);
        auto *value = new QLabel(m_content);
        value->setObjectName(QStringLiteral("value_%1").arg(QLatin1String(key)));
        value->setTextFormat(Qt::PlainText);
        value->setWordWrap(true);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        const int row = grid->rowCount();
        grid->addWidget(name, row, 0, Qt::AlignTop);
        grid->addWidget(value, row, 1);
        m_values.insert(QLatin1String(key), value);
        const QString tip = termTip(QLatin1String(key));
        name->setToolTip(tip);
        value->setToolTip(tip);
    }
    grid->setColumnStretch(1, 1);
}

// The stage table and the plan's JSON.
void PlanSummaryView::addStagesAndJson(QVBoxLayout *content)
{
    content->addWidget(new QLabel(tr("Stages"), m_content));
    m_table = new QTableWidget(0, static_cast<int>(stageColumns().size()), m_content);
    m_table->setObjectName(QStringLiteral("stageTable"));
    m_table->setHorizontalHeaderLabels(stageColumns());
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    content->addWidget(m_table, 2);

    content->addWidget(new QLabel(tr("Plan JSON"), m_content));
    m_json = new QPlainTextEdit(m_content);
    m_json->setObjectName(QStringLiteral("planJson"));
    m_json->setReadOnly(true);
    m_json->setFont(monospaceFont());
    m_json->setLineWrapMode(QPlainTextEdit::NoWrap);
    content->addWidget(m_json, 3);
}

std::vector<std::pair<const char *, QString>> PlanSummaryView::valueRows()
{
    return {{"throughput", tr("Throughput")},       {"tokens", tr("Tokens")},
            {"mfu", tr("MFU")},                     {"iteration", tr("Iteration time")},
            {"memory", tr("Peak memory")},          {"shape", tr("Shape")},
            {"zero", tr("ZeRO")},                   {"recompute", tr("Recompute")},
            {"sp", tr("Sequence parallel")},        {"microbatch", tr("Micro-batches")},
            {"schedule", tr("Schedule")},           {"precision", tr("Precision")},
            {"simulation", tr("Simulation")},       {"search", tr("Search")}};
}

QColor PlanSummaryView::infeasibleColor()
{
    return QColor(0xb0, 0x00, 0x20);
}

QStringList PlanSummaryView::stageColumns()
{
    return {tr("stage"), tr("layers"), tr("tp"), tr("cp"), tr("ep"), tr("sp"), tr("zero"),
            tr("recompute"), tr("devices"), tr("t_stage ms"), tr("memory GB")};
}

void PlanSummaryView::setSnapshot(PlanSnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void PlanSummaryView::setPrevious(PlanSnapshotPtr previous)
{
    m_previous = std::move(previous);
    updateDelta();
}

void PlanSummaryView::setStale(bool stale)
{
    m_stale = stale;
    m_staleBanner->setVisible(stale);
}

QString PlanSummaryView::valueText(const QString &key) const
{
    if (key == QLatin1String("feasibility"))
        return m_feasibility->text();
    if (key == QLatin1String("hint"))
        return m_hint->isHidden() ? QString() : m_hint->text();
    if (key == QLatin1String("device"))
        return m_deviceWarning->isHidden() ? QString() : m_deviceWarning->text();
    const QLabel *label = m_values.value(key);
    return label ? label->text() : QString();
}

QString PlanSummaryView::titleText() const
{
    return m_title->text();
}

QString PlanSummaryView::deltaText() const
{
    return m_delta->text();
}

QString PlanSummaryView::planJsonText() const
{
    return m_json->toPlainText();
}

void PlanSummaryView::rebuild()
{
    const bool has = m_snapshot != nullptr;
    m_placeholder->setVisible(!has);
    m_content->setVisible(has);
    if (!has) {
        m_title->setText(tr("Plan summary"));
        m_feasibility->clear();
        m_hint->clear();
        m_hint->hide();
        m_deviceWarning->clear();
        m_deviceWarning->hide();
        for (QLabel *l : std::as_const(m_values))
            l->clear();
        m_table->setRowCount(0);
        m_json->clear();
        updateDelta();
        return;
    }
    const PlanSnapshot &s = *m_snapshot;
    m_title->setText(tr("Plan summary: %1 (planner: %2)")
                         .arg(QString::fromStdString(s.label), QString::fromStdString(s.planner)));
    fillValues(s);
    fillTable(s);
    m_json->setPlainText(QString::fromStdString(readablePlanJson(planToJson(s.plan()))));
    updateDelta();
}

void PlanSummaryView::fillValues(const PlanSnapshot &s)
{
    const Report &r = s.report();
    const Plan &p = s.plan();
    const bool feasible = r.feasible;
    m_feasibility->setText(feasibilityText(s));
    const QString hint = QString::fromStdString(batchSizeHint(p, r, s.topology.deviceCount()));
    m_hint->setText(hint.isEmpty() ? QString() : tr("Hint: %1.").arg(hint));
    m_hint->setVisible(!hint.isEmpty());
    // A profile measured on another device (MeasuredDevice.h): its times are not this cluster's.
    const QString device = QString::fromStdString(measuredDeviceWarning(s.model, s.topology));
    m_deviceWarning->setText(device.isEmpty() ? QString() : tr("Warning: %1.").arg(device));
    m_deviceWarning->setVisible(!device.isEmpty());
    QPalette pal = m_feasibility->palette();
    pal.setColor(QPalette::WindowText, feasible ? palette().color(QPalette::WindowText) : infeasibleColor());
    m_feasibility->setPalette(pal);

    const auto set = [this](const char *key, const QString &text) { m_values.value(QLatin1String(key))->setText(text); };
    set("throughput", tr("%1 samples/s").arg(r.samplesPerSecond, 0, 'f', 2));
    set("tokens", tr("%1 tokens/s").arg(r.tokensPerSecond, 0, 'f', 0));
    set("mfu", mfuKnown(r) ? QStringLiteral("%1 %").arg(100 * r.mfu, 0, 'f', 1)
                           : tr("unknown (the model gives no FLOPs)"));
    // With the model's error band: "20.1234 s (±8 %, megatron-core, uncalibrated)".
    set("iteration", s.band.basis.empty() ? tr("%1 s").arg(r.iterationTime, 0, 'f', 4)
                                          : tr("%1 s (%2)").arg(r.iterationTime, 0, 'f', 4)
                                                .arg(QString::fromStdString(s.band.text(r.iterationTime))));
    set("memory", memoryText(r));

    const auto stages = physicalStages(p);
    QString pp = QStringLiteral("pp %1").arg(p.pipelineDepth());
    if (p.virtualStages > 1)
        pp += QStringLiteral(" (x%1 virtual)").arg(p.virtualStages);
    QStringList shape{widthText("tp", stages, [](const StagePlan &st) { return st.tp; }), pp,
                      QStringLiteral("dp %1").arg(p.dp), widthText("ep", stages, [](const StagePlan &st) { return st.ep; })};
    // The experts' own tensor width, where a stage sets one (docs/cost-model.md §1c).
    if (std::any_of(stages.begin(), stages.end(), [](const StagePlan *st) { return st->etp > 0; }))
        shape << widthText("etp", stages, [](const StagePlan &st) { return st.expertTp(); });
    shape << widthText("cp", stages, [](const StagePlan &st) { return st.cp; });
    set("shape", shape.join(QStringLiteral(", ")));
    set("zero", zeroText(p.stages));
    set("recompute", recomputeText(p.stages));
    set("sp", onOffText(p.stages, &StagePlan::sp));
    // "8 micro-batches of 4 samples per replica (global batch 512)"
    set("microbatch", tr("%1 of %2 per replica (global batch %3)")
                          .arg(counted(p.numMicroBatches(), tr("micro-batch"), tr("micro-batches")))
                          .arg(counted(p.microBatch, tr("sample"), tr("samples")))
                          .arg(p.globalBatch));
    QString schedule = QString::fromLatin1(toString(p.schedule));
    if (p.schedule == Schedule::Interleaved)
        schedule += tr(", %1 virtual stages per device").arg(p.virtualStages);
    set("schedule", schedule);
    // The linear layers' format (docs/cost-model.md, "Precision").
    set("precision", QString::fromStdString(precisionLabel(p.precision)));
    set("simulation", simulationText(s));
    set("search", searchText(s));
}

void PlanSummaryView::fillTable(const PlanSnapshot &s)
{
    const Plan &p = s.plan();
    const Report &r = s.report();
    m_table->setRowCount(static_cast<int>(p.stages.size()));
    for (int i = 0; i < static_cast<int>(p.stages.size()); ++i) {
        const StagePlan &st = p.stages[static_cast<size_t>(i)];
        int lo = std::numeric_limits<int>::max(), hi = -1;
        for (const auto &row : st.devices)
            for (int d : row) {
                lo = std::min(lo, d);
                hi = std::max(hi, d);
            }
        const bool costed = i < static_cast<int>(r.stages.size());
        const QString dash = QStringLiteral("-");
        const QStringList cells{
            QString::number(i),
            QStringLiteral("%1-%2").arg(st.firstLayer).arg(st.endLayer - 1),
            QString::number(st.tp),
            QString::number(st.cp),
            st.etp > 0 ? tr("%1 (etp %2)").arg(st.ep).arg(st.etp) : QString::number(st.ep),
            st.sp ? tr("on") : tr("off"),
            QString::number(st.zero),
            QLatin1String(toString(st.recompute)),
            hi < 0 ? dash : QStringLiteral("%1-%2").arg(lo).arg(hi),
            costed ? QString::number(1e3 * r.stages[static_cast<size_t>(i)].cost.perMicroBatch, 'f', 2) : dash,
            costed ? QString::number(r.stages[static_cast<size_t>(i)].cost.memoryTotal / 1e9, 'f', 2) : dash};
        for (int c = 0; c < cells.size(); ++c) {
            auto *item = new QTableWidgetItem(cells[c]);
            const bool text = c == 1 || c == 5 || c == 7 || c == 8;  // layers, sp, recompute, devices
            item->setTextAlignment(text ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(i, c, item);
        }
    }
}

void PlanSummaryView::updateDelta()
{
    if (!m_snapshot || !m_previous || !m_snapshot->report().feasible || !m_previous->report().feasible ||
        m_previous->report().samplesPerSecond <= 0 || m_previous->report().iterationTime <= 0) {
        m_delta->clear();
        m_delta->hide();
        return;
    }
    const Report &now = m_snapshot->report();
    const Report &was = m_previous->report();
    const double dThroughput = 100 * (now.samplesPerSecond - was.samplesPerSecond) / was.samplesPerSecond;
    const double dTime = now.iterationTime - was.iterationTime;
    m_delta->setText(tr("Δ throughput %1 % (was %2 samples/s), Δ iteration time %3 s (%4 %)")
                         .arg(signedNumber(dThroughput, 1))
                         .arg(was.samplesPerSecond, 0, 'f', 1)
                         .arg(signedNumber(dTime, 4))
                         .arg(signedNumber(100 * dTime / was.iterationTime, 1)));
    m_delta->show();
}

bool PlanSummaryView::exportTo(const QString &fileName, QString *error)
{
    if (!m_snapshot) {
        *error = tr("%1: nothing to export (no plan yet)").arg(fileName);
        return false;
    }
    if (fileName.toLower().endsWith(QLatin1String(".json")))
        return writeFileAtomically(fileName, (planJsonText() + QLatin1Char('\n')).toUtf8(), error);
    // The whole content laid out as one document, not the widget's viewport: every value,
    // every stage row and every line of the plan JSON, however small the view is.
    const std::unique_ptr<QTextDocument> document = exportDocument();
    return exportPainting(fileName, document->size(), m_title->text(), [&](QPainter *painter) {
        document->drawContents(painter);
    }, error);
}

std::unique_ptr<QTextDocument> PlanSummaryView::exportDocument() const
{
    auto document = std::make_unique<QTextDocument>();
    document->setDocumentMargin(kExportMargin);
    QTextOption wrap = document->defaultTextOption();
    wrap.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);  // a long JSON line wraps, nothing is cut
    document->setDefaultTextOption(wrap);
    document->setDefaultFont(font());

    const auto esc = [](const QString &t) { return t.toHtmlEscaped(); };
    QString html = QStringLiteral("<h2>%1</h2>").arg(esc(m_title->text()));
    if (m_stale)
        html += QStringLiteral("<p style=\"background-color:#fff3cd; color:#664d03;\">%1</p>").arg(esc(m_staleBanner->text()));
    const QColor feasibility = m_snapshot->report().feasible ? QColor(Qt::black) : infeasibleColor();
    html += QStringLiteral("<p><b style=\"color:%1;\">%2</b></p>").arg(feasibility.name(), esc(m_feasibility->text()));
    if (!m_hint->isHidden())
        html += QStringLiteral("<p style=\"background-color:#fff4ce;\">%1</p>").arg(esc(m_hint->text()));
    if (!m_deviceWarning->isHidden())
        html += QStringLiteral("<p style=\"background-color:#fde2d8;\">%1</p>").arg(esc(m_deviceWarning->text()));
    html += QStringLiteral("<table cellspacing=\"0\" cellpadding=\"2\">");
    for (const auto &[key, caption] : valueRows()) {
        const QString value = m_values.value(QLatin1String(key))->text();
        html += QStringLiteral("<tr><td valign=\"top\"><b>%1:</b></td><td>%2</td></tr>").arg(esc(caption), esc(value));
    }
    html += QStringLiteral("</table>");
    if (!m_delta->isHidden())
        html += QStringLiteral("<p>%1</p>").arg(esc(m_delta->text()));

    html += QStringLiteral("<h3>%1</h3><table border=\"1\" cellspacing=\"0\" cellpadding=\"3\" "
                           "style=\"border-collapse:collapse;\"><tr>").arg(tr("Stages"));
    for (const QString &column : stageColumns())
        html += QStringLiteral("<th>%1</th>").arg(esc(column));
    html += QStringLiteral("</tr>");
    for (int r = 0; r < m_table->rowCount(); ++r) {
        html += QStringLiteral("<tr>");
        for (int c = 0; c < m_table->columnCount(); ++c) {
            const QTableWidgetItem *item = m_table->item(r, c);
            const bool right = item && (item->textAlignment() & Qt::AlignRight);
            html += QStringLiteral("<td align=\"%1\">%2</td>")
                        .arg(right ? QStringLiteral("right") : QStringLiteral("left"), item ? esc(item->text()) : QString());
        }
        html += QStringLiteral("</tr>");
    }
    html += QStringLiteral("</table><h3>%1</h3>").arg(tr("Plan JSON"));
    document->setHtml(html);

    // The JSON as plain blocks in the fixed-pitch font, one block per line.
    QTextCursor cursor(document.get());
    cursor.movePosition(QTextCursor::End);
    QTextCharFormat code;
    code.setFont(monospaceFont());
    QTextBlockFormat block;
    const QStringList lines = planJsonText().split(QLatin1Char('\n'));
    for (const QString &line : lines) {
        cursor.insertBlock(block, code);
        cursor.insertText(line, code);
    }
    document->setTextWidth(kExportWidth);
    return document;
}

} // namespace nest::ui
