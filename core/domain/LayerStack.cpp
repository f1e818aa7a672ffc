#include "LayerStack.h"

#include "TextCase.h"

#include <cctype>

namespace nest {

const char *toString(MixerKind k)
{
    switch (k) {
    case MixerKind::Attention: return "attention";
    case MixerKind::Mamba: return "mamba";
    case MixerKind::None: return "none";
    }
    return "attention";
}

const char *toString(AttentionKind k)
{
    switch (k) {
    case AttentionKind::Full: return "full";
    case AttentionKind::Sliding: return "sliding";
    case AttentionKind::Mla: return "mla";
    }
    return "full";
}

const char *toString(MlpKind k)
{
    switch (k) {
    case MlpKind::Dense: return "dense";
    case MlpKind::Moe: return "moe";
    case MlpKind::None: return "none";
    }
    return "dense";
}

std::optional<MixerKind> mixerKindFromString(std::string_view s)
{
    if (s == "attention")
        return MixerKind::Attention;
    if (s == "mamba" || s == "mamba2")
        return MixerKind::Mamba;
    if (s == "none")
        return MixerKind::None;
    return std::nullopt;
}

std::optional<AttentionKind> attentionKindFromString(std::string_view s)
{
    if (s == "full" || s == "mha" || s == "gqa" || s == "global")
        return AttentionKind::Full;
    if (s == "sliding")
        return AttentionKind::Sliding;
    if (s == "mla")
        return AttentionKind::Mla;
    return std::nullopt;
}

std::optional<MlpKind> mlpKindFromString(std::string_view s)
{
    if (s == "dense")
        return MlpKind::Dense;
    if (s == "moe")
        return MlpKind::Moe;
    if (s == "none")
        return MlpKind::None;
    return std::nullopt;
}

std::vector<LayerKindSpec> builtinLayerKinds(AttentionKind a, MlpKind m)
{
    using MK = MixerKind;
    return {{"dense", MK::Attention, a, MlpKind::Dense},
            {"moe", MK::Attention, a, MlpKind::Moe},
            {"sliding", MK::Attention, AttentionKind::Sliding, m},
            {"global", MK::Attention, AttentionKind::Full, m},
            {"mla", MK::Attention, AttentionKind::Mla, m},
            {"mamba", MK::Mamba, a, MlpKind::None},
            {"attention", MK::Attention, a, MlpKind::None},
            {"mlp", MK::None, a, MlpKind::Dense},
            {"moe_mlp", MK::None, a, MlpKind::Moe},
            {"mamba_mlp", MK::Mamba, a, m}};
}

std::string builtinLayerKindNames()
{
    std::string out;
    for (const auto &k : builtinLayerKinds(AttentionKind::Full, MlpKind::Dense))
        out += (out.empty() ? "" : ", ") + k.name;
    return out;
}

namespace {

// Far above any model (limits::layers is 100,000) and far below int's range, so that merged
// runs never overflow a count.
constexpr long long kMaxPatternLayers = 10'000'000;

std::string_view trimmedView(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

bool validName(std::string_view s)
{
    if (s.empty() || s.size() > 64)
        return false;
    for (const char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
            return false;
    return true;
}

// "N*NAME", "N NAME", "N x NAME" or "NAME".
std::optional<LayerRun> parseItem(std::string_view item, std::string &error)
{
    item = trimmedView(item);
    std::size_t digits = 0;
    while (digits < item.size() && std::isdigit(static_cast<unsigned char>(item[digits])))
        ++digits;
    LayerRun run;
    if (digits > 0) {
        if (digits > 6) {
            error = "count '" + std::string(item.substr(0, digits)) + "' is too large";
            return std::nullopt;
        }
        run.count = std::stoi(std::string(item.substr(0, digits)));
        if (run.count < 1) {
            error = "count must be at least 1";
            return std::nullopt;
        }
        std::string_view rest = trimmedView(item.substr(digits));
        if (!rest.empty() && rest.front() == '*')
            rest = trimmedView(rest.substr(1));
        else if (rest.size() > 1 && (rest.front() == 'x' || rest.front() == 'X') &&
                 std::isspace(static_cast<unsigned char>(rest[1])))
            rest = trimmedView(rest.substr(1));
        else if (rest.size() == item.size() - digits) {  // "3dense": no separator
            error = "write the count and the kind as N*NAME, found '" + std::string(item) + "'";
            return std::nullopt;
        }
        item = rest;
    }
    if (!validName(item)) {
        error = item.empty() ? "expected a layer kind name after the count"
                             : "'" + std::string(item) + "' is not a layer kind name (letters, digits, '_', '-', '.')";
        return std::nullopt;
    }
    run.kind = lowerKindName(item);
    return run;
}

} // namespace

std::string lowerKindName(std::string_view name)
{
    return asciiLower(std::string(name));
}

namespace {

void appendRun(std::vector<LayerRun> &runs, LayerRun run)
{
    if (!runs.empty() && runs.back().kind == run.kind)
        runs.back().count += run.count;
    else
        runs.push_back(std::move(run));
}

} // namespace

std::optional<std::vector<LayerRun>> parseLayerPattern(std::string_view text, std::string &error)
{
    std::string normalised;  // " then " read as ",", in one pass
    normalised.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        if (text.compare(i, 6, " then ") == 0) {
            normalised += ',';
            i += 6;
        } else {
            normalised += text[i++];
        }
    }
    std::vector<LayerRun> runs;
    long long total = 0;
    std::size_t start = 0;
    for (int item = 1;; ++item) {
        const std::size_t comma = normalised.find(',', start);
        const std::string_view piece = std::string_view(normalised).substr(
            start, comma == std::string::npos ? std::string::npos : comma - start);
        std::string why;
        auto run = parseItem(piece, why);
        if (!run) {
            error = "item " + std::to_string(item) + ": " + why;
            return std::nullopt;
        }
        total += run->count;
        appendRun(runs, std::move(*run));
        if (total > kMaxPatternLayers) {
            error = "item " + std::to_string(item) + ": the pattern holds more than " +
                    std::to_string(kMaxPatternLayers) + " layers";
            return std::nullopt;
        }
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return runs;
}

std::optional<std::vector<LayerRun>> parseHybridPattern(std::string_view text, std::string &error)
{
    std::vector<LayerRun> runs;
    if (text.empty()) {
        error = "the hybrid pattern is empty";
        return std::nullopt;
    }
    if (static_cast<long long>(text.size()) > kMaxPatternLayers) {
        error = "the hybrid pattern holds more than " + std::to_string(kMaxPatternLayers) + " layers";
        return std::nullopt;
    }
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const char *kind = c == 'M' ? "mamba" : c == '*' ? "attention" : c == '-' ? "mlp" : c == 'E' ? "moe_mlp" : nullptr;
        if (!kind) {
            error = "character " + std::to_string(i + 1) + " ('" + std::string(1, c) +
                    "') is not a layer (M = mamba, * = attention, - = mlp, E = moe_mlp)";
            return std::nullopt;
        }
        appendRun(runs, {kind, 1});
    }
    return runs;
}

std::string formatLayerPattern(const std::vector<LayerRun> &runs)
{
    std::string out;
    for (const auto &r : runs)
        out += (out.empty() ? "" : ", ") + (r.count == 1 ? r.kind : std::to_string(r.count) + "*" + r.kind);
    return out;
}

long long patternLength(const std::vector<LayerRun> &runs)
{
    long long n = 0;
    for (const auto &r : runs)
        n += r.count;
    return n;
}

} // namespace nest
