#pragma once
// How a MoE router picks a token's experts (issue 46): top-k of `experts`, and with
// group-limited routing (DeepSeek-V2/V3's n_group / topk_group; Megatron-Core's
// --moe-router-num-groups / --moe-router-group-topk) only inside the `groupTopK` of `groups`
// contiguous expert groups the token picked first. ModelConfig and ModelProfile both give
// it (routing()); the dispatch cost reads it (Collectives.h, remoteDomainsPerToken()).

namespace nest {

struct ExpertRouting {
    int experts = 1, topK = 1;
    int groups = 0, groupTopK = 0;  // 0: unlimited routing
    // Whether the groups limit anything: more than one group, and fewer picked than there are.
    bool groupLimited() const { return groups > 1 && groupTopK > 0 && groupTopK < groups; }
};

} // namespace nest
