#pragma once
// The set-ups many core tests share, written once (issue 52): the paper's clusters and model
// presets, and uniform plans built from a tp x pp x dp layout. A helper whose input does not
// resolve throws the reason: GoogleTest fails the test that asked with it, before that test
// uses an empty value.
#include "ClusterIO.h"
#include "ModelIO.h"
#include "PlanBuilder.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace fixtures {

// A preset, template key or file (resolveCluster).
inline nest::Topology cluster(const std::string &fileOrPreset)
{
    auto t = nest::resolveCluster(fileOrPreset);
    if (!t)
        throw std::runtime_error(fileOrPreset + ": " + t.error());
    return std::move(t).value();
}

// The paper's spine-leaf cluster of 64 H100: 8 nodes of 8, 4 nodes per leaf.
inline nest::Topology spineleaf64() { return cluster("paper-spineleaf-64"); }

// A model preset or file (resolveModel), with the sequence length and global batch given
// (nullopt: the preset's own).
inline nest::ModelProfile model(const std::string &fileOrPreset, std::optional<int> seqLength = std::nullopt,
                                std::optional<int> globalBatch = std::nullopt)
{
    nest::ModelOptions o;
    o.seqLength = seqLength;
    o.globalBatch = globalBatch;
    auto m = nest::resolveModel(fileOrPreset, o);
    if (!m)
        throw std::runtime_error(fileOrPreset + ": " + m.error());
    return std::move(m).value();
}

// Llama 2 7B (embedding, 32 blocks, head), by default at 4096 tokens and a batch of 512.
inline nest::ModelProfile llama2_7b(int seqLength = 4096, int globalBatch = 512)
{
    return model("llama2-7b", seqLength, globalBatch);
}

// tp x pp x dp, every other field its default (micro-batch 1, 1F1B, no ZeRO or recompute).
inline nest::UniformLayout uniformLayout(int tp, int pp, int dp, int globalBatch, int seqLength)
{
    nest::UniformLayout u;
    u.tp = tp;
    u.pp = pp;
    u.dp = dp;
    u.globalBatch = globalBatch;
    u.seqLength = seqLength;
    return u;
}

// buildUniformPlan(u, topo, model); throws its reason when it refuses.
inline nest::Plan uniformPlan(const nest::UniformLayout &u, const nest::Topology &topo, const nest::ModelProfile &model)
{
    auto plan = nest::buildUniformPlan(u, topo, model);
    if (!plan)
        throw std::runtime_error("buildUniformPlan: " + plan.error());
    return std::move(plan).value();
}

} // namespace fixtures
