#include "SweepDialog.h"

#include "PlannerRegistry.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

namespace {

const std::vector<std::string> kPlanners{"nest", "flat", "megatron", "mcmc"};
const std::vector<std::string> kCheckedByDefault{"nest", "megatron"};

QString unitSuffix(LinkField f)
{
    switch (f) {
    case LinkField::Bandwidth:
        return QStringLiteral(" GB/s");
    case LinkField::Latency:
        return QStringLiteral(" µs");
    case LinkField::Oversubscription:
        break;
    }
    return QString();
}

QString localeNumber(double x)
{
    return QLocale().toString(x, 'g', 6);
}

} // namespace

SweepDialog::SweepDialog(const Topology &cluster, QWidget *parent)
    : QDialog(parent)
    , m_cluster(cluster)
    , m_parameters(sweepParameters(cluster))
{
    setObjectName(QStringLiteral("sweepDialog"));
    setWindowTitle(tr("Sweep cluster parameter"));
    auto *layout = new QVBoxLayout(this);
    auto *form = new QFormLayout;
    m_parameter = new QComboBox;
    m_parameter->setObjectName(QStringLiteral("sweepParameter"));
    for (const auto &[p, value] : m_parameters) {
        m_parameter->addItem(tr("%1 — now %2%3")
                                 .arg(parameterText(p, cluster), localeNumber(displayValue(p.field, value)), unitSuffix(p.field)));
    }
    form->addRow(tr("Parameter"), m_parameter);
    const auto spin = [](const char *name) {
        auto *box = new QDoubleSpinBox;
        box->setObjectName(QLatin1String(name));
        box->setRange(0, 1e7);
        box->setDecimals(4);
        return box;
    };
    m_from = spin("sweepFrom");
    m_to = spin("sweepTo");
    form->addRow(tr("From"), m_from);
    form->addRow(tr("To"), m_to);
    m_steps = new QSpinBox;
    m_steps->setObjectName(QStringLiteral("sweepSteps"));
    m_steps->setRange(1, 1000);  // 2..50 is checked with a message, not clamped silently
    form->addRow(tr("Points"), m_steps);
    m_geometric = new QCheckBox(tr("Geometric spacing (constant ratio between points)"));
    m_geometric->setObjectName(QStringLiteral("sweepGeometric"));
    form->addRow(QString(), m_geometric);
    auto *plannerRow = new QHBoxLayout;
    for (const std::string &name : kPlanners) {
        auto *box = new QCheckBox(QString::fromStdString(name));
        box->setObjectName(QString::fromStdString("planner_" + name));
        box->setChecked(std::find(kCheckedByDefault.begin(), kCheckedByDefault.end(), name) != kCheckedByDefault.end());
        for (const PlannerInfo &info : plannerInfos())
            if (info.name == name)
                box->setToolTip(QString::fromStdString(info.description));
        m_planners[name] = box;
        plannerRow->addWidget(box);
        connect(box, &QCheckBox::toggled, this, &SweepDialog::validate);
    }
    form->addRow(tr("Planners"), plannerRow);
    layout->addLayout(form);
    m_message = new QLabel;
    m_message->setObjectName(QStringLiteral("sweepMessage"));
    m_message->setWordWrap(true);
    m_message->setStyleSheet(QStringLiteral("color: #c0392b;"));
    layout->addWidget(m_message);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Run sweep"));
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &SweepDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &SweepDialog::reject);
    connect(m_parameter, &QComboBox::currentIndexChanged, this, &SweepDialog::applyDefaults);
    connect(m_from, &QDoubleSpinBox::valueChanged, this, &SweepDialog::validate);
    connect(m_to, &QDoubleSpinBox::valueChanged, this, &SweepDialog::validate);
    connect(m_steps, &QSpinBox::valueChanged, this, &SweepDialog::validate);
    connect(m_geometric, &QCheckBox::toggled, this, &SweepDialog::validate);

    // The spine's oversubscription is the question users ask first ("is 2:1 good enough").
    int initial = 0;
    for (size_t i = 0; i < m_parameters.size(); ++i)
        if (m_parameters[i].first.field == LinkField::Oversubscription)
            initial = static_cast<int>(i);
    {
        const QSignalBlocker block(m_parameter);
        m_parameter->setCurrentIndex(m_parameters.empty() ? -1 : initial);
    }
    applyDefaults();
}

QString SweepDialog::parameterText(const SweepParameter &p, const Topology &cluster)
{
    return QString::fromStdString(p.label(cluster)).replace(QStringLiteral("(us)"), QStringLiteral("(µs)"));
}

QCheckBox *SweepDialog::plannerBox(const std::string &name) const
{
    const auto it = m_planners.find(name);
    return it == m_planners.end() ? nullptr : it->second;
}

SweepParameter SweepDialog::currentParameter() const
{
    const int i = m_parameter->currentIndex();
    return i >= 0 && i < static_cast<int>(m_parameters.size()) ? m_parameters[i].first : SweepParameter{};
}

bool SweepDialog::selectParameter(const SweepParameter &p)
{
    for (size_t i = 0; i < m_parameters.size(); ++i)
        if (m_parameters[i].first == p) {
            m_parameter->setCurrentIndex(static_cast<int>(i));
            return true;
        }
    return false;
}

QVariantMap SweepDialog::state() const
{
    const SweepParameter p = currentParameter();
    QStringList planners;
    for (const auto &[name, box] : m_planners)
        if (box->isChecked())
            planners << QString::fromStdString(name);
    return {{QStringLiteral("level"), p.level},
            {QStringLiteral("field"), static_cast<int>(p.field)},
            {QStringLiteral("from"), m_from->value()},
            {QStringLiteral("to"), m_to->value()},
            {QStringLiteral("steps"), m_steps->value()},
            {QStringLiteral("geometric"), m_geometric->isChecked()},
            {QStringLiteral("planners"), planners}};
}

void SweepDialog::restoreState(const QVariantMap &state)
{
    if (state.isEmpty())
        return;
    const int field = state.value(QStringLiteral("field"), -1).toInt();
    if (field < 0 || field > static_cast<int>(LinkField::Oversubscription))
        return;
    if (!selectParameter({state.value(QStringLiteral("level")).toInt(), static_cast<LinkField>(field)}))
        return;   // not a tier of this cluster: its defaults stay
    m_geometric->setChecked(state.value(QStringLiteral("geometric")).toBool());
    m_from->setValue(state.value(QStringLiteral("from"), m_from->value()).toDouble());
    m_to->setValue(state.value(QStringLiteral("to"), m_to->value()).toDouble());
    m_steps->setValue(state.value(QStringLiteral("steps"), m_steps->value()).toInt());
    if (state.contains(QStringLiteral("planners"))) {
        const QStringList planners = state.value(QStringLiteral("planners")).toStringList();
        for (const auto &[name, box] : m_planners)
            box->setChecked(planners.contains(QString::fromStdString(name)));
    }
    validate();
}

void SweepDialog::applyDefaults()
{
    const int i = m_parameter->currentIndex();
    if (i >= 0 && i < static_cast<int>(m_parameters.size())) {
        const auto &[p, value] = m_parameters[i];
        const double now = displayValue(p.field, value);
        double from = now, to = 4 * now;
        int steps = 4;
        if (p.field == LinkField::Bandwidth) {
            from = 0.25 * now;
            to = 2 * now;
            steps = 5;
        } else if (p.field == LinkField::Latency) {
            from = now > 0 ? 0.5 * now : 0;
            to = now > 0 ? 4 * now : 10;
        }
        const QSignalBlocker b1(m_from), b2(m_to), b3(m_steps), b4(m_geometric);
        m_from->setDecimals(p.field == LinkField::Oversubscription ? 2 : 4);
        m_to->setDecimals(m_from->decimals());
        m_from->setSuffix(unitSuffix(p.field));
        m_to->setSuffix(unitSuffix(p.field));
        m_from->setValue(from);
        m_to->setValue(to);
        m_steps->setValue(steps);
        m_geometric->setChecked(false);
    }
    validate();
}

void SweepDialog::validate()
{
    QString problem;
    const SweepParameter p = currentParameter();
    const double from = fromDisplayValue(p.field, m_from->value());
    const double to = fromDisplayValue(p.field, m_to->value());
    if (m_parameters.empty())
        problem = tr("This cluster has no link that traffic crosses: nothing to sweep.");
    else if (!(m_to->value() > m_from->value()))
        problem = tr("\"To\" must be greater than \"From\".");
    else if (m_steps->value() < 2 || m_steps->value() > 50)
        problem = tr("The number of points must be between 2 and 50 (found %1).").arg(m_steps->value());
    else if (m_geometric->isChecked() && !(m_from->value() > 0))
        problem = tr("Geometric spacing needs \"From\" above 0.");
    else if (const Result<Topology> a = withParameter(m_cluster, p, from); !a)
        problem = tr("From: %1").arg(QString::fromStdString(a.error()));
    else if (const Result<Topology> b = withParameter(m_cluster, p, to); !b)
        problem = tr("To: %1").arg(QString::fromStdString(b.error()));
    else if (std::none_of(m_planners.begin(), m_planners.end(), [](const auto &e) { return e.second->isChecked(); }))
        problem = tr("Choose at least one planner.");
    m_problem = problem;
    m_message->setText(problem);
    m_message->setVisible(!problem.isEmpty());
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(problem.isEmpty());
}

SweepRequest SweepDialog::request() const
{
    SweepRequest r;
    r.parameter = currentParameter();
    r.values = sweepValues(fromDisplayValue(r.parameter.field, m_from->value()),
                           fromDisplayValue(r.parameter.field, m_to->value()), m_steps->value(),
                           m_geometric->isChecked());
    for (const std::string &name : kPlanners)  // in the registry's order, NEST first
        if (m_planners.at(name)->isChecked())
            r.planners.push_back(name);
    return r;
}

void SweepDialog::accept()
{
    validate();
    if (isValid())
        QDialog::accept();
}

} // namespace nest::ui
