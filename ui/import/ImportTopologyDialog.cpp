#include "ImportTopologyDialog.h"

#include "DeviceSpec.h"
#include "LinkSpinBox.h"
#include "Limits.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

namespace nest::ui {

ImportTopologyDialog::ImportTopologyDialog(ClusterSketch sketch, QWidget *parent)
    : QDialog(parent)
    , m_sketch(std::move(sketch))
{
    setWindowTitle(tr("Import topology"));
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(createForm());
    layout->addLayout(createLevelGrid());

    m_preview = new QLabel;
    m_preview->setObjectName(QStringLiteral("preview"));
    m_preview->setWordWrap(true);
    layout->addWidget(m_preview);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_import = buttons->button(QDialogButtonBox::Ok);
    m_import->setText(tr("Import"));
    connect(buttons, &QDialogButtonBox::accepted, this, &ImportTopologyDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);

    connect(m_device, &QComboBox::currentIndexChanged, this, &ImportTopologyDialog::deviceChanged);
    connect(m_gpus, &QSpinBox::valueChanged, this, &ImportTopologyDialog::updatePreview);
    updatePreview();
}

// The file, the device and the GPUs per node (fixed where the file fixes them).
QFormLayout *ImportTopologyDialog::createForm()
{
    auto *form = new QFormLayout;
    auto *source = new QLabel(tr("%1 (%2)")
                                  .arg(QFileInfo(QString::fromStdString(m_sketch.origin)).fileName(),
                                       QString::fromStdString(clusterFormatName(m_sketch.format))));
    source->setObjectName(QStringLiteral("source"));
    form->addRow(tr("File"), source);

    m_device = new QComboBox;
    m_device->setObjectName(QStringLiteral("device"));
    if (!m_sketch.device)
        m_device->addItem(tr("Choose a device…"), QString());
    for (const DeviceSpec &d : devicePresets())
        m_device->addItem(QString::fromStdString(d.name), QString::fromStdString(d.name));
    if (m_sketch.device) {
        m_device->setCurrentIndex(m_device->findData(QString::fromStdString(m_sketch.device->name)));
        m_device->setToolTip(tr("Named by %1").arg(QString::fromStdString(m_sketch.deviceWhere)));
    }
    form->addRow(tr("Device"), m_device);

    m_gpus = new QSpinBox;
    m_gpus->setObjectName(QStringLiteral("gpusPerNode"));
    m_gpus->setRange(1, static_cast<int>(limits::devices.max));  // as --gpus-per-node
    m_gpus->setValue(m_sketch.gpusPerNode.value_or(8));
    if (m_sketch.gpusPerNode) {
        m_gpus->setEnabled(false);   // the file fixes it
        m_gpus->setToolTip(tr("Fixed by %1").arg(QString::fromStdString(m_sketch.gpusPerNodeWhere)));
    }
    form->addRow(tr("GPUs per node"), m_gpus);
    return form;

}

// Per level its bandwidth, latency and oversubscription, pre-filled with what the file says.
QGridLayout *ImportTopologyDialog::createLevelGrid()
{
    auto *grid = new QGridLayout;
    const QStringList headers{tr("Level"), tr("Bandwidth"), tr("Latency"), tr("Oversub.")};
    for (int c = 0; c < headers.size(); ++c)
        grid->addWidget(new QLabel(QStringLiteral("<b>%1</b>").arg(headers[c])), 0, c);
    const std::optional<DeviceSpec> device = m_sketch.device;
    for (int l = 0; l < m_sketch.levelCount(); ++l) {
        LevelRow row{linkSpinBox(0, 1e7, 3, tr(" GB/s"), QStringLiteral("bandwidth%1").arg(l)),
                     linkSpinBox(0, 1e6, 4, tr(" µs"), QStringLiteral("latency%1").arg(l)),
                     linkSpinBox(1, 1024, 2, QString(), QStringLiteral("oversubscription%1").arg(l))};
        row.bandwidth->setSpecialValueText(tr("required"));   // 0 = not given yet
        if (const std::optional<double> bw = sketchedBandwidth(m_sketch, l, device))
            row.bandwidth->setValue(*bw / 1e9);
        row.latency->setValue(m_sketch.latency[l].value_or(0) * 1e6);
        row.oversubscription->setValue(1);
        grid->addWidget(new QLabel(QString::fromStdString(m_sketch.skeleton.levels[l].name)), l + 1, 0);
        grid->addWidget(row.bandwidth, l + 1, 1);
        grid->addWidget(row.latency, l + 1, 2);
        grid->addWidget(row.oversubscription, l + 1, 3);
        connect(row.bandwidth, &QDoubleSpinBox::valueChanged, this, [this, l] {
            m_levels[static_cast<size_t>(l)].bandwidthEdited = true;
            updatePreview();
        });
        for (QDoubleSpinBox *s : {row.latency, row.oversubscription})
            connect(s, &QDoubleSpinBox::valueChanged, this, &ImportTopologyDialog::updatePreview);
        m_levels.push_back(row);
    }
    return grid;

}

ClusterImportOptions ImportTopologyDialog::options() const
{
    ClusterImportOptions o;
    o.format = m_sketch.format;
    o.device = m_device->currentData().toString().toStdString();
    if (!m_sketch.gpusPerNode)
        o.gpusPerNode = m_gpus->value();
    for (const LevelRow &row : m_levels) {
        o.bandwidthGBps.push_back(row.bandwidth->value());
        o.latencyUs.push_back(row.latency->value());
        o.oversubscription.push_back(row.oversubscription->value());
    }
    return o;
}

Result<Topology> ImportTopologyDialog::cluster() const
{
    // The dialog's own words for what the command line asks as flags (issue 49: the ASTRA-sim
    // import said "give --device PRESET").
    if (!m_sketch.device && m_device->currentData().toString().isEmpty())
        return Result<Topology>::failure(
            tr("Choose the device: %1 does not name the GPU model")
                .arg(QFileInfo(QString::fromStdString(m_sketch.origin)).fileName())
                .toStdString());
    for (size_t l = 0; l < m_levels.size(); ++l)
        if (m_levels[l].bandwidth->value() <= 0)
            return Result<Topology>::failure(
                tr("Level %1 (%2) needs a bandwidth: %3 does not give one")
                    .arg(l)
                    .arg(QString::fromStdString(m_sketch.skeleton.levels[l].name),
                         QFileInfo(QString::fromStdString(m_sketch.origin)).fileName())
                    .toStdString());
    return assembleCluster(m_sketch, options());
}

bool ImportTopologyDialog::setDevice(const QString &preset)
{
    const int index = m_device->findData(preset);
    if (index < 0)
        return false;
    m_device->setCurrentIndex(index);
    return true;
}

void ImportTopologyDialog::setGpusPerNode(int gpus) { m_gpus->setValue(gpus); }

bool ImportTopologyDialog::setLevel(int level, double bandwidthGBps, double latencyUs, double oversubscription)
{
    if (level < 0 || level >= static_cast<int>(m_levels.size()))
        return false;
    m_levels[static_cast<size_t>(level)].bandwidth->setValue(bandwidthGBps);
    m_levels[static_cast<size_t>(level)].latency->setValue(latencyUs);
    m_levels[static_cast<size_t>(level)].oversubscription->setValue(oversubscription);
    return true;
}

// An nvidia-smi matrix counts links but names no GPU: the device's NVLink speed completes
// level 0, unless the user typed a bandwidth there.
void ImportTopologyDialog::deviceChanged()
{
    if (!m_levels.empty() && !m_levels.front().bandwidthEdited && !m_sketch.bandwidth.front()) {
        std::optional<DeviceSpec> device;
        if (auto d = devicePreset(m_device->currentData().toString().toStdString()))
            device = *d;
        const QSignalBlocker block(m_levels.front().bandwidth);
        m_levels.front().bandwidth->setValue(sketchedBandwidth(m_sketch, 0, device).value_or(0) / 1e9);
    }
    updatePreview();
}

void ImportTopologyDialog::updatePreview()
{
    const Result<Topology> t = cluster();
    if (t)
        m_preview->setText(tr("%1 devices in %2 levels").arg(t->deviceCount()).arg(t->levelCount()));
    else
        m_preview->setText(QString::fromStdString(t.error()));
    if (m_import)
        m_import->setEnabled(t.ok());
}

void ImportTopologyDialog::accept()
{
    if (cluster())   // Import is disabled otherwise; the preview says why
        QDialog::accept();
}

} // namespace nest::ui
