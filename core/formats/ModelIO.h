#pragma once
// Loading a model from what a user names: a preset, our model file, a Hugging Face
// config.json, a measured nest-profile, or a NEST artifact solver input. The kind of file
// is detected from its content (docs/formats.md (Model inputs)):
//   has "model_type"                 -> Hugging Face config.json
//   "format": "nest-profile"         -> measured per-layer profile
//   has "nodes"                      -> NEST artifact solver input
//   otherwise                        -> our model file ({"preset": ...} or hyperparameters)
#include "ModelConfig.h"
#include "ModelProfile.h"
#include "Result.h"

#include <optional>
#include <string>

namespace nest {

struct ModelOptions {
    std::optional<int> seqLength;    // overrides the file's / preset's sequence length
    std::optional<int> globalBatch;  // overrides the global batch
};

enum class ModelFileKind { ModelConfig, HfConfig, Profile, Artifact };
ModelFileKind detectModelFileKind(const Json &j);

// Applies options to hyperparameters (a learned position table too short for a longer
// sequence grows with it) and validates. Errors name `origin`.
Result<ModelConfig> applyModelOptions(ModelConfig config, const ModelOptions &options,
                                      const std::string &origin);

// Any of the four file kinds. A measured profile (nest-profile or artifact) cannot change
// its sequence length: asking for another one is an error.
Result<ModelProfile> loadModelFile(const std::string &file, const ModelOptions &options = {});
// An existing file, else a preset name, else an error listing the presets.
Result<ModelProfile> resolveModel(const std::string &fileOrPreset, const ModelOptions &options = {});
// Hyperparameters only (our model file or a HF config.json), for the GUI's form.
Result<ModelConfig> loadModelConfig(const std::string &file);
// Parsed JSON text of any kind, for tests and files read once; `origin` names it in
// messages. A workspace's model is a ModelSource (ModelSource.h), parsed when it is read.
Result<ModelProfile> modelFromJson(const Json &j, const std::string &origin,
                                   const ModelOptions &options = {});

} // namespace nest
