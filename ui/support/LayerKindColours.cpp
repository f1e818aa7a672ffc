#include "LayerKindColours.h"

#include <QHash>

#include <array>
#include <utility>

namespace nest::ui {

QColor layerKindColour(const QString &kind)
{
    static const std::pair<const char *, QColor> fixed[] = {
        {"dense", QColor(0x4c, 0x78, 0xa8)},     {"transformer", QColor(0x4c, 0x78, 0xa8)},
        {"moe", QColor(0xf5, 0x85, 0x18)},       {"moe_mlp", QColor(0xf5, 0x85, 0x18)},
        {"mamba", QColor(0x54, 0xa2, 0x4b)},     {"mamba_mlp", QColor(0x88, 0xc2, 0x6f)},
        {"sliding", QColor(0x72, 0xb7, 0xb2)},   {"global", QColor(0x2f, 0x4b, 0x7c)},
        {"mla", QColor(0xb2, 0x79, 0xa2)},       {"attention", QColor(0xe4, 0x57, 0x56)},
        {"mlp", QColor(0xee, 0xca, 0x3b)},       {"mtp", QColor(0x9d, 0x75, 0x5d)},
        {"embedding", QColor(0xba, 0xb0, 0xac)}, {"head", QColor(0x79, 0x70, 0x6e)}};
    const QString name = kind.toLower();
    for (const auto &[label, colour] : fixed)
        if (name == QLatin1String(label))
            return colour;
    // Kinds a model names itself: a second palette (Tableau 10's lighter tones), by name.
    static const std::array<QColor, 8> others = {QColor(0xa0, 0xcb, 0xe8), QColor(0xff, 0xbe, 0x7d),
                                                 QColor(0x8c, 0xd1, 0x7d), QColor(0xff, 0x9d, 0x9a),
                                                 QColor(0xd4, 0xa6, 0xc8), QColor(0xf1, 0xce, 0x63),
                                                 QColor(0x86, 0xbc, 0xb6), QColor(0xd7, 0xb5, 0xa6)};
    return others[qHash(name) % others.size()];
}

} // namespace nest::ui
