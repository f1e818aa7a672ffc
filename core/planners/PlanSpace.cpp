#include "PlanSpace.h"

#include "LayerSumsStore.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace nest {

namespace {

std::vector<int> sortedUnique(std::vector<int> v)
{
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    v.erase(std::remove_if(v.begin(), v.end(), [](int x) { return x < 1; }), v.end());
    return v;
}

// What makes the inputs unsearchable before any candidate is listed; empty when nothing.
std::string inputProblem(const Topology &topo, const ModelProfile &model, const SearchOptions &options,
                         int globalBatch)
{
    if (topo.deviceCount() < 1)
        return "the cluster has no devices";
    if (model.layerCount() < 1)
        return "the model has no layers";
    if (options.seqLength > 0 && options.seqLength != model.seqLength)
        return "sequence length " + std::to_string(options.seqLength) + " differs from the model profile's " +
               std::to_string(model.seqLength) + " (build the model with the sequence length to search)";
    if (globalBatch < 1)
        return "the global batch must be at least 1";
    return {};
}

// Context-parallel candidates that divide the sequence and leave each rank enough tokens.
std::vector<int> contextCandidates(const SearchOptions &options, int seqLength)
{
    std::vector<int> out;
    for (int cp : sortedUnique(options.cpCandidates.empty() ? std::vector<int>{1} : options.cpCandidates)) {
        if (cp > 1 && (!StageConfig::cpDividesSequence(cp, seqLength) ||
                       (options.cpMinTokensPerRank > 0 && seqLength / cp < options.cpMinTokensPerRank)))
            continue;
        out.push_back(cp);
    }
    return out;
}

// The recompute modes to try, sorted and distinct; none alone when recompute is off.
std::vector<Recompute> recomputeCandidates(const SearchOptions &options)
{
    std::vector<Recompute> out;
    if (options.allowRecompute) {
        out = options.recomputeModes;
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    if (out.empty())
        out = {Recompute::None};
    return out;
}

template <typename T>
std::vector<T> sortedDistinct(std::vector<T> v)
{
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

// Transformer / MoE blocks between the leading and trailing other layers (embedding,
// head): what the interleaved chunks divide (as buildUniformPlan does); a model without
// a block is all blocks here.
PipelineSpan blockSpan(const ModelProfile &model)
{
    const int layers = model.layerCount();
    const PipelineSpan span = pipelineSpan(model);
    if (span.blocks == 0)
        return {0, layers, 0};
    return span;
}

// The outer points (micro-batch, data-parallel degree, schedule, layout) whose micro-batches
// divide the global batch (with padBatch: any dp up to the batch, rounded up), ordered by
// (positions, micro-batch, schedule, layout).
std::vector<OuterConfig> outerConfigs(const SearchOptions &options, int globalBatch, int devices)
{
    const std::vector<Schedule> schedules = sortedDistinct(options.schedules);
    const std::vector<Layout> layouts = sortedDistinct(options.layouts);
    std::vector<OuterConfig> configs;
    for (int mb : sortedUnique(options.microBatches)) {
        if (globalBatch % mb != 0)
            continue;
        // Both tests below need mb x dp <= globalBatch when the batch is positive (a larger
        // step cannot divide it, nor pad up to it): no dp above globalBatch / mb passes, so
        // a cluster of a million devices is not walked device count by device count.
        const int most = globalBatch > 0 ? static_cast<int>(std::min<long long>(devices, globalBatch / mb)) : devices;
        for (int dp = 1; dp <= most; ++dp) {
            // 64-bit: mb x dp reaches 2^32 at 65,536 x 65,536 and would wrap to 0 in int.
            const long long perStep = static_cast<long long>(mb) * dp;
            if (globalBatch % perStep != 0 && !(options.padBatch && perStep <= globalBatch))
                continue;
            if (!options.dpCandidates.empty() &&
                std::find(options.dpCandidates.begin(), options.dpCandidates.end(), dp) == options.dpCandidates.end())
                continue;
            for (Schedule s : schedules) {
                for (Layout l : layouts) {
                    // With one replica both layouts are the same plans: search it once,
                    // under whichever layout is listed first.
                    if (dp == 1 && l != layouts.front())
                        continue;
                    OuterConfig c;
                    c.microBatch = mb;
                    c.schedule = s;
                    c.dp = dp;
                    c.layout = l;
                    c.numMicroBatches = static_cast<int>((globalBatch + perStep - 1) / perStep);  // exact when dp divides
                    c.positions = devices / dp;
                    configs.push_back(c);
                }
            }
        }
    }
    std::stable_sort(configs.begin(), configs.end(), [](const OuterConfig &a, const OuterConfig &b) {
        return std::make_tuple(a.positions, a.microBatch, static_cast<int>(a.schedule), static_cast<int>(a.layout)) <
               std::make_tuple(b.positions, b.microBatch, static_cast<int>(b.schedule), static_cast<int>(b.layout));
    });
    return configs;
}

} // namespace

const char *toString(Layout l)
{
    return l == Layout::ReplicasInside ? "inside" : "outside";
}

CostOptions searchCostOptions(const SearchOptions &options)
{
    CostOptions c = options.cost;
    if (options.memoryHeadroom > 0)
        c.memoryHeadroom = options.memoryHeadroom;
    return c;
}

PlanSpace::PlanSpace(const Topology &topo, const ModelProfile &model, const SearchOptions &options)
    : m_topo(&topo), m_model(&model), m_options(&options)
{
    m_globalBatch = options.globalBatch > 0 ? options.globalBatch : model.globalBatch;
    m_seqLength = model.seqLength;
    const int layers = model.layerCount();
    m_maxStages = options.maxStages > 0 ? std::min(options.maxStages, layers) : layers;
    m_cost = searchCostOptions(options);

    m_moePrefix.assign(layers + 1, 0);
    for (int i = 0; i < layers; ++i)
        m_moePrefix[i + 1] = m_moePrefix[i] + (hasExperts(model.layers[i]) ? 1 : 0);

    m_problem = inputProblem(topo, model, options, m_globalBatch);
    if (!m_problem.empty())
        return;

    // The candidate lists under the model's constraints (PlanSpace.h).
    for (int tp : sortedUnique(options.tpCandidates))
        if (StageConfig::tpDividesHeads(tp, model.heads) && model.allowsTensorWidth(tp))
            m_tps.push_back(tp);
    m_cps = contextCandidates(options, m_seqLength);
    m_recomputes = recomputeCandidates(options);
    for (int v : sortedUnique(options.virtualStages))
        if (v >= 2)
            m_depths.push_back(v);
    m_span = blockSpan(model);
    m_units = pipelineUnitCount(m_span, options.pipelineUnits);

    // Widths with at least one valid (tp, cp) split.
    const int n = topo.deviceCount();
    std::vector<int> widths;
    for (int tp : m_tps)
        for (int cp : m_cps)
            if (tp * cp <= n)
                widths.push_back(tp * cp);
    m_widths = sortedUnique(widths);
    if (m_tps.empty()) {
        m_problem = model.tensorWidths.empty()
                        ? "no tensor-parallel candidate divides the model's " + std::to_string(model.heads) + " heads"
                        : "no tensor-parallel candidate is a width the model file measured";
        return;
    }
    if (m_cps.empty()) {
        m_problem = "no context-parallel candidate divides the sequence length " + std::to_string(m_seqLength) +
                    (options.cpMinTokensPerRank > 0
                         ? " with at least " + std::to_string(options.cpMinTokensPerRank) + " tokens per rank"
                         : std::string());
        return;
    }
    if (m_widths.empty()) {
        m_problem = "no tensor/context-parallel width fits the cluster and the model's heads";
        return;
    }
    m_configs = outerConfigs(options, m_globalBatch, n);
    if (m_configs.empty())
        m_problem = "no (micro-batch, data-parallel degree) divides the global batch of " +
                    std::to_string(m_globalBatch);
}

bool PlanSpace::hasMoe(int first, int end) const
{
    return m_moePrefix[end] - m_moePrefix[first] > 0;
}

StageConfig searchedStage(const SearchOptions &o, int tp, int cp, int ep, int etp, int zero, Recompute recompute)
{
    StageConfig s;
    s.tp = tp;
    s.cp = cp;
    s.ep = ep;
    s.etp = etp;
    s.sp = StageConfig::sequenceParallel(o.allowSp, tp);
    s.zero = zero;
    s.recompute = recompute;
    return s;
}

std::vector<StageConfig> PlanSpace::stageOptions(const OuterConfig &cfg, int width, int first,
                                                 int end) const
{
    const SearchOptions &o = *m_options;
    std::vector<StageConfig> out;
    std::vector<int> eps = {1};
    std::vector<int> etps = {0};  // the experts' tensor widths; 0 = tp
    if (hasMoe(first, end)) {
        for (int ep : sortedUnique(o.epCandidates)) {
            if (ep > 1 && StageConfig::epDividesExperts(ep, m_model->numExperts))
                eps.push_back(ep);
        }
        etps = sortedUnique(o.etpCandidates);
    }
    for (int tp : m_tps) {
        if (width % tp != 0)
            continue;
        const int cp = width / tp;
        if (!std::binary_search(m_cps.begin(), m_cps.end(), cp))
            continue;
        const std::vector<int> zeros = (o.allowZero && StageConfig::zeroShards(cfg.dp, cp)) ? std::vector<int>{0, 1, 2, 3}
                                                                        : std::vector<int>{0};
        std::vector<int> fields;  // the distinct etp of this tp (0 and tp are one)
        for (int candidate : etps) {
            const int field = StageConfig::etpField(candidate > 0 ? candidate : tp, tp);
            if (std::find(fields.begin(), fields.end(), field) == fields.end())
                fields.push_back(field);
        }
        for (int etp : fields)
        for (int ep : eps) {
            // Megatron-Core's folding: the etp x ep grid re-slices the stage's tp x cp x dp.
            if (!StageConfig::expertGridFits(tp, cp, cfg.dp, etp > 0 ? etp : tp, ep))
                continue;
            for (int z : zeros) {
                for (Recompute rc : m_recomputes)
                    out.push_back(searchedStage(o, tp, cp, ep, etp, z, rc));
            }
        }
    }
    return out;
}

std::vector<std::vector<int>> PlanSpace::stageDevices(const OuterConfig &cfg, int position,
                                                      int width) const
{
    return deviceMatrix(stageRows(cfg, position, width));
}

EvenRows PlanSpace::stageRows(const OuterConfig &cfg, int position, int width) const
{
    EvenRows rows;
    rows.rows = cfg.dp;
    rows.width = width;
    rows.first = cfg.layout == Layout::ReplicasOutside ? cfg.dp * position : position;
    rows.stride = cfg.layout == Layout::ReplicasOutside ? width : cfg.positions;
    return rows;
}

void PlanSpace::stageDevicesInto(const OuterConfig &cfg, int position, int width,
                                 std::vector<std::vector<int>> &d) const
{
    deviceMatrixInto(stageRows(cfg, position, width), d);
}

StagePlan PlanSpace::makeStage(const OuterConfig &cfg, int position, const StageChoice &c) const
{
    StagePlan s;
    s.firstLayer = c.firstLayer;
    s.endLayer = c.endLayer;
    s.tp = c.option.tp;
    s.cp = c.option.cp;
    s.ep = c.option.ep;
    s.etp = c.option.etp;
    s.sp = c.option.sp;
    s.zero = c.option.zero;
    s.recompute = c.option.recompute;
    s.devices = stageDevices(cfg, position, c.option.width());
    return s;
}

Plan PlanSpace::planSkeleton(const OuterConfig &cfg) const
{
    Plan p;
    p.globalBatch = cfg.numMicroBatches * cfg.microBatch * cfg.dp;  // m_globalBatch unless padBatch
    p.microBatch = cfg.microBatch;
    p.seqLength = m_seqLength;
    p.schedule = cfg.schedule;
    p.virtualStages = 1;
    p.dp = cfg.dp;
    p.pipelineUnits = m_options->pipelineUnits;
    p.precision = costOptions().precision;  // the precision this search prices
    return p;
}

Plan PlanSpace::makePlan(const OuterConfig &cfg, const std::vector<StageChoice> &stages) const
{
    Plan p = planSkeleton(cfg);
    int pos = 0;
    for (const StageChoice &c : stages) {
        p.stages.push_back(makeStage(cfg, pos, c));
        pos += c.option.width();
    }
    return p;
}

std::vector<InterleavedChoice> PlanSpace::interleavedChoices(const OuterConfig &cfg) const
{
    std::vector<InterleavedChoice> out;
    if (m_depths.empty())
        return out;
    const int layers = layerCount();
    for (int pp = 2; pp * m_depths.front() <= m_units && pp <= m_maxStages; ++pp) {
        if (cfg.numMicroBatches % pp != 0)
            continue;
        for (int v : m_depths) {
            if (pp * v > m_units)
                break;
            for (int w : m_widths) {
                if (pp * w > cfg.positions)
                    break;
                // Options are those of a stage holding every layer (ep only matters on MoE chunks).
                for (const StageConfig &o : stageOptions(cfg, w, 0, layers))
                    out.push_back({pp, v, o});
            }
        }
    }
    return out;
}

std::vector<StageChoice> PlanSpace::interleavedChunks(const InterleavedChoice &c) const
{
    std::vector<StageChoice> out;
    const int chunks = c.pp * c.virtualStages;
    const int layers = layerCount();
    // Megatron-LM's cut (buildUniformPlan's, one definition: balancedStageBlocks): the units
    // as evenly as possible, the first chunks one unit longer; leading layers (embedding)
    // join the first chunk, trailing ones (head) the last.
    const std::vector<int> blocks = balancedStageBlocks(m_span, chunks, m_options->pipelineUnits);
    int first = 0;
    for (int k = 0; k < chunks; ++k) {
        StageChoice sc;
        sc.firstLayer = first;
        sc.endLayer = k == chunks - 1 ? layers : (k == 0 ? m_span.lead : first) + blocks[static_cast<size_t>(k)];
        out.push_back(sc);
        first = sc.endLayer;
    }
    setInterleavedOption(out, c.option);
    return out;
}

void PlanSpace::setInterleavedOption(std::vector<StageChoice> &chunks, const StageConfig &option) const
{
    for (StageChoice &sc : chunks) {
        sc.option = option;
        if (!hasMoe(sc.firstLayer, sc.endLayer))
        {
            sc.option.ep = 1;  // expert parallelism only in a chunk that holds a MoE layer
            sc.option.etp = 0;
        }
    }
}

Plan PlanSpace::makeInterleavedPlan(const OuterConfig &cfg, const InterleavedChoice &c) const
{
    Plan p = planSkeleton(cfg);
    p.virtualStages = c.virtualStages;
    const std::vector<StageChoice> chunks = interleavedChunks(c);
    for (size_t k = 0; k < chunks.size(); ++k)
        p.stages.push_back(makeStage(cfg, static_cast<int>(k % static_cast<size_t>(c.pp)) * c.option.width(),
                                     chunks[k]));
    return p;
}

// --- helpers shared by the planners --------------------------------------------------------

StageContext makeContext(const PlanSpace &space, const OuterConfig &cfg)
{
    StageContext ctx;
    ctx.topology = &space.topology();
    ctx.model = &space.model();
    ctx.options = space.costOptions();
    ctx.microBatch = cfg.microBatch;
    ctx.numMicroBatches = cfg.numMicroBatches;
    ctx.seqLength = space.seqLength();
    ctx.dp = cfg.dp;
    ctx.schedule = cfg.schedule;
    ctx.virtualStages = 1;
    return ctx;
}


int LinkTable::intern(const BoundaryLink &b)
{
    for (size_t i = 0; i < m_links.size(); ++i) {
        if (m_links[i].level == b.level && m_links[i].link == b.link)
            return static_cast<int>(i) + 1;
    }
    m_links.push_back(b);
    return static_cast<int>(m_links.size());
}

SearchClasses::SearchClasses(const PlanSpace &space)
    : m_topo(&space.topology())
{
    const int widest = space.widths().empty() ? 1 : space.widths().back();
    m_columnReach = static_cast<int>(std::min<long long>(space.topology().deviceCount(),
                                                         (static_cast<long long>(space.maxStages()) + 1) * widest));

    // Group classes: (level, device count, child count, effective link).
    const Topology &t = *m_topo;
    std::map<std::tuple<int, int, size_t, double, double, double>, int> classes;
    m_groupClass.assign(t.groups.size(), 0);
    for (size_t g = 0; g < t.groups.size(); ++g) {
        const TopoGroup &grp = t.groups[g];
        const LinkParams lp = t.achievableLink(static_cast<int>(g));
        const auto key = std::make_tuple(grp.level, t.deviceCountUnder(static_cast<int>(g)),
                                         grp.level == 0 ? grp.devices.size() : grp.children.size(),
                                         lp.bandwidth, lp.latency, lp.oversubscription);
        auto it = classes.emplace(key, static_cast<int>(classes.size())).first;
        m_groupClass[g] = it->second;
    }
}

int SearchClasses::placementClass(const std::vector<std::vector<int>> &devices)
{
    const Topology &t = *m_topo;
    const int levels = t.levelCount();
    m_sig.clear();
    m_sig.push_back(static_cast<int>(devices.size()));
    m_sig.push_back(devices.empty() ? 0 : static_cast<int>(devices[0].size()));
    int prev = -1;
    for (const auto &row : devices) {
        for (int d : row) {
            m_sig.push_back(t.devices[d].type);
            for (int l = 0; l < levels; ++l)
                m_sig.push_back(m_groupClass[t.ancestor(d, l)]);
            // The order of ids inside the matrix is part of the shape (sorted for both
            // layouts); the level to the previous device fixes the tree structure.
            m_sig.push_back(prev < 0 ? -2 : (d > prev ? t.level(prev, d) : -3 - t.level(prev, d)));
            prev = d;
        }
    }
    return m_placements.emplace(m_sig, static_cast<int>(m_placements.size())).first->second;
}

namespace {

__extension__ typedef unsigned __int128 U128;  // GCC / Clang

// Arithmetic modulo the Mersenne prime 2^61 - 1 for the signature hashes.
constexpr uint64_t kHashPrime = (uint64_t{1} << 61) - 1;
constexpr uint64_t kBaseA = 0x1f3a5c7e9b2d4f61ULL % kHashPrime;
constexpr uint64_t kBaseB = 0x2c6b8e1f4a7d3b95ULL % kHashPrime;

uint64_t mulMod(uint64_t x, uint64_t y)
{
    const U128 p = static_cast<U128>(x) * y;
    uint64_t r = static_cast<uint64_t>(p & kHashPrime) + static_cast<uint64_t>(p >> 61);
    return r >= kHashPrime ? r - kHashPrime : r;
}
uint64_t addMod(uint64_t x, uint64_t y)
{
    const uint64_t r = x + y;
    return r >= kHashPrime ? r - kHashPrime : r;
}
uint64_t subMod(uint64_t x, uint64_t y)
{
    return x >= y ? x - y : x + kHashPrime - y;
}
// Bases over the columns of an inside matrix, and the tag that keeps those hashes apart
// from the row-by-row ones.
constexpr uint64_t kColumnA = 0x3d1e7b5a9c2f4e83ULL % kHashPrime;
constexpr uint64_t kColumnB = 0x15c9a3e7d2b8f461ULL % kHashPrime;
constexpr uint64_t kInsideTag = 0x7a3c;

} // namespace

void SearchClasses::prepareDeviceHashes()
{
    if (m_hashesReady)
        return;
    const Topology &t = *m_topo;
    const int n = t.deviceCount();
    const int levels = t.levelCount();
    // A device's token is its (type, ancestor classes) interned, as placementClass() lists
    // them, times m_tokenBase, plus its level entry + 2 (-2: first of the matrix, else the
    // level to the device before it in the matrix, which is the one before in id order
    // within a row).
    m_tokenBase = levels + 3;
    std::map<std::vector<int>, int> tokens;
    std::vector<int> key(static_cast<size_t>(levels) + 1);
    m_deviceToken.assign(static_cast<size_t>(n), 0);
    m_stepLevel.assign(static_cast<size_t>(n), -2);
    // A device of the node and type of the device before it has that device's key (same
    // ancestors at every level): its token, without interning the key again.
    for (int d = 0; d < n; ++d) {
        if (d > 0 && t.devices[d].node == t.devices[d - 1].node && t.devices[d].type == t.devices[d - 1].type) {
            m_deviceToken[static_cast<size_t>(d)] = m_deviceToken[static_cast<size_t>(d) - 1];
            m_stepLevel[static_cast<size_t>(d)] = 0;  // level(d - 1, d): the same node
            continue;
        }
        key[0] = t.devices[d].type;
        for (int l = 0; l < levels; ++l)
            key[static_cast<size_t>(l) + 1] = m_groupClass[t.ancestor(d, l)];
        m_deviceToken[static_cast<size_t>(d)] =
            tokens.emplace(key, static_cast<int>(tokens.size())).first->second;
        if (d > 0)
            m_stepLevel[static_cast<size_t>(d)] = t.level(d - 1, d);
    }
    // Prefix hashes of the tokens of a single row through every device: device d with the
    // level to d - 1.
    m_prefixA.assign(static_cast<size_t>(n) + 1, 0);
    m_prefixB.assign(static_cast<size_t>(n) + 1, 0);
    m_powA.assign(static_cast<size_t>(n) + 1, 1);
    m_powB.assign(static_cast<size_t>(n) + 1, 1);
    for (int d = 0; d < n; ++d) {
        const uint64_t tok = static_cast<uint64_t>(m_deviceToken[static_cast<size_t>(d)]) * m_tokenBase +
                             static_cast<uint64_t>(m_stepLevel[static_cast<size_t>(d)] + 2) + 1;
        m_prefixA[d + 1] = addMod(mulMod(m_prefixA[d], kBaseA), tok);
        m_prefixB[d + 1] = addMod(mulMod(m_prefixB[d], kBaseB), tok);
        m_powA[d + 1] = mulMod(m_powA[d], kBaseA);
        m_powB[d + 1] = mulMod(m_powB[d], kBaseB);
    }
    m_hashesReady = true;
}

SearchClasses::Hash2 SearchClasses::append(Hash2 acc, Hash2 h, size_t len) const
{
    // len <= devices: the powers are tabulated.
    return {addMod(mulMod(acc.a, m_powA[len]), h.a), addMod(mulMod(acc.b, m_powB[len]), h.b)};
}

SearchClasses::Hash2 SearchClasses::rowHash(int first, int end, int firstLevel) const
{
    const uint64_t tok = static_cast<uint64_t>(m_deviceToken[static_cast<size_t>(first)]) * m_tokenBase +
                         static_cast<uint64_t>(firstLevel + 2) + 1;
    Hash2 h{tok % kHashPrime, tok % kHashPrime};
    const size_t len = static_cast<size_t>(end - first - 1);
    const Hash2 rest{subMod(m_prefixA[end], mulMod(m_prefixA[first + 1], m_powA[len])),
                     subMod(m_prefixB[end], mulMod(m_prefixB[first + 1], m_powB[len]))};
    return append(h, rest, len);
}

template <typename Start>
SearchClasses::Hash2 SearchClasses::matrixHash(int dp, int width, Start start) const
{
    // The shape first, as placementClass() lists it.
    Hash2 h{addMod(mulMod(static_cast<uint64_t>(dp), kBaseA), static_cast<uint64_t>(width)),
            addMod(mulMod(static_cast<uint64_t>(dp), kBaseB), static_cast<uint64_t>(width))};
    int prevEnd = -1;
    for (int r = 0; r < dp; ++r) {
        const int first = start(r);
        const int level = prevEnd < 0 ? -2 : m_topo->level(prevEnd - 1, first);
        h = append(h, rowHash(first, first + width, level), static_cast<size_t>(width));
        prevEnd = first + width;
    }
    return h;
}

int SearchClasses::classOfHash(Hash2 h)
{
    return m_hashedPlacements.emplace(std::make_pair(h.a, h.b), static_cast<int>(m_hashedPlacements.size()))
        .first->second;
}

const SearchClasses::InsideColumns &SearchClasses::insideColumns(int dp, int positions)
{
    auto it = m_inside.find(dp);
    if (it != m_inside.end())
        return it->second;
    InsideColumns c;
    // Replicas whose blocks [r * positions, (r + 1) * positions) have the same tokens (one
    // row hash, O(1) each) and the same level entry at the block's first device have the
    // same tokens in every column: a "kind". Identical racks make a handful of kinds, so
    // the work below is O(dp + kinds * positions) instead of O(dp * positions).
    std::vector<int> kindOf(static_cast<size_t>(dp));
    std::vector<int> firstOfKind;  // a replica of each kind, by kind
    {
        std::map<std::tuple<int, uint64_t, uint64_t>, int> kinds;
        for (int r = 0; r < dp; ++r) {
            const int first = r * positions;
            const Hash2 h = rowHash(first, first + positions, -2);
            const auto key = std::make_tuple(m_stepLevel[static_cast<size_t>(first)], h.a, h.b);
            const auto [slot, added] = kinds.emplace(key, static_cast<int>(firstOfKind.size()));
            if (added)
                firstOfKind.push_back(r);
            kindOf[static_cast<size_t>(r)] = slot->second;
        }
    }
    const size_t kindCount = firstOfKind.size();
    // Aligned: step(r * positions) >= every step inside blocks r - 1 and r.
    std::vector<int> inner(kindCount, -1);
    for (size_t k = 0; k < kindCount; ++k)
        for (int x = 1; x < positions; ++x)
            inner[k] = std::max(inner[k], m_stepLevel[static_cast<size_t>(firstOfKind[k] * positions + x)]);
    c.aligned = true;
    for (int r = 1; r < dp && c.aligned; ++r) {
        const int boundary = m_stepLevel[static_cast<size_t>(r * positions)];
        c.aligned = boundary >= inner[static_cast<size_t>(kindOf[static_cast<size_t>(r - 1)])] &&
                    boundary >= inner[static_cast<size_t>(kindOf[static_cast<size_t>(r)])];
    }
    if (c.aligned) {
        // A column's hash is the polynomial sum_r tok(r, x) * base^(dp - 1 - r) (what the
        // Horner loop over r gives; mulMod / addMod return canonical residues, so the same
        // values): per kind, the sum of its replicas' powers, then one term per kind.
        std::vector<Hash2> weight(kindCount);
        for (int r = 0; r < dp; ++r) {
            Hash2 &w = weight[static_cast<size_t>(kindOf[static_cast<size_t>(r)])];
            const size_t e = static_cast<size_t>(dp - 1 - r);
            w = {addMod(w.a, m_powA[e]), addMod(w.b, m_powB[e])};
        }
        const int columns = std::min(positions, m_columnReach);
        c.prefixA.assign(static_cast<size_t>(columns) + 1, 0);
        c.prefixB.assign(static_cast<size_t>(columns) + 1, 0);
        c.first.assign(static_cast<size_t>(columns), Hash2{});
        for (int x = 0; x < columns; ++x) {
            Hash2 col, first;
            for (size_t k = 0; k < kindCount; ++k) {
                const size_t block = static_cast<size_t>(firstOfKind[k]) * static_cast<size_t>(positions);
                const size_t d = block + static_cast<size_t>(x);
                const uint64_t base = static_cast<uint64_t>(m_deviceToken[d]) * m_tokenBase + 1;
                const uint64_t tok = base + static_cast<uint64_t>(m_stepLevel[d] + 2);
                // The first column's level entry: -2 for replica 0, else the block
                // boundary's; m_stepLevel[0] is -2, so step(block) either way.
                const uint64_t firstTok = base + static_cast<uint64_t>(m_stepLevel[block] + 2);
                const Hash2 &w = weight[k];
                col = {addMod(col.a, mulMod(tok, w.a)), addMod(col.b, mulMod(tok, w.b))};
                first = {addMod(first.a, mulMod(firstTok, w.a)), addMod(first.b, mulMod(firstTok, w.b))};
            }
            c.prefixA[static_cast<size_t>(x) + 1] = addMod(mulMod(c.prefixA[static_cast<size_t>(x)], kColumnA), col.a);
            c.prefixB[static_cast<size_t>(x) + 1] = addMod(mulMod(c.prefixB[static_cast<size_t>(x)], kColumnB), col.b);
            c.first[static_cast<size_t>(x)] = first;
        }
    }
    return m_inside.emplace(dp, std::move(c)).first->second;
}

// The inside matrix of `dp` rows [r * positions + first, ... + width) read column by column
// (the same tokens as row by row, so the same information) when the blocks are aligned;
// nullopt otherwise or beyond the tabulated columns.
std::optional<SearchClasses::Hash2> SearchClasses::insideHash(int dp, int positions, int first, int width)
{
    if (dp < m_columnHashReplicas)
        return std::nullopt;
    const InsideColumns &c = insideColumns(dp, positions);
    if (!c.aligned || first + width > static_cast<int>(c.first.size()))
        return std::nullopt;
    const size_t a = static_cast<size_t>(first) + 1, b = static_cast<size_t>(first + width);
    // b - a < columns <= m_columnReach: the powers are tabulated (the same values as
    // powMod's, without its ~40 multiplications per hash).
    if (m_columnPowA.empty()) {
        m_columnPowA.assign(static_cast<size_t>(m_columnReach) + 1, 1);
        m_columnPowB.assign(static_cast<size_t>(m_columnReach) + 1, 1);
        for (size_t e = 1; e < m_columnPowA.size(); ++e) {
            m_columnPowA[e] = mulMod(m_columnPowA[e - 1], kColumnA);
            m_columnPowB[e] = mulMod(m_columnPowB[e - 1], kColumnB);
        }
    }
    const uint64_t powA = m_columnPowA[b - a], powB = m_columnPowB[b - a];
    uint64_t ha = subMod(c.prefixA[b], mulMod(c.prefixA[a], powA));
    uint64_t hb = subMod(c.prefixB[b], mulMod(c.prefixB[a], powB));
    const Hash2 head = c.first[static_cast<size_t>(first)];
    // Tag, shape, the first column, the others.
    Hash2 h{addMod(mulMod(kInsideTag, kColumnA), static_cast<uint64_t>(dp)),
            addMod(mulMod(kInsideTag, kColumnB), static_cast<uint64_t>(dp))};
    h = {addMod(mulMod(h.a, kColumnA), static_cast<uint64_t>(width)), addMod(mulMod(h.b, kColumnB), static_cast<uint64_t>(width))};
    h = {addMod(mulMod(h.a, kColumnA), head.a), addMod(mulMod(h.b, kColumnB), head.b)};
    h = {addMod(mulMod(h.a, powA), ha), addMod(mulMod(h.b, powB), hb)};
    return h;
}

int SearchClasses::placementClassAt(const OuterConfig &cfg, int position, int width)
{
    prepareDeviceHashes();
    if (cfg.layout == Layout::ReplicasOutside) {
        // dp rows side by side: one interval, and a row's first device follows the last
        // of the row before, so the whole matrix hashes like one row.
        const int first = cfg.dp * position;
        const Hash2 shape{addMod(mulMod(static_cast<uint64_t>(cfg.dp), kBaseA), static_cast<uint64_t>(width)),
                          addMod(mulMod(static_cast<uint64_t>(cfg.dp), kBaseB), static_cast<uint64_t>(width))};
        const size_t len = static_cast<size_t>(cfg.dp) * static_cast<size_t>(width);
        return classOfHash(append(shape, rowHash(first, first + static_cast<int>(len), -2), len));
    }
    if (const auto h = insideHash(cfg.dp, cfg.positions, position, width))
        return classOfHash(*h);
    return classOfHash(matrixHash(cfg.dp, width, [&](int r) { return r * cfg.positions + position; }));
}

bool SearchClasses::sameTokens(int firstA, int firstB, int len) const
{
    // The first device's level entry is left out on both sides (-2), as in a row's hash.
    const Hash2 a = rowHash(firstA, firstA + len, -2), b = rowHash(firstB, firstB + len, -2);
    return a.a == b.a && a.b == b.b;
}

template <typename Repeats, typename Visit>
void SearchClasses::skipRepeats(int dp, Repeats repeats, Visit visit)
{
    // Invariant: the key of every replica below `done` is the key of a visited replica at or
    // before it. A run [done, done + k) that repeats [done - k, done) keeps it.
    int done = 0, k = 1;
    while (done < dp) {
        k = std::min({k, done, dp - done});
        if (k >= 1 && repeats(done, k)) {
            done += k;
            k *= 2;
            continue;
        }
        if (k > 1) {
            k /= 2;
            continue;
        }
        visit(done);
        ++done;
        k = 1;
    }
}

std::vector<int> SearchClasses::distinctReplicas(const OuterConfig &cfg, int first, int width)
{
    prepareDeviceHashes();
    std::vector<int> out;
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    const int P = cfg.positions;
    // Replicas [done, done + k): the ids from the first row's start to the last row's end
    // repeat those of the k replicas before, so every row repeats its counterpart's.
    auto repeats = [&](int done, int k) {
        return sameTokens(done * P + first, (done - k) * P + first, (k - 1) * P + width);
    };
    skipRepeats(cfg.dp, repeats, [&](int r) {
        const Hash2 h = rowHash(r * P + first, r * P + first + width, -2);
        const std::pair<uint64_t, uint64_t> key{h.a, h.b};
        if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
            seen.push_back(key);
            out.push_back(r);
        }
    });
    return out;
}

std::vector<int> SearchClasses::distinctOutsideReplicas(const OuterConfig &cfg, int position, int wp, int w)
{
    prepareDeviceHashes();
    std::vector<int> out;
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    const int before = cfg.dp * (position - wp), after = cfg.dp * position;
    // The bridge level(a + wp - 1, b) of replica r is max(down(r), level(after - 1, after),
    // up(r)) (contiguous ids: a level is the highest step between): down(r), the highest
    // step from its before row's end to the before stage's end, never rises with r; up(r),
    // from the after stage's start to its after row's start, never falls. Both equal at the
    // ends of a run of replicas: constant on it, and so is the bridge.
    auto down = [&](int r) { return m_topo->level(before + (r + 1) * wp - 1, after - 1); };
    auto up = [&](int r) { return m_topo->level(after, after + r * w); };
    auto repeats = [&](int done, int k) {
        return down(done - k) == down(done + k - 1) && up(done - k) == up(done + k - 1) &&
               sameTokens(before + done * wp, before + (done - k) * wp, k * wp) &&
               sameTokens(after + done * w, after + (done - k) * w, k * w);
    };
    skipRepeats(cfg.dp, repeats, [&](int r) {
        const int a = before + r * wp, b = after + r * w;
        // Both rows' tokens, then the bridge level (the row lengths are fixed, so the
        // concatenation is unambiguous).
        Hash2 h = append(rowHash(a, a + wp, -2), rowHash(b, b + w, -2), static_cast<size_t>(w));
        const uint64_t bridge = static_cast<uint64_t>(m_topo->level(a + wp - 1, b) + 2);
        h = append(h, Hash2{bridge, bridge}, 1);
        const std::pair<uint64_t, uint64_t> key{h.a, h.b};
        if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
            seen.push_back(key);
            out.push_back(r);
        }
    });
    return out;
}

std::pair<uint64_t, uint64_t> SearchClasses::boundaryKey(const OuterConfig &cfg, int position, int wp, int w)
{
    prepareDeviceHashes();
    // The union of the two matrices in id order, as one matrix, then the split and the
    // layout (which decides how its rows pair up).
    Hash2 h;
    if (cfg.layout == Layout::ReplicasOutside) {
        const int first = cfg.dp * (position - wp);
        const size_t len = static_cast<size_t>(cfg.dp) * static_cast<size_t>(wp + w);
        h = rowHash(first, first + static_cast<int>(len), -2);
    } else if (const auto c = insideHash(cfg.dp, cfg.positions, position - wp, wp + w)) {
        h = *c;
    } else {
        h = matrixHash(cfg.dp, wp + w, [&](int r) { return r * cfg.positions + position - wp; });
    }
    const uint64_t tail = (static_cast<uint64_t>(cfg.layout == Layout::ReplicasOutside ? 1 : 2) << 60) ^
                          (static_cast<uint64_t>(cfg.dp) << 40) ^ (static_cast<uint64_t>(wp) << 20) ^
                          static_cast<uint64_t>(w);
    return {h.a ^ tail, addMod(mulMod(h.b, kBaseB), tail % kHashPrime)};
}

LayerComputeBound layerComputeBound(const PlanSpace &space, const OuterConfig &cfgIn,
                                    SearchStats &stats)
{
    LayerComputeBound b;
    const int layers = space.layerCount();
    // The point's own options: compute depends on dp only through the expert-parallel
    // widths it allows (ep divides dp, and ep > 1 gives each expert GEMM ep x the rows,
    // ComputeModel.cpp, so a MoE layer computes faster at a larger dp; NestPlanner keys the
    // bounds of a model with MoE layers by dp). Their compute is the layer sums alone
    // (stageLayerSums(): no device ids, no dp), at each device type's rates: a stage
    // computes at its slowest device's, one of these, so the least bounds every placement.
    const OuterConfig &cfg = cfgIn;
    b.suffixDeviceSeconds.assign(layers + 1, 0.0);
    b.suffixSlowest.assign(layers + 1, 0.0);
    b.suffixLightest.assign(layers + 1, std::numeric_limits<double>::infinity());
    b.suffixSecondLightest.assign(layers + 1, std::numeric_limits<double>::infinity());
    std::vector<double> dev(layers, 0.0), time(layers, 0.0);
    StageContext ctx = makeContext(space, cfg);
    ctx.stageIndex = 0;
    ctx.numStages = 1;
    const double floor = computeTimeFloor(ctx.options);
    // A one-layer stage's cost is determined by its layer, the layer before it (its input)
    // and whether it is the last: equal profiles (names aside) give equal costs, so each
    // distinct (previous, own, last) is costed once (a model's blocks are mostly alike).
    const std::vector<int> type = layerTypes(space.model());
    std::map<std::tuple<int, int, bool>, std::pair<double, double>> costed;
    std::vector<ComputeRates> rates;
    for (const DeviceSpec &d : space.topology().deviceTypes)
        rates.push_back(deviceRates(d, ctx.options));
    for (int i = 0; i < space.layerCount(); ++i) {
        const std::tuple<int, int, bool> key{i > 0 ? type[i - 1] : -1, type[i], i + 1 == layers};
        if (const auto known = costed.find(key); known != costed.end()) {
            dev[i] = known->second.first;
            time[i] = known->second.second;
            continue;
        }
        double minDev = std::numeric_limits<double>::infinity();
        double minTime = minDev;
        for (int w : space.widths()) {
            if (w > cfg.positions)
                break;
            StagePlan stage;
            stage.firstLayer = i;
            stage.endLayer = i + 1;
            ctx.stage = &stage;
            // Options that differ in their ZeRO stage alone compute alike: the first stands
            // for them.
            const std::vector<StageConfig> options = space.stageOptions(cfg, w, i, i + 1);
            const std::vector<int> twins = LayerSumsStore::sumsTwins(options);
            for (size_t k = 0; k < options.size(); ++k) {
                if (twins[k] != static_cast<int>(k))
                    continue;
                stage.config() = options[k];
                double compute = std::numeric_limits<double>::infinity();
                for (const ComputeRates &r : rates) {
                    const StageLayerSums s = stageLayerSums(ctx, r);
                    compute = std::min(compute, (s.forward + s.backward) * floor);
                }
                ++stats.stageCostCalls;
                minDev = std::min(minDev, w * compute);
                minTime = std::min(minTime, compute);
            }
        }
        if (minDev == std::numeric_limits<double>::infinity()) {
            LayerComputeBound none;
            none.suffixDeviceSeconds.assign(layers + 1, 0.0);
            none.suffixSlowest.assign(layers + 1, 0.0);
            none.suffixLightest.assign(layers + 1, 0.0);
            none.suffixSecondLightest.assign(layers + 1, 0.0);
            return none;
        }
        dev[i] = minDev;
        time[i] = minTime;
        costed.emplace(key, std::make_pair(minDev, minTime));
    }
    for (int i = layers - 1; i >= 0; --i) {
        b.suffixDeviceSeconds[i] = b.suffixDeviceSeconds[i + 1] + dev[i];
        b.suffixSlowest[i] = std::max(b.suffixSlowest[i + 1], time[i]);
        b.suffixLightest[i] = std::min(b.suffixLightest[i + 1], dev[i]);
        b.suffixSecondLightest[i] = std::min(b.suffixSecondLightest[i + 1], std::max(b.suffixLightest[i + 1], dev[i]));
    }
    b.deviceSeconds = b.suffixDeviceSeconds[0];
    b.slowestLayer = b.suffixSlowest[0];
    return b;
}

void MemoryObstacle::consider(const StageCost &c, const StagePlan &s)
{
    consider(c.memoryTotal, c.memoryCapacity, s);
}

void MemoryObstacle::consider(double memoryTotal, double memoryCapacity, const StagePlan &s)
{
    if (memoryCapacity <= 0)
        return;
    const double r = memoryTotal / memoryCapacity;
    if (r < ratio) {
        ratio = r;
        need = memoryTotal;
        capacity = memoryCapacity;
        stage = s;
        stage.devices.clear();
    }
}

std::string MemoryObstacle::message(const PlanSpace &space) const
{
    if (ratio == std::numeric_limits<double>::infinity())
        return "no plan in the search space: check the parallel-width candidates, the global "
               "batch and the cluster size";
    const ModelProfile &m = space.model();
    if (std::string whole = wholeClusterMemoryProblem(space.topology(), m, space.costOptions()); !whole.empty())
        return whole;
    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "nothing fits in memory: the closest stage (layers %d-%d, %s..%s, tp=%d cp=%d "
                  "ep=%d, ZeRO-%d, recompute %s) needs %.2f GB per device against %.2f GB usable",
                  stage.firstLayer, stage.endLayer - 1, m.layers[stage.firstLayer].name.c_str(),
                  m.layers[stage.endLayer - 1].name.c_str(), stage.tp, stage.cp, stage.ep,
                  stage.zero, toString(stage.recompute), need / 1e9, capacity / 1e9);
    return buf;
}

std::string wholeClusterMemoryProblem(const Topology &t, const ModelProfile &m, const CostOptions &co)
{
    // What every device may fill (setMemory(): usableMemory() less the fixed overhead), and the
    // least the training state takes on all of them together, whatever the plan.
    double clusterBytes = 0;
    for (int d = 0; d < t.deviceCount(); ++d)
        clusterBytes += std::max(0.0, usableMemory(t.spec(d).memoryBytes, co) - co.runtimeOverheadBytes);
    const double state = m.totalParams() * trainingStateBytesPerParam(m, co);
    char buf[768];
    if (clusterBytes <= 0) {
        // Never print a negative capacity: the fixed per-device memory alone is too much.
        double device = std::numeric_limits<double>::infinity();
        for (int d = 0; d < t.deviceCount(); ++d)
            device = std::min(device, usableMemory(t.spec(d).memoryBytes, co));
        std::snprintf(buf, sizeof buf,
                      "nothing fits in memory: the fixed per-device memory alone (runtime overhead "
                      "%.2f GB) exceeds the device's capacity (%.2f GB after the headroom), whatever the plan",
                      co.runtimeOverheadBytes / 1e9, device / 1e9);
        return buf;
    }
    if (state > clusterBytes) {
        std::snprintf(buf, sizeof buf,
                      "nothing fits in memory: the model's weights, gradients and optimizer state "
                      "(%.4g parameters x %g B = %.0f GB) exceed the memory of all %d devices (%.0f GB "
                      "usable after the runtime overhead), whatever the plan",
                      m.totalParams(), trainingStateBytesPerParam(m, co), state / 1e9, t.deviceCount(),
                      clusterBytes / 1e9);
        return buf;
    }
    return {};
}

} // namespace nest
