#include "Evaluator.h"

#include "Collectives.h"
#include "Pipeline.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>

namespace nest {

namespace {

bool recomputed(const LayerProfile &l)
{
    return isRecomputedBlock(l.kind);
}

// Micro-batches whose activations a stage holds at its peak (see docs/cost-model.md).
double stashedMicroBatches(const StageContext &ctx)
{
    const int m = ctx.numMicroBatches;
    const int depth = std::max(ctx.numStages, 1);
    switch (ctx.schedule) {
    case Schedule::GPipe:
        return m;
    case Schedule::OneFOneB:
        return std::min(depth - ctx.stageIndex, m);
    case Schedule::Interleaved: {
        const int v = std::max(ctx.virtualStages, 1);
        if (v == 1)
            return std::min(depth - ctx.stageIndex, m);
        return interleavedChunkInFlight(depth, v, m, ctx.stageIndex % depth, ctx.stageIndex / depth);
    }
    }
    return m;
}

// The stash bytes of `stashed` micro-batches. The artifact's accounting holds one
// micro-batch in c.activations already.
double stashBytes(const StageCost &c, const StageContext &ctx, double stashed)
{
    const double extra = ctx.options.artifactMemory ? std::max(stashed - 1, 0.0) : stashed;
    return extra * c.stashPerMicroBatch;
}

// The part of DeepSpeed's reduce buffers (StageCost::reduceBucket) held at the stage's peak:
// all of them when the plan is not pipelined (made before the backward); with a pipeline the
// one made after the flush, when the stash and working activations are freed, only as far as
// it exceeds them.
double reduceBucketAtPeak(const StageCost &c, const StageContext &ctx, double stash)
{
    if (c.reduceBuckets == 0)
        return 0.0;
    if (ctx.numStages <= 1)
        return c.reduceBuckets * c.reduceBucket;
    return std::max(0.0, c.reduceBucket - (stash + c.activations));
}

// The memory of a base cost (before finishStageCost()) holding `stash`.
double memoryTotalWith(const StageCost &c, const StageContext &ctx, double stash)
{
    return c.weights + c.gradients + c.optimizerState + stash + c.activations + c.overhead +
           reduceBucketAtPeak(c, ctx, stash);
}

} // namespace

int interleavedInFlight(int depth, int chunks, int microBatches, int position)
{
    // Megatron-LM forward_backward_pipelining_with_interleaving: (p - d - 1) * 2 + (v - 1) * p
    // warm-up chunk-forwards, then one more forward before the first backward.
    const long long warm = 2LL * (depth - position - 1) + static_cast<long long>(chunks - 1) * depth;
    return static_cast<int>(std::min(static_cast<long long>(microBatches) * chunks, warm + 1));
}

int interleavedChunkInFlight(int depth, int chunks, int microBatches, int position, int chunk)
{
    // Forward i of the device runs chunk (i / p) % v (groups of p micro-batches per chunk):
    // of the first n forwards, chunk j has p per whole cycle of p v, and its part of the rest.
    const long long n = interleavedInFlight(depth, chunks, microBatches, position);
    const long long cycle = static_cast<long long>(depth) * chunks;
    const long long rest = n % cycle - static_cast<long long>(chunk) * depth;
    return static_cast<int>(n / cycle * depth + std::clamp(rest, 0LL, static_cast<long long>(depth)));
}

double CostOptions::gemmEfficiencyFor(const DeviceSpec &device) const
{
    for (const auto &[name, efficiency] : deviceGemmEfficiency)
        if (name == device.name)
            return efficiency;
    return matmulEfficiency;
}

double defaultMatmulEfficiency(const DeviceSpec &device)
{
    return classGemmEfficiency(device);
}

// Communication `comm` hidden behind `window` seconds of compute: what stays exposed plus
// the slowdown of the compute it hid behind (docs/cost-model.md, "Framework profiles").
double overlapped(double comm, double window, double contention)
{
    const double hidden = std::min(comm, std::max(window, 0.0));
    return comm - hidden + contention * hidden;
}

// A stage's seconds per iteration after its last micro-batch (StageCost::iterationExtra).
double iterationExtraOf(const StageCost &c)
{
    return c.dpSync + c.zeroGather + c.optimizer + c.epUnpaired;
}

bool expertOverlapSchedule(int numStages, Schedule schedule, int virtualStages)
{
    return numStages <= 1 || (schedule == Schedule::Interleaved && virtualStages > 1);
}

const char *moeDispatcherName(bool hierarchical)
{
    return hierarchical ? "deepep" : "alltoall";
}

std::optional<bool> moeDispatcherIsHierarchical(std::string_view name)
{
    for (const bool hierarchical : {false, true})
        if (name == moeDispatcherName(hierarchical))
            return hierarchical;
    return std::nullopt;
}

BoundaryLink boundaryLink(const Topology &topo, const StagePlan &a, const StagePlan &b)
{
    BoundaryLink worst;
    double worstBw = kInf;
    const size_t replicas = std::min(a.devices.size(), b.devices.size());
    for (size_t r = 0; r < replicas; ++r) {
        const auto &ra = a.devices[r];
        const auto &rb = b.devices[r];
        if (ra.empty() || rb.empty())
            continue;
        const size_t pairs = std::max(ra.size(), rb.size());
        for (size_t j = 0; j < pairs; ++j) {
            const int da = ra[j % ra.size()];
            const int db = rb[j % rb.size()];
            if (da == db || da < 0 || db < 0 || da >= topo.deviceCount() || db >= topo.deviceCount())
                continue;
            // da != db: the level is that of their lowest common ancestor, whose link is
            // topo.link(da, db), as achievableLink() prices it. A pair below the worst level
            // so far cannot replace it.
            const int lvl = topo.level(da, db);
            if (lvl < worst.level)
                continue;
            const LinkParams lp = topo.achievableLink(topo.ancestor(da, lvl));
            const double bw = lp.bandwidth / std::max(lp.oversubscription, 1.0);
            if (lvl > worst.level || bw < worstBw) {
                worst.level = lvl;
                worst.link = lp;
                worstBw = bw;
            }
        }
    }
    return worst;
}

ComputeRates deviceRates(const DeviceSpec &device, const CostOptions &options)
{
    const FrameworkProfile &fw = options.profile();
    return computeRates(device, options.gemmEfficiencyFor(device), fw.fusedAttention, fw.elementwisePasses,
                        options.precision);
}

namespace {

// The slowest device and the smallest capacity of a stage, one device at a time.
struct SlowestDevice {
    const DeviceSpec *slowest = nullptr;
    double slowRate = kInf;
    double capacity = kInf;

    void take(const DeviceSpec &spec, const CostOptions &opt, StageGeometry &g)
    {
        if (slowest == nullptr || spec != *slowest) {
            const ComputeRates r = deviceRates(spec, opt);
            if (r.rate() < slowRate || (r.rate() == slowRate && r.hbm < g.rates.hbm)) {
                slowRate = r.rate();
                g.rates = r;
                slowest = &spec;
            }
        }
        capacity = std::min(capacity, spec.memoryBytes);
    }
};

} // namespace

StageGeometry stageGeometry(const Topology &topo, const StagePlan &st, int dp, const CostOptions &opt)
{
    StageGeometry g;
    SlowestDevice slowest;
    const int nDevices = topo.deviceCount();
    int lastType = -1;
    for (const auto &row : st.devices) {
        for (int d : row) {
            if (d < 0 || d >= nDevices)
                continue;
            // A device of the type just seen changes neither the slowest nor the capacity
            // (the comparisons are strict, the minimum idempotent): skip the spec
            // comparison, which dominated wide stages.
            const int type = topo.devices[static_cast<size_t>(d)].type;
            if (type == lastType) {
                ++g.devices;
                continue;
            }
            lastType = type;
            slowest.take(topo.spec(d), opt, g);
            ++g.devices;
        }
    }
    if (g.devices == 0)
        return g;
    g.capacity = slowest.capacity;
    g.comm = stageCollectives(topo, st.devices, st, dp, opt.gradientBucket());
    return g;
}

StageGeometry stageGeometry(const Topology &topo, const std::vector<int> &blockSizes, const EvenRows &rows,
                            const StageConfig &config, const CostOptions &opt)
{
    // One device type (a regular tree): the first device decides, as in the loop above.
    StageGeometry g;
    if (rows.rows <= 0 || rows.width <= 0)
        return g;
    SlowestDevice slowest;
    slowest.take(topo.spec(rows.first), opt, g);
    g.devices = rows.rows * rows.width;
    g.capacity = slowest.capacity;
    g.comm = evenStageCollectives(topo, blockSizes, rows, config, opt.gradientBucket());
    return g;
}

bool rangeHoldsEmbedding(const ModelProfile &model, int first, int end)
{
    for (int i = first; i < end; ++i)
        if (model.layers[i].kind == LayerKind::Embedding)
            return true;
    return false;
}

StageLayerFold::StageLayerFold(const StageContext &ctx, const ComputeRates &rates, bool holdsEmbedding)
    : m_model(*ctx.model), m_stage(*ctx.stage), m_ctx(ctx), m_rates(rates), m_holdsEmbedding(holdsEmbedding)
{
    const StagePlan &st = m_stage;
    m_tp = std::max(st.tp, 1);
    m_cp = std::max(st.cp, 1);
    m_ep = std::max(st.ep, 1);
    m_etp = std::max(st.expertTp(), 1);
    m_width = m_tp * m_cp;
    m_moeLoad = ctx.options.moeLoad();
    // A low precision saves each linear layer's input quantized (operand + scale bytes).
    const FormatBytes fb = formatBytes(ctx.options.precision);
    m_inputStash = ctx.options.precision.lowPrecision() ? (fb.operand + fb.scale) / 2 : 1.0;
    m_b = ctx.microBatch;
    m_spDiv = st.sp ? m_tp : 1;
    const FrameworkProfile &profile = ctx.options.profile();
    m_fusedLoss = profile.fusedLoss;
    m_opPolicy = profile.selectivePolicy == FrameworkProfile::SelectivePolicy::AlternateMatmuls;
    m_keepsCombine = !profile.moeProbsInActivation;
    m_fp8Attention = ctx.options.fp8AttentionApplies();
    m_modules = ctx.options.recomputeModules;
}

StageLayerSums stageLayerSums(const StageContext &ctx, const ComputeRates &rates)
{
    StageLayerSums s;
    const StagePlan &st = *ctx.stage;
    StageLayerFold fold(ctx, rates, rangeHoldsEmbedding(*ctx.model, st.firstLayer, st.endLayer));
    for (int i = st.firstLayer; i < st.endLayer; ++i)
        fold.add(s, i);
    return s;
}

StageLayerFold::LayerRole StageLayerFold::roleOf(const LayerProfile &l) const
{
    LayerRole r;
    r.rec = m_stage.recompute == Recompute::Full && recomputed(l);
    r.selective = m_stage.recompute == Recompute::Selective && recomputed(l);
    // torchtitan's op-level selective checkpointing where the builder derived it.
    r.opSelective = r.selective && m_opPolicy && l.opSelectiveStashTpBytes > 0;
    r.measured = l.measuredAt(m_tp);
    // Low precision: the linear inputs saved quantized, the attention output once more
    // (LayerProfile::linearInputStash*; 1 - m_inputStash of them saved, in BF16 bytes).
    const double quantised = 1.0 - m_inputStash;
    const double stashTp = l.stashTpBytes - quantised * l.linearInputStashTpBytes +
                           (quantised > 0 ? m_inputStash * l.attentionOutputStashBytes : 0.0) -
                           (m_fp8Attention ? 0.5 * l.attentionQkvoStashBytes : 0.0);
    const double stashSp = l.stashSpBytes - quantised * l.linearInputStashSpBytes -
                           (m_keepsCombine ? 0.0 : l.moeCombineStashBytes);
    r.fullStash = r.measured ? r.measured->stashBytes * m_b / m_cp
                             : (stashTp / m_width + stashSp / (m_spDiv * m_cp)) * m_b;
    return r;
}

void StageLayerFold::timeLayer(const LayerProfile &l, const LayerRole &r)
{
    const ComputeRates &rates = m_rates;
    if (hasShapes(l)) {
        // Operators from their shapes (ComputeModel.h).
        const bool same = m_timed != nullptr && m_timed->gemms == l.gemms &&
                          m_timed->attentionFlops == l.attentionFlops &&
                          m_timed->elementwiseSpBytes == l.elementwiseSpBytes &&
                          m_timed->elementwiseTpBytes == l.elementwiseTpBytes &&
                          m_timed->rmsNormSpBytes == l.rmsNormSpBytes && m_timed->rotaryTpBytes == l.rotaryTpBytes &&
                          m_timed->normSpBytes == l.normSpBytes &&
                          m_timed->expertActivationTpBytes == l.expertActivationTpBytes;
        if (!same)
            m_times = layerTimes(l, m_ctx.seqLength, m_b, m_stage, rates, m_ctx.options.elementwiseTraffic, m_moeLoad);
        m_timed = &l;
    } else {
        // FLOPs at the large-GEMM rate, plus the memory-bound element-wise work at HBM
        // bandwidth: the forward writes each saved activation once, the backward reads it
        // and writes its gradient (roofline; activation bytes from Korthikanti et al.).
        const double elementwise = m_ctx.options.elementwiseTraffic ? r.fullStash / rates.hbm : 0.0;
        m_times = {};
        m_times.gemm = l.fwdFlops * m_b / (m_width * rates.rate());
        m_times.forward = m_times.gemm + elementwise;
        m_times.backward = l.bwdFlops * m_b / (m_width * rates.rate()) + 2 * elementwise;
        m_timed = nullptr;
    }
}

void StageLayerFold::addTimes(StageLayerSums &s, const LayerProfile &l, const LayerRole &r)
{
    timeLayer(l, r);
    const LayerTimes &times = m_times;
    const WidthMeasurement *measured = r.measured;
    // Measured at this width (artifact nodes[t]): per device already; else measured at
    // width 1 and divided, else the operator / FLOP model.
    const double fwd = measured                  ? measured->fwdTime * m_b / m_cp
                       : l.measuredFwdTime >= 0 ? l.measuredFwdTime * m_b / m_width
                                                : times.forward;
    const double bwd = measured                  ? measured->bwdTime * m_b / m_cp
                       : l.measuredBwdTime >= 0 ? l.measuredBwdTime * m_b / m_width
                                                : times.backward;
    s.forward += fwd;
    s.backward += bwd;
    s.gemmForward += measured || l.measuredFwdTime >= 0 ? fwd : times.gemm;
    s.attentionForward += times.attention;
    if (!measured && l.measuredFwdTime < 0)
        s.sharedExpertForward += times.sharedExpert;
    if (r.rec)
        s.recompute += fwd;
    else if (r.opSelective)  // the unsaved matmuls and the element-wise kernels
        s.recompute += l.opRecomputeGemmShare * times.gemm +
                       std::max(times.forward - times.gemm - times.attention, 0.0);
    else if (r.selective)
        s.recompute += selectiveRecompute(times);
}

double StageLayerFold::selectiveRecompute(const LayerTimes &times) const
{
    using M = RecomputeModule;
    // Each module's forward work, as layerTimes() timed it.
    return (m_modules.has(M::CoreAttn) ? times.attention : 0.0) + (m_modules.has(M::LayerNorm) ? times.norms : 0.0) +
           (m_modules.has(M::MoeAct) ? times.expertActivation : 0.0) + (m_modules.has(M::MlaUpProj) ? times.mlaUp : 0.0);
}

double StageLayerFold::selectiveDropped(const LayerProfile &l) const
{
    using M = RecomputeModule;
    // Per micro-batch, in the bytes the full stash counts them: linear inputs quantized in a
    // low precision (m_inputStash), Q, K and V in FP8 with FP8 attention.
    const double tp = (m_modules.has(M::CoreAttn) ? l.attentionStashBytes : 0.0) +
                      (m_modules.has(M::MoeAct) ? m_inputStash * l.expertActivationStashTpBytes : 0.0) +
                      (m_modules.has(M::MlaUpProj) ? (m_fp8Attention ? 0.5 : 1.0) * l.mlaUpStashTpBytes : 0.0);
    const double sp = m_modules.has(M::LayerNorm) ? m_inputStash * l.normOutputStashSpBytes : 0.0;
    return tp / m_width * m_b + sp / (m_spDiv * m_cp) * m_b;
}

void StageLayerFold::addCollectives(StageLayerSums &s, const LayerProfile &l, const LayerRole &r) const
{
    const double b = m_b, load = m_moeLoad;
    const double tpAllReduce = r.measured ? r.measured->tpAllReduceBytes : l.tpAllReduceBytes;
    if (tpAllReduce > 0 && m_tp > 1) {
        // attention + MLP, or one for embedding/head and for a MoE block (its MLP: below)
        const int ops = recomputed(l) && l.etpGatherBytes <= 0 ? 2 : 1;
        s.tpBytes += tpAllReduce * b / m_cp;
        s.tpOps += ops;
        if (r.rec) {
            s.tpBytesRec += tpAllReduce * b / m_cp;
            s.tpOpsRec += ops;
        }
    }
    if (l.epAllToAllBytes > 0 && m_ep > 1) {
        // The most loaded rank receives `load` times the mean of the routed copies.
        s.epBytes += l.epAllToAllBytes * b * load / m_width;
        s.epOps += 2;  // dispatch + combine
        if (r.rec) {
            s.epBytesRec += l.epAllToAllBytes * b * load / m_width;
            s.epOpsRec += 2;
        }
    }
    if (l.etpGatherBytes > 0 && m_etp > 1) {
        // The routed copies a rank received, gathered over its etp group (the buffer of the
        // all-gather / reduce-scatter pair: etp x those of one rank).
        const double bytes = l.etpGatherBytes * b * load * m_etp / m_width;
        s.etpBytes += bytes;
        ++s.etpOps;
        if (r.rec) {
            s.etpBytesRec += bytes;
            ++s.etpOpsRec;
        }
    }
    if (l.cpExchangeBytes > 0 && m_cp > 1) {
        s.cpBytes += l.cpExchangeBytes * b / m_tp;
        ++s.cpOps;
        if (r.rec) {
            s.cpBytesRec += l.cpExchangeBytes * b / m_tp;
            ++s.cpOpsRec;
        }
    }
}

void StageLayerFold::addParams(StageLayerSums &s, const LayerProfile &l, const WidthMeasurement *measured) const
{
    const int tp = m_tp, ep = m_ep, etp = m_etp;
    // Parameters per device: experts are inside tpParams, split by etp and divided by ep.
    const double expert = std::min(l.expertParams, l.params);
    const double dense = l.params - expert;
    const double denseTp = std::clamp(l.tpParams - expert, 0.0, dense);
    double layerDense = measured ? measured->params : (dense - denseTp) + denseTp / tp;
    if (!m_holdsEmbedding)
        layerDense += l.tiedParams / tp;
    const double layerExpert = measured ? 0.0 : expert / (static_cast<double>(etp) * ep);
    s.denseParams += layerDense;
    s.expertParams += layerExpert;
    if (m_ctx.options.precision.lowPrecision() && !measured && l.kind != LayerKind::Embedding &&
        l.kind != LayerKind::Head) {
        // The linear weights among them (layerTimes(): the GEMMs a low precision runs).
        for (const GemmShape &g : l.gemms) {
            if (!isLinearGemm(g))
                continue;
            const double weights = g.n * g.k * g.count / (g.split == GemmShape::Split::None ? 1 : g.expert ? etp : tp);
            if (g.expert)
                s.linearExpert += weights / ep;
            else
                s.linearDense += weights;
        }
    }
    s.maxLayerParams = std::max(s.maxLayerParams, layerDense + layerExpert);
}

void StageLayerFold::addMemory(StageLayerSums &s, const LayerProfile &l, int i, const LayerRole &r) const
{
    const double b = m_b, fullStash = r.fullStash;
    // Activations (Korthikanti et al.): stash per micro-batch, transient working set.
    const double selectiveStash =
        r.opSelective ? (l.opSelectiveStashSpBytes / (m_spDiv * m_cp) + l.opSelectiveStashTpBytes / m_width) * b
                      : fullStash - (r.measured ? l.attentionStashBytes / m_width * b : selectiveDropped(l));
    if (m_ctx.options.artifactMemory) {
        // The NEST artifact's accounting (docs/formats.md): one micro-batch's activations
        // of every layer held as working memory; each further micro-batch in flight keeps
        // the stage's input (recomputation) or every activation again.
        s.maxWorking += fullStash;
        if (m_stage.recompute != Recompute::Full)
            s.stashPerMicroBatch += fullStash;
        else if (i == m_stage.firstLayer && i > 0)
            s.stashPerMicroBatch += m_model.layers[i - 1].outputBytes * b;
        return;
    }
    s.stashPerMicroBatch += r.rec         ? l.recomputeStashBytes / (m_spDiv * m_cp) * b
                            : r.selective ? selectiveStash
                                          : fullStash;
    s.maxLayerStash = std::max(s.maxLayerStash, r.rec ? fullStash : 0.0);
    double working = l.workingBytes * b / m_width;
    if (l.kind == LayerKind::Head && !m_fusedLoss)
        working += l.stashTpBytes * b / m_width;  // the second FP32 copy of the logits
    s.maxWorking = std::max(s.maxWorking, working);
}

// One layer into the sums: its times, its collectives' bytes, its parameters and its memory.
void StageLayerFold::add(StageLayerSums &s, int i)
{
    const LayerProfile &l = m_model.layers[i];
    const LayerRole r = roleOf(l);
    addTimes(s, l, r);
    addCollectives(s, l, r);
    addParams(s, l, r.measured);
    addMemory(s, l, i, r);
}

namespace {

// Exposed seconds of the collectives inside the stage (TP, EP, CP) per micro-batch, and
// those its recompute pass repeats (added to c.recompute).
void addStageCollectives(StageCost &c, const StagePlan &st, const StageGeometry &g, const StageLayerSums &s,
                         const FrameworkProfile &fw, const CostOptions &opt, const ExpertRouting &routing)
{
    auto opsCost = [](const LinearCost &lc, double bytes, int ops) {
        return bytes > 0 ? lc.at(bytes) + std::max(ops - 1, 0) * lc.fixed : 0.0;
    };
    // Forward and backward each run every collective once (Megatron-LM: the conjugate f/g
    // operators); context parallelism gathers K/V in forward and again in backward plus a
    // reduce-scatter of their gradients (3 passes of the ring).
    const double kappa = fw.contention;
    c.tpComm = 2 * opsCost(g.comm.tp, s.tpBytes, s.tpOps);
    // The experts' communication: the dispatch and combine all-to-all on the placement
    // (flat, or DeepEP's hierarchical form) and the etp group's gathers; the shared experts'
    // GEMMs hide the all-to-all where the framework overlaps them.
    const LinearCost dispatch = opt.moeHierarchicalDispatch && g.comm.epShape.size > 1
                                    ? dispatchCost(g.comm.epShape, g.comm.domainLevel, routing, true)
                                    : g.comm.ep;
    const double allToAll = 2 * opsCost(dispatch, s.epBytes, s.epOps);
    c.epComm = allToAll;
    if (fw.sharedExpertOverlap && !opt.moeHierarchicalDispatch && s.sharedExpertForward > 0) {
        // Megatron-Core overlaps them with the flat all-to-all dispatcher only (TransformerConfig:
        // "moe_shared_expert_overlap only works with alltoall token dispatcher").
        c.epComm = overlapped(c.epComm, 3 * s.sharedExpertForward, kappa);
    }
    c.epGather = 2 * opsCost(g.comm.etp, s.etpBytes, s.etpOps);
    c.epComm += c.epGather;
    // Megatron-Core's expert-parallel overlap, where the stage may run it (TransformerConfig
    // refuses it with full recomputation); whether the schedule pairs the micro-batches is
    // the pipeline's (finishStageCost()).
    c.epPairable = opt.moeA2aOverlap && fw.epA2aOverlap && st.recompute != Recompute::Full ? allToAll : 0.0;
    c.cpComm = 3 * opsCost(g.comm.cp, s.cpBytes, s.cpOps);
    double tpRec = opsCost(g.comm.tp, s.tpBytesRec, s.tpOpsRec);
    if (fw.tpOverlap && st.sp && st.tp > 1) {
        // Chunked all-gather / reduce-scatter pipelined with the GEMMs they feed: forward,
        // backward (twice the GEMM work) and the recompute pass each hide behind their own.
        const double window = (st.recompute == Recompute::Full ? 4 : 3) * s.gemmForward;
        const double total = c.tpComm + tpRec;
        const double exposed = overlapped(total, window, kappa);
        c.tpComm = total > 0 ? exposed * c.tpComm / total : 0.0;
        tpRec = total > 0 ? exposed * tpRec / total : 0.0;
    } else if (fw.tpBackwardOverlap && st.tp > 1) {
        // The backward's half runs beside the weight-gradient GEMMs (as long as the forward's).
        c.tpComm = c.tpComm / 2 + overlapped(c.tpComm / 2, s.gemmForward, kappa);
    }
    if (fw.cpOverlap && st.cp > 1)  // ring exchange behind the blockwise attention (fwd + bwd)
        c.cpComm = overlapped(c.cpComm, (1 + 2.5) * s.attentionForward, kappa);
    c.recompute += tpRec + opsCost(dispatch, s.epBytesRec, s.epOpsRec) + opsCost(g.comm.etp, s.etpBytesRec, s.etpOpsRec) +
                   opsCost(g.comm.cp, s.cpBytesRec, s.cpOpsRec);
}

// ZeRO shards over the gradient-reduction group: dp replicas x cp ranks (Collectives.cpp);
// an expert shard over the ranks that share it (StageConfig::expertDp()).
struct ShardGroups {
    int dense = 1, expert = 1;
};
ShardGroups shardGroups(const StagePlan &st, int dp)
{
    const int cp = std::max(st.cp, 1);
    return {dp * cp, StageConfig::expertGridFits(st.tp, cp, dp, st.expertTp(), std::max(st.ep, 1)) ? st.expertDp(dp) : 1};
}

// DeepSpeed's BF16_Optimizer: bf16 with ZeRO 0/1 and gradients accumulated in fp32
// (FrameworkProfile::bf16Optimizer). DeepSpeed picks it so (runtime/engine.py,
// _do_optimizer_sanity_check: bf16 with grad_accum_dtype fp32 at ZeRO stage 1, or without
// ZeRO, where get_data_types() makes fp32 the default); with the accumulation in the training
// dtype (fp16, or bf16 under ZeRO) it runs DeepSpeedZeroOptimizer / FP16_Optimizer instead.
bool usesBf16Optimizer(const FrameworkProfile &fw, const CostOptions &opt, const StagePlan &st)
{
    return fw.bf16Optimizer && st.zero <= 1 && opt.gradAccumDtype != GradAccumDtype::Half;
}

// Bytes per parameter of the gradient buffer that accumulates across micro-batches and is
// reduced: the option's, else fp32 under the BF16_Optimizer, else the configured
// accumulation dtype's, else the framework's.
double gradientBufferBytes(const FrameworkProfile &fw, const CostOptions &opt, const StagePlan &st)
{
    constexpr double kFp32Bytes = 4, kHalfBytes = 2;
    if (opt.gradBytesPerParam > 0)
        return opt.gradBytesPerParam;
    if (usesBf16Optimizer(fw, opt, st) || opt.gradAccumDtype == GradAccumDtype::Fp32)
        return kFp32Bytes;
    return opt.gradAccumDtype == GradAccumDtype::Half ? kHalfBytes : fw.gradBytesPerParam;
}

// Whether the gradient reduction runs per bucket behind the backward: the framework's own
// choice unless the options set it (CostOptions::gradReduceOverlap).
bool gradReduceOverlaps(const FrameworkProfile &fw, const CostOptions &opt)
{
    return opt.gradReduceOverlap < 0 ? fw.gradReduceOverlap : opt.gradReduceOverlap > 0;
}

// DeepSpeedZeroOptimizer's contiguous-gradient reduce buffer at ZeRO 1/2 (runtime/zero/
// stage_1_and_2.py): reduce_bucket_size elements of the training dtype. Not pipelined, its
// backward() makes one (two with overlap_comm, gradReduceOverlaps()) before the
// backward runs; pipelined, reduce_gradients(pipeline_parallel=True) makes one after the
// schedule's last backward.
void setReduceBucket(StageCost &c, const FrameworkProfile &fw, const CostOptions &opt, const StagePlan &st,
                     double weightB)
{
    if (fw.reduceBucketElements <= 0 || st.zero < 1 || st.zero > 2 || usesBf16Optimizer(fw, opt, st))
        return;
    c.reduceBucket = fw.reduceBucketElements * weightB;
    c.reduceBuckets = gradReduceOverlaps(fw, opt) ? 2 : 1;
}

// Data parallelism and ZeRO: the gradient synchronisation per iteration (c.dpSync), the
// parameter gathers (c.zeroGather, c.zeroForward) and ZeRO-2/3's per-micro-batch traffic
// (c.zeroComm), each behind what the framework overlaps it with.
void addDataParallel(StageCost &c, const StagePlan &st, const StageGeometry &g, const StageLayerSums &s,
                     const FrameworkProfile &fw, const CostOptions &opt, double gradB, double weightB)
{
    // Gathered weights: the linear ones in their low precision where the framework gathers
    // them so (FrameworkProfile::gathersLowPrecision), the rest in BF16.
    const bool lowGather = fw.gathersLowPrecision(opt.precision);
    const FormatBytes lowBytes = formatBytes(opt.precision);
    const double lowB = lowBytes.operand + lowBytes.scale;
    const double kappa = fw.contention;
    const double denseParams = s.denseParams, expertParams = s.expertParams;
    const LinearCost &dArCost = g.comm.denseAllReduce, &dRsCost = g.comm.denseReduceScatter;
    const LinearCost &eArCost = g.comm.expertAllReduce, &eRsCost = g.comm.expertReduceScatter;
    const double exposed = 1.0 - std::clamp(opt.dpOverlap, 0.0, 1.0);
    const double gradsD = denseParams * gradB, gradsE = expertParams * gradB;
    const double weightsD = lowGather ? (denseParams - s.linearDense) * weightB + s.linearDense * lowB
                                      : denseParams * weightB;
    const double weightsE = lowGather ? (expertParams - s.linearExpert) * weightB + s.linearExpert * lowB
                                      : expertParams * weightB;
    const double allReduceGrads = dArCost.at(gradsD) + eArCost.at(gradsE);
    const double reduceScatterGrads = dRsCost.at(gradsD) + eRsCost.at(gradsE);
    const double gatherWeights = dRsCost.at(weightsD) + eRsCost.at(weightsE);  // all-gather = RS cost
    // The framework's gradient reduction runs per bucket inside the last micro-batch's
    // backward; the distributed optimizer's parameter all-gather inside the next forward.
    const double backWindow = c.backward + c.recompute;
    const bool overlapGrads = gradReduceOverlaps(fw, opt);
    auto gradSync = [&](double t) { return overlapGrads ? overlapped(t, backWindow, kappa) : exposed * t; };
    auto paramGather = [&](double t) { return fw.paramGatherOverlap ? overlapped(t, c.forward, kappa) : t; };
    const double hide = fw.zeroPrefetch ? std::clamp(opt.zeroOverlap, 0.0, 1.0) : 0.0;
    // DeepSpeed's BF16_Optimizer all-reduces its whole fp32 gradient buffer even at ZeRO-1
    // (FrameworkProfile::bf16Optimizer); the distributed optimizer reduce-scatters.
    const double zero1Sync = usesBf16Optimizer(fw, opt, st) ? allReduceGrads : reduceScatterGrads;
    // What queueInterleavedSyncs() re-times on an interleaved plan.
    c.syncContention = kappa;
    auto queuedGrads = [&](double t) {
        if (!overlapGrads)
            return;
        c.gradSyncSerial = t;
        c.gradSyncWindow = backWindow;
    };
    auto queuedGather = [&](double t) {
        if (!fw.paramGatherOverlap)
            return;
        c.paramGatherSerial = t;
        c.paramGatherWindow = c.forward;
    };
    switch (std::clamp(st.zero, 0, 3)) {
    case 0:
        c.dpSync = gradSync(allReduceGrads);
        c.dpSyncAfterFlush = exposed * allReduceGrads;
        queuedGrads(allReduceGrads);
        break;
    case 1:
        c.dpSync = gradSync(zero1Sync);
        c.dpSyncAfterFlush = exposed * zero1Sync;
        c.zeroGather = paramGather(gatherWeights);
        queuedGrads(zero1Sync);
        queuedGather(gatherWeights);
        break;
    case 2:
        // Gradients are kept sharded, so they are reduce-scattered after every micro-batch,
        // bucketed behind that micro-batch's backward.
        c.zeroComm = overlapped(reduceScatterGrads, hide * backWindow, kappa);
        c.zeroGather = paramGather(gatherWeights);
        queuedGather(gatherWeights);
        break;
    case 3: {
        // Parameters are gathered (prefetched) before the forward and again before the
        // backward (and the recompute pass); the backward's gathers and the gradient
        // reduce-scatters contend for the same links.
        const int gathersBack = st.recompute == Recompute::Full ? 2 : 1;
        c.zeroForward = overlapped(gatherWeights, hide * c.forward, kappa);
        c.zeroComm = c.zeroForward + overlapped(gathersBack * gatherWeights + reduceScatterGrads, hide * backWindow, kappa);
        break;
    }
    }
}

// The memory per device but the stash (which follows in finishStageCost).
void setMemory(StageCost &c, const StagePlan &st, const StageGeometry &g, const StageLayerSums &s,
               const FrameworkProfile &fw, const CostOptions &opt, ShardGroups groups, double gradB, double weightB,
               double optimizerBytes)
{
    const double denseParams = s.denseParams, expertParams = s.expertParams;
    auto shard = [&](int fromStage, double dense, double expert) {
        return st.zero >= fromStage ? dense / groups.dense + expert / groups.expert : dense + expert;
    };
    c.paramsPerDevice = denseParams + expertParams;
    c.weights = shard(3, denseParams, expertParams) * weightB;
    if (opt.precision.lowPrecision()) {
        // The linear weights' low-precision copies (Precision.h, weightCopyBytes), sharded as
        // the weights are; with low-precision gathers they replace the BF16 copy. Those need
        // the sharded optimizer (ZeRO >= 1: Megatron-Core's --fp8-param-gather asserts the
        // distributed optimizer; FSDP is ZeRO-3).
        const double linear = shard(3, s.linearDense, s.linearExpert);
        const bool replacesBf16 = fw.gathersLowPrecision(opt.precision) && st.zero >= 1;
        c.weights += linear * (weightCopyBytes(opt.precision) - (replacesBf16 ? weightB : 0.0));
    }
    if (st.zero >= 3)
        c.weights += 2 * s.maxLayerParams * weightB;  // gathered layer + prefetch buffer
    c.gradients = shard(2, denseParams, expertParams) * gradB;
    // The BF16_Optimizer keeps the bf16 gradients autograd writes beside its fp32 buffer.
    if (usesBf16Optimizer(fw, opt, st))
        c.gradients += (denseParams + expertParams) * weightB;
    setReduceBucket(c, fw, opt, st, weightB);
    c.optimizerState = shard(1, denseParams, expertParams) * optimizerBytes;
    // Allocator fragmentation on the activation memory (FrameworkProfile); none in the
    // artifact's accounting.
    const double fragmentation = opt.artifactMemory ? 0.0 : fw.fragmentation;
    c.stashPerMicroBatch = s.stashPerMicroBatch * (1 + fragmentation);
    c.activations = (s.maxWorking + s.maxLayerStash) * (1 + fragmentation);
    c.overhead = opt.runtimeOverheadBytes;
    c.memoryCapacity = usableMemory(g.capacity, opt);
}

} // namespace

StageCost stageCostBase(const StageContext &ctx, const StageGeometry &g, const StageLayerSums &s)
{
    StageCost c;
    const StagePlan &st = *ctx.stage;
    const CostOptions &opt = ctx.options;
    const FrameworkProfile &fw = opt.profile();
    const ShardGroups groups = shardGroups(st, std::max(ctx.dp, 1));
    const double gradB = gradientBufferBytes(fw, opt, st);
    const double weightB = ctx.model->bytesPerParam;
    c.forward = s.forward;
    c.backward = s.backward;
    c.recompute = s.recompute;
    c.recomputeCompute = s.recompute;
    addStageCollectives(c, st, g, s, fw, opt, ctx.model->routing());
    addDataParallel(c, st, g, s, fw, opt, gradB, weightB);

    // The optimizer step: memory-bound fused Adam on the local shard.
    const bool shardOpt = st.zero >= 1;
    const double localParams =
        s.denseParams / (shardOpt ? groups.dense : 1) + s.expertParams / (shardOpt ? groups.expert : 1);
    c.optimizer = localParams * opt.optimizerStepBytesPerParam / g.rates.hbm;
    c.iterationExtra = iterationExtraOf(c);

    setMemory(c, st, g, s, fw, opt, groups, gradB, weightB, optimizerBytesPerParam(*ctx.model, opt));
    return c;
}

double usableMemory(double deviceBytes, const CostOptions &options)
{
    return deviceBytes * (1.0 - std::clamp(options.memoryHeadroom, 0.0, 1.0));
}

double optimizerBytesPerParam(const ModelProfile &model, const CostOptions &options)
{
    return model.optimizerBytesPerParam >= 0 ? model.optimizerBytesPerParam : options.optimizerBytesPerParam;
}

double weightBytesFloor(const ModelProfile &model, const CostOptions &options)
{
    const double weightB = model.bytesPerParam;
    if (!options.profile().gathersLowPrecision(options.precision))
        return weightB;  // copies only add to the BF16 weights
    return std::min(weightB, weightCopyBytes(options.precision));
}

double computeTimeFloor(const CostOptions &options)
{
    // 1 - 1e-12: the product and sum in finishStageCost() round, the bound must stay below.
    return options.stepOverhead < 0 ? (1.0 + options.stepOverhead) * (1.0 - 1e-12) : 1.0;
}

ZeroFloor zeroFloor(const ModelProfile &model, const CostOptions &options, int dp)
{
    const FrameworkProfile &fw = options.profile();
    const double n = std::max(dp, 1);
    // Floors per parameter: the least weight bytes it holds, and gathers (low-precision
    // gathers move the format's bytes; Evaluator.cpp addDataParallel).
    const double weightB = weightBytesFloor(model, options);
    const FormatBytes lowBytes = formatBytes(options.precision);
    const double gatherB = fw.gathersLowPrecision(options.precision)
                               ? std::min(model.bytesPerParam, lowBytes.operand + lowBytes.scale)
                               : model.bytesPerParam;
    const double optimizerB = optimizerBytesPerParam(model, options);
    // setMemory(): shard(s) divides by dp x cp from ZeRO stage s on, over a stage's tp x cp
    // devices per replica, so a replica's devices keep at least 1 / dp of the parameter.
    StagePlan st;
    double below = std::numeric_limits<double>::infinity();
    for (int z = 0; z <= 2; ++z) {
        st.zero = z;
        const double gradients = gradientBufferBytes(fw, options, st) / (z >= 2 ? n : 1.0) +
                                 (usesBf16Optimizer(fw, options, st) ? weightB : 0.0);
        below = std::min(below, weightB + gradients + optimizerB / (z >= 1 ? n : 1.0));
    }
    st.zero = 3;
    const double gradients3 = gradientBufferBytes(fw, options, st);
    ZeroFloor f;
    f.belowZero3 = below;
    f.atZero3 = (weightB + gradients3 + optimizerB) / n;
    f.zero3Traffic = 2 * gatherB + gradients3;
    return f;
}

double trainingStateBytesPerParam(const ModelProfile &model, const CostOptions &options)
{
    const ZeroFloor one = zeroFloor(model, options, 1);
    return std::min(one.belowZero3, one.atZero3);
}

double replicaDenseParams(const LayerProfile &l)
{
    if (!l.byWidth.empty()) {
        double least = std::numeric_limits<double>::infinity();
        for (const WidthMeasurement &m : l.byWidth)
            least = std::min(least, std::max(m.tp, 1) * m.params);
        return least;
    }
    // stageLayerSums(): (dense - denseTp) + denseTp / tp per device, over tp x cp devices.
    return l.params - std::min(l.expertParams, l.params);
}

void finishStageCost(StageCost &c, const StageContext &ctx)
{
    const ModelProfile &model = *ctx.model;
    const StagePlan &st = *ctx.stage;
    const double b = ctx.microBatch;
    const int width = std::max(st.tp, 1) * std::max(st.cp, 1);
    // --- pipeline point-to-point (scatter/gather: each shard sends its slice) --------------
    c.p2pForward = 0;
    c.p2pBackward = 0;
    if (ctx.next && st.endLayer > 0) {
        const double bytes = model.layers[st.endLayer - 1].outputBytes * b / width;
        c.p2pForward = sendRecvTime(ctx.next->link, bytes);
    }
    if (ctx.prev && st.firstLayer > 0) {
        const double bytes = model.layers[st.firstLayer - 1].outputBytes * b / width;
        c.p2pBackward = sendRecvTime(ctx.prev->link, bytes);
    }
    const FrameworkProfile &fw = ctx.options.profile();
    if (fw.blockingP2p) {
        // Separate blocking send and receive (FrameworkProfile::blockingP2p): with each
        // neighbour, the activation and the gradient cross one after the other.
        c.p2pForward *= 2;
        c.p2pBackward *= 2;
    }
    c.p2p = c.p2pForward + c.p2pBackward;
    if (fw.p2pOverlap && ctx.schedule == Schedule::Interleaved && ctx.virtualStages > 1 && c.p2p > 0) {
        // Interleaved schedules post the sends of one chunk while computing the next.
        const double exposed = overlapped(c.p2p, c.forward + c.backward, fw.contention);
        c.p2pForward *= exposed / c.p2p;
        c.p2pBackward *= exposed / c.p2p;
        c.p2p = exposed;
    }
    // --- gradient reduction of a pipelined plan -------------------------------------------
    const int pipelineOverlap = ctx.options.pipelineGradOverlap;
    const bool overlapWhenPipelined = pipelineOverlap < 0 ? fw.pipelineGradReduceOverlap : pipelineOverlap > 0;
    if (ctx.numStages > 1 && !overlapWhenPipelined) {
        c.dpSync = c.dpSyncAfterFlush;
        c.gradSyncSerial = 0;  // after the flush: nothing to queue behind the backward
    }
    // --- the expert-parallel overlap (CostOptions::moeA2aOverlap) ----------------------------
    c.epUnpaired = 0;
    if (c.epPairable > 0 && expertOverlapSchedule(ctx.numStages, ctx.schedule, ctx.virtualStages)) {
        // Micro-batch i + 1's forward and i's backward run together, each one's dispatch and
        // combine behind the other's compute (the window: a forward and a backward). The
        // shared-expert overlap is off with it (Megatron-Bridge sets moe_shared_expert_overlap
        // False). What it hides per micro-batch is exposed once an iteration, for the first
        // forward and the last backward.
        const double exposed = overlapped(c.epPairable, c.forward + c.backward, fw.contention);
        c.epUnpaired = c.epPairable - exposed;
        c.epComm = exposed + c.epGather;
    }
    c.iterationExtra = iterationExtraOf(c);
    const double work = c.forward + c.backward + c.recompute + c.tpComm + c.epComm + c.cpComm + c.p2p + c.zeroComm;
    // Only when calibrated: 0 x an infinite time would be NaN, not the infinity it must stay.
    c.frameworkOverhead = ctx.options.stepOverhead != 0 ? ctx.options.stepOverhead * work : 0.0;
    c.perMicroBatch = work + c.frameworkOverhead;
    c.stashedMicroBatches = stashedMicroBatches(ctx);
    c.stash = stashBytes(c, ctx, c.stashedMicroBatches);
    c.memoryTotal = memoryTotalWith(c, ctx, c.stash);
    c.gradients += reduceBucketAtPeak(c, ctx, c.stash);  // the report's parts add up to the total
    c.fitsMemory = c.memoryTotal <= c.memoryCapacity;
}

double stageStashBytes(const StageCost &base, const StageContext &ctx)
{
    return stashBytes(base, ctx, stashedMicroBatches(ctx));
}

double stageMemoryTotal(const StageCost &base, const StageContext &ctx)
{
    return memoryTotalWith(base, ctx, stageStashBytes(base, ctx));
}

StageCost stageCost(const StageContext &ctx, const StageGeometry &g)
{
    if (g.devices == 0) {
        StageCost c;
        c.fitsMemory = false;
        return c;
    }
    StageCost c = stageCostBase(ctx, g, stageLayerSums(ctx, g.rates));
    finishStageCost(c, ctx);
    return c;
}

StageCost stageCost(const StageContext &ctx)
{
    return stageCost(ctx, stageGeometry(*ctx.topology, *ctx.stage, ctx.dp, ctx.options));
}

namespace {

// queueInterleavedSyncs()'s two queues over one device's chunks (chunk k = stage d + k x
// depth, in `chunk`), `group` micro-batches of each chunk in the schedule's last (and first)
// group. Each returns whether it re-timed anything.

// Gradients, t = 0 at the device's last backward; chunk 0 is the last to finish.
bool queueGradSyncs(const std::vector<StageCost *> &chunk, double group)
{
    if (std::none_of(chunk.begin(), chunk.end(), [](const StageCost *c) { return c->gradSyncSerial > 0; }))
        return false;
    std::vector<double> launch;
    double t = 0;
    for (const StageCost *c : chunk) {
        launch.push_back(t);
        t -= group * c->gradSyncWindow;
    }
    double busyUntil = -std::numeric_limits<double>::infinity();
    for (size_t k = chunk.size(); k-- > 0;) {
        StageCost &c = *chunk[k];
        if (c.gradSyncSerial <= 0)
            continue;
        const double start = std::max(launch[k], busyUntil);
        busyUntil = start + c.gradSyncSerial;
        const double exposed = std::max(0.0, busyUntil) - std::max(0.0, start);
        c.dpSync = exposed + c.syncContention * (c.gradSyncSerial - exposed);
    }
    return true;
}

// Parameters, t = 0 at the iteration's start. A chunk's first forward takes its gathered
// buckets as they arrive (the forward pre-hooks wait bucket by bucket), so it ends no earlier
// than the gather; the wait is exposed.
bool queueParamGathers(const std::vector<StageCost *> &chunk, double group)
{
    if (std::none_of(chunk.begin(), chunk.end(), [](const StageCost *c) { return c->paramGatherSerial > 0; }))
        return false;
    double busyUntil = 0, compute = 0, previousStart = 0;
    for (size_t k = 0; k < chunk.size(); ++k) {
        StageCost &c = *chunk[k];
        const double start = std::max(k <= 1 ? 0.0 : previousStart, busyUntil);
        busyUntil = start + c.paramGatherSerial;
        const double firstDone = std::max(compute + c.paramGatherWindow, busyUntil);
        const double stall = firstDone - (compute + c.paramGatherWindow);
        if (c.paramGatherSerial > 0)
            c.zeroGather = stall + c.syncContention * (c.paramGatherSerial - stall);
        previousStart = compute;
        compute = firstDone + (group - 1) * c.paramGatherWindow;
    }
    return true;
}

} // namespace

void queueInterleavedSyncs(std::vector<StageCost> &stages, const Plan &plan)
{
    if (plan.schedule != Schedule::Interleaved || plan.virtualStages <= 1 || stages.empty())
        return;
    const size_t depth = static_cast<size_t>(std::max(plan.pipelineDepth(), 1));
    // The schedule runs the micro-batches in groups of the pipeline depth (Megatron-Core's
    // microbatch_group_size_per_vp_stage default).
    const double group = std::min<double>(double(depth), std::max(plan.numMicroBatches(), 1));
    std::vector<StageCost *> chunk;
    for (size_t d = 0; d < depth && d < stages.size(); ++d) {
        chunk.clear();
        for (size_t s = d; s < stages.size(); s += depth)
            chunk.push_back(&stages[s]);
        const bool grads = queueGradSyncs(chunk, group);
        const bool gathers = queueParamGathers(chunk, group);
        if (grads || gathers)
            for (StageCost *c : chunk)
                c->iterationExtra = iterationExtraOf(*c);
    }
}

double iterationTime(const std::vector<StageCost> &stages, const Plan &plan)
{
    if (stages.empty())
        return 0.0;
    const int depth = std::max(plan.pipelineDepth(), 1);
    if (plan.schedule == Schedule::Interleaved && plan.virtualStages > 1) {
        // Narayanan et al. SC'21 §2.2.2: the bubble shrinks by v. Per device: its chunks.
        const int v = plan.virtualStages;
        double tDev = 0, extraDev = 0;
        for (int d = 0; d < depth; ++d) {
            double t = 0, e = 0;
            for (size_t k = static_cast<size_t>(d); k < stages.size(); k += static_cast<size_t>(depth)) {
                t += stages[k].perMicroBatch;
                e += stages[k].iterationExtra;
            }
            tDev = std::max(tDev, t);
            extraDev = std::max(extraDev, e);
        }
        return iterationSeconds(interleavedWeight(plan.numMicroBatches(), depth, v), tDev, extraDev);
    }
    double tMax = 0, extraMax = 0;
    for (const StageCost &s : stages) {
        tMax = std::max(tMax, s.perMicroBatch);
        extraMax = std::max(extraMax, s.iterationExtra);
    }
    return iterationSeconds(pipelineWeight(plan.numMicroBatches(), depth), tMax, extraMax);
}

std::vector<StageContext> stageContexts(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                        const CostOptions &options)
{
    std::vector<StageContext> out;
    const int k = static_cast<int>(plan.stages.size());
    out.reserve(static_cast<size_t>(k));
    std::vector<BoundaryLink> links;
    for (int s = 0; s + 1 < k; ++s)
        links.push_back(boundaryLink(topo, plan.stages[s], plan.stages[s + 1]));
    for (int s = 0; s < k; ++s) {
        StageContext ctx;
        ctx.topology = &topo;
        ctx.model = &model;
        ctx.options = options;
        ctx.options.precision = plan.precision;  // what the plan runs in
        ctx.stage = &plan.stages[s];
        ctx.stageIndex = s;
        ctx.numStages = plan.pipelineDepth();
        ctx.microBatch = plan.microBatch;
        ctx.numMicroBatches = plan.numMicroBatches();
        ctx.seqLength = plan.seqLength;
        ctx.dp = plan.dp;
        ctx.schedule = plan.schedule;
        ctx.virtualStages = plan.virtualStages;
        if (s > 0)
            ctx.prev = links[static_cast<size_t>(s - 1)];
        if (s + 1 < k)
            ctx.next = links[static_cast<size_t>(s)];
        out.push_back(ctx);
    }
    return out;
}

std::vector<StageCost> stageCosts(const Plan &plan, const Topology &topo, const ModelProfile &model,
                                  const CostOptions &options)
{
    std::vector<StageCost> costs;
    for (const StageContext &ctx : stageContexts(plan, topo, model, options))
        costs.push_back(stageCost(ctx));
    queueInterleavedSyncs(costs, plan);
    return costs;
}

namespace {

std::string gb(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
    return buf;
}

// The first term of a stage cost that is not a finite number ("p2p time"), or empty. An
// infinite or NaN cost is never a result: it comes from inputs at the edge of their ranges
// (a link so slow, a device so weak) and the evaluator reports it as infeasible.
std::string nonFiniteTerm(const StageCost &c)
{
    const std::pair<const char *, double> terms[] = {
        {"forward time", c.forward}, {"backward time", c.backward}, {"recompute time", c.recompute},
        {"tensor-parallel communication", c.tpComm}, {"expert-parallel all-to-all", c.epComm},
        {"context-parallel exchange", c.cpComm}, {"pipeline send/receive", c.p2p},
        {"ZeRO communication", c.zeroComm}, {"time per micro-batch", c.perMicroBatch},
        {"data-parallel gradient sync", c.dpSync}, {"ZeRO parameter gather", c.zeroGather},
        {"optimizer step", c.optimizer}, {"time after the last micro-batch", c.iterationExtra},
        {"weight memory", c.weights}, {"gradient memory", c.gradients},
        {"optimizer-state memory", c.optimizerState}, {"activation memory", c.activations},
        {"stash memory", c.stash}, {"memory total", c.memoryTotal}};
    for (const auto &term : terms)
        if (!std::isfinite(term.second))
            return std::string(term.first) + " is " + (std::isnan(term.second) ? "not a number" : "infinite");
    return {};
}

} // namespace

DeviceReport positionMemory(const std::vector<StageCost> &costs, int p, int depth)
{
    DeviceReport mem;
    for (size_t k = static_cast<size_t>(p); k < costs.size(); k += static_cast<size_t>(depth)) {
        const StageCost &c = costs[k];
        mem.weights += c.weights;
        mem.gradients += c.gradients;
        mem.optimizerState += c.optimizerState;
        mem.stash += c.stash;
        mem.activations = std::max(mem.activations, c.activations);
        mem.overhead = c.overhead;
    }
    mem.total = mem.weights + mem.gradients + mem.optimizerState + mem.stash + mem.activations + mem.overhead;
    return mem;
}

namespace {

// One line per stage, each with its bubble: the iteration less its position's busy time (the
// sum of its chunks when interleaved).
void addStageReports(Report &rep, const std::vector<StageCost> &costs, const Plan &plan)
{
    const int depth = plan.pipelineDepth();
    const double m = plan.numMicroBatches();
    std::vector<double> busy(static_cast<size_t>(depth), 0.0);
    for (size_t k = 0; k < costs.size(); ++k)
        busy[k % static_cast<size_t>(depth)] += m * costs[k].perMicroBatch + costs[k].iterationExtra;
    for (size_t k = 0; k < costs.size(); ++k) {
        StageReport sr;
        sr.index = static_cast<int>(k);
        sr.firstLayer = plan.stages[k].firstLayer;
        sr.endLayer = plan.stages[k].endLayer;
        sr.cost = costs[k];
        sr.bubble = std::max(0.0, rep.iterationTime - busy[k % static_cast<size_t>(depth)]);
        rep.stages.push_back(sr);
    }
}

// Every device's memory and place in the plan, the peak, the devices used and a reason for
// each pipeline position that does not fit. Returns the sum of the used devices' peak FLOP/s.
double addDeviceReports(Report &rep, const std::vector<StageCost> &costs, const Plan &plan, const Topology &topo,
                        const CostOptions &options)
{
    const int depth = plan.pipelineDepth();
    rep.devices.resize(static_cast<size_t>(topo.deviceCount()));
    for (int d = 0; d < topo.deviceCount(); ++d) {
        rep.devices[static_cast<size_t>(d)].device = d;
        rep.devices[static_cast<size_t>(d)].capacity =
            usableMemory(topo.spec(d).memoryBytes, options);
    }
    double peakSum = 0;
    for (int p = 0; p < depth; ++p) {
        const DeviceReport mem = positionMemory(costs, p, depth);
        const StagePlan &st = plan.stages[static_cast<size_t>(p)];
        int worstDevice = -1;
        for (size_t r = 0; r < st.devices.size(); ++r) {
            for (size_t j = 0; j < st.devices[r].size(); ++j) {
                const int d = st.devices[r][j];
                DeviceReport &dr = rep.devices[static_cast<size_t>(d)];
                const double cap = dr.capacity;
                dr = mem;
                dr.device = d;
                dr.capacity = cap;
                dr.stage = p;
                dr.replica = static_cast<int>(r);
                dr.shard = static_cast<int>(j);
                // MFU against the peak of the plan's precision (its linear layers' format;
                // the BF16 peak for bf16), so that a low-precision plan stays below 100 %.
                peakSum += std::max(topo.spec(d).peakFlops, topo.spec(d).peakFor(plan.precision.format));
                ++rep.devicesUsed;
                if (mem.total > cap && (worstDevice < 0 || cap < rep.devices[static_cast<size_t>(worstDevice)].capacity))
                    worstDevice = d;
                rep.peakMemoryBytes = std::max(rep.peakMemoryBytes, mem.total);
            }
        }
        if (worstDevice >= 0) {
            std::string which = "stage " + std::to_string(p) + " (layers " + std::to_string(st.firstLayer) + "-" +
                                std::to_string(st.endLayer - 1) + ")";
            if (depth < static_cast<int>(costs.size()))
                which = "pipeline position " + std::to_string(p) + " (" +
                        std::to_string(costs.size() / static_cast<size_t>(depth)) + " chunks)";
            rep.reasons.push_back(which + " needs " + gb(mem.total) + " per device, device " +
                                  std::to_string(worstDevice) + " has " +
                                  gb(rep.devices[static_cast<size_t>(worstDevice)].capacity) +
                                  " (weights " + gb(mem.weights) + ", gradients " + gb(mem.gradients) +
                                  ", optimizer " + gb(mem.optimizerState) + ", stash " + gb(mem.stash) +
                                  ", activations " + gb(mem.activations) + ")");
        }
    }
    return peakSum;
}

// Model FLOPs per iteration, samples and tokens per second, MFU over the used devices' peak.
void setThroughput(Report &rep, const Plan &plan, const ModelProfile &model, double peakSum)
{
    double flopsPerSample = 0;
    for (const LayerProfile &l : model.layers)
        flopsPerSample += l.fwdFlops + l.bwdFlops;
    rep.modelFlopsPerIteration = flopsPerSample * plan.globalBatch;
    if (rep.iterationTime > 0) {
        rep.samplesPerSecond = plan.globalBatch / rep.iterationTime;
        rep.tokensPerSecond = rep.samplesPerSecond * plan.seqLength;
        if (peakSum > 0)
            rep.mfu = rep.modelFlopsPerIteration / (rep.iterationTime * peakSum);
    }
}

} // namespace

Report evaluate(const Plan &plan, const Topology &topo, const ModelProfile &model, const CostOptions &options)
{
    Report rep;
    rep.reasons = planErrors(plan, topo, model);
    if (!rep.reasons.empty())
        return rep;
    const std::vector<StageCost> costs = stageCosts(plan, topo, model, options);
    for (size_t k = 0; k < costs.size(); ++k)
        if (const std::string term = nonFiniteTerm(costs[k]); !term.empty())
            rep.reasons.push_back("stage " + std::to_string(k) + " (layers " + std::to_string(plan.stages[k].firstLayer) +
                                  "-" + std::to_string(plan.stages[k].endLayer - 1) + "): the " + term +
                                  " (an input at the edge of its range: a link, device or efficiency too small?)");
    if (!rep.reasons.empty())
        return rep;  // feasible stays false; no non-finite number reaches the report
    rep.iterationTime = iterationTime(costs, plan);
    if (!std::isfinite(rep.iterationTime)) {
        rep.reasons.push_back("the iteration time is not finite (too many micro-batches or stages for the per-stage times)");
        rep.iterationTime = 0;
        return rep;
    }
    addStageReports(rep, costs, plan);
    const double peakSum = addDeviceReports(rep, costs, plan, topo, options);
    rep.feasible = rep.reasons.empty();
    assert(!rep.feasible || (std::isfinite(rep.iterationTime) && std::isfinite(rep.peakMemoryBytes)));
    setThroughput(rep, plan, model, peakSum);
    return rep;
}

void setOptimizerDtype(CostOptions &o, OptimizerDtype d)
{
    o.optimizerBytesPerParam = d == OptimizerDtype::Bf16 ? 6 : d == OptimizerDtype::Bf16Moments ? 8 : 12;
    o.optimizerStepBytesPerParam = d == OptimizerDtype::Bf16 ? 18 : d == OptimizerDtype::Bf16Moments ? 22 : 30;
}

} // namespace nest
