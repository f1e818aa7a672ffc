#include "ModelIO.h"

#include "HfConfigImport.h"
#include "ModelBuilder.h"
#include "ProfileIO.h"

#include <filesystem>

namespace nest {

namespace {

Result<ModelProfile> applyToProfile(ModelProfile p, const ModelOptions &options,
                                    const std::string &origin)
{
    if (options.seqLength && *options.seqLength != p.seqLength)
        return Result<ModelProfile>::failure(formatError(
            origin, "", "a measured profile cannot change its sequence length (measured at " +
                            std::to_string(p.seqLength) + ", asked for " +
                            std::to_string(*options.seqLength) + ")"));
    if (options.globalBatch) {
        if (*options.globalBatch <= 0)
            return Result<ModelProfile>::failure(
                formatError(origin, "", "the global batch must be positive"));
        p.globalBatch = *options.globalBatch;
    }
    return p;
}

Result<ModelConfig> configFromJson(const Json &j, const std::string &origin)
{
    switch (detectModelFileKind(j)) {
    case ModelFileKind::HfConfig:
        return importHfConfig(j, origin);
    case ModelFileKind::ModelConfig:
        try {
            return modelConfigFromJson(j, "");
        } catch (const JsonError &e) {
            return Result<ModelConfig>::failure(formatError(origin, e.path(), e.reason()));
        }
    case ModelFileKind::Profile:
    case ModelFileKind::Artifact:
        break;
    }
    return Result<ModelConfig>::failure(formatError(
        origin, "", "is a measured per-layer profile, not model hyperparameters"));
}

} // namespace

ModelFileKind detectModelFileKind(const Json &j)
{
    if (!j.is_object())
        return ModelFileKind::ModelConfig;  // modelConfigFromJson reports the type error
    // Hugging Face configs name their model_type; keys only transformers writes route a
    // config without one to the importer too, so that its message names model_type.
    for (const char *key : {"model_type", "architectures", "transformers_version", "_name_or_path",
                            "num_hidden_layers", "n_layer"})
        if (j.contains(key))
            return ModelFileKind::HfConfig;
    if (j.contains("format") && j.at("format") == "nest-profile")
        return ModelFileKind::Profile;
    if (j.contains("nodes"))
        return ModelFileKind::Artifact;
    return ModelFileKind::ModelConfig;
}

Result<ModelConfig> applyModelOptions(ModelConfig config, const ModelOptions &options,
                                      const std::string &origin)
{
    if (options.seqLength) {
        const bool learned = config.family == "gpt" || config.family == "bert";
        config.seqLength = *options.seqLength;
        if (learned && config.maxPositions < config.seqLength)
            config.maxPositions = config.seqLength;
    }
    if (options.globalBatch)
        config.globalBatch = *options.globalBatch;
    if (const ConfigProblem p = findProblem(config); !p.reason.empty())
        return Result<ModelConfig>::failure(formatError(origin, "", p.reason));
    return config;
}

Result<ModelProfile> modelFromJson(const Json &j, const std::string &origin, const ModelOptions &options)
{
    switch (detectModelFileKind(j)) {
    case ModelFileKind::Profile: {
        auto p = profileFromJson(j, origin);
        if (!p)
            return p;
        return applyToProfile(std::move(p).value(), options, origin);
    }
    case ModelFileKind::Artifact: {
        auto p = profileFromArtifactJson(j, origin, options.seqLength);
        if (!p)
            return p;
        return applyToProfile(std::move(p).value(), options, origin);
    }
    case ModelFileKind::HfConfig:
    case ModelFileKind::ModelConfig:
        break;
    }
    auto config = configFromJson(j, origin);
    if (!config)
        return Result<ModelProfile>::failure(config.error());
    auto applied = applyModelOptions(std::move(config).value(), options, origin);
    if (!applied)
        return Result<ModelProfile>::failure(applied.error());
    return buildProfile(*applied);
}

Result<ModelProfile> loadModelFile(const std::string &file, const ModelOptions &options)
{
    auto j = readJsonFile(file);
    if (!j)
        return Result<ModelProfile>::failure(j.error());
    return modelFromJson(*j, file, options);
}

Result<ModelProfile> resolveModel(const std::string &fileOrPreset, const ModelOptions &options)
{
    std::error_code ec;
    if (std::filesystem::exists(fileOrPreset, ec))
        return loadModelFile(fileOrPreset, options);
    auto preset = modelPreset(fileOrPreset);
    if (!preset)
        return Result<ModelProfile>::failure("'" + fileOrPreset +
                                             "' is neither an existing file nor a model preset "
                                             "(presets: " + modelPresetNames() + ")");
    auto applied = applyModelOptions(std::move(preset).value(), options, fileOrPreset);
    if (!applied)
        return Result<ModelProfile>::failure(applied.error());
    return buildProfile(*applied);
}

Result<ModelConfig> loadModelConfig(const std::string &file)
{
    auto j = readJsonFile(file);
    if (!j)
        return Result<ModelConfig>::failure(j.error());
    return configFromJson(*j, file);
}

Json modelSourceFromJson(const Json &m, const std::string &path)
{
    if (m.is_string())
        return Json{{"preset", m.get<std::string>()}};
    if (m.is_object())
        return m;
    throw JsonError(path, "expected a preset name or a model object");
}

} // namespace nest
