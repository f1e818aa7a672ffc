#include "ModelProfile.h"

#include <algorithm>

namespace nest {

const char *toString(LayerKind k)
{
    switch (k) {
    case LayerKind::Embedding:
        return "embedding";
    case LayerKind::Transformer:
        return "transformer";
    case LayerKind::Moe:
        return "moe";
    case LayerKind::Head:
        return "head";
    case LayerKind::Mamba:
        return "mamba";
    case LayerKind::Mtp:
        return "mtp";
    }
    return "transformer";
}

bool isDecoderBlock(LayerKind k)
{
    return k == LayerKind::Transformer || k == LayerKind::Moe || k == LayerKind::Mamba;
}

bool isRecomputedBlock(LayerKind k)
{
    return isDecoderBlock(k) || k == LayerKind::Mtp;
}

bool hasExperts(const LayerProfile &l)
{
    return l.kind == LayerKind::Moe || (l.kind == LayerKind::Mtp && l.expertParams > 0);
}

std::optional<LayerKind> layerKindFromString(std::string_view s)
{
    for (const LayerKind k : {LayerKind::Embedding, LayerKind::Transformer, LayerKind::Moe, LayerKind::Head,
                              LayerKind::Mamba, LayerKind::Mtp})
        if (s == toString(k))
            return k;
    return std::nullopt;
}

const WidthMeasurement *LayerProfile::measuredAt(int tp) const
{
    for (const WidthMeasurement &w : byWidth)
        if (w.tp == tp)
            return &w;
    return nullptr;
}

bool ModelProfile::allowsTensorWidth(int tp) const
{
    return tensorWidths.empty() || std::find(tensorWidths.begin(), tensorWidths.end(), tp) != tensorWidths.end();
}

double ModelProfile::totalParams() const
{
    double sum = 0;
    for (const auto &l : layers)
        sum += l.params;
    return sum;
}

double ModelProfile::activeParams() const
{
    double sum = 0;
    for (const auto &l : layers)
        sum += l.activeParams;
    return sum;
}

double ModelProfile::flopsPerToken() const
{
    if (seqLength <= 0)
        return 0;
    double sum = 0;
    for (const auto &l : layers)
        sum += l.fwdFlops + l.bwdFlops;
    return sum / seqLength;
}

double ModelProfile::weightBytes() const
{
    return totalParams() * bytesPerParam;
}

std::string layerLabel(const LayerProfile &l)
{
    return l.kindLabel.empty() ? toString(l.kind) : l.kindLabel;
}

std::vector<LayerRun> layerRuns(const ModelProfile &m)
{
    std::vector<LayerRun> runs;
    for (const LayerProfile &l : m.layers) {
        if (!isRecomputedBlock(l.kind))
            continue;
        const std::string label = layerLabel(l);
        if (!runs.empty() && runs.back().kind == label)
            ++runs.back().count;
        else
            runs.push_back({label, 1});
    }
    return runs;
}

std::vector<LayerRun> layerKindCounts(const ModelProfile &m)
{
    std::vector<LayerRun> counts;
    for (const LayerRun &r : layerRuns(m)) {
        const auto it = std::find_if(counts.begin(), counts.end(), [&](const LayerRun &c) { return c.kind == r.kind; });
        if (it == counts.end())
            counts.push_back(r);
        else
            it->count += r.count;
    }
    return counts;
}

} // namespace nest
