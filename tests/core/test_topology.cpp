// Topology: the tree, its index and the queries the planner calls millions of times.
// Expected values are derived by hand from the tree drawn in each test's comment.
#include "Topology.h"
#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

using namespace nest;

namespace {

using coretest::rowName;

DeviceSpec gpu()
{
    return devicePreset("h100-sxm-80gb").value();
}

LinkParams linkOf(double gbps, double us, double over = 1)
{
    return {gbps * 1e9, us * 1e-6, over};
}

// spine0 ─ rack0 ─ node0 {0..3}, node1 {4..7}, node2 {8..11}
//        └ rack1 ─ node3 {12..15}, node4 {16..19}, node5 {20..23}
Topology uniform24()
{
    return Topology::uniform("u24", gpu(),
                             {{"node", 4, linkOf(450, 1)}, {"rack", 3, linkOf(50, 2)}, {"spine", 2, linkOf(25, 5, 2)}});
}

int groupNamed(const Topology &t, const std::string &name)
{
    for (size_t g = 0; g < t.groups.size(); ++g)
        if (t.groups[g].name == name)
            return static_cast<int>(g);
    return -1;
}

TopoGroup node(const std::string &name, int devices)
{
    TopoGroup g;
    g.name = name;
    g.level = 0;
    g.devices.assign(devices, -7);  // any value: reindex() rewrites the ids
    return g;
}

TopoGroup inner(const std::string &name, int level, std::vector<int> children)
{
    TopoGroup g;
    g.name = name;
    g.level = level;
    g.children = std::move(children);
    return g;
}

// A non-uniform tree built by hand with groups in a scrambled order:
// top ─ r0 ─ a {0,1}, c {2,3,4}, e {5,6}
//     └ r1 ─ b {7}, d {8,9}, f {10,11}, g {12}        (r1 overrides its link)
Topology nonUniform()
{
    Topology t;
    t.name = "nu";
    t.deviceTypes = {gpu()};
    t.levels = {{"node", linkOf(450, 1)}, {"rack", linkOf(50, 2)}, {"spine", linkOf(25, 5, 2)}};
    t.groups = {node("a", 2),                       // 0
                inner("r1", 1, {2, 6, 8, 9}),       // 1
                node("b", 1),                       // 2
                inner("top", 2, {4, 1}),            // 3
                inner("r0", 1, {0, 5, 7}),          // 4
                node("c", 3),                       // 5
                node("d", 2),                       // 6
                node("e", 2),                       // 7
                node("f", 2),                       // 8
                node("g", 1)};                      // 9
    t.groups[1].linkOverride = linkOf(10, 7, 3);
    t.root = 3;
    t.reindex();
    return t;
}

// The lowest common ancestor by walking parent links: an independent reference for level().
int referenceLevel(const Topology &t, int a, int b)
{
    if (a == b)
        return -1;
    int ga = t.devices[a].node, gb = t.devices[b].node;
    while (ga != gb) {
        ga = t.groups[ga].parent;
        gb = t.groups[gb].parent;
    }
    return t.groups[ga].level;
}

} // namespace

TEST(Topology, uniformShape)
{
    const Topology t = uniform24();
    ASSERT_EQ(t.validate(), std::string());
    ASSERT_EQ(t.deviceCount(), 24);  // 4 * 3 * 2
    ASSERT_EQ(t.levelCount(), 3);
    ASSERT_EQ(static_cast<int>(t.groups.size()), 1 + 2 + 6);
    ASSERT_EQ(t.groups[t.root].name, std::string("spine0"));
    ASSERT_EQ(t.groupsAtLevel(0).size(), size_t(6));
    ASSERT_EQ(t.groupsAtLevel(1).size(), size_t(2));
    // Names are numbered across the tree in depth-first order.
    ASSERT_EQ(t.groups[t.groupsAtLevel(0)[4]].name, std::string("node4"));
    ASSERT_EQ(t.groups[t.groupsAtLevel(1)[1]].name, std::string("rack1"));
    // Device 13 is the second device of node3.
    ASSERT_EQ(t.groups[t.devices[13].node].name, std::string("node3"));
    ASSERT_EQ(t.devices[13].indexInNode, 1);
    ASSERT_EQ(t.devices[13].id, 13);
    ASSERT_EQ(t.spec(13).name, std::string("h100-sxm-80gb"));
}

namespace {

struct LevelRow {
    std::string name;
    int a;
    int b;
    int expected;
};

void PrintTo(const LevelRow &row, std::ostream *os) { *os << row.name; }

const std::vector<LevelRow> levelRows = {
    {"same device", 5, 5, -1},
    {"node0 pair", 0, 3, 0},
    {"node0/node1", 0, 4, 1},
    {"node0/node2", 3, 11, 1},
    {"rack0/rack1 boundary", 11, 12, 2},
    {"far apart", 5, 23, 2},
    {"node3 pair", 13, 14, 0},
    {"node3/node5", 20, 13, 1},
};

class TopologyUniformLevel : public ::testing::TestWithParam<LevelRow> {};

} // namespace

TEST_P(TopologyUniformLevel, uniformLevel)
{
    const int a = GetParam().a;
    const int b = GetParam().b;
    const int expected = GetParam().expected;
    const Topology t = uniform24();
    ASSERT_EQ(t.level(a, b), expected);
    ASSERT_EQ(t.level(b, a), expected);
}

INSTANTIATE_TEST_SUITE_P(Rows, TopologyUniformLevel, ::testing::ValuesIn(levelRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(Topology, ancestorsAndLca)
{
    const Topology t = uniform24();
    ASSERT_EQ(t.groups[t.ancestor(5, 0)].name, std::string("node1"));
    ASSERT_EQ(t.groups[t.ancestor(5, 1)].name, std::string("rack0"));
    ASSERT_EQ(t.groups[t.ancestor(17, 0)].name, std::string("node4"));
    ASSERT_EQ(t.groups[t.ancestor(17, 1)].name, std::string("rack1"));
    ASSERT_EQ(t.ancestor(17, 2), t.root);
    ASSERT_EQ(t.ancestor(0, 2), t.root);
    ASSERT_EQ(t.groups[t.lcaGroup(13, 20)].name, std::string("rack1"));
    ASSERT_EQ(t.groups[t.lcaGroup(7, 7)].name, std::string("node1"));
    ASSERT_EQ(t.lcaGroup(2, 22), t.root);
    ASSERT_EQ(t.groups[t.ancestor(17, 0)].parent, groupNamed(t, "rack1"));
}

TEST(Topology, spanLevel)
{
    const Topology t = uniform24();
    ASSERT_EQ(t.spanLevel({}), -1);
    ASSERT_EQ(t.spanLevel({5}), -1);
    ASSERT_EQ(t.spanLevel({5, 5}), -1);
    ASSERT_EQ(t.spanLevel({1, 2}), 0);
    ASSERT_EQ(t.spanLevel({1, 2, 5}), 1);
    ASSERT_EQ(t.spanLevel({9, 1, 5}), 1);
    ASSERT_EQ(t.spanLevel({1, 5, 13}), 2);
    ASSERT_EQ(t.spanLevel({13, 1, 2}), 2);  // the far member is not the first
}

TEST(Topology, levelsSpanned)
{
    const Topology t = uniform24();
    using V = std::vector<int>;
    ASSERT_EQ(t.levelsSpanned({3}), V{});
    ASSERT_EQ(t.levelsSpanned({3, 3}), V{});
    ASSERT_EQ(t.levelsSpanned({0, 1, 4}), (V{0, 1}));     // node0 pair + node1
    ASSERT_EQ(t.levelsSpanned({0, 12}), V{2});            // rack0 vs rack1 only
    ASSERT_EQ(t.levelsSpanned({0, 4, 12}), (V{1, 2}));
    ASSERT_EQ(t.levelsSpanned({0, 1, 12}), (V{0, 2}));    // no two nodes of one rack
    ASSERT_EQ(t.levelsSpanned({12, 0, 1, 4}), (V{0, 1, 2}));
    ASSERT_EQ(t.levelsSpanned({16, 17, 18, 19}), V{0});
}

TEST(Topology, devicesUnder)
{
    const Topology t = uniform24();
    const int rack1 = groupNamed(t, "rack1");
    std::vector<int> expected(12);
    std::iota(expected.begin(), expected.end(), 12);
    ASSERT_EQ(t.devicesUnder(rack1), expected);
    ASSERT_EQ(t.deviceCountUnder(t.root), 24);
    ASSERT_EQ(t.deviceCountUnder(groupNamed(t, "node3")), 4);
    ASSERT_EQ(t.devicesUnder(groupNamed(t, "node2")), (std::vector<int>{8, 9, 10, 11}));
    ASSERT_EQ(t.deviceCountUnder(-1), 0);
    ASSERT_EQ(t.deviceCountUnder(999), 0);
}

TEST(Topology, links)
{
    const Topology t = uniform24();
    ASSERT_EQ(t.link(0, 1), linkOf(450, 1));
    ASSERT_EQ(t.link(0, 4), linkOf(50, 2));
    ASSERT_EQ(t.link(0, 23), linkOf(25, 5, 2));
    ASSERT_EQ(t.link(t.root), linkOf(25, 5, 2));
}

TEST(Topology, nonUniformTree)
{
    const Topology t = nonUniform();
    ASSERT_EQ(t.validate(), std::string());
    ASSERT_EQ(t.deviceCount(), 13);  // 2 + 3 + 2 + 1 + 2 + 2 + 1
    // Depth-first ids: r0 (listed first by top) gets 0..6, r1 gets 7..12.
    ASSERT_EQ(t.groups[0].devices, (std::vector<int>{0, 1}));
    ASSERT_EQ(t.groups[5].devices, (std::vector<int>{2, 3, 4}));
    ASSERT_EQ(t.groups[7].devices, (std::vector<int>{5, 6}));
    ASSERT_EQ(t.groups[2].devices, (std::vector<int>{7}));
    ASSERT_EQ(t.groups[9].devices, (std::vector<int>{12}));
    ASSERT_EQ(t.devices[4].node, 5);
    ASSERT_EQ(t.devices[4].indexInNode, 2);
    ASSERT_EQ(t.groups[0].parent, 4);  // parent links derived from children lists
    ASSERT_EQ(t.groups[6].parent, 1);
    ASSERT_EQ(t.level(1, 2), 1);   // a / c, both in r0
    ASSERT_EQ(t.level(2, 4), 0);   // inside c
    ASSERT_EQ(t.level(6, 7), 2);   // e (r0) / b (r1)
    ASSERT_EQ(t.level(8, 12), 1);  // d / g in r1
    ASSERT_EQ(t.level(9, 8), 0);   // inside d
    ASSERT_EQ(t.devicesUnder(1), (std::vector<int>{7, 8, 9, 10, 11, 12}));
    ASSERT_EQ(t.deviceCountUnder(4), 7);
    ASSERT_EQ(t.spanLevel({7, 12}), 1);
    ASSERT_EQ(t.levelsSpanned({2, 3, 8, 12}), (std::vector<int>{0, 1, 2}));
    ASSERT_EQ(t.groupsAtLevel(0), (std::vector<int>{0, 5, 7, 2, 6, 8, 9}));
    // r1's override applies to pairs whose lowest common ancestor is r1 only.
    ASSERT_EQ(t.link(8, 12), linkOf(10, 7, 3));
    ASSERT_EQ(t.link(1), linkOf(10, 7, 3));
    ASSERT_EQ(t.link(1, 2), linkOf(50, 2));
    ASSERT_EQ(t.link(6, 7), linkOf(25, 5, 2));
    ASSERT_EQ(t.link(8, 9), linkOf(450, 1));
}

TEST(Topology, moveNodeAndReindex)
{
    // Move node e from r0 to r1 (what the editor's drag does), then reindex.
    Topology t = nonUniform();
    auto &r0 = t.groups[4].children;
    r0.erase(std::find(r0.begin(), r0.end(), 7));
    t.groups[1].children.push_back(7);
    t.reindex();
    ASSERT_EQ(t.validate(), std::string());
    // r0: a {0,1}, c {2,3,4}; r1: b {5}, d {6,7}, f {8,9}, g {10}, e {11,12}.
    ASSERT_EQ(t.groups[7].devices, (std::vector<int>{11, 12}));
    ASSERT_EQ(t.groups[7].parent, 1);
    ASSERT_EQ(t.level(5, 11), 1);
    ASSERT_EQ(t.level(4, 5), 2);
    ASSERT_EQ(t.deviceCountUnder(1), 8);
}

namespace {

struct BreakageRow {
    std::string name;
    int breakage;
    std::string needle;
};

void PrintTo(const BreakageRow &row, std::ostream *os) { *os << row.name; }

const std::vector<BreakageRow> breakageRows = {
    {"no levels", 0, "no levels"},
    {"bandwidth 0", 1, "bandwidth"},
    {"bandwidth NaN", 2, "NaN"},
    {"negative latency", 3, "latency"},
    {"oversubscription 0.5", 4, "oversubscription"},
    {"empty node", 5, "empty node"},
    {"device type out of range", 6, "device type index"},
    {"dangling child", 7, "does not name a group"},
    {"cycle to root", 8, "cycle"},
    {"shared child", 9, "child of both"},
    {"unreachable group", 10, "not reachable"},
    {"stale index", 11, "stale"},
    {"level mismatch", 12, "must be at level"},
    {"root not at top", 13, "top level"},
    {"no device types", 14, "no device type"},
    {"bad override", 15, "link override"},
    {"empty rack", 16, "no child groups"},
    {"duplicate level names", 17, "share the name"},
    {"self child", 18, "itself"},
    {"too many levels", 19, "at most"},
    {"uniform too large", 20, "no groups"},
};

class TopologyValidateErrors : public ::testing::TestWithParam<BreakageRow> {};

} // namespace

TEST_P(TopologyValidateErrors, validateErrors)
{
    const int breakage = GetParam().breakage;
    const std::string &needle = GetParam().needle;
    Topology t = nonUniform();
    bool reindex = true;
    switch (breakage) {
    case 0: t.levels.clear(); break;
    case 1: t.levels[1].link.bandwidth = 0; break;
    case 2: t.levels[0].link.bandwidth = std::numeric_limits<double>::quiet_NaN(); break;
    case 3: t.levels[2].link.latency = -1e-6; break;
    case 4: t.levels[2].link.oversubscription = 0.5; break;
    case 5: t.groups[6].devices.clear(); break;
    case 6: t.groups[6].deviceType = 3; break;
    case 7: t.groups[1].children.push_back(42); break;
    case 8: t.groups[4].children.push_back(3); break;
    case 9: t.groups[1].children.push_back(0); break;
    case 10: t.groups.push_back(node("orphan", 2)); break;
    case 11: t.groups[6].devices.push_back(0); reindex = false; break;
    case 12:  // a rack "rx" hung under rack r0
        t.groups.push_back(node("n", 1));
        t.groups.push_back(inner("rx", 1, {10}));
        t.groups[4].children.push_back(11);
        break;
    case 13: t.groups[3].children = {1}; t.root = 4; break;
    case 14: t.deviceTypes.clear(); break;
    case 15: t.groups[4].linkOverride = linkOf(-1, 1); break;
    case 16: t.groups.push_back(inner("r2", 1, {})); t.groups[3].children.push_back(10); break;
    case 17: t.levels[2].name = "node"; break;
    case 18: t.groups[4].children.push_back(4); break;
    case 19: t.levels.resize(Topology::maxLevels + 1, t.levels[2]); break;
    case 20:
        t = Topology::uniform("huge", gpu(), {{"node", 1024, linkOf(1, 1)}, {"rack", 2048, linkOf(1, 1)}});
        reindex = false;
        break;
    }
    if (reindex)
        t.reindex();  // must not crash or hang on a broken tree
    const std::string why = t.validate();
    ASSERT_TRUE(why.find(needle) != std::string::npos) << why.c_str();
}

INSTANTIATE_TEST_SUITE_P(Rows, TopologyValidateErrors, ::testing::ValuesIn(breakageRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(Topology, levelMatchesReferenceOnLargeTree)
{
    // 16384 devices: 8 per node, 16 nodes per rack, 8 racks per pod, 16 pods.
    const Topology t = Topology::uniform(
        "big", gpu(),
        {{"node", 8, linkOf(450, 1)}, {"rack", 16, linkOf(50, 2)}, {"pod", 8, linkOf(50, 3)},
         {"spine", 16, linkOf(25, 5, 2)}});
    ASSERT_EQ(t.deviceCount(), 16384);
    ASSERT_EQ(t.validate(), std::string());
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> pick(0, t.deviceCount() - 1);
    std::vector<std::pair<int, int>> pairs(200000);
    for (auto &p : pairs)
        p = {pick(rng), pick(rng)};
    for (size_t i = 0; i < 20000; ++i)
        ASSERT_EQ(t.level(pairs[i].first, pairs[i].second), referenceLevel(t, pairs[i].first, pairs[i].second));
    // Hand check: device 8191 (pod 7's last) and 8192 (pod 8's first) meet at the spine.
    ASSERT_EQ(t.level(8191, 8192), 3);
    ASSERT_EQ(t.level(127, 128), 2);  // 128 devices per rack
    ASSERT_EQ(t.level(7, 8), 1);

    // Throughput of level(): informational, printed for the report.
    const int rounds = 50;
    long long sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r)
        for (const auto &p : pairs)
            sum += t.level(p.first, p.second);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(sum > 0);
    std::printf("level(): %.1f ns per call on 16384 devices (%d calls)\n", seconds * 1e9 / (rounds * pairs.size()),
                static_cast<int>(rounds * pairs.size()));
}

TEST(Topology, oneLevelCluster)
{
    // A single level: one node that is also the root.
    const Topology t = Topology::uniform("box", gpu(), {{"node", 4, linkOf(300, 1)}});
    ASSERT_EQ(t.validate(), std::string());
    ASSERT_EQ(t.deviceCount(), 4);
    ASSERT_EQ(t.level(0, 3), 0);
    ASSERT_EQ(t.levelsSpanned({0, 1, 2}), std::vector<int>{0});
    ASSERT_EQ(t.lcaGroup(1, 2), t.root);
}

TEST(Topology, fiveLevelCluster)
{
    // 2 * 2 * 2 * 2 * 2 = 32 devices; device 15 and 16 meet only at the root (level 4).
    std::vector<UniformLevel> levels;
    for (int l = 0; l < 5; ++l)
        levels.push_back({"l" + std::to_string(l), 2, linkOf(100.0 / (l + 1), l + 1)});
    const Topology t = Topology::uniform("five", gpu(), levels);
    ASSERT_EQ(t.validate(), std::string());
    ASSERT_EQ(t.deviceCount(), 32);
    ASSERT_EQ(t.level(15, 16), 4);
    ASSERT_EQ(t.level(7, 8), 3);
    ASSERT_EQ(t.level(3, 4), 2);
    ASSERT_EQ(t.level(1, 2), 1);
    ASSERT_EQ(t.level(0, 1), 0);
    ASSERT_EQ(t.groups[t.ancestor(31, 3)].name, std::string("l31"));  // 2 groups at level 3 under the root
}
