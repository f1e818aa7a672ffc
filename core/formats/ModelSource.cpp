#include "ModelSource.h"

#include "HfConfigImport.h"
#include "ModelBuilder.h"
#include "ProfileIO.h"

#include <algorithm>
#include <filesystem>

namespace nest {

// What a model JSON parses to, once. Messages are the loaders' with an empty origin
// ("at PATH: REASON"); named() puts an origin in front as formatError does.
struct ModelSource::Parsed {
    Json json;
    ModelFileKind kind = ModelFileKind::ModelConfig;
    std::optional<ModelConfig> config;     // ModelConfig, HfConfig (named for origin "")
    std::optional<ModelProfile> measured;  // Profile (named for origin "")
    std::string error;                     // why it does not parse (not for Artifact)
};

namespace {

std::string named(const std::string &message, const std::string &origin)
{
    return origin.empty() ? message : origin + ": " + message;
}

Result<ModelProfile> applyToProfile(ModelProfile p, const ModelOptions &options, const std::string &origin)
{
    if (options.seqLength && *options.seqLength != p.seqLength)
        return Result<ModelProfile>::failure(formatError(
            origin, "", "a measured profile cannot change its sequence length (measured at " +
                            std::to_string(p.seqLength) + ", asked for " +
                            std::to_string(*options.seqLength) + ")"));
    if (options.globalBatch) {
        if (*options.globalBatch <= 0)
            return Result<ModelProfile>::failure(formatError(origin, "", "the global batch must be positive"));
        p.globalBatch = *options.globalBatch;
    }
    return p;
}

} // namespace

ModelSource::ModelSource()
    : ModelSource(Json::object())
{
}

ModelSource::ModelSource(Json model)
{
    auto p = std::make_shared<Parsed>();
    p->json = std::move(model);
    p->kind = detectModelFileKind(p->json);
    switch (p->kind) {
    case ModelFileKind::ModelConfig:
        try {
            p->config = modelConfigFromJson(p->json, "");
        } catch (const JsonError &e) {
            p->error = formatError("", e.path(), e.reason());
        }
        break;
    case ModelFileKind::HfConfig:
        if (Result<ModelConfig> c = importHfConfig(p->json, ""))
            p->config = std::move(c).value();
        else
            p->error = c.error();
        break;
    case ModelFileKind::Profile:
        if (Result<ModelProfile> m = profileFromJson(p->json, ""))
            p->measured = std::move(m).value();
        else
            p->error = m.error();
        break;
    case ModelFileKind::Artifact:
        break;   // read at profile(): its file name says the sequence length and micro-batch
    }
    m_parsed = std::move(p);
}

ModelSource ModelSource::preset(const std::string &name, std::optional<int> seqLength,
                                std::optional<int> globalBatch)
{
    Json j{{"preset", name}};
    if (seqLength)
        j["seq_length"] = *seqLength;
    if (globalBatch)
        j["global_batch"] = *globalBatch;
    return ModelSource(std::move(j));
}

ModelSource ModelSource::fromConfig(const ModelConfig &config)
{
    return ModelSource(modelConfigToJson(config));
}

const Json &ModelSource::toJson() const
{
    return m_parsed->json;
}

bool ModelSource::empty() const
{
    return !m_parsed->json.is_object() || m_parsed->json.empty();
}

ModelFileKind ModelSource::kind() const
{
    return m_parsed->kind;
}

bool ModelSource::isPreset() const
{
    const Json &j = m_parsed->json;
    return j.is_object() && j.contains("preset") && j.at("preset").is_string();
}

bool ModelSource::hasHyperparameters() const
{
    return m_parsed->config.has_value();
}

bool ModelSource::operator==(const ModelSource &other) const
{
    return m_parsed == other.m_parsed || m_parsed->json == other.m_parsed->json;
}

Result<ModelConfig> ModelSource::config(const std::string &origin) const
{
    const Parsed &p = *m_parsed;
    if (p.kind == ModelFileKind::Profile || p.kind == ModelFileKind::Artifact)
        return Result<ModelConfig>::failure(
            formatError(origin, "", "is a measured per-layer profile, not model hyperparameters"));
    if (!p.config)
        return Result<ModelConfig>::failure(named(p.error, origin));
    ModelConfig c = *p.config;
    if (p.kind == ModelFileKind::HfConfig) {
        c.name = hfModelName(p.json, origin);
        c.source = hfModelSource(origin);
    }
    return c;
}

Result<ModelProfile> ModelSource::profile(const std::string &origin, const ModelOptions &options) const
{
    const Parsed &p = *m_parsed;
    switch (p.kind) {
    case ModelFileKind::Artifact: {
        auto m = profileFromArtifactJson(p.json, origin, options.seqLength);
        if (!m)
            return m;
        return applyToProfile(std::move(m).value(), options, origin);
    }
    case ModelFileKind::Profile: {
        if (!p.measured)
            return Result<ModelProfile>::failure(named(p.error, origin));
        ModelProfile m = *p.measured;
        // As profileFromJson names a profile read from `origin`.
        if (!has(p.json, "name")) {
            m.name = std::filesystem::path(origin).stem().string();
            if (m.name.empty())
                m.name = "profile";
        }
        if (!has(p.json, "source"))
            m.source = origin;
        return applyToProfile(std::move(m), options, origin);
    }
    case ModelFileKind::HfConfig:
    case ModelFileKind::ModelConfig:
        break;
    }
    Result<ModelConfig> c = config(origin);
    if (!c)
        return Result<ModelProfile>::failure(c.error());
    auto applied = applyModelOptions(std::move(c).value(), options, origin);
    if (!applied)
        return Result<ModelProfile>::failure(applied.error());
    return buildProfile(*applied);
}

Result<ModelSource> ModelSource::withRunSettings(int seqLength, int globalBatch, const std::string &origin) const
{
    const Parsed &p = *m_parsed;
    if (p.kind == ModelFileKind::Artifact || p.kind == ModelFileKind::Profile)
        return measuredWithRunSettings(seqLength, globalBatch, origin);
    if (!p.config)
        return Result<ModelSource>::failure("the model has no hyperparameters");
    Json j = p.kind == ModelFileKind::HfConfig ? modelConfigToJson(*config(origin)) : p.json;
    j["seq_length"] = seqLength;
    j["global_batch"] = globalBatch;
    ModelSource next(std::move(j));
    if (!next.m_parsed->config) {
        // The reason alone, as modelConfigFromJson's JsonError says it.
        try {
            (void)modelConfigFromJson(next.toJson(), "");
        } catch (const JsonError &e) {
            return Result<ModelSource>::failure(e.reason());
        }
    }
    return next;
}

Result<ModelSource> ModelSource::measuredWithRunSettings(int seqLength, int globalBatch,
                                                         const std::string &origin) const
{
    const Parsed &p = *m_parsed;
    auto current = profile(origin);
    Json j = p.json;
    if (!current) {
        // An artifact whose sequence length nothing gives: the user's value is the one it lacks.
        if (p.kind != ModelFileKind::Artifact)
            return Result<ModelSource>::failure(current.error());
        j["seq_length"] = seqLength;
        ModelSource next(std::move(j));
        if (auto loaded = next.profile(origin); !loaded)
            return Result<ModelSource>::failure(loaded.error());
        return next;
    }
    if (seqLength != current->seqLength) {
        // An artifact takes "seq_length" only when its file name gives none (ProfileIO.cpp).
        const auto refused = [&] {
            return Result<ModelSource>::failure(
                "the profile was measured at sequence length " + std::to_string(current->seqLength) +
                "; a measured profile keeps it (import one measured at " + std::to_string(seqLength) + ")");
        };
        if (p.kind != ModelFileKind::Artifact)
            return refused();
        j["seq_length"] = seqLength;
        auto retried = ModelSource(j).profile(origin);
        if (!retried || retried->seqLength != seqLength)
            return refused();
    }
    if (globalBatch != current->globalBatch) {
        if (p.kind == ModelFileKind::Artifact)
            return Result<ModelSource>::failure(
                "a NEST artifact input's global batch is its micro-batch x mbsInBatch (" +
                std::to_string(current->globalBatch) + ")");
        j["global_batch"] = globalBatch;
    }
    ModelSource next(std::move(j));
    if (auto loaded = next.profile(origin); !loaded)
        return Result<ModelSource>::failure(loaded.error());
    return next;
}

ModelSource modelSourceFromJson(const Json &m, const std::string &path)
{
    if (m.is_string())
        return ModelSource(Json{{"preset", m.get<std::string>()}});
    if (m.is_object())
        return ModelSource(m);
    throw JsonError(path, "expected a preset name or a model object");
}

ModelSource importedModel(const Json &file, const std::string &fileName, const std::string &hfSource,
                          const std::optional<RunSettings> &before)
{
    const ModelFileKind kind = detectModelFileKind(file);
    if (kind == ModelFileKind::HfConfig) {
        auto config = importHfConfig(file, fileName);
        if (!config)
            return ModelSource(file);
        ModelConfig c = *config;
        c.source = hfSource;
        if (before) {
            c.globalBatch = before->globalBatch;
            c.seqLength = c.maxPositions > 0 ? std::min(before->seqLength, c.maxPositions) : before->seqLength;
        }
        return validate(c).empty() ? ModelSource::fromConfig(c) : ModelSource(file);
    }
    if (kind == ModelFileKind::Artifact && file.is_object() && !file.contains("nest_file_name")) {
        // The artifact names its micro-batch and sequence length in the file name only: keep
        // the name with the embedded copy, so it plans as the file does (ProfileIO.cpp).
        Json j = file;
        j["nest_file_name"] = std::filesystem::path(fileName).filename().string();
        return ModelSource(std::move(j));
    }
    if (kind != ModelFileKind::ModelConfig || !before || !file.is_object())
        return ModelSource(file);
    Json j = file;
    if (!j.contains("global_batch"))
        j["global_batch"] = before->globalBatch;
    if (!j.contains("seq_length")) {
        j["seq_length"] = before->seqLength;
        if (!ModelSource(j).hasHyperparameters())
            j.erase("seq_length");   // beyond the file's position table: the file's own
    }
    return ModelSource(std::move(j));
}

} // namespace nest
