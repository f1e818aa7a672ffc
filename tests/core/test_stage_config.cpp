// StageConfig, the one per-stage choice (issue 20): every field reaches the exact key, the
// hash and the JSON round trip; the rules match their documented meaning. The structured
// binding below lists every field: adding one to StageConfig breaks this file's build until
// the field is listed, and then the checks fail unless the key and the JSON carry it.
#include "PlanBuilder.h"
#include "PlanIO.h"
#include "StageConfig.h"

#include <gtest/gtest.h>

#include <set>
#include <type_traits>
#include <vector>

using namespace nest;

namespace {

template <typename T>
void changeField(T &x)
{
    if constexpr (std::is_same_v<T, bool>)
        x = !x;
    else if constexpr (std::is_enum_v<T>)
        x = static_cast<T>(static_cast<int>(x) + 1);
    else
        x = x + 2;  // etp: 0 (= tp 1) to 2, another width
}

// Calls f(field) on every field of `c`, in declaration order.
template <typename F>
void forEachField(StageConfig &c, F &&f)
{
    auto &[tp, cp, ep, sp, zero, recompute, etp] = c;  // every field of StageConfig
    f(tp);
    f(cp);
    f(ep);
    f(sp);
    f(zero);
    f(recompute);
    f(etp);
}

// The default choice with exactly field i changed, for every field i.
std::vector<StageConfig> oneFieldChanged()
{
    StageConfig probe;
    int fields = 0;
    forEachField(probe, [&](auto &) { ++fields; });
    std::vector<StageConfig> out;
    for (int i = 0; i < fields; ++i) {
        StageConfig c;
        int k = 0;
        forEachField(c, [&](auto &field) {
            if (k++ == i)
                changeField(field);
        });
        out.push_back(c);
    }
    return out;
}

} // namespace

TEST(StageConfig, everyFieldIsListed)
{
    // The binding in forEachField has one name per field; its size must be the struct's.
    ASSERT_EQ(oneFieldChanged().size(), size_t{7});
}

TEST(StageConfig, everyFieldReachesTheKey)
{
    const StageConfig base;
    std::set<std::pair<uint64_t, uint32_t>> keys{{base.widthKey(), base.switchKey()}};
    for (const StageConfig &c : oneFieldChanged()) {
        ASSERT_TRUE(!(c == base));
        ASSERT_TRUE(!(c.key() == base.key()));
        ASSERT_TRUE(StageConfigHash()(c) != StageConfigHash()(base));
        keys.insert({c.widthKey(), c.switchKey()});
    }
    ASSERT_EQ(keys.size(), oneFieldChanged().size() + 1);  // all distinct
}

TEST(StageConfig, everyFieldSurvivesTheJsonRoundTrip)
{
    for (const StageConfig &c : oneFieldChanged()) {
        Json j = Json::object();
        writeStageConfig(j, c);
        ASSERT_TRUE(readStageConfig(j, "stage") == c);
        // And through a whole plan file.
        Plan p;
        p.globalBatch = 8;
        p.dp = 2;
        StagePlan st;
        st.config() = c;
        st.endLayer = 1;
        st.devices.assign(2, std::vector<int>(static_cast<size_t>(c.width()), 0));
        p.stages.push_back(st);
        const Result<Plan> back = planFromJson(planToJson(p), "plan.json");
        ASSERT_TRUE(back.ok()) << (back.ok() ? "" : back.error().c_str());
        ASSERT_TRUE(back.value().stages[0].config() == c);
    }
}

TEST(StageConfig, keysAreExactAtTheLimits)
{
    // Widths up to limits::parallelWidth keep their own bits: (2^16, 1, 1, 1), (1, 2^16, 1, 1),
    // (1, 1, 2^16, 1) and (1, 1, 1, 2^16) differ, and the largest width does not spill into
    // its neighbour (each field holds the width minus one).
    const int big = static_cast<int>(limits::parallelWidth.max);
    StageConfig a, b, c, d, e;
    a.tp = big;
    b.cp = big;
    c.ep = big;
    e.etp = big;
    d.tp = big;
    d.cp = big;
    d.ep = big;
    d.etp = big;
    const std::set<uint64_t> keys{a.widthKey(), b.widthKey(), c.widthKey(), d.widthKey(), e.widthKey(),
                                  StageConfig().widthKey()};
    ASSERT_EQ(keys.size(), size_t{6});
    ASSERT_EQ(d.widthKey(), ~uint64_t{0});
    ASSERT_EQ(d.widthKey() >> (3 * StageConfig::kWidthBits), uint64_t(big - 1));
    // Switches: 2 sp x 4 zero x 3 recompute values, all distinct.
    std::set<uint32_t> switches;
    for (bool sp : {false, true})
        for (int z = 0; z <= 3; ++z)
            for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
                StageConfig s;
                s.sp = sp;
                s.zero = z;
                s.recompute = r;
                ASSERT_TRUE(s.switchKey() < (1u << StageConfig::kSwitchBits));
                switches.insert(s.switchKey());
            }
    ASSERT_EQ(switches.size(), size_t{24});
}

TEST(StageConfig, plansAndLayoutsDeriveFromIt)
{
    ASSERT_TRUE((std::is_base_of_v<StageConfig, StagePlan>));
    ASSERT_TRUE((std::is_base_of_v<StageConfig, UniformLayout>));
    // A uniform layout's choice is every stage's choice.
    UniformLayout u;
    u.tp = 2;
    u.dp = 2;
    u.pp = 1;
    u.sp = true;
    u.zero = 1;
    u.recompute = Recompute::Selective;
    u.globalBatch = 4;
    const DeviceSpec dev{"d", 100e12, 80e9, 1e12, 0.5, ""};
    const Topology topo = Topology::uniform("t", dev, {{"node", 4, {100e9, 0, 1}}});
    ModelProfile model;
    model.heads = 4;
    model.seqLength = 2048;
    LayerProfile l;
    l.kind = LayerKind::Transformer;
    model.layers = {l, l};
    const Result<Plan> plan = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error().c_str());
    for (const StagePlan &s : plan.value().stages)
        ASSERT_TRUE(s.config() == u.config());
}

TEST(StageConfig, rules)
{
    ASSERT_TRUE(!StageConfig::sequenceParallel(true, 1));
    ASSERT_TRUE(StageConfig::sequenceParallel(true, 2));
    ASSERT_TRUE(!StageConfig::sequenceParallel(false, 8));
    ASSERT_TRUE(!StageConfig::zeroShards(1, 1));
    ASSERT_TRUE(StageConfig::zeroShards(1, 2));
    ASSERT_TRUE(StageConfig::zeroShards(2, 1));
    ASSERT_TRUE(StageConfig::tpDividesHeads(8, 32));
    ASSERT_TRUE(!StageConfig::tpDividesHeads(3, 32));
    ASSERT_TRUE(StageConfig::tpDividesHeads(3, 0));  // heads unknown
    ASSERT_TRUE(StageConfig::epDividesExperts(1, 0));
    ASSERT_TRUE(!StageConfig::epDividesExperts(3, 8));
    ASSERT_TRUE(StageConfig::cpDividesSequence(1, 4095));
    ASSERT_TRUE(!StageConfig::cpDividesSequence(2, 4095));

    StageConfig c;
    c.tp = 3;
    c.ep = 4;
    c.cp = 2;
    c.etp = 2;  // 2 x 4 = 8 does not divide 3 x 2 x 6 = 36
    const std::vector<std::string> p = c.problems(32, 6, 4095, 6);
    ASSERT_EQ(p.size(), size_t{4});
    ASSERT_EQ(p[0].rfind("etp 2 x ep 4 does not divide the stage's tp x cp x dp = 3 x 2 x 6 devices", 0), 0u) << p[0];
    ASSERT_EQ(p[1], std::string("tp 3 does not divide the model's 32 attention heads"));
    ASSERT_EQ(p[2], std::string("ep 4 does not divide the model's 6 experts"));
    ASSERT_EQ(p[3], std::string("cp 2 does not divide the sequence length 4095"));
    c = StageConfig();
    c.tp = 0;
    ASSERT_EQ(c.problems(32, 0, 2048, 1), std::vector<std::string>{"tp, cp and ep must be at least 1"});
    ASSERT_TRUE(StageConfig().problems(32, 0, 2048, 1).empty());
}
