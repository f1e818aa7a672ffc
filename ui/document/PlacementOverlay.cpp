#include "PlacementOverlay.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <map>

namespace nest::ui {

namespace {

QString overlayGb(double bytes)
{
    return QObject::tr("%1 GB").arg(bytes / 1e9, 0, 'f', 1);
}

QString layersText(const StagePlan &st)
{
    return st.layerCount() == 1 ? QObject::tr("layer %1").arg(st.firstLayer)
                                : QObject::tr("layers %1-%2").arg(st.firstLayer).arg(st.endLayer - 1);
}

const std::vector<PlacementOverlay::Band> kNoBands;

} // namespace

PlacementOverlay::PlacementOverlay(PlanSnapshotPtr snapshot, const Topology &current, ColourBy by,
                                   bool forcedStale)
    : m_snapshot(std::move(snapshot))
    , m_current(current)
    , m_by(by)
{
    if (m_snapshot) {
        const Plan &plan = m_snapshot->plan();
        m_stageCount = std::max(0, plan.pipelineDepth());
        m_replicaCount = std::max(0, plan.dp);
        checkFit(current);
        readDevices(current);
    } else {
        m_devices.resize(static_cast<size_t>(current.deviceCount()));
    }
    m_stale = m_snapshot && (forcedStale || !m_misfit.isEmpty());
    buildBands(current);
    buildLegend();
}

void PlacementOverlay::checkFit(const Topology &current)
{
    const Topology &planned = m_snapshot->topology;
    const int count = current.deviceCount();
    if (planned.deviceCount() != count) {
        m_misfit = QObject::tr("the cluster changed since this plan (%1 → %2 devices)")
                       .arg(planned.deviceCount()).arg(count);
        return;
    }
    for (const StagePlan &st : m_snapshot->plan().stages)
        for (const auto &replica : st.devices)
            for (int d : replica)
                if (d < 0 || d >= count) {
                    m_misfit = QObject::tr("the plan uses device %1, the cluster has %2 devices")
                                   .arg(d).arg(count);
                    return;
                }
    if (!(planned == current))
        m_misfit = QObject::tr("the cluster changed since this plan");
}

void PlacementOverlay::readDevices(const Topology &current)
{
    const std::vector<DeviceReport> &reports = m_snapshot->report().devices;
    m_devices.resize(static_cast<size_t>(current.deviceCount()));
    const size_t n = std::min(reports.size(), m_devices.size());
    for (size_t d = 0; d < n; ++d) {
        const DeviceReport &r = reports[d];
        if (r.stage < 0 || r.stage >= m_stageCount)
            continue;
        m_devices[d] = {r.stage, r.replica, r.shard, r.total > r.capacity};
    }
}

void PlacementOverlay::buildBands(const Topology &current)
{
    const size_t groups = current.groups.size();
    m_bands.assign(groups, {});
    m_nodeOver.assign(groups, 0);
    if (!m_snapshot)
        return;
    for (size_t g = 0; g < groups; ++g) {
        const TopoGroup &group = current.groups[g];
        if (group.level != 0)
            continue;
        std::map<int, int> count;   // key -> devices; -1 (unused) sorts first, moved last
        for (int d : group.devices) {
            if (d < 0 || d >= static_cast<int>(m_devices.size()))
                continue;
            const DeviceState &s = m_devices[static_cast<size_t>(d)];
            ++count[s.stage >= 0 ? keyOf(s) : -1];
            m_nodeOver[g] = m_nodeOver[g] || s.over;
        }
        std::vector<Band> &bands = m_bands[g];
        for (const auto &[key, devices] : count)
            if (key >= 0)
                bands.push_back({key, devices, colourOfKey(key)});
        if (const auto it = count.find(-1); it != count.end())
            bands.push_back({-1, it->second, unusedColour()});
    }
}

void PlacementOverlay::buildLegend()
{
    m_legend.clear();
    if (!m_snapshot)
        return;
    if (m_by == ColourBy::Stage) {
        for (int p = 0; p < m_stageCount; ++p)
            m_legend.push_back({colourOfKey(p), stageText(p, false)});
    } else {
        for (int r = 0; r < m_replicaCount; ++r)
            m_legend.push_back({colourOfKey(r), QObject::tr("replica %1").arg(r)});
    }
}

QColor PlacementOverlay::colourOfKey(int key) const
{
    return paletteColour(key, m_by == ColourBy::Stage ? m_stageCount : m_replicaCount);
}

QString PlacementOverlay::stageText(int stage, bool withChunks) const
{
    const std::vector<StagePlan> &stages = m_snapshot->plan().stages;
    if (stage < 0 || stage >= static_cast<int>(stages.size()))
        return QObject::tr("stage %1").arg(stage);
    if (static_cast<int>(stages.size()) <= m_stageCount)
        return QObject::tr("stage %1 (%2)").arg(stage).arg(layersText(stages[static_cast<size_t>(stage)]));
    // Interleaved: stage k runs on the devices of stage k % pipelineDepth.
    QStringList parts;
    for (size_t k = static_cast<size_t>(stage); k < stages.size(); k += static_cast<size_t>(m_stageCount)) {
        const StagePlan &st = stages[k];
        if (withChunks)
            parts << QObject::tr("virtual stage %1, %2").arg(k).arg(layersText(st));
        else
            parts << (st.layerCount() == 1 ? QString::number(st.firstLayer)
                                           : QStringLiteral("%1-%2").arg(st.firstLayer).arg(st.endLayer - 1));
    }
    return withChunks ? QObject::tr("stage %1 (chunks: %2)").arg(stage).arg(parts.join(QStringLiteral("; ")))
                      : QObject::tr("stage %1 (layers %2)").arg(stage).arg(parts.join(QStringLiteral(", ")));
}

QString PlacementOverlay::bannerText() const
{
    if (!m_stale)
        return {};
    const QString why = m_misfit.isEmpty() ? QObject::tr("the cluster or model changed since this plan")
                                           : m_misfit;
    return QObject::tr("Stale: %1; re-run to update").arg(why);
}

bool PlacementOverlay::isUsed(int device) const
{
    return device >= 0 && device < static_cast<int>(m_devices.size()) &&
           m_devices[static_cast<size_t>(device)].stage >= 0;
}

QColor PlacementOverlay::deviceColour(int device) const
{
    return isUsed(device) ? colourOfKey(keyOf(m_devices[static_cast<size_t>(device)])) : QColor();
}

bool PlacementOverlay::isOverCapacity(int device) const
{
    return isUsed(device) && m_devices[static_cast<size_t>(device)].over;
}

QString PlacementOverlay::deviceToolTip(int device) const
{
    if (!m_snapshot || device < 0 || device >= m_current.deviceCount())
        return {};
    const int node = m_current.devices[static_cast<size_t>(device)].node;
    QString where = QString::fromStdString(m_current.groups[static_cast<size_t>(node)].name);
    const int parent = m_current.groups[static_cast<size_t>(node)].parent;
    if (parent >= 0)
        where += QStringLiteral(", ") + QString::fromStdString(m_current.groups[static_cast<size_t>(parent)].name);
    const QString head = QObject::tr("device %1 (%2)").arg(device).arg(where);
    if (!isUsed(device))
        return QObject::tr("%1: unused by this plan").arg(head) +
               (m_stale ? QStringLiteral("\n") + bannerText() : QString());

    const DeviceState &s = m_devices[static_cast<size_t>(device)];
    const DeviceReport &r = m_snapshot->report().devices[static_cast<size_t>(device)];
    const Plan &plan = m_snapshot->plan();
    const StagePlan &st = plan.stages[static_cast<size_t>(s.stage)];
    const int tp = std::max(1, st.tp), ep = std::max(1, st.ep), etp = std::max(1, st.expertTp());
    // The experts' ranks fold over the stage's (docs/cost-model.md §1c): dense rank x, then
    // etp rank x mod etp and ep rank (x / etp) mod ep.
    const long long dense = static_cast<long long>(s.replica) * tp * std::max(1, st.cp) + s.shard;
    const double percent = r.capacity > 0 ? std::round(100 * r.total / r.capacity) : 0;
    QString text = QObject::tr("%1: %2, replica %3, tp rank %4 / cp rank %5 / ep rank %6, "
                               "memory %7 of %8 (%9 %)")
                       .arg(head, stageText(s.stage, true))
                       .arg(s.replica)
                       .arg(s.shard % tp)
                       .arg(s.shard / tp)
                       .arg((dense / etp) % ep)
                       .arg(overlayGb(r.total), overlayGb(r.capacity))
                       .arg(percent, 0, 'f', 0);
    if (s.over)
        text += QObject::tr(" — OVER CAPACITY");
    text += QObject::tr("\nweights %1, gradients %2, optimizer %3, activations %4, stash %5, overhead %6")
                .arg(overlayGb(r.weights), overlayGb(r.gradients), overlayGb(r.optimizerState), overlayGb(r.activations),
                     overlayGb(r.stash), overlayGb(r.overhead));
    if (m_stale)
        text += QStringLiteral("\n") + bannerText();
    return text;
}

const std::vector<PlacementOverlay::Band> &PlacementOverlay::nodeBands(int group) const
{
    if (group < 0 || group >= static_cast<int>(m_bands.size()))
        return kNoBands;
    return m_bands[static_cast<size_t>(group)];
}

bool PlacementOverlay::nodeOverCapacity(int group) const
{
    return group >= 0 && group < static_cast<int>(m_nodeOver.size()) && m_nodeOver[static_cast<size_t>(group)];
}

QColor PlacementOverlay::paletteColour(int index, int count)
{
    // Tableau-like qualitative colours (no grey: grey means unused).
    static const QColor palette[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b),
                                     QColor(0x59, 0xa1, 0x4f), QColor(0xe1, 0x57, 0x59),
                                     QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48),
                                     QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7),
                                     QColor(0x9c, 0x75, 0x5f), QColor(0x17, 0xbe, 0xcf)};
    constexpr int size = static_cast<int>(sizeof(palette) / sizeof(palette[0]));
    if (index < 0)
        return unusedColour();
    if (count <= size)
        return palette[index % size];
    // Many keys: hues spread by the golden ratio, alternating saturation and value so that
    // neighbours (adjacent stages) differ in more than hue.
    const double hue = std::fmod(index * 0.6180339887, 1.0);
    const double sat = index % 2 == 0 ? 0.62 : 0.80;
    const double val = (index / 2) % 2 == 0 ? 0.88 : 0.70;
    return QColor::fromHsvF(static_cast<float>(hue), static_cast<float>(sat), static_cast<float>(val));
}

QColor PlacementOverlay::unusedColour()
{
    return QColor(0xd3, 0xd7, 0xdc);
}

QColor PlacementOverlay::overCapacityColour()
{
    return QColor(0xc0, 0x0a, 0x1e);
}

} // namespace nest::ui
