#include "Simulator.h"

#include "Pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace nest {

namespace {

struct Op {
    bool backward = false;
    int stage = 0;  // plan stage index (virtual stage when interleaved)
    int mb = 0;
};

// The per-device operation order of the schedule. Returns an error message or "".
std::string buildOrders(const Plan &plan, std::vector<std::vector<Op>> &orders)
{
    const int depth = plan.pipelineDepth();
    const int k = static_cast<int>(plan.stages.size());
    const int v = k / depth;
    const int m = plan.numMicroBatches();
    orders.assign(static_cast<size_t>(depth), {});
    for (int p = 0; p < depth; ++p) {
        auto &ops = orders[static_cast<size_t>(p)];
        if (v == 1 && plan.schedule == Schedule::GPipe) {
            for (int mb = 0; mb < m; ++mb)
                ops.push_back({false, p, mb});
            for (int mb = 0; mb < m; ++mb)
                ops.push_back({true, p, mb});
        } else if (v == 1) {
            // 1F1B (PipeDream-Flush): warm-up forwards, then one forward / one backward.
            const int warm = std::min(depth - p - 1, m);
            for (int mb = 0; mb < warm; ++mb)
                ops.push_back({false, p, mb});
            for (int i = 0; i < m - warm; ++i) {
                ops.push_back({false, p, warm + i});
                ops.push_back({true, p, i});
            }
            for (int i = m - warm; i < m; ++i)
                ops.push_back({true, p, i});
        } else {
            // Megatron-LM interleaved 1F1B: groups of `depth` micro-batches per chunk.
            if (m % depth != 0)
                return "the interleaved schedule needs the micro-batches per replica (" + std::to_string(m) +
                       ") to be a multiple of the pipeline depth (" + std::to_string(depth) + ")";
            const int total = m * v;
            const int warm = std::min((depth - p - 1) * 2 + (v - 1) * depth, total);
            auto fwd = [&](int i) {
                const int chunk = (i / depth) % v;
                const int mb = (i / (depth * v)) * depth + i % depth;
                return Op{false, chunk * depth + p, mb};
            };
            auto bwd = [&](int i) {
                const int chunk = v - 1 - (i / depth) % v;
                const int mb = (i / (depth * v)) * depth + i % depth;
                return Op{true, chunk * depth + p, mb};
            };
            for (int i = 0; i < warm; ++i)
                ops.push_back(fwd(i));
            for (int i = 0; i < total - warm; ++i) {
                ops.push_back(fwd(warm + i));
                ops.push_back(bwd(i));
            }
            for (int i = total - warm; i < total; ++i)
                ops.push_back(bwd(i));
        }
    }
    return {};
}

// About 100 bytes per operation with its events: 2e7 operations stay near 2 GB.
constexpr double kMaxSimulatedOps = 2e7;

// Why the plan cannot be simulated before any cost is computed: its errors (joined by "; "),
// or a timeline too large to hold; empty when it can.
std::string simulationInputProblem(const Plan &plan, const Topology &topo, const ModelProfile &model)
{
    std::string error;
    for (const auto &e : planErrors(plan, topo, model))
        error += (error.empty() ? "" : "; ") + e;
    if (!error.empty())
        return error;
    // Limits before work: the timeline holds two events per chunk and micro-batch (plus the
    // transfers); refuse absurd sizes with the count instead of running out of memory.
    const double operations = 2.0 * static_cast<double>(plan.stages.size()) * plan.numMicroBatches();
    if (operations > kMaxSimulatedOps) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "the timeline would hold %.3g operations (%zu stages x %d micro-batches x 2), above "
                      "the limit of %.0f: simulate a smaller global batch",
                      operations, plan.stages.size(), plan.numMicroBatches(), kMaxSimulatedOps);
        return buf;
    }
    return {};
}

// The discrete-event run of one iteration: every device works through its order, an
// operation starts when its input has arrived and its device is free, transfers queue on
// the boundary link of their direction.
class Timeline {
public:
    Timeline(const std::vector<StageCost> &costs, int depth, int microBatches, std::vector<std::vector<Op>> orders,
             SimulationResult &res)
        : m_costs(costs), m_k(static_cast<int>(costs.size())), m_depth(depth), m_m(microBatches),
          m_orders(std::move(orders)), m_res(res),
          m_fwdReady(static_cast<size_t>(m_k) * m_m, kUnknown), m_bwdReady(static_cast<size_t>(m_k) * m_m, kUnknown),
          m_deviceFree(static_cast<size_t>(depth), 0), m_next(static_cast<size_t>(depth), 0),
          m_linkFree(static_cast<size_t>(std::max(m_k - 1, 0)) * 2, 0)
    {
        for (int mb = 0; mb < m_m; ++mb)
            m_fwdReady[idx(0, mb)] = 0;
    }

    // Every operation of every order; false (with the result's error) on a deadlock.
    bool run()
    {
        size_t remaining = 0;
        for (const auto &o : m_orders)
            remaining += o.size();
        while (remaining > 0) {
            double start = 0;
            const int device = earliestDevice(start);
            if (device < 0) {
                m_res.error = "the schedule deadlocked (an operation waits for data that is never produced)";
                return false;
            }
            const Op op = m_orders[static_cast<size_t>(device)][m_next[static_cast<size_t>(device)]++];
            --remaining;
            m_deviceFree[static_cast<size_t>(device)] = op.backward ? backward(op, start) : forward(op, start);
        }
        return true;
    }

    // After its last backward each device syncs the gradients of its chunks and steps; the
    // makespan is the last device's end.
    void syncAndStep()
    {
        for (int p = 0; p < m_depth; ++p) {
            double t = m_deviceFree[static_cast<size_t>(p)];
            for (int s = p; s < m_k; s += m_depth) {
                const StageCost &c = m_costs[static_cast<size_t>(s)];
                emit(s, -1, "dp-sync", t, t + c.dpSync + c.zeroGather);
                t += c.dpSync + c.zeroGather;
            }
            for (int s = p; s < m_k; s += m_depth) {
                const StageCost &c = m_costs[static_cast<size_t>(s)];
                emit(s, -1, "optimizer", t, t + c.optimizer);
                t += c.optimizer;
                // The expert-parallel overlap's unpaired first forward and last backward
                // (StageCost::epUnpaired), charged once an iteration as the evaluator does.
                if (c.epUnpaired > 0) {
                    emit(s, -1, "ep-unpaired", t, t + c.epUnpaired);
                    t += c.epUnpaired;
                }
            }
            m_res.makespan = std::max(m_res.makespan, t);
        }
    }

    // DeepSpeed's TrainSchedule (FrameworkProfile::trainScheduleSteps, runtime/pipe/
    // schedule.py) instead of run(): 2 (m + S - 1) steps; in step k stage s runs the forward of
    // micro-batch (k - s) / 2 when k - s is even, else the backward of (k + s + 1 - 2S) / 2
    // (when that micro-batch exists). A forward step first exchanges with the previous stage
    // (receive the activation, send the last backward's input gradient), a backward step with
    // the next (send the last forward's activation, receive the gradient): separate blocking
    // transfers, one after the other, that both partners enter when both have finished their
    // previous step. One transfer takes half the stage's p2p exchange time (blocking p2p).
    void runTrainSchedule()
    {
        const int stages = m_depth;
        const int steps = deepSpeedSteps(m_m, stages);
        // The micro-batch stage s works on in step k, or -1; forward or backward by parity.
        auto microBatchAt = [&](int s, int k) {
            if (k < 0)
                return -1;
            const bool fwd = (k + s) % 2 == 0;
            const int twice = fwd ? k - s : k + s + 1 - 2 * stages;
            return twice >= 0 && twice / 2 < m_m ? twice / 2 : -1;
        };
        std::vector<double> &busyUntil = m_deviceFree;
        std::vector<double> start(static_cast<size_t>(stages), 0);
        for (int k = 0; k < steps; ++k) {
            for (int s = 0; s < stages; ++s) {
                const bool fwd = (k + s) % 2 == 0;
                const int partner = fwd ? s - 1 : s + 1;
                int transfers = 0;
                if (partner >= 0 && partner < stages)
                    transfers = (microBatchAt(s, k) >= 0 ? 1 : 0) + (microBatchAt(s, k - 1) >= 0 ? 1 : 0);
                const size_t su = static_cast<size_t>(s);
                start[su] = busyUntil[su];
                if (transfers > 0) {
                    const int boundary = std::min(s, partner);
                    const double one = m_costs[static_cast<size_t>(boundary)].p2pForward / 2;
                    const double meet = std::max(busyUntil[su], busyUntil[static_cast<size_t>(partner)]);
                    start[su] = meet + transfers * one;
                    const int mb = microBatchAt(s, k) >= 0 ? microBatchAt(s, k) : microBatchAt(s, k - 1);
                    emit(s, mb, fwd ? "recv" : "send", meet, start[su]);
                }
            }
            for (int s = 0; s < stages; ++s) {
                const int mb = microBatchAt(s, k);
                const size_t su = static_cast<size_t>(s);
                busyUntil[su] = start[su];
                if (mb < 0)
                    continue;
                const StageCost &c = m_costs[su];
                const double comm = (c.tpComm + c.epComm + c.cpComm) / 2;
                double t = start[su];
                if ((k + s) % 2 == 0) {
                    emit(s, mb, "forward", t, t + c.forward + comm + c.zeroForward);
                    t += c.forward + comm + c.zeroForward;
                } else {
                    emit(s, mb, "recompute", t, t + c.recompute);
                    t += c.recompute;
                    const double bwd = c.backward + comm + (c.zeroComm - c.zeroForward);
                    emit(s, mb, "backward", t, t + bwd);
                    t += bwd;
                }
                busyUntil[su] = t;
            }
        }
    }

private:
    static constexpr double kUnknown = -1;
    const std::vector<StageCost> &m_costs;
    const int m_k, m_depth, m_m;
    const std::vector<std::vector<Op>> m_orders;
    SimulationResult &m_res;
    // When the input activation / output gradient of (stage, mb) is available.
    std::vector<double> m_fwdReady, m_bwdReady;
    std::vector<double> m_deviceFree;
    std::vector<size_t> m_next;  // per device: its next operation
    // Boundary links: [boundary][direction], boundary b joins stage b and b + 1.
    std::vector<double> m_linkFree;

    size_t idx(int stage, int mb) const { return static_cast<size_t>(stage) * static_cast<size_t>(m_m) + mb; }

    void emit(int stage, int mb, const char *kind, double s, double e)
    {
        if (e > s)
            m_res.events.push_back({stage, 0, mb, kind, s, e});
    }

    // The device whose next operation can start earliest (discrete-event order; ties: the
    // lower device) and that start; -1 when none can.
    int earliestDevice(double &bestStart) const
    {
        int best = -1;
        bestStart = std::numeric_limits<double>::infinity();
        for (int p = 0; p < m_depth; ++p) {
            const auto &ops = m_orders[static_cast<size_t>(p)];
            if (m_next[static_cast<size_t>(p)] >= ops.size())
                continue;
            const Op &op = ops[m_next[static_cast<size_t>(p)]];
            const double ready = op.backward ? m_bwdReady[idx(op.stage, op.mb)] : m_fwdReady[idx(op.stage, op.mb)];
            if (ready == kUnknown)
                continue;
            const double start = std::max(ready, m_deviceFree[static_cast<size_t>(p)]);
            if (start < bestStart) {
                bestStart = start;
                best = p;
            }
        }
        return best;
    }

    // A forward from t and its send to the next stage (or the loss); returns when its device is free.
    double forward(const Op &op, double t)
    {
        const StageCost &c = m_costs[static_cast<size_t>(op.stage)];
        const double comm = (c.tpComm + c.epComm + c.cpComm) / 2;
        const double end = t + c.forward + comm + c.zeroForward;
        emit(op.stage, op.mb, "forward", t, end);
        t = end;
        if (op.stage + 1 < m_k) {
            double &link = m_linkFree[static_cast<size_t>(op.stage) * 2];
            const double s = std::max(t, link);
            const double e = s + c.p2pForward;
            emit(op.stage, op.mb, "send", s, e);
            emit(op.stage + 1, op.mb, "recv", s, e);
            link = e;
            t = e;
            m_fwdReady[idx(op.stage + 1, op.mb)] = e;
        } else {
            m_bwdReady[idx(op.stage, op.mb)] = t;  // the loss is ready: backward may start
        }
        return t;
    }

    // A backward from t (after its recompute) and its send to the previous stage.
    double backward(const Op &op, double t)
    {
        const StageCost &c = m_costs[static_cast<size_t>(op.stage)];
        const double comm = (c.tpComm + c.epComm + c.cpComm) / 2;
        if (c.recompute > 0) {
            emit(op.stage, op.mb, "recompute", t, t + c.recompute);
            t += c.recompute;
        }
        const double end = t + c.backward + comm + (c.zeroComm - c.zeroForward);
        emit(op.stage, op.mb, "backward", t, end);
        t = end;
        if (op.stage > 0) {
            double &link = m_linkFree[static_cast<size_t>(op.stage - 1) * 2 + 1];
            const double s = std::max(t, link);
            const double e = s + c.p2pBackward;
            emit(op.stage, op.mb, "send", s, e);
            emit(op.stage - 1, op.mb, "recv", s, e);
            link = e;
            t = e;
            m_bwdReady[idx(op.stage - 1, op.mb)] = e;
        }
        return t;
    }
};

} // namespace

SimulationResult simulate(const Plan &plan, const Topology &topo, const ModelProfile &model,
                          const CostOptions &options)
{
    SimulationResult res;
    res.error = simulationInputProblem(plan, topo, model);
    if (!res.error.empty())
        return res;
    const std::vector<StageCost> costs = stageCosts(plan, topo, model, options);
    for (size_t s = 0; s < costs.size(); ++s)
        if (!std::isfinite(costs[s].perMicroBatch) || !std::isfinite(costs[s].iterationExtra)) {
            res.error = "stage " + std::to_string(s) + " has a time that is not finite (see the evaluator's reasons)";
            return res;
        }
    const int depth = plan.pipelineDepth();
    const bool trainSchedule = options.profile().trainScheduleSteps &&
                               plan.schedule == Schedule::OneFOneB && depth > 1 &&
                               static_cast<int>(plan.stages.size()) == depth;
    std::vector<std::vector<Op>> orders;
    if (!trainSchedule) {
        res.error = buildOrders(plan, orders);
        if (!res.error.empty())
            return res;
    }
    Timeline timeline(costs, depth, plan.numMicroBatches(), std::move(orders), res);
    if (trainSchedule) {
        timeline.runTrainSchedule();
        timeline.syncAndStep();
    } else if (timeline.run()) {
        timeline.syncAndStep();
    }
    return res;
}

Json timelineToJson(const SimulationResult &r)
{
    Json events = Json::array();
    for (const TimelineEvent &e : r.events) {
        events.push_back({{"stage", e.stage},
                          {"replica", e.replica},
                          {"micro_batch", e.microBatch},
                          {"kind", e.kind},
                          {"start_s", e.start},
                          {"end_s", e.end}});
    }
    Json j = {{"format", "nest-timeline"}, {"version", 1}, {"makespan_s", r.makespan}, {"events", events}};
    if (!r.error.empty())
        j["error"] = r.error;
    return j;
}

} // namespace nest
