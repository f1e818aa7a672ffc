#pragma once
// Incumbent seeding (docs/planner.md, "Incumbent seeding"): before the recurrence, a quick
// plan of each 1F1B/GPipe point: per width, a pipeline of that width that fills the
// positions, cut by compute, each stage with a good feasible option; valued with the DP's
// own arithmetic (so exactly evaluate()'s value), so the bounds cut from the first point on.
// Only ever lowers the incumbent to a real plan's value; the optimum is unchanged.
#include "SearchState.h"
#include "SuffixBounds.h"

#include <vector>

namespace nest {

class IncumbentSeed {
public:
    IncumbentSeed(SearchState &s, SuffixBounds &bounds) : m_s(s), m_bounds(bounds) {}

    // The seeds of the current point `cfg` (after NestPlanner's setupConfig(cfg)).
    void seedPoint(const OuterConfig &cfg);

private:
    SearchState &m_s;
    SuffixBounds &m_bounds;
    std::vector<StageChoice> m_seedChunks;            // the uniform pipeline
    std::vector<std::vector<OptCost>> m_seedCosts;    // feasible options per stage
    double m_seedT = 0;                               // the pipeline's max t
    StagePlan m_seedStage;                            // scratch
    std::vector<int> m_cutColumn;                     // balancedCuts(): (s, j) -> its maxima
    std::vector<std::vector<double>> m_cutMaxima;     // balancedCuts(): running maxima
    std::vector<double> m_cutLast;                    // balancedCuts(): the last stage's value per j

    double seedValue(int wIdx);
    double fastestOption(int wIdx, int s, int stages, int j, int jEnd);
    bool balancedCuts(int wIdx, int stages, double high);
    void cutByCompute(int stages);
    bool costSeedStages(int wIdx, double weight);
    bool pickSeedOptions(int wIdx, double &maxT, double &maxE);
};

} // namespace nest
