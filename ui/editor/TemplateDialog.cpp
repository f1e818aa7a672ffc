#include "TemplateDialog.h"

#include "ClusterTemplates.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHash>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>

namespace nest::ui {

namespace {

// "Latency per hop (us)" -> {"Latency per hop", " µs"}: a unit in brackets goes to the spin box as a
// suffix, written as the rest of the editor writes it (µs, not us).
std::pair<QString, QString> labelAndUnit(const std::string &label)
{
    const QString text = QString::fromStdString(label);
    static const QRegularExpression unitAtEnd(QStringLiteral("^(.*\\S)\\s*\\(([^()]+)\\)$"));
    const QRegularExpressionMatch m = unitAtEnd.match(text);
    if (!m.hasMatch())
        return {text, QString()};
    static const QHash<QString, QString> units{
        {QStringLiteral("us"), QStringLiteral("µs")}, {QStringLiteral("µs"), QStringLiteral("µs")},
        {QStringLiteral("ns"), QStringLiteral("ns")}, {QStringLiteral("ms"), QStringLiteral("ms")},
        {QStringLiteral("GB/s"), QStringLiteral("GB/s")}, {QStringLiteral("Gb/s"), QStringLiteral("Gb/s")},
        {QStringLiteral("TB/s"), QStringLiteral("TB/s")}, {QStringLiteral("GB"), QStringLiteral("GB")}};
    const auto unit = units.constFind(m.captured(2));
    if (unit == units.constEnd())
        return {text, QString()};   // "GPUs (even)": a constraint, not a unit
    return {m.captured(1), QLatin1Char(' ') + *unit};
}

} // namespace

TemplateDialog::TemplateDialog(QWidget *parent)
    : QDialog(parent)
{
    setWindowTitle(tr("New cluster from template"));
    auto *layout = new QVBoxLayout(this);
    auto *top = new QFormLayout;
    m_preset = new QComboBox;
    m_preset->setObjectName(QStringLiteral("preset"));
    m_preset->addItem(tr("Custom"), QString());
    for (const ClusterPreset &p : clusterPresets()) {
        m_preset->addItem(QString::fromStdString(p.key), QString::fromStdString(p.key));
        m_preset->setItemData(m_preset->count() - 1, QString::fromStdString(p.description), Qt::ToolTipRole);
    }
    top->addRow(tr("Preset"), m_preset);
    m_template = new QComboBox;
    m_template->setObjectName(QStringLiteral("template"));
    for (const ClusterTemplate &t : clusterTemplates())
        m_template->addItem(QString::fromStdString(t.title), QString::fromStdString(t.key));
    top->addRow(tr("Template"), m_template);
    m_device = new QComboBox;
    m_device->setObjectName(QStringLiteral("device"));
    m_device->addItem(tr("Template default"), QString());
    for (const DeviceSpec &d : devicePresets())
        m_device->addItem(QString::fromStdString(d.name), QString::fromStdString(d.name));
    top->addRow(tr("Device"), m_device);
    layout->addLayout(top);
    m_description = new QLabel;
    m_description->setWordWrap(true);
    m_description->setStyleSheet(QStringLiteral("color: #6b7785;"));
    layout->addWidget(m_description);
    m_form = new QFormLayout;
    layout->addLayout(m_form);
    m_preview = new QLabel;
    m_preview->setWordWrap(true);
    layout->addWidget(m_preview);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &TemplateDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_preset, &QComboBox::currentIndexChanged, this, &TemplateDialog::presetChosen);
    connect(m_template, &QComboBox::currentIndexChanged, this, &TemplateDialog::rebuildForm);
    connect(m_device, &QComboBox::currentIndexChanged, this, &TemplateDialog::updatePreview);
    setMinimumWidth(420);
    rebuildForm();
}

bool TemplateDialog::setPreset(const QString &key)
{
    const int i = m_preset->findData(key);
    if (key.isEmpty() || i < 0)
        return false;
    if (m_preset->currentIndex() == i)
        presetChosen();   // re-apply (parameters may have been edited)
    else
        m_preset->setCurrentIndex(i);
    return true;
}

QString TemplateDialog::presetKey() const
{
    return m_preset->currentData().toString();
}

void TemplateDialog::presetChosen()
{
    const std::string key = presetKey().toStdString();
    for (const ClusterPreset &p : clusterPresets()) {
        if (p.key != key)
            continue;
        m_applyingPreset = true;
        setTemplate(QString::fromStdString(p.templateKey));
        rebuildForm();   // the template's defaults, then the preset's values
        setDevice(QString::fromStdString(p.device));
        for (const auto &[param, value] : p.params)
            setParam(QString::fromStdString(param), value);
        updatePreview();
        m_applyingPreset = false;
        return;
    }
}

void TemplateDialog::markCustom()
{
    if (!m_applyingPreset && m_preset->currentIndex() != 0) {
        const QSignalBlocker block(m_preset);
        m_preset->setCurrentIndex(0);
    }
}

void TemplateDialog::setTemplate(const QString &key)
{
    const int i = m_template->findData(key);
    if (i >= 0)
        m_template->setCurrentIndex(i);
}

bool TemplateDialog::setParam(const QString &key, double value)
{
    for (auto &[k, spin] : m_spins) {
        if (QString::fromStdString(k) != key)
            continue;
        if (auto *s = qobject_cast<QSpinBox *>(spin))
            s->setValue(static_cast<int>(std::lround(value)));
        else if (auto *d = qobject_cast<QDoubleSpinBox *>(spin))
            d->setValue(value);
        return true;
    }
    return false;
}

void TemplateDialog::setDevice(const QString &device)
{
    const int i = m_device->findData(device);
    m_device->setCurrentIndex(std::max(0, i));
}

std::string TemplateDialog::templateKey() const
{
    return m_template->currentData().toString().toStdString();
}

std::map<std::string, double> TemplateDialog::params() const
{
    std::map<std::string, double> out;
    for (const auto &[k, spin] : m_spins) {
        if (auto *s = qobject_cast<QSpinBox *>(spin))
            out[k] = s->value();
        else if (auto *d = qobject_cast<QDoubleSpinBox *>(spin))
            out[k] = d->value();
    }
    return out;
}

std::string TemplateDialog::device() const
{
    return m_device->currentData().toString().toStdString();
}

Result<Topology> TemplateDialog::cluster() const
{
    return makeCluster(templateKey(), params(), device());
}

void TemplateDialog::rebuildForm()
{
    while (m_form->rowCount() > 0)
        m_form->removeRow(0);
    m_spins.clear();
    const ClusterTemplate *t = findClusterTemplate(templateKey());
    if (!t)
        return;
    m_description->setText(QString::fromStdString(t->description));
    for (const TemplateParam &p : t->params) {
        const auto [label, unit] = labelAndUnit(p.label);
        QAbstractSpinBox *box;
        if (p.integer) {
            auto *s = new QSpinBox;
            s->setRange(static_cast<int>(p.min), static_cast<int>(p.max));
            s->setValue(static_cast<int>(p.value));
            s->setSuffix(unit);
            connect(s, &QSpinBox::valueChanged, this, &TemplateDialog::updatePreview);
            box = s;
        } else {
            auto *d = new QDoubleSpinBox;
            d->setDecimals(3);
            d->setRange(p.min, p.max);
            d->setValue(p.value);
            d->setSuffix(unit);
            connect(d, &QDoubleSpinBox::valueChanged, this, &TemplateDialog::updatePreview);
            box = d;
        }
        box->setObjectName(QString::fromStdString(p.key));
        m_form->addRow(label, box);
        m_spins.emplace_back(p.key, box);
    }
    updatePreview();
}

void TemplateDialog::updatePreview()
{
    markCustom();   // any edit outside applying a preset
    const Result<Topology> t = cluster();
    if (!t) {
        m_preview->setText(tr("<span style='color:#8a1c12'>%1</span>")
                               .arg(QString::fromStdString(t.error()).toHtmlEscaped()));
        return;
    }
    QStringList levels;
    for (const TopoLevel &l : t->levels)
        levels << QString::fromStdString(l.name);
    m_preview->setText(tr("<b>%1 devices</b> (%2), levels: %3")
                           .arg(t->deviceCount())
                           .arg(QString::fromStdString(t->deviceTypes.empty() ? std::string()
                                                                              : t->deviceTypes[0].name),
                                levels.join(QStringLiteral(" → "))));
}

void TemplateDialog::accept()
{
    const Result<Topology> t = cluster();
    if (!t) {
        updatePreview();
        return;
    }
    QDialog::accept();
}

} // namespace nest::ui
