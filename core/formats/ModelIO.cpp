#include "ModelIO.h"

#include "ModelBuilder.h"
#include "ModelSource.h"

#include <filesystem>

namespace nest {

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
    return ModelSource(j).profile(origin, options);
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
    return ModelSource(*j).config(file);
}

} // namespace nest
