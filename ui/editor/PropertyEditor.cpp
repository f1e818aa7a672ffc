#include "PropertyEditor.h"

#include "LinkSpinBox.h"
#include "Limits.h"
#include "WorkspaceDocument.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

namespace {

// A spin box's size hint is wide enough for its maximum (1e6 GB/s), which pushed the level
// table out of the dock. Let it shrink to what `typical` needs: the hint minus the text
// width of the maximum gives the frame and buttons of the current style.
void compact(QDoubleSpinBox *s, const QString &typical)
{
    const QFontMetrics fm = s->fontMetrics();
    const int widest = fm.horizontalAdvance(s->prefix() + s->textFromValue(s->maximum()) + s->suffix());
    const int chrome = std::max(0, s->sizeHint().width() - widest);
    s->setMinimumWidth(fm.horizontalAdvance(typical) + chrome);
    s->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void setSpin(QDoubleSpinBox *s, double v)
{
    const QSignalBlocker block(s);
    s->setValue(v);
}

} // namespace

PropertyEditor::PropertyEditor(WorkspaceDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_document(document)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(createClusterBox());

    m_selectionBox = new QGroupBox(tr("Selection"));
    auto *selForm = new QFormLayout(m_selectionBox);
    m_groupKind = new QLabel;
    selForm->addRow(tr("Kind"), m_groupKind);
    m_groupName = new QLineEdit;
    m_groupName->setObjectName(QStringLiteral("groupName"));
    selForm->addRow(tr("Name"), m_groupName);

    selForm->addRow(createLinkPart());
    selForm->addRow(createDevicePart());
    layout->addWidget(m_selectionBox);
    layout->addStretch(1);

    connect(m_clusterName, &QLineEdit::editingFinished, this, [this] {
        if (!m_updating && m_clusterName->text().toStdString() != m_document->topology().name)
            m_document->setClusterName(m_clusterName->text());
    });
    connect(m_groupName, &QLineEdit::editingFinished, this, &PropertyEditor::commitGroupName);
    connect(m_override, &QCheckBox::toggled, this, &PropertyEditor::commitOverride);
    for (QDoubleSpinBox *s : {m_overrideBandwidth, m_overrideLatency, m_overrideOversubscription})
        connect(s, &QDoubleSpinBox::valueChanged, this, &PropertyEditor::commitOverride);
    connect(m_deviceCount, &QSpinBox::valueChanged, this, &PropertyEditor::commitDevices);
    connect(m_deviceType, &QComboBox::currentIndexChanged, this, &PropertyEditor::commitDevices);

    connect(document, &WorkspaceDocument::clusterReset, this, &PropertyEditor::rebuildLevels);
    connect(document, &WorkspaceDocument::clusterChanged, this, &PropertyEditor::refresh);
    connect(document, &WorkspaceDocument::selectionChanged, this, &PropertyEditor::refresh);
    connect(document, &WorkspaceDocument::editRefused, this, &PropertyEditor::refresh);
    rebuildLevels();
}

// The cluster's name and size, and one row per level (rebuildLevels()).
QWidget *PropertyEditor::createClusterBox()
{
    auto *clusterBox = new QGroupBox(tr("Cluster"));
    auto *clusterLayout = new QVBoxLayout(clusterBox);
    auto *nameForm = new QFormLayout;
    m_clusterName = new QLineEdit;
    m_clusterName->setObjectName(QStringLiteral("clusterName"));
    nameForm->addRow(tr("Name"), m_clusterName);
    m_clusterSummary = new QLabel;
    nameForm->addRow(tr("Size"), m_clusterSummary);
    clusterLayout->addLayout(nameForm);
    m_levelGrid = new QGridLayout;
    m_levelGrid->setHorizontalSpacing(4);
    m_levelGrid->setColumnStretch(0, 2);
    m_levelGrid->setColumnStretch(1, 3);
    m_levelGrid->setColumnStretch(2, 3);
    m_levelGrid->setColumnStretch(3, 2);
    clusterLayout->addLayout(m_levelGrid);

    return clusterBox;
}

// A switch's own link, overriding its level's.
QWidget *PropertyEditor::createLinkPart()
{
    m_linkPart = new QWidget;
    auto *linkForm = new QFormLayout(m_linkPart);
    linkForm->setContentsMargins(0, 0, 0, 0);
    m_override = new QCheckBox(tr("Override the level's link"));
    m_override->setObjectName(QStringLiteral("overrideLink"));
    linkForm->addRow(m_override);
    m_overrideBandwidth = linkSpinBox(0.01, 1e6, 2, tr(" GB/s"), QStringLiteral("overrideBandwidth"));
    m_overrideLatency = linkSpinBox(0, 1e6, 2, tr(" µs"), QStringLiteral("overrideLatency"));
    m_overrideOversubscription = linkSpinBox(1, 1000, 2, tr(" : 1"), QStringLiteral("overrideOversubscription"));
    compact(m_overrideBandwidth, QStringLiteral("9999.99 GB/s"));
    compact(m_overrideLatency, QStringLiteral("999.99 µs"));
    compact(m_overrideOversubscription, QStringLiteral("99.99 : 1"));
    linkForm->addRow(tr("Bandwidth"), m_overrideBandwidth);
    linkForm->addRow(tr("Latency"), m_overrideLatency);
    linkForm->addRow(tr("Oversubscription"), m_overrideOversubscription);

    return m_linkPart;
}

// A node's devices: how many, of which type.
QWidget *PropertyEditor::createDevicePart()
{
    m_devicePart = new QWidget;
    auto *devForm = new QFormLayout(m_devicePart);
    devForm->setContentsMargins(0, 0, 0, 0);
    m_deviceCount = new QSpinBox;
    m_deviceCount->setRange(1, static_cast<int>(limits::devices.max));  // a cluster file's "devices"
    m_deviceCount->setKeyboardTracking(false);
    m_deviceCount->setObjectName(QStringLiteral("deviceCount"));
    m_deviceType = new QComboBox;
    m_deviceType->setObjectName(QStringLiteral("deviceType"));
    devForm->addRow(tr("Devices"), m_deviceCount);
    devForm->addRow(tr("Device type"), m_deviceType);
    return m_devicePart;
}

void PropertyEditor::rebuildLevels()
{
    while (QLayoutItem *item = m_levelGrid->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_levels.clear();
    const Topology &t = m_document->topology();
    const QStringList headers{tr("Level"), tr("Bandwidth"), tr("Latency"), tr("Oversub.")};
    for (int c = 0; c < headers.size(); ++c) {
        auto *h = new QLabel(QStringLiteral("<b>%1</b>").arg(headers[c]));
        m_levelGrid->addWidget(h, 0, c);
    }
    for (int l = 0; l < t.levelCount(); ++l) {
        LevelRow row{new QLineEdit, linkSpinBox(0.01, 1e6, 2, tr(" GB/s"), QStringLiteral("levelBandwidth%1").arg(l)),
                     linkSpinBox(0, 1e6, 2, tr(" µs"), QStringLiteral("levelLatency%1").arg(l)),
                     linkSpinBox(1, 1000, 2, QString(), QStringLiteral("levelOversubscription%1").arg(l))};
        row.name->setObjectName(QStringLiteral("levelName%1").arg(l));
        row.name->setToolTip(tr("Level %1 (0 = inside a node)").arg(l));
        row.name->setMinimumWidth(48);
        row.name->setMaximumWidth(80);
        row.oversubscription->setToolTip(tr("Oversubscription of level %1's uplinks (1 = non-blocking)").arg(l));
        // Four columns in a 1024 px screen's dock column (about 310 px): the values are
        // typed (or stepped with the arrow keys and the wheel), without step buttons.
        for (QDoubleSpinBox *s : {row.bandwidth, row.latency, row.oversubscription})
            s->setButtonSymbols(QAbstractSpinBox::NoButtons);
        compact(row.bandwidth, QStringLiteral("9999.99 GB/s"));
        compact(row.latency, QStringLiteral("999.99 µs"));
        compact(row.oversubscription, QStringLiteral("99.99"));
        m_levelGrid->addWidget(row.name, l + 1, 0);
        m_levelGrid->addWidget(row.bandwidth, l + 1, 1);
        m_levelGrid->addWidget(row.latency, l + 1, 2);
        m_levelGrid->addWidget(row.oversubscription, l + 1, 3);
        connect(row.name, &QLineEdit::editingFinished, this, [this, l] {
            if (m_updating || l >= m_document->topology().levelCount())
                return;
            const QString text = m_levels[l].name->text();
            if (text.toStdString() != m_document->topology().levels[l].name)
                m_document->setLevelName(l, text);
        });
        for (QDoubleSpinBox *s : {row.bandwidth, row.latency, row.oversubscription})
            connect(s, &QDoubleSpinBox::valueChanged, this, [this, l] { commitLevel(l); });
        m_levels.push_back(row);
    }
    refresh();
}

void PropertyEditor::refresh()
{
    const Topology &t = m_document->topology();
    if (static_cast<int>(m_levels.size()) != t.levelCount()) {
        rebuildLevels();
        return;
    }
    m_updating = true;
    refreshCluster(t);
    const QList<int> sel = m_document->selectedGroups();
    m_group = sel.isEmpty() ? -1 : sel.first();
    m_selectionBox->setEnabled(m_group >= 0);
    if (m_group < 0) {
        m_selectionBox->setTitle(tr("Selection (none)"));
        m_groupKind->clear();
        m_groupName->clear();
        m_linkPart->hide();
        m_devicePart->hide();
        m_updating = false;
        return;
    }
    refreshGroup(t, static_cast<int>(sel.size()));
    m_updating = false;
}

// The cluster's name, size and level links.
void PropertyEditor::refreshCluster(const Topology &t)
{
    m_clusterName->setText(QString::fromStdString(t.name));
    int nodes = 0;
    for (const TopoGroup &g : t.groups)
        nodes += g.level == 0 ? 1 : 0;
    m_clusterSummary->setText(tr("%1 devices in %2 nodes, %3 levels")
                                  .arg(t.deviceCount()).arg(nodes).arg(t.levelCount()));
    for (int l = 0; l < t.levelCount(); ++l) {
        const LinkParams &link = t.levels[l].link;
        m_levels[l].name->setText(QString::fromStdString(t.levels[l].name));
        setSpin(m_levels[l].bandwidth, link.bandwidth / 1e9);
        setSpin(m_levels[l].latency, link.latency * 1e6);
        setSpin(m_levels[l].oversubscription, link.oversubscription);
    }

}

// The selected group (the first of `selected`): its kind, name, link override and devices.
void PropertyEditor::refreshGroup(const Topology &t, int selected)
{
    const TopoGroup &g = t.groups[m_group];
    m_selectionBox->setTitle(selected > 1 ? tr("Selection (%1 groups; first shown)").arg(selected)
                                            : tr("Selection"));
    m_groupKind->setText(tr("%1 (level %2), %3 devices")
                             .arg(QString::fromStdString(t.levels[g.level].name)).arg(g.level)
                             .arg(t.deviceCountUnder(m_group)));
    m_groupName->setText(QString::fromStdString(g.name));
    const LinkParams link = t.link(m_group);
    m_linkPart->setVisible(g.level >= 1);
    {
        const QSignalBlocker b(m_override);
        m_override->setChecked(g.linkOverride.has_value());
    }
    setSpin(m_overrideBandwidth, link.bandwidth / 1e9);
    m_overrideBandwidth->setToolTip(tr("Priced at %1 GB/s per device: the share of this rate NCCL's collectives "
                                       "reach (docs/cost-model.md, section 2)")
                                        .arg(t.achievableLink(m_group).bandwidth / 1e9, 0, 'f', 1));
    setSpin(m_overrideLatency, link.latency * 1e6);
    setSpin(m_overrideOversubscription, link.oversubscription);
    for (QDoubleSpinBox *s : {m_overrideBandwidth, m_overrideLatency, m_overrideOversubscription})
        s->setEnabled(g.linkOverride.has_value());

    m_devicePart->setVisible(g.level == 0);
    if (g.level == 0) {
        const QSignalBlocker b1(m_deviceCount), b2(m_deviceType);
        m_deviceCount->setValue(static_cast<int>(g.devices.size()));
        m_deviceType->clear();
        // The cluster's own types first (they may be custom), then the presets not among them.
        for (const DeviceSpec &d : t.deviceTypes)
            m_deviceType->addItem(QString::fromStdString(d.name));
        for (const DeviceSpec &d : devicePresets())
            if (std::find(t.deviceTypes.begin(), t.deviceTypes.end(), d) == t.deviceTypes.end() &&
                m_deviceType->findText(QString::fromStdString(d.name)) < 0)
                m_deviceType->addItem(QString::fromStdString(d.name));
        m_deviceType->setCurrentIndex(g.deviceType);
    }
}

void PropertyEditor::commitLevel(int level)
{
    if (m_updating || level >= static_cast<int>(m_levels.size()))
        return;
    const LinkParams link{m_levels[level].bandwidth->value() * 1e9, m_levels[level].latency->value() * 1e-6,
                          m_levels[level].oversubscription->value()};
    m_document->setLevelLink(level, link);
}

void PropertyEditor::commitOverride()
{
    if (m_updating || m_group < 0)
        return;
    std::optional<LinkParams> link;
    if (m_override->isChecked())
        link = LinkParams{m_overrideBandwidth->value() * 1e9, m_overrideLatency->value() * 1e-6,
                          m_overrideOversubscription->value()};
    m_document->setGroupOverride(m_group, link);
}

void PropertyEditor::commitDevices()
{
    if (m_updating || m_group < 0)
        return;
    const Topology &t = m_document->topology();
    const int index = m_deviceType->currentIndex();
    DeviceSpec type;
    if (index >= 0 && index < static_cast<int>(t.deviceTypes.size()))
        type = t.deviceTypes[index];
    else {
        auto preset = devicePreset(m_deviceType->currentText().toStdString());
        if (!preset) {
            emit m_document->editRefused(QString::fromStdString(preset.error()));
            return;
        }
        type = *preset;
    }
    m_document->setNodeDevices(m_group, m_deviceCount->value(), type);
}

void PropertyEditor::commitGroupName()
{
    if (m_updating || m_group < 0)
        return;
    if (m_groupName->text().toStdString() != m_document->topology().groups[m_group].name)
        m_document->setGroupName(m_group, m_groupName->text());
}

} // namespace nest::ui
