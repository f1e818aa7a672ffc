#include "ProfileIO.h"

#include "Limits.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <tuple>

namespace nest {

namespace {

// A non-negative per-layer number inside its documented range (Limits.h).
double bounded(const Json &e, const char *key, const std::string &path, const Range &range)
{
    const double x = getNonNegative(e, key, path);
    requireInRange(x, range, childPath(path, key));
    return x;
}

double bounded(const Json &e, const char *key, const std::string &path, const Range &range, double fallback)
{
    return has(e, key) ? bounded(e, key, path, range) : fallback;
}


constexpr double MS = 1e-3;
// The artifact's TPUv4-like device: its cluster's device and the device its times are of.
const std::string kArtifactDevice = "tpuv4-like";
constexpr int ARTIFACT_GLOBAL_BATCH = 4096;
constexpr long long MAX_DEVICES = static_cast<long long>(limits::devices.max);  // the artifact README: global batch 4096

const std::set<std::string> &topKeys()
{
    static const std::set<std::string> keys = {
        "format", "version", "name", "family", "source", "measured_on", "notes", "seq_length", "micro_batch",
        "global_batch", "hidden", "heads", "kv_heads", "experts", "top_k", "vocab",
        "bytes_per_param", "layers", "comment"};
    return keys;
}

const std::set<std::string> &layerKeys()
{
    static const std::set<std::string> keys = {
        "name", "kind", "repeat", "fwd_ms", "bwd_ms", "fwd_flops", "bwd_flops", "params",
        "tp_params", "expert_params", "active_params", "tied_params", "output_bytes",
        "stash_tp_bytes", "stash_sp_bytes", "recompute_stash_bytes", "working_bytes",
        "tp_allreduce_bytes", "ep_alltoall_bytes", "etp_gather_bytes", "cp_exchange_bytes", "gemms",
        "linear_input_stash_tp_bytes", "linear_input_stash_sp_bytes", "attention_output_stash_bytes", "moe_combine_stash_bytes", "attention_flops",
        "elementwise_sp_bytes", "elementwise_tp_bytes", "rms_norm_sp_bytes", "rotary_tp_bytes", "attention_stash_bytes", "attention_qkvo_stash_bytes",
        "norm_sp_bytes", "expert_activation_tp_bytes", "norm_output_stash_sp_bytes",
        "expert_activation_stash_tp_bytes", "mla_up_stash_tp_bytes", "kind_label", "comment"};
    return keys;
}

const char *splitName(GemmShape::Split s)
{
    switch (s) {
    case GemmShape::Split::Column: return "column";
    case GemmShape::Split::Row: return "row";
    case GemmShape::Split::Heads: return "heads";
    case GemmShape::Split::None: return "none";
    }
    return "column";
}

// "gemms": [{"n", "k", "rows_per_token", "count", "split", "expert", "per_sequence"}].
std::vector<GemmShape> readGemms(const Json &e, const std::string &path)
{
    std::vector<GemmShape> out;
    if (!has(e, "gemms"))
        return out;
    const std::string gpath = childPath(path, "gemms");
    const Json &list = e.at("gemms");
    requireArray(list, gpath);
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string ipath = childPath(gpath, i);
        const Json &g = list[i];
        requireObject(g, ipath);
        GemmShape s;
        s.n = bounded(g, "n", ipath, limits::layerFlops);
        s.k = bounded(g, "k", ipath, limits::layerFlops);
        s.rowsPerToken = bounded(g, "rows_per_token", ipath, limits::layerFlops, 1);
        s.count = bounded(g, "count", ipath, limits::layerFlops, 1);
        const std::string split = getString(g, "split", ipath, "column");
        bool known = false;
        for (auto v : {GemmShape::Split::Column, GemmShape::Split::Row, GemmShape::Split::Heads, GemmShape::Split::None})
            if (split == splitName(v)) {
                s.split = v;
                known = true;
            }
        if (!known)
            throw JsonError(childPath(ipath, "split"), "expected column, row, heads or none, found '" + split + "'");
        s.expert = getBool(g, "expert", ipath, false);
        s.perSequence = getBool(g, "per_sequence", ipath, false);
        s.router = getBool(g, "router", ipath, false);
        s.shared = getBool(g, "shared_expert", ipath, false);
        s.mlaUp = getBool(g, "mla_up", ipath, false);
        out.push_back(s);
    }
    return out;
}

void rejectUnknownKeys(const Json &obj, const std::set<std::string> &known, const std::string &path)
{
    for (const auto &[key, value] : obj.items()) {
        if (known.count(key))
            continue;
        std::string list;
        for (const auto &k : known)
            list += (list.empty() ? "" : ", ") + k;
        throw JsonError(childPath(path, key), "unknown key (known: " + list + ")");
    }
}

int intField(const Json &j, const char *key, const std::string &path, long long min, int fallback)
{
    return static_cast<int>(getInt(j, key, path, min, limits::modelCountMax, fallback));
}

// The parts of a layer's element-wise traffic and stash that module recomputation reruns or
// discards (RecomputeModules.h), each within the total it is part of.
void readRecomputeParts(const Json &e, const std::string &path, double mb, LayerProfile &l)
{
    const auto part = [&](const char *key, double whole, const char *wholeKey) {
        const double v = bounded(e, key, path, limits::layerBytes, 0) / mb;
        if (v > whole)
            throw JsonError(childPath(path, key), std::string("exceeds ") + wholeKey);
        return v;
    };
    l.normSpBytes = part("norm_sp_bytes", l.elementwiseSpBytes, "elementwise_sp_bytes");
    l.expertActivationTpBytes = part("expert_activation_tp_bytes", l.elementwiseTpBytes, "elementwise_tp_bytes");
    l.normOutputStashSpBytes =
        part("norm_output_stash_sp_bytes", l.linearInputStashSpBytes, "linear_input_stash_sp_bytes");
    l.expertActivationStashTpBytes =
        part("expert_activation_stash_tp_bytes", l.linearInputStashTpBytes, "linear_input_stash_tp_bytes");
    l.mlaUpStashTpBytes = part("mla_up_stash_tp_bytes", l.attentionQkvoStashBytes, "attention_qkvo_stash_bytes");
}

// One "layers[i]" entry (possibly repeated). Per-micro-batch values are divided by mb.
std::vector<LayerProfile> readLayer(const Json &e, const std::string &path, const ModelProfile &p,
                                    double mb, size_t blocksSoFar)
{
    requireObject(e, path);
    rejectUnknownKeys(e, layerKeys(), path);
    LayerProfile l;
    const std::string kindName = getString(e, "kind", path, "transformer");
    const auto kind = layerKindFromString(kindName);
    if (!kind)
        throw JsonError(childPath(path, "kind"), "unknown layer kind '" + kindName +
                                                     "' (known: embedding, transformer, moe, mamba, mtp, head)");
    l.kind = *kind;
    l.kindLabel = getString(e, "kind_label", path, "");

    if (has(e, "fwd_ms") != has(e, "bwd_ms"))
        throw JsonError(childPath(path, has(e, "fwd_ms") ? "bwd_ms" : "fwd_ms"),
                        "fwd_ms and bwd_ms must be given together");
    if (has(e, "fwd_ms")) {
        l.measuredFwdTime = bounded(e, "fwd_ms", path, limits::layerTimeMs) * MS / mb;
        l.measuredBwdTime = bounded(e, "bwd_ms", path, limits::layerTimeMs) * MS / mb;
    }
    l.fwdFlops = bounded(e, "fwd_flops", path, limits::layerFlops, 0) / mb;
    l.bwdFlops = bounded(e, "bwd_flops", path, limits::layerFlops, 2 * l.fwdFlops * mb) / mb;

    l.params = bounded(e, "params", path, limits::layerBytes, 0);
    l.tpParams = bounded(e, "tp_params", path, limits::layerBytes, l.params);
    l.expertParams = bounded(e, "expert_params", path, limits::layerBytes, 0);
    const double inactive = p.numExperts > 1 && l.expertParams > 0
                                ? l.expertParams * (1.0 - static_cast<double>(p.topK) / p.numExperts)
                                : 0.0;
    l.activeParams = bounded(e, "active_params", path, limits::layerBytes, l.params - inactive);
    l.tiedParams = bounded(e, "tied_params", path, limits::layerBytes, 0);
    for (const auto &[key, value] : {std::pair<const char *, double>{"tp_params", l.tpParams},
                                     {"expert_params", l.expertParams},
                                     {"active_params", l.activeParams}})
        if (value > l.params)
            throw JsonError(childPath(path, key), std::string(key) + " (" + e.at(key).dump() +
                                                      ") exceeds params (" + std::to_string(l.params) + ")");

    // Boundary tensor and layer input default to s*h*2 bytes when the hidden size is known.
    const double sh2 = 2.0 * p.seqLength * p.hidden;
    const double defaultOut = l.kind == LayerKind::Head ? 0 : sh2;
    if (p.hidden <= 0 && l.kind != LayerKind::Head && !has(e, "output_bytes"))
        throw JsonError(childPath(path, "output_bytes"),
                        "required when the profile has no \"hidden\" (the pipeline boundary size)");
    l.outputBytes = bounded(e, "output_bytes", path, limits::layerBytes, defaultOut * mb) / mb;
    l.stashTpBytes = bounded(e, "stash_tp_bytes", path, limits::layerBytes, 0) / mb;
    l.stashSpBytes = bounded(e, "stash_sp_bytes", path, limits::layerBytes, 0) / mb;
    const double defaultRecompute =
        l.kind == LayerKind::Embedding ? l.stashTpBytes + l.stashSpBytes : sh2;
    l.recomputeStashBytes = bounded(e, "recompute_stash_bytes", path, limits::layerBytes, defaultRecompute * mb) / mb;
    l.workingBytes = bounded(e, "working_bytes", path, limits::layerBytes, 0) / mb;
    l.tpAllReduceBytes = bounded(e, "tp_allreduce_bytes", path, limits::layerBytes, 0) / mb;
    l.epAllToAllBytes = bounded(e, "ep_alltoall_bytes", path, limits::layerBytes, 0) / mb;
    l.etpGatherBytes = bounded(e, "etp_gather_bytes", path, limits::layerBytes, 0) / mb;
    l.linearInputStashTpBytes = bounded(e, "linear_input_stash_tp_bytes", path, limits::layerBytes, 0) / mb;
    l.linearInputStashSpBytes = bounded(e, "linear_input_stash_sp_bytes", path, limits::layerBytes, 0) / mb;
    l.attentionOutputStashBytes = bounded(e, "attention_output_stash_bytes", path, limits::layerBytes, 0) / mb;
    l.moeCombineStashBytes = bounded(e, "moe_combine_stash_bytes", path, limits::layerBytes, 0) / mb;
    l.cpExchangeBytes = bounded(e, "cp_exchange_bytes", path, limits::layerBytes, 0) / mb;
    l.gemms = readGemms(e, path);
    l.attentionFlops = bounded(e, "attention_flops", path, limits::layerFlops, 0) / mb;
    l.elementwiseSpBytes = bounded(e, "elementwise_sp_bytes", path, limits::layerBytes, 0) / mb;
    l.elementwiseTpBytes = bounded(e, "elementwise_tp_bytes", path, limits::layerBytes, 0) / mb;
    l.rmsNormSpBytes = bounded(e, "rms_norm_sp_bytes", path, limits::layerBytes, 0) / mb;
    if (l.rmsNormSpBytes > l.elementwiseSpBytes)
        throw JsonError(childPath(path, "rms_norm_sp_bytes"), "exceeds elementwise_sp_bytes");
    l.rotaryTpBytes = bounded(e, "rotary_tp_bytes", path, limits::layerBytes, 0) / mb;
    if (l.rotaryTpBytes > l.elementwiseTpBytes)
        throw JsonError(childPath(path, "rotary_tp_bytes"), "exceeds elementwise_tp_bytes");
    l.attentionStashBytes = bounded(e, "attention_stash_bytes", path, limits::layerBytes, 0) / mb;
    if (l.attentionStashBytes > l.stashTpBytes)
        throw JsonError(childPath(path, "attention_stash_bytes"), "exceeds stash_tp_bytes");
    l.attentionQkvoStashBytes = bounded(e, "attention_qkvo_stash_bytes", path, limits::layerBytes, 0) / mb;
    if (l.attentionQkvoStashBytes + l.attentionStashBytes > l.stashTpBytes)
        throw JsonError(childPath(path, "attention_qkvo_stash_bytes"), "with attention_stash_bytes exceeds stash_tp_bytes");
    readRecomputeParts(e, path, mb, l);

    const int repeat = static_cast<int>(getInt(e, "repeat", path, 1, 100000, 1));
    if (p.layers.size() + static_cast<size_t>(repeat) > static_cast<size_t>(limits::profileLayers.max))
        throw JsonError(childPath(path, "repeat"),
                        "the profile would have " + std::to_string(p.layers.size() + static_cast<size_t>(repeat)) +
                            " layers, more than the limit (" + describeRange(limits::profileLayers) + ")");
    const std::string defaultName = l.kind == LayerKind::Embedding ? "embedding"
                                    : l.kind == LayerKind::Head    ? "head"
                                                                   : "block";
    const std::string name = getString(e, "name", path, defaultName);
    const bool numbered = has(e, "name") ? repeat > 1 : defaultName == "block";
    std::vector<LayerProfile> out(static_cast<size_t>(repeat), l);
    for (size_t i = 0; i < out.size(); ++i) {
        const size_t number = has(e, "name") ? i : blocksSoFar + i;
        out[i].name = numbered ? name + std::to_string(number) : name;
    }
    return out;
}

void checkChain(const ModelProfile &p)
{
    for (size_t i = 0; i < p.layers.size(); ++i) {
        const LayerKind k = p.layers[i].kind;
        if (k == LayerKind::Embedding && i != 0)
            throw JsonError(childPath("layers", i), "an embedding layer must come first");
        if (k == LayerKind::Head && i + 1 != p.layers.size())
            throw JsonError(childPath("layers", i), "a head layer must come last");
    }
}

} // namespace

Result<ModelProfile> profileFromJson(const Json &j, const std::string &origin)
{
    try {
        requireObject(j, "");
        rejectUnknownKeys(j, topKeys(), "");
        const std::string format = getString(j, "format", "");
        if (format != "nest-profile")
            throw JsonError("format", "expected \"nest-profile\", found \"" + format + "\"");
        getInt(j, "version", "", 1, 1, 1);
        ModelProfile p;
        p.name = getString(j, "name", "", std::filesystem::path(origin).stem().string());
        if (p.name.empty())
            p.name = "profile";
        p.family = getString(j, "family", "", "profile");
        p.source = getString(j, "source", "", origin);
        p.measuredOn = getString(j, "measured_on", "", "");
        if (has(j, "notes")) {
            requireArray(j.at("notes"), "notes");
            for (size_t i = 0; i < j.at("notes").size(); ++i) {
                const Json &n = j.at("notes")[i];
                if (!n.is_string())
                    throw JsonError(childPath("notes", i), "expected a string");
                p.notes.push_back(n.get<std::string>());
            }
        }
        p.seqLength = static_cast<int>(getInt(j, "seq_length", "", 1, limits::modelCountMax));
        const int microBatch = static_cast<int>(getInt(j, "micro_batch", "", 1, limits::modelCountMax, 1));
        p.globalBatch = intField(j, "global_batch", "", 1, 4096);
        p.hidden = intField(j, "hidden", "", 0, 0);
        p.heads = intField(j, "heads", "", 0, 0);
        p.kvHeads = intField(j, "kv_heads", "", 0, p.heads);
        p.numExperts = intField(j, "experts", "", 1, 1);
        p.topK = intField(j, "top_k", "", 1, 1);
        if (p.topK > p.numExperts)
            throw JsonError("top_k", "top_k (" + std::to_string(p.topK) +
                                         ") must not exceed experts (" + std::to_string(p.numExperts) + ")");
        p.vocab = intField(j, "vocab", "", 0, 0);
        requireInRange(p.seqLength, limits::seqLength, "seq_length");
        requireInRange(microBatch, limits::microBatch, "micro_batch");
        requireInRange(p.globalBatch, limits::batch, "global_batch");
        for (const auto &[key, value, range] : {std::tuple<const char *, int, Range>{"hidden", p.hidden, limits::hidden},
                                                {"heads", p.heads, limits::heads},
                                                {"kv_heads", p.kvHeads, limits::heads},
                                                {"experts", p.numExperts, limits::experts},
                                                {"vocab", p.vocab, limits::vocab}})
            if (value > 0)  // 0 = not given
                requireInRange(value, range, key);
        p.bytesPerParam = getPositive(j, "bytes_per_param", "", 2);

        const Json &layers = requireKey(j, "layers", "");
        requireArray(layers, "layers");
        if (layers.empty())
            throw JsonError("layers", "must list at least one layer");
        for (size_t i = 0; i < layers.size(); ++i) {
            const auto blocks = static_cast<size_t>(std::count_if(
                p.layers.begin(), p.layers.end(), [](const LayerProfile &l) {
                    return isDecoderBlock(l.kind);
                }));
            auto chunk = readLayer(layers[i], childPath("layers", i), p, microBatch, blocks);
            if (p.layers.size() + chunk.size() > static_cast<size_t>(limits::profileLayers.max))
                throw JsonError(childPath("layers", i), "more layers than the limit (" +
                                                            describeRange(limits::profileLayers) + ")");
            p.layers.insert(p.layers.end(), chunk.begin(), chunk.end());
        }
        checkChain(p);
        return p;
    } catch (const JsonError &e) {
        return Result<ModelProfile>::failure(formatError(origin, e.path(), e.reason()));
    }
}

Json profileToJson(const ModelProfile &p)
{
    Json layers = Json::array();
    for (const auto &l : p.layers) {
        Json e = {{"name", l.name}, {"kind", toString(l.kind)}};
        if (!l.kindLabel.empty())
            e["kind_label"] = l.kindLabel;
        if (l.measuredFwdTime >= 0 && l.measuredBwdTime >= 0) {
            e["fwd_ms"] = l.measuredFwdTime / MS;
            e["bwd_ms"] = l.measuredBwdTime / MS;
        }
        e["fwd_flops"] = l.fwdFlops;
        e["bwd_flops"] = l.bwdFlops;
        e["params"] = l.params;
        e["tp_params"] = l.tpParams;
        e["expert_params"] = l.expertParams;
        e["active_params"] = l.activeParams;
        e["tied_params"] = l.tiedParams;
        e["output_bytes"] = l.outputBytes;
        e["stash_tp_bytes"] = l.stashTpBytes;
        e["stash_sp_bytes"] = l.stashSpBytes;
        e["recompute_stash_bytes"] = l.recomputeStashBytes;
        e["working_bytes"] = l.workingBytes;
        e["tp_allreduce_bytes"] = l.tpAllReduceBytes;
        e["ep_alltoall_bytes"] = l.epAllToAllBytes;
        if (l.etpGatherBytes > 0)  // only when set: profiles written before read the same
            e["etp_gather_bytes"] = l.etpGatherBytes;
        if (l.linearInputStashTpBytes > 0 || l.linearInputStashSpBytes > 0) {
            e["linear_input_stash_tp_bytes"] = l.linearInputStashTpBytes;
            e["linear_input_stash_sp_bytes"] = l.linearInputStashSpBytes;
            e["attention_output_stash_bytes"] = l.attentionOutputStashBytes;
        }
        if (l.moeCombineStashBytes > 0)  // only when set: profiles written before read the same
            e["moe_combine_stash_bytes"] = l.moeCombineStashBytes;
        e["cp_exchange_bytes"] = l.cpExchangeBytes;
        if (!l.gemms.empty()) {
            Json gemms = Json::array();
            for (const GemmShape &g : l.gemms) {
                gemms.push_back({{"n", g.n}, {"k", g.k}, {"rows_per_token", g.rowsPerToken}, {"count", g.count},
                                 {"split", splitName(g.split)}, {"expert", g.expert}, {"per_sequence", g.perSequence}});
                if (g.router)  // only when set: profiles written before read the same
                    gemms.back()["router"] = true;
                if (g.shared)
                    gemms.back()["shared_expert"] = true;
                if (g.mlaUp)
                    gemms.back()["mla_up"] = true;
            }
            e["gemms"] = gemms;
        }
        e["attention_flops"] = l.attentionFlops;
        e["elementwise_sp_bytes"] = l.elementwiseSpBytes;
        e["elementwise_tp_bytes"] = l.elementwiseTpBytes;
        if (l.rmsNormSpBytes > 0)  // only when set: profiles written before read the same
            e["rms_norm_sp_bytes"] = l.rmsNormSpBytes;
        if (l.rotaryTpBytes > 0)
            e["rotary_tp_bytes"] = l.rotaryTpBytes;
        e["attention_stash_bytes"] = l.attentionStashBytes;
        if (l.attentionQkvoStashBytes > 0)
            e["attention_qkvo_stash_bytes"] = l.attentionQkvoStashBytes;
        // Only when set: profiles written before read the same.
        const auto writePart = [&](const char *key, double v) {
            if (v > 0)
                e[key] = v;
        };
        writePart("norm_sp_bytes", l.normSpBytes);
        writePart("expert_activation_tp_bytes", l.expertActivationTpBytes);
        writePart("norm_output_stash_sp_bytes", l.normOutputStashSpBytes);
        writePart("expert_activation_stash_tp_bytes", l.expertActivationStashTpBytes);
        writePart("mla_up_stash_tp_bytes", l.mlaUpStashTpBytes);
        layers.push_back(e);
    }
    Json j = {{"format", "nest-profile"},
              {"version", 1},
              {"name", p.name},
              {"family", p.family},
              {"seq_length", p.seqLength},
              {"micro_batch", 1},
              {"global_batch", p.globalBatch},
              {"hidden", p.hidden},
              {"heads", p.heads},
              {"kv_heads", p.kvHeads},
              {"experts", p.numExperts},
              {"top_k", p.topK},
              {"vocab", p.vocab},
              {"bytes_per_param", p.bytesPerParam}};
    if (!p.source.empty())
        j["source"] = p.source;
    if (!p.measuredOn.empty())
        j["measured_on"] = p.measuredOn;
    if (!p.notes.empty())
        j["notes"] = p.notes;
    j["layers"] = layers;
    return j;
}

// --- NEST artifact ---------------------------------------------------------------------------

namespace {

std::optional<int> numberInName(const std::string &name, const char *tag)
{
    const std::regex re(std::string("(^|_)") + tag + "_([0-9]{1,9})(_|\\.|$)");
    std::smatch m;
    if (std::regex_search(name, m, re))
        return std::stoi(m[2].str());
    return std::nullopt;
}

struct ArtifactNode {
    long long id = 0;
    double parameterSize = 0, activationSize = 0, fw = 0, bw = 0;
    bool tp = false;
};

// Every tensor width "nodes" lists, ascending (keys must be whole numbers >= 1).
std::vector<int> artifactWidths(const Json &nodes)
{
    std::vector<int> widths;
    for (const auto &[key, value] : nodes.items()) {
        // Digits only: std::stoi also takes " 1" and "+1", whose keys are not "1".
        int t = 0;
        const bool digits = !key.empty() && key.size() <= 9 &&
                            std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits && key[0] != '0')
            t = std::stoi(key);
        if (t == 0)
            throw JsonError(childPath("nodes", key), "keys must be tensor widths (1, 2, 4, ...)");
        widths.push_back(t);
    }
    std::sort(widths.begin(), widths.end());
    return widths;
}

// The layer nodes at `nodesPath`, sorted by id; ids must run -1 (embedding, optional), 0, 1,
// ..., L-1.
std::vector<ArtifactNode> artifactNodes(const Json &list, const std::string &nodesPath)
{
    requireArray(list, nodesPath);
    if (list.empty())
        throw JsonError(nodesPath, "must list at least one layer");
    if (list.size() > static_cast<size_t>(limits::profileLayers.max))
        throw JsonError(nodesPath, "has " + std::to_string(list.size()) + " layers, more than the limit (" +
                                       describeRange(limits::profileLayers) + ")");
    std::vector<ArtifactNode> parsed;
    std::set<long long> ids;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string path = childPath(nodesPath, i);
        ArtifactNode n;
        n.id = getInt(list[i], "id", path, -1, limits::modelCountMax);
        if (!ids.insert(n.id).second)
            throw JsonError(childPath(path, "id"), "duplicate id " + std::to_string(n.id));
        n.parameterSize = bounded(list[i], "parameterSize", path, limits::layerBytes);
        n.activationSize = bounded(list[i], "activationSize", path, limits::layerBytes);
        n.fw = bounded(list[i], "optimalLatencyFw", path, limits::layerTimeMs);
        n.bw = bounded(list[i], "optimalLatencyBw", path, limits::layerTimeMs);
        n.tp = getBool(list[i], "isTensorParallelized", path, false);
        parsed.push_back(n);
    }
    std::sort(parsed.begin(), parsed.end(), [](const ArtifactNode &a, const ArtifactNode &b) { return a.id < b.id; });
    const long long firstId = parsed.front().id;
    for (size_t i = 0; i < parsed.size(); ++i)
        if (parsed[i].id != firstId + static_cast<long long>(i) || firstId > 0)
            throw JsonError(nodesPath, "layer ids must run -1 (embedding), 0, 1, ... without gaps");
    return parsed;
}

// Pipeline boundary sizes from the chain edges id -> id+1 (bytes per micro-batch), by source id.
std::map<long long, double> artifactChainEdges(const Json &j, const std::string &tKey)
{
    std::map<long long, double> edgeOut;
    if (!has(j, "edges") || !j.at("edges").contains(tKey))
        return edgeOut;
    const Json &edges = j.at("edges").at(tKey);
    const std::string edgesPath = "edges." + tKey;
    requireArray(edges, edgesPath);
    for (size_t i = 0; i < edges.size(); ++i) {
        const std::string path = childPath(edgesPath, i);
        const long long src = getInt(edges[i], "sourceId", path, -1, limits::modelCountMax);
        const long long dst = getInt(edges[i], "destId", path, -1, limits::modelCountMax);
        const double cost = bounded(edges[i], "communicationCost", path, limits::layerBytes);
        if (dst == src + 1)
            edgeOut[src] = cost;
    }
    return edgeOut;
}

// The micro-batch size and the sequence length: from the file name (..._mbs_N_sl_N_...) as
// the artifact names its inputs, else 4096 / mbsInBatch and the caller's hint (noted in
// p.notes); p.seqLength and p.globalBatch are set. Returns the micro-batch size.
int artifactBatchShape(const Json &j, const std::string &fileName, std::optional<int> seqLengthHint,
                       ModelProfile &p)
{
    std::optional<int> mbs = numberInName(fileName, "mbs");
    const double mbsInBatch = getPositive(j, "mbsInBatch", "", 0 + ARTIFACT_GLOBAL_BATCH);
    if (!mbs) {
        const double guess = ARTIFACT_GLOBAL_BATCH / mbsInBatch;
        if (guess < 1 || std::floor(guess) != guess)
            throw JsonError("mbsInBatch", "cannot derive the micro-batch size (4096 / " + j.at("mbsInBatch").dump() +
                                              " is not a whole number)");
        mbs = static_cast<int>(guess);
        p.notes.push_back("micro-batch size " + std::to_string(*mbs) +
                          " taken as 4096 / mbsInBatch (not in the file name)");
    }
    std::optional<int> seq = numberInName(fileName, "sl");
    if (!seq && has(j, "seq_length"))
        seq = static_cast<int>(getInt(j, "seq_length", "", 1, static_cast<long long>(limits::seqLength.max)));
    if (!seq)
        seq = seqLengthHint;
    if (!seq || *seq <= 0)
        throw JsonError("", "the sequence length is not known: the file name has no _sl_N_ and the file no "
                            "\"seq_length\"; give it with --seq N (the paper's inputs: 4096 for Llama/Mixtral, "
                            "2048 for GPT-3, 512 for BERT)");
    requireInRange(*mbs, limits::microBatch, "micro-batch size (mbs)");
    requireInRange(*seq, limits::seqLength, "sequence length (sl)");
    const double mb = *mbs;
    requireInRange(std::round(mb * mbsInBatch), limits::batch, "mbsInBatch");
    p.seqLength = *seq;
    p.globalBatch = static_cast<int>(std::llround(mb * mbsInBatch));
    return *mbs;
}

// One layer from its node, read at tensor width `width` for micro-batches of `mb` samples
// and scaled back to width 1 and one sample.
LayerProfile artifactLayer(const ArtifactNode &n, int width, double mb, bool moe, double bytesPerParam,
                           const std::map<long long, double> &edgeOut)
{
    LayerProfile l;
    l.kind = n.id < 0 ? LayerKind::Embedding : moe ? LayerKind::Moe : LayerKind::Transformer;
    l.name = n.id < 0 ? "embedding" : "block" + std::to_string(n.id);
    const double scale = n.tp ? width : 1;
    l.measuredFwdTime = n.fw * MS * width / mb;
    l.measuredBwdTime = n.bw * MS * width / mb;
    l.params = n.parameterSize * scale / bytesPerParam;
    l.tpParams = n.tp || width == 1 ? l.params : 0;
    l.activeParams = l.params;
    l.stashTpBytes = n.activationSize * scale / mb;
    const auto out = edgeOut.find(n.id);
    const auto in = edgeOut.find(n.id - 1);
    double outBytes = 0;
    if (out != edgeOut.end())
        outBytes = out->second;
    else if (in != edgeOut.end())
        outBytes = in->second;  // the last layer: same size as its input
    l.outputBytes = outBytes / mb;
    const double inBytes = in != edgeOut.end() ? in->second / mb : l.outputBytes;
    l.recomputeStashBytes = n.id < 0 ? l.stashTpBytes : inBytes;
    return l;
}

// The TP all-reduce rule (docs/formats.md): a node the file marks isTensorParallelized at a
// width t > 1 all-reduces, per forward, its output once per tensor-parallel sub-block
// (Megatron-LM: after attention and after the MLP, two for a block; one for the
// vocabulary-parallel embedding), each the size of its outgoing pipeline edge at width t;
// the backward repeats them (the evaluator's conjugate operators).
WidthMeasurement artifactMeasurement(const ArtifactNode &n, int width, double mb,
                                     const std::map<long long, double> &edgeOut, double bytesPerParam)
{
    WidthMeasurement w;
    w.tp = width;
    w.fwdTime = n.fw * MS / mb;
    w.bwdTime = n.bw * MS / mb;
    w.params = n.parameterSize / bytesPerParam;
    w.stashBytes = n.activationSize / mb;
    const auto out = edgeOut.find(n.id);
    const auto in = edgeOut.find(n.id - 1);
    const double outBytes = out != edgeOut.end() ? out->second : in != edgeOut.end() ? in->second : 0.0;
    if (n.tp && width > 1)
        w.tpAllReduceBytes = (n.id < 0 ? 1 : 2) * outBytes / mb;
    return w;
}

// The optimizer state per parameter the artifact's optimizerAlgorithm implies: its solver
// counts 2 x parameterSize (weights and gradients) plus, for Adam, momentum, variance and a
// parameter copy of 2 x parameterSize each (= 12 bytes per BF16 parameter); SGD keeps none.
double artifactOptimizerBytes(const Json &j)
{
    if (!has(j, "optimizerAlgorithm"))
        return -1;
    const std::string name = getString(j, "optimizerAlgorithm", "");
    if (name == "SGD")
        return 0;
    if (name == "Adam")
        return 12;
    throw JsonError("optimizerAlgorithm", "must be \"SGD\" or \"Adam\", found \"" + name + "\"");
}

// ep_degree x cp_degree: the devices each tensor-parallel shard of a stage stands for.
int artifactGroupDevices(const Json &j)
{
    const long long ep = getInt(j, "ep_degree", "", 1, MAX_DEVICES, 1);
    const long long cp = getInt(j, "cp_degree", "", 1, MAX_DEVICES, 1);
    if (ep * cp > MAX_DEVICES)
        throw JsonError("ep_degree", "ep_degree x cp_degree exceeds the device limit");
    return static_cast<int>(ep * cp);
}

// What the layers imply about the model: the hidden size from the last pipeline edge, the
// experts of a MoE model.
void artifactModelShape(ModelProfile &p, bool moe, const std::string &fileName, long long epDegree)
{
    if (!p.layers.empty() && p.layers.back().outputBytes > 0) {
        // Plausible only when whole and at least 64 (the Mixtral inputs' 1 MiB edges are
        // not s*h*2 and give 32).
        const double h = p.layers.back().outputBytes / (2.0 * p.seqLength);
        if (h >= 64 && std::floor(h) == h)
            p.hidden = static_cast<int>(h);
        else
            p.notes.push_back("pipeline edge of " + std::to_string(p.layers.back().outputBytes) +
                              " B per sample is not 2*s*h: hidden size unknown");
    }
    if (moe) {
        const bool mixtral = fileName.find("mixtral") != std::string::npos;
        p.numExperts = mixtral ? 8 : static_cast<int>(epDegree);
        p.topK = mixtral ? 2 : 1;
        p.notes.push_back(mixtral ? "experts 8, top-2 taken from Mixtral 8x7B (not in the file)"
                                  : "experts taken as ep_degree (not in the file)");
    }
}

} // namespace

Result<ModelProfile> profileFromArtifactJson(const Json &j, const std::string &origin,
                                             std::optional<int> seqLengthHint)
{
    try {
        requireObject(j, "");
        const Json &nodes = requireKey(j, "nodes", "");
        requireObject(nodes, "nodes");
        if (nodes.empty())
            throw JsonError("nodes", "no tensor width listed");
        // The name the artifact's inputs encode their shape in (..._mbs_N_sl_N_...): the
        // file's own, or, for a copy embedded in a workspace, the one kept at import
        // ("nest_file_name", importedModel()).
        const auto kept = j.find("nest_file_name");
        const std::string fileName = kept != j.end() && kept->is_string()
                                         ? std::filesystem::path(kept->get<std::string>()).filename().string()
                                         : std::filesystem::path(origin).filename().string();
        const std::vector<int> widths = artifactWidths(nodes);
        const int width = widths.front();
        const std::string tKey = std::to_string(width);
        const std::vector<ArtifactNode> parsed = artifactNodes(nodes.at(tKey), "nodes." + tKey);
        const std::map<long long, double> edgeOut = artifactChainEdges(j, tKey);
        // Every width: the same layer ids, its own numbers.
        std::vector<std::vector<ArtifactNode>> perWidth;
        std::vector<std::map<long long, double>> perWidthEdges;
        for (int t : widths) {
            const std::string key = std::to_string(t);
            perWidth.push_back(artifactNodes(nodes.at(key), "nodes." + key));
            if (perWidth.back().size() != parsed.size() || perWidth.back().front().id != parsed.front().id)
                throw JsonError("nodes." + key, "lists layers " + std::to_string(perWidth.back().front().id) + ".." +
                                                    std::to_string(perWidth.back().back().id) + ", but nodes." + tKey +
                                                    " lists " + std::to_string(parsed.front().id) + ".." +
                                                    std::to_string(parsed.back().id) + " (every width must list the same layers)");
            perWidthEdges.push_back(artifactChainEdges(j, key));
        }

        ModelProfile p;
        const int mbs = artifactBatchShape(j, fileName, seqLengthHint, p);
        p.tensorWidths = widths;
        p.optimizerBytesPerParam = artifactOptimizerBytes(j);
        p.groupDevices = artifactGroupDevices(j);
        p.measuredMicroBatch = mbs;
        if (has(j, "activationRecomputation"))
            p.measuredRecompute = getBool(j, "activationRecomputation", "", false);
        p.name = std::filesystem::path(origin).stem().string();
        if (p.name.empty())
            p.name = "artifact";
        p.family = "profile";
        p.source = "NEST artifact solver input (" + origin + ")";
        p.measuredOn = kArtifactDevice;   // its cycle counts are TPU v4's (frequency 1.05 GHz)
        const long long epDegree = getInt(j, "ep_degree", "", 1, limits::modelCountMax, 1);
        const bool moe = epDegree > 1 || fileName.find("mixtral") != std::string::npos;
        p.notes.push_back("latencies read as milliseconds per micro-batch of " + std::to_string(mbs) +
                          " (the artifact's cycles / frequency in kHz)");
        std::string listed;
        for (int t : widths)
            listed += (listed.empty() ? "" : ", ") + std::to_string(t);
        p.notes.push_back("tensor widths " + listed + " each read from its own nodes[t] (per device); no other width is allowed");
        p.notes.push_back("parameterSize and activationSize read as the bytes each device of a width-t group holds");
        if (p.groupDevices > 1)
            p.notes.push_back("ep_degree x cp_degree = " + std::to_string(p.groupDevices) +
                              ": each stage shard stands for that many devices");
        for (size_t i = 0; i < parsed.size(); ++i) {
            LayerProfile l = artifactLayer(parsed[i], width, mbs, moe, p.bytesPerParam, edgeOut);
            for (size_t w = 0; w < widths.size(); ++w)
                l.byWidth.push_back(artifactMeasurement(perWidth[w][i], widths[w], mbs, perWidthEdges[w], p.bytesPerParam));
            p.layers.push_back(std::move(l));
        }
        artifactModelShape(p, moe, fileName, epDegree);
        p.notes.push_back("no head/loss layer in the artifact's input");
        return p;
    } catch (const JsonError &e) {
        return Result<ModelProfile>::failure(formatError(origin, e.path(), e.reason()));
    }
}

Result<Topology> artifactClusterFromJson(const Json &j, const std::string &origin)
{
    try {
        requireObject(j, "");
        const double memory = getPositive(j, "maxMemoryPerDevice", "");
        const long long maxDevices = getInt(j, "maxDevices", "", 1, MAX_DEVICES);
        const int group = artifactGroupDevices(j);
        const Json &bws = requireKey(j, "bws", "");
        const Json &lat = requireKey(j, "latency_per_level", "");
        const Json &fan = requireKey(j, "devices_per_level", "");
        requireArray(bws, "bws");
        requireArray(lat, "latency_per_level");
        requireArray(fan, "devices_per_level");
        if (bws.empty() || bws.size() > static_cast<size_t>(Topology::maxLevels))
            throw JsonError("bws", "must list 1 to " + std::to_string(Topology::maxLevels) + " levels");
        if (lat.size() != bws.size())
            throw JsonError("latency_per_level", "has " + std::to_string(lat.size()) + " levels, bws has " +
                                                     std::to_string(bws.size()));
        if (fan.size() != bws.size())
            throw JsonError("devices_per_level", "has " + std::to_string(fan.size()) + " levels, bws has " +
                                                     std::to_string(bws.size()));
        std::vector<UniformLevel> levels;
        long long product = 1;
        for (size_t i = 0; i < bws.size(); ++i) {
            const std::string bpath = childPath("bws", i), lpath = childPath("latency_per_level", i),
                              fpath = childPath("devices_per_level", i);
            if (!bws[i].is_number() || !(bws[i].get<double>() > 0) || !std::isfinite(bws[i].get<double>()))
                throw JsonError(bpath, "must be a positive number of bytes/s");
            if (!lat[i].is_number() || !(lat[i].get<double>() >= 0) || !std::isfinite(lat[i].get<double>()))
                throw JsonError(lpath, "must be a non-negative number of seconds");
            if (!fan[i].is_number_integer() || fan[i].get<long long>() < 1 || fan[i].get<long long>() > MAX_DEVICES)
                throw JsonError(fpath, "must be a whole number >= 1");
            long long fanout = fan[i].get<long long>();
            if (i == 0) {
                if (fanout % group != 0)
                    throw JsonError(fpath, "must be a multiple of ep_degree x cp_degree (" + std::to_string(group) + ")");
                fanout /= group;
            }
            product *= fan[i].get<long long>();
            if (product > MAX_DEVICES)
                throw JsonError(fpath, "the levels multiply to more than the device limit");
            UniformLevel l;
            l.name = i == 0 ? "node" : i + 1 == bws.size() ? "spine" : "level" + std::to_string(i);
            l.fanout = static_cast<int>(fanout);
            l.link.bandwidth = bws[i].get<double>();
            l.link.latency = lat[i].get<double>();
            levels.push_back(l);
        }
        if (product != maxDevices)
            throw JsonError("devices_per_level", "multiplies to " + std::to_string(product) + " devices, maxDevices is " +
                                                     std::to_string(maxDevices));
        // The artifact's TPUv4-like device (core/domain/ClusterTemplates.cpp) with the file's memory.
        DeviceSpec device{kArtifactDevice, 275e12, memory, 1200e9, 0.0,
                          "NEST artifact input: TPUv4-like, 275 TFLOPS, maxMemoryPerDevice from the file; TPU v4 HBM 1200 GB/s"};
        const std::string name = std::filesystem::path(origin).stem().string();
        Topology topo = Topology::uniform(group > 1 ? name + " (groups of " + std::to_string(group) + " devices)" : name,
                                          device, levels);
        return topo;
    } catch (const JsonError &e) {
        return Result<Topology>::failure(formatError(origin, e.path(), e.reason()));
    }
}

} // namespace nest
