// The typed model (core/formats/ModelSource): parsed once, saved as it was read, and loading to what
// the model loaders give for every kind of model and every origin (names, messages).
#include "SourceDir.h"
#include "HfConfigImport.h"
#include "ModelBuilder.h"
#include "ModelSource.h"
#include "ProfileIO.h"
#include "Workspace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace nest;

namespace {

const std::string kSamples = std::string(NEST_SOURCE_DIR) + "/sample_configs/";

Json sample(const std::string &file)
{
    return readJsonFile(kSamples + file).value();
}

// Profiles compared through their full JSON form (every field written).
std::string text(const Result<ModelProfile> &p)
{
    return p ? profileToJson(*p).dump() : "error: " + p.error();
}

const std::vector<std::string> kOrigins = {"", "model", "workspace", "pinned plan 'a'", "dir/config.json",
                                           "x/llama_sl_2048_mbs_2.json"};

} // namespace

TEST(ModelSource, savesWhatItRead)
{
    const std::vector<Json> models = {
        Json{{"preset", "llama2-7b"}, {"seq_length", 4096}, {"global_batch", 512}},
        sample("models/llama2-13b.json"),
        sample("models/hf/gpt2.json"),
        sample("profiles/llama2-7b-example.json"),
        Json{{"preset", "llama2-7b"}, {"hidden", -1}},   // does not load: still kept as written
        Json::object(),
    };
    for (const Json &m : models) {
        const ModelSource s(m);
        ASSERT_EQ(s.toJson().dump(2), m.dump(2));
    }
    ASSERT_EQ(modelSourceFromJson(Json("bert-large"), "model").toJson(), (Json{{"preset", "bert-large"}}));
    ASSERT_TRUE(ModelSource().empty());
    ASSERT_EQ(ModelSource().toJson(), Json::object());
    ASSERT_THROW(modelSourceFromJson(Json(7), "plans[0].model"), JsonError);
}

// What ModelSource gives is what the loaders give on the same JSON under the same origin:
// hyperparameters through modelConfigFromJson / importHfConfig and buildProfile, a measured
// profile through profileFromJson, with the loaders' names taken from the origin.
TEST(ModelSource, profileIsTheLoadersForEveryKindAndOrigin)
{
    const Json preset{{"preset", "llama2-7b"}, {"seq_length", 4096}, {"global_batch", 512}};
    const Json hf = sample("models/hf/gpt2.json");
    Json unnamedHf = sample("models/hf/mistral-7b.json");
    unnamedHf.erase("_name_or_path");
    const Json profile = sample("profiles/llama2-7b-example.json");
    Json unnamed = profile;
    unnamed.erase("name");
    unnamed.erase("source");
    for (const std::string &origin : kOrigins) {
        SCOPED_TRACE(origin);
        ASSERT_EQ(text(ModelSource(preset).profile(origin)), text(buildProfile(modelConfigFromJson(preset, ""))));
        for (const Json &h : {hf, unnamedHf}) {
            const ModelSource s(h);
            ASSERT_EQ(s.kind(), ModelFileKind::HfConfig);
            ASSERT_EQ(text(s.profile(origin)), text(buildProfile(*importHfConfig(h, origin))));
            ASSERT_EQ(s.config(origin)->name, importHfConfig(h, origin)->name);
        }
        for (const Json &p : {profile, unnamed})
            ASSERT_EQ(text(ModelSource(p).profile(origin)), text(profileFromJson(p, origin)));
    }
    // With options: the run settings applied as modelFromJson applies them.
    ModelOptions mo;
    mo.seqLength = 2048;
    mo.globalBatch = 64;
    const Result<ModelProfile> p = ModelSource(preset).profile("w", mo);
    ASSERT_TRUE(p.ok()) << p.error();
    ASSERT_EQ(p->seqLength, 2048);
    ASSERT_EQ(p->globalBatch, 64);
    const Result<ModelProfile> measured = ModelSource(profile).profile("w", mo);
    ASSERT_FALSE(measured.ok());
    ASSERT_EQ(measured.error(), "w: a measured profile cannot change its sequence length (measured at 4096, asked for 2048)");
}

TEST(ModelSource, errorsNameTheOriginAsTheLoadersDo)
{
    const ModelSource bad(Json{{"preset", "llama2-7b"}, {"hidden", -1}});
    ASSERT_FALSE(bad.hasHyperparameters());
    ASSERT_EQ(bad.profile("w.json").error(), "w.json: at hidden: must be between 1 and 100000000, found -1");
    ASSERT_EQ(bad.profile("").error(), "at hidden: must be between 1 and 100000000, found -1");
    ASSERT_EQ(modelFromJson(bad.toJson(), "w.json").error(), bad.profile("w.json").error());
    Workspace w;
    w.model = bad;
    ASSERT_EQ(workspaceModel(w, "w.json").error(), "w.json: at model.hidden: must be between 1 and 100000000, found -1");
    ASSERT_EQ(ModelSource(sample("profiles/llama2-7b-example.json")).config("f").error(),
              "f: is a measured per-layer profile, not model hyperparameters");
}

// Parsed once: a workspace's copies (what a worker gets) and its pinned plans share the parse
// made when the file was read; nothing reads the JSON again.
TEST(ModelSource, copiesShareTheParse)
{
    auto w = loadWorkspace(kSamples + "workspaces/quickstart.nestws.json");
    ASSERT_TRUE(w.ok()) << w.error();
    const Workspace copy = *w;
    ASSERT_TRUE(copy.model.sharesParseWith(w->model));
    ASSERT_FALSE(ModelSource(w->model.toJson()).sharesParseWith(w->model));   // a second parse
    ASSERT_TRUE(ModelSource(w->model.toJson()) == w->model);                  // ... of the same model
}

TEST(ModelSource, sampleWorkspacesSaveAsTheyLoad)
{
    for (const auto &e : std::filesystem::directory_iterator(kSamples + "workspaces")) {
        SCOPED_TRACE(e.path().string());
        auto w = loadWorkspace(e.path().string());
        ASSERT_TRUE(w.ok()) << w.error();
        ASSERT_EQ(w->model.toJson(), readJsonFile(e.path().string())->at("model"));
        const std::string saved = workspaceToJson(*w).dump(2);
        auto again = workspaceFromJson(Json::parse(saved), "again");
        ASSERT_TRUE(again.ok()) << again.error();
        ASSERT_EQ(workspaceToJson(*again).dump(2), saved);
    }
}

TEST(ModelSource, runSettingsEdit)
{
    const ModelSource preset(Json{{"preset", "llama2-7b"}});
    const Result<ModelSource> longer = preset.withRunSettings(2048, 64, "model");
    ASSERT_TRUE(longer.ok()) << longer.error();
    ASSERT_EQ(longer->toJson(), (Json{{"preset", "llama2-7b"}, {"seq_length", 2048}, {"global_batch", 64}}));
    // A Hugging Face config becomes our model file, named as config() names it.
    const ModelSource hf(sample("models/hf/gpt2.json"));
    const Result<ModelSource> converted = hf.withRunSettings(512, 8, "model");
    ASSERT_TRUE(converted.ok()) << converted.error();
    ASSERT_EQ(converted->kind(), ModelFileKind::ModelConfig);
    ASSERT_EQ(converted->config("x")->name, hf.config("model")->name);
    ASSERT_EQ(converted->profile("x")->seqLength, 512);
    // Beyond gpt2's position table (1024): refused with the loader's reason, no path.
    const Result<ModelSource> tooLong = converted->withRunSettings(4096, 8, "model");
    ASSERT_FALSE(tooLong.ok());
    ASSERT_TRUE(!tooLong.error().empty() && tooLong.error().rfind("at ", 0) != 0) << tooLong.error();
    // A measured profile (measured at 4096 tokens, batch 4096): its batch may change, its
    // sequence length not (issue 25, point 3).
    const ModelSource measured(sample("profiles/llama2-7b-example.json"));
    const Result<ModelSource> smaller = measured.withRunSettings(4096, 8, "model");
    ASSERT_TRUE(smaller.ok()) << smaller.error();
    ASSERT_EQ(smaller->profile("model")->globalBatch, 8);
    const Result<ModelSource> shorter = measured.withRunSettings(2048, 4096, "model");
    ASSERT_FALSE(shorter.ok());
    ASSERT_NE(shorter.error().find("measured at sequence length 4096"), std::string::npos) << shorter.error();
}

TEST(ModelSource, artifactKeepsItsFileNameAndTakesAMissingSequenceLength)
{
    // The bundled NEST artifact input names its shape in its file name only (_mbs_1_sl_4096_).
    const std::string name = "ilp_llama2_llama2_mbs_1_sl_4096_dev64.json";
    const Json file = sample("profiles/" + name);
    ASSERT_FALSE(ModelSource(file).profile("model").ok());  // embedded without its name: unknown
    const ModelSource imported = importedModel(file, "/somewhere/" + name, "", std::nullopt);
    ASSERT_EQ(imported.toJson().at("nest_file_name"), name);
    const Result<ModelProfile> p = imported.profile("model");
    ASSERT_TRUE(p.ok()) << p.error();
    ASSERT_EQ(p->seqLength, 4096);
    // The name gives the length: another one is refused.
    ASSERT_FALSE(imported.withRunSettings(2048, p->globalBatch, "model").ok());
    // A copy whose name gives none takes the user's value (the window's Sequence length).
    const Result<ModelSource> given = ModelSource(file).withRunSettings(2048, p->globalBatch, "model");
    ASSERT_TRUE(given.ok()) << given.error();
    ASSERT_EQ(given->profile("model")->seqLength, 2048);
}

TEST(ModelSource, importKeepsTheUsersRunSettings)
{
    const ModelSource gpt2 = importedModel(sample("models/hf/gpt2.json"), "gpt2.json", "HF gpt2.json",
                                           RunSettings{4096, 512});
    ASSERT_EQ(gpt2.kind(), ModelFileKind::ModelConfig);
    const Result<ModelProfile> p = gpt2.profile("model");
    ASSERT_TRUE(p.ok()) << p.error();
    ASSERT_EQ(p->seqLength, 1024);   // capped to n_positions
    ASSERT_EQ(p->globalBatch, 512);
    ASSERT_EQ(p->source, "HF gpt2.json");
    const Json file = sample("models/llama2-13b.json");
    const ModelSource ours = importedModel(file, "llama2-13b.json", "", RunSettings{2048, 64});
    ASSERT_EQ(ours.toJson().at("global_batch"), file.contains("global_batch") ? file.at("global_batch") : Json(64));
    const Json profile = sample("profiles/llama2-7b-example.json");
    ASSERT_EQ(importedModel(profile, "p.json", "", RunSettings{2048, 64}).toJson(), profile);
}
