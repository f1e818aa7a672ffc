#pragma once
// What every framework writer gets (FrameworkExport.cpp builds it): the exported plan and
// its shape, the rank mapping, the model's shape, the framework profile whose overlap the
// cost model assumed, the times, and the header lines every launch file starts with.
#include "FrameworkExport.h"
#include "FrameworkProfile.h"

#include <string>
#include <vector>

namespace nest {

// The model's architecture as the frameworks' shape flags need it.
struct ModelShape {
    int layers = 0;            // transformer blocks
    int hidden = 0, ffnHidden = 0, heads = 0, kvHeads = 0, vocab = 0;
    int seqLength = 0, maxPositions = 0;
    int experts = 1, topK = 1;
    int routerGroups = 0, routerGroupTopK = 0;  // group-limited routing (0: none)
    bool gatedMlp = false, rmsNorm = false, rotary = false, linearBias = true, tiedEmbeddings = true;
    std::string family;
    std::vector<std::string> guessed;  // fields a measured profile does not give
};
ModelShape modelShape(const ExportRequest &request);

struct LaunchContext {
    const ExportRequest &request;
    const ExportResult &result;          // runnable, reports (files not yet written)
    ExportFormat format;
    const FrameworkProfile &profile;     // overlap the cost model assumed
    ModelShape shape;
    std::string mainName;                // the main file's name (files[0])
    std::string stem;                    // side files: STEM.ranks.json, STEM.hostfile
    const UniformLayout &layout() const { return result.runnable.layout; }
    const RankMapping &ranks() const { return result.runnable.ranks; }
    int microBatches() const { return result.runnable.plan.numMicroBatches(); }
    // The header: generator, plan, cluster, predicted time, every change and note, and the
    // version whose flags are used. Lines without a comment prefix.
    std::vector<std::string> headerLines(const std::string &versionLine) const;
};

// `lines` prefixed with `prefix` ("# "), one per line; each line made one line first
// (oneLine(): a newline in a model, cluster or file name must not end the comment).
std::string commentBlock(const std::vector<std::string> &lines, const std::string &prefix = "# ");

// The rank map JSON (RankMapping::toJson plus the framework, the order flag and the
// predicted times) and the hostfile: the side files every launcher export writes.
std::vector<ExportFile> rankSideFiles(const LaunchContext &c, const std::string &framework);

// The bash lines that pick this node's rank block and GPUs: NODE_RANK (from the
// environment or Slurm), a case over node ranks exporting CUDA_VISIBLE_DEVICES and the
// expected host, and a warning when the host differs. Host names are shell-quoted
// (shellQuote()), MASTER_ADDR defaults to ${HOSTS[0]}.
std::string nodeSelectionBash(const LaunchContext &c);

// `exec torchrun` on this node (the variables nodeSelectionBash sets) of `program` (the
// script or `-m module` with its arguments, shell-quoted), passing on the launch script's
// own arguments.
std::string torchrunExec(const std::string &program);

// The writers (one file pair each).
std::vector<ExportFile> writeMegatron(const LaunchContext &c);
std::vector<ExportFile> writeNemo(const LaunchContext &c);
std::vector<ExportFile> writeDeepSpeed(const LaunchContext &c);
std::vector<ExportFile> writeTorchtitan(const LaunchContext &c);
std::vector<ExportFile> writeNestArtifact(const LaunchContext &c);

} // namespace nest
