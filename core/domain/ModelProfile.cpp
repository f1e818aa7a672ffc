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
    }
    return "transformer";
}

std::optional<LayerKind> layerKindFromString(std::string_view s)
{
    for (const LayerKind k : {LayerKind::Embedding, LayerKind::Transformer, LayerKind::Moe, LayerKind::Head})
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

} // namespace nest
