#include "StageConfig.h"

#include "TextCase.h"

#include <algorithm>
#include <cctype>

namespace nest {

// Every width a loader accepts (at most limits::devices) fits its field of widthKey().
static_assert(limits::parallelWidth.max <= double(uint64_t{1} << StageConfig::kWidthBits),
              "tp, cp, ep and etp no longer fit StageConfig::widthKey(): widen kWidthBits");
static_assert(4 * StageConfig::kWidthBits <= 64, "widthKey() packs four widths into 64 bits");

const char *toString(Recompute r)
{
    switch (r) {
    case Recompute::None:
        return "none";
    case Recompute::Selective:
        return "selective";
    case Recompute::Full:
        return "full";
    }
    return "none";
}

bool recomputeFromString(const std::string &text, Recompute &out)
{
    const std::string t = asciiLower(text);
    if (t == "none") {
        out = Recompute::None;
    } else if (t == "selective") {
        out = Recompute::Selective;
    } else if (t == "full") {
        out = Recompute::Full;
    } else {
        return false;
    }
    return true;
}

uint64_t StageConfig::widthKey() const
{
    constexpr uint64_t mask = (uint64_t{1} << kWidthBits) - 1;
    const auto field = [](int w) { return static_cast<uint64_t>(w - 1) & mask; };
    return (field(tp) << (3 * kWidthBits)) | (field(cp) << (2 * kWidthBits)) | (field(ep) << kWidthBits) |
           field(expertTp());
}

uint32_t StageConfig::switchKey() const
{
    // sp: bit 4; zero 0..3: bits 2-3; recompute 0..2: bits 0-1.
    return (sp ? 16u : 0u) | ((static_cast<uint32_t>(zero) & 3u) << 2) | static_cast<uint32_t>(recompute);
}

std::vector<std::string> StageConfig::problems(int heads, int experts, int seqLength, int dp) const
{
    std::vector<std::string> out;
    if (tp < 1 || cp < 1 || ep < 1) {
        out.push_back("tp, cp and ep must be at least 1");
        return out;
    }
    if (etp < 0) {
        out.push_back("etp must be at least 1 (0: the same as tp)");
        return out;
    }
    if (zero < 0 || zero > 3)
        out.push_back("zero must be 0, 1, 2 or 3");
    if (!expertGridFits(tp, cp, dp, expertTp(), ep))
        out.push_back("etp " + std::to_string(expertTp()) + " x ep " + std::to_string(ep) +
                      " does not divide the stage's tp x cp x dp = " + std::to_string(tp) + " x " + std::to_string(cp) +
                      " x " + std::to_string(dp) + " devices (Megatron-Core folds the experts' etp x ep x expert-dp "
                      "grid onto them)");
    if (!tpDividesHeads(tp, heads))
        out.push_back("tp " + std::to_string(tp) + " does not divide the model's " + std::to_string(heads) +
                      " attention heads");
    if (!epDividesExperts(ep, experts))
        out.push_back("ep " + std::to_string(ep) + " does not divide the model's " + std::to_string(experts) +
                      " experts");
    if (!cpDividesSequence(cp, seqLength))
        out.push_back("cp " + std::to_string(cp) + " does not divide the sequence length " +
                      std::to_string(seqLength));
    return out;
}

size_t StageConfigHash::operator()(const StageConfig &c) const noexcept
{
    // splitmix64 finaliser over the two halves of the exact key.
    uint64_t x = c.widthKey() ^ (static_cast<uint64_t>(c.switchKey()) * 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return static_cast<size_t>(x ^ (x >> 31));
}

void writeStageConfig(Json &stage, const StageConfig &c)
{
    stage["tp"] = c.tp;
    stage["cp"] = c.cp;
    stage["ep"] = c.ep;
    if (c.etp > 0 && c.etp != c.tp)
        stage["etp"] = c.etp;  // absent: the same as tp (files before etp read unchanged)
    stage["sp"] = c.sp;
    stage["zero"] = c.zero;
    stage["recompute"] = toString(c.recompute);
}

namespace {

// "none" | "selective" | "full"; true / false (version 1 files) read as full / none.
Recompute recomputeOf(const Json &stage, const std::string &path)
{
    const auto it = stage.find("recompute");
    if (it == stage.end())
        return Recompute::None;
    if (it->is_boolean())
        return it->get<bool>() ? Recompute::Full : Recompute::None;
    Recompute r = Recompute::None;
    if (!it->is_string() || !recomputeFromString(it->get<std::string>(), r))
        throw JsonError(childPath(path, "recompute"),
                        "must be \"none\", \"selective\" or \"full\" (or true / false), found " + it->dump());
    return r;
}

} // namespace

StageConfig readStageConfig(const Json &stage, const std::string &path)
{
    constexpr long long maxWidth = static_cast<long long>(limits::parallelWidth.max);
    StageConfig c;
    c.tp = static_cast<int>(getInt(stage, "tp", path, 1, maxWidth, 1));
    c.ep = static_cast<int>(getInt(stage, "ep", path, 1, maxWidth, 1));
    c.etp = StageConfig::etpField(static_cast<int>(getInt(stage, "etp", path, 1, maxWidth, c.tp)), c.tp);
    c.cp = static_cast<int>(getInt(stage, "cp", path, 1, maxWidth, 1));
    c.sp = getBool(stage, "sp", path, false);
    c.zero = static_cast<int>(getInt(stage, "zero", path, 0, 3, 0));
    c.recompute = recomputeOf(stage, path);
    return c;
}

} // namespace nest
