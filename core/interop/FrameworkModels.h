#pragma once
// Which models a framework version can build as planned (issue 47). A launch file that names
// a model the framework does not have makes it train another one (torchtitan builds its
// `debugmodel` when no flavor is named, NeMo's GPT entry point cannot build BERT), so the
// export refuses those, with or without --strict, and says why.
#include "LaunchContext.h"

#include <optional>
#include <string>

namespace nest {

// A model of torchtitan@6404b932's registry (torchtitan/models/*/__init__.py) with the shape
// its TransformerModelArgs build.
struct TorchtitanFlavor {
    const char *name;      // model.name ("llama3")
    const char *flavor;    // model.flavor ("8B")
    int layers, hidden, heads, kvHeads, ffnHidden, vocab;
};

// The registered flavor whose shape is the planned model's (dense Llama-style: SwiGLU,
// RMSNorm, RoPE, untied embeddings, no biases, every width equal), if any.
std::optional<TorchtitanFlavor> torchtitanFlavor(const ModelShape &m);

// Why `format` cannot build the planned model as planned ("" when it can). `pipelineStages`
// is the exported pipeline depth.
std::string frameworkModelProblem(ExportFormat format, const ModelShape &m, int pipelineStages);

} // namespace nest
