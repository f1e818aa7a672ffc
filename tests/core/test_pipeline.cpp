// core/cost/Pipeline.h (issue 20): the pipeline formula against hand-computed values, and the
// Pareto front against its definition, checked by brute force over every pair of points.
#include "Pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using namespace nest;

namespace {

struct Pt {
    double t, e;
    int id;
};

// The definition: p is on the front when no other point is at most as large in both t and e
// and smaller in one, or equal in both with a smaller id.
std::vector<Pt> frontByDefinition(const std::vector<Pt> &points)
{
    std::vector<Pt> out;
    for (const Pt &p : points) {
        bool dominated = false;
        for (const Pt &q : points)
            if (&p != &q && q.t <= p.t && q.e <= p.e && (q.t < p.t || q.e < p.e || q.id < p.id))
                dominated = true;
        if (!dominated)
            out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const Pt &a, const Pt &b) { return a.t < b.t; });
    return out;
}

} // namespace

TEST(Pipeline, weights)
{
    // 1F1B with m = 16 micro-batches on S = 4 stages: 16 + 3 = 19 micro-batch times.
    EXPECT_EQ(pipelineWeight(16, 4), 19.0);
    EXPECT_EQ(pipelineWeight(1, 1), 1.0);
    // Interleaved, v = 2 chunks: the bubble (S - 1) shrinks by v: 16 + 3 / 2 = 17.5.
    EXPECT_EQ(interleavedWeight(16, 4, 2), 17.5);
    EXPECT_EQ(interleavedWeight(8, 2, 3), 8.0 + 1.0 / 3.0);
    // T = 19 * 0.5 s + 2 s.
    EXPECT_EQ(iterationSeconds(pipelineWeight(16, 4), 0.5, 2.0), 11.5);
}

TEST(Pipeline, frontMatchesItsDefinition)
{
    std::mt19937 rng(20);
    for (int round = 0; round < 200; ++round) {
        // Few distinct values, so ties in t, in e and in both occur often.
        std::uniform_int_distribution<int> value(0, 6);
        std::vector<Pt> points;
        const int n = 1 + round % 25;
        for (int i = 0; i < n; ++i)
            points.push_back({double(value(rng)), double(value(rng)), i});
        const std::vector<Pt> expected = frontByDefinition(points);
        std::vector<Pt> candidates = points, front{{-1, -1, -1}};  // appended after what is there
        appendParetoFront(candidates, front, [](const Pt &a, const Pt &b) { return a.id < b.id; });
        ASSERT_EQ(front.size(), expected.size() + 1) << "round " << round;
        EXPECT_EQ(front[0].id, -1);
        for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_EQ(front[i + 1].id, expected[i].id) << "round " << round << ", point " << i;
            if (i > 0) {  // sorted by t, e strictly falling
                EXPECT_LT(front[i].t, front[i + 1].t);
                EXPECT_GT(front[i].e, front[i + 1].e);
            }
        }
    }
}

TEST(Pipeline, tiesKeepTheFirstByTheTieOrder)
{
    std::vector<Pt> candidates{{1, 1, 7}, {1, 1, 3}, {1, 1, 5}, {2, 0.5, 9}};
    std::vector<Pt> front;
    appendParetoFront(candidates, front, [](const Pt &a, const Pt &b) { return a.id < b.id; });
    ASSERT_EQ(front.size(), 2u);
    EXPECT_EQ(front[0].id, 3);
    EXPECT_EQ(front[1].id, 9);
    // A reversed tie order keeps the other end.
    candidates = {{1, 1, 7}, {1, 1, 3}, {1, 1, 5}};
    front.clear();
    appendParetoFront(candidates, front, [](const Pt &a, const Pt &b) { return a.id > b.id; });
    ASSERT_EQ(front.size(), 1u);
    EXPECT_EQ(front[0].id, 7);
}
