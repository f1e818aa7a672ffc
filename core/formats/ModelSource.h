#pragma once
// The model a workspace (or a pinned plan) names, as a typed value parsed once: a preset
// with overrides, full hyperparameters, an inline Hugging Face config.json, a measured
// nest-profile or a NEST artifact solver input (ModelIO.h, docs/formats.md (Model inputs)).
//
// It keeps the JSON it was read from, which is what it saves as (toJson), so that a file is
// written back as it was read, and what it parsed: the kind, the hyperparameters or the
// measured profile, or the reason the model does not load. A model that does not load is
// still a value (a workspace opens with it; the model panel shows why); profile() reports
// the reason, named as the loaders name it. Copies share the parse.
//
// The loaders name a model after its origin when the JSON does not (a profile without
// "name" is called after the file it came from; a Hugging Face config after its
// "_name_or_path" or the file); profile() and config() take that origin and apply it to
// the parsed value, so the result is what modelFromJson(toJson(), origin) gives. Only an
// artifact solver input is read at profile(): the artifact's sequence length and micro-batch
// come from its file name and the options.
#include "JsonUtil.h"
#include "ModelConfig.h"
#include "ModelIO.h"
#include "ModelProfile.h"
#include "Result.h"

#include <memory>
#include <optional>
#include <string>

namespace nest {

class ModelSource {
public:
    // No model: the empty object {}.
    ModelSource();
    // Parses a model object (or any JSON value: a non-object is kept and reported by
    // profile() as the model file loader reports it).
    explicit ModelSource(Json model);
    // {"preset": NAME}, with the run settings when given.
    static ModelSource preset(const std::string &name, std::optional<int> seqLength = std::nullopt,
                              std::optional<int> globalBatch = std::nullopt);
    // Full hyperparameters (modelConfigToJson).
    static ModelSource fromConfig(const ModelConfig &config);

    // What it was read from, for saving.
    const Json &toJson() const;
    // {} (or no object): the user has not picked a model.
    bool empty() const;
    ModelFileKind kind() const;
    // {"preset": NAME, ...}.
    bool isPreset() const;
    // True for a preset, our model file or a Hugging Face config (hyperparameters).
    bool hasHyperparameters() const;

    // The hyperparameters (a preset, our model file or a Hugging Face config named after
    // `origin`), or the reason there are none.
    Result<ModelConfig> config(const std::string &origin) const;
    // The per-layer profile with `options` applied; errors name `origin` as modelFromJson's.
    Result<ModelProfile> profile(const std::string &origin, const ModelOptions &options = {}) const;

    // The same model with another sequence length and global batch (a Hugging Face config
    // becomes our model file, named as config(origin) names it; a measured profile changes
    // its batch, and its sequence length only when the file gives none), or the reason it
    // would not load.
    Result<ModelSource> withRunSettings(int seqLength, int globalBatch, const std::string &origin) const;

    // True when both are copies of one parse (no loader ran in between): for tests.
    bool sharesParseWith(const ModelSource &other) const { return m_parsed == other.m_parsed; }

    // By what it says (the JSON), which determines everything parsed from it.
    bool operator==(const ModelSource &other) const;

private:
    // withRunSettings() of a measured profile or NEST artifact input: the global batch of a
    // profile may change; the sequence length only where the file does not give one.
    Result<ModelSource> measuredWithRunSettings(int seqLength, int globalBatch, const std::string &origin) const;

    struct Parsed;
    std::shared_ptr<const Parsed> m_parsed;
};

// A workspace's (or pinned plan's) "model" value: a preset name becomes {"preset": NAME};
// anything but a string or an object is a JsonError at `path`.
ModelSource modelSourceFromJson(const Json &m, const std::string &path);

// The model file a user imports, with the run settings they had (`before`) kept wherever
// the file does not set them itself. A Hugging Face config.json is converted to our model
// file named after the file (source `hfSource`), with the user's batch and sequence length
// (the latter capped to its position table); our model file keeps seq_length and
// global_batch when it names them; a measured profile is kept as it is.
struct RunSettings {
    int seqLength = 0;
    int globalBatch = 0;
};
ModelSource importedModel(const Json &file, const std::string &fileName, const std::string &hfSource,
                          const std::optional<RunSettings> &before);

} // namespace nest
