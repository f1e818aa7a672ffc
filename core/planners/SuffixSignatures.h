#pragma once
// The best K plans (docs/planner.md, "The best K plans"): the id of a suffix's signature,
// made of its first stage's choice, the tier its boundary to the next stage crosses and the
// id of the rest. Two suffixes have one id exactly when their stage choices and boundary
// tiers agree, so the recurrence can keep, per cell, the best points of distinct signatures.
#include "FlatHashMap.h"
#include "StageConfig.h"

namespace nest {

class SuffixSignatures {
public:
    // The id of a suffix whose first stage has option `c`, whose boundary to the next stage
    // crosses `tier` (-1: none, the last stage) and whose rest has id `next` (0: none).
    int id(const StageConfig &c, int tier, int next);

private:
    FlatHashMap<int> m_sigIds;     // (stage config id, boundary tier, successor id) -> id
    FlatHashMap<int> m_configIds;  // StageConfig::key() -> id
    int m_sigCount = 0, m_configCount = 0;
};

} // namespace nest
