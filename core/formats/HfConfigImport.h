#pragma once
// Hugging Face transformers config.json -> ModelConfig. Supported model_type values: gpt2,
// llama, mistral, mixtral, bert (keys as the transformers library writes them; see
// docs/formats.md (Model inputs)). Sequence length and global batch are not part of config.json:
// the defaults are min(max_position_embeddings, 4096) and 4096; callers override them.
#include "JsonUtil.h"
#include "ModelConfig.h"
#include "Result.h"

#include <string>

namespace nest {

// "gpt2, llama, mistral, mixtral, bert"
std::string hfSupportedModelTypes();

// `origin` names the source in messages ("FILE: at KEY: REASON") and, without
// "_name_or_path" in the JSON, gives the model its name (the file's stem, or its folder's
// name when the file is called config.json).
Result<ModelConfig> importHfConfig(const Json &j, const std::string &origin);
// The name and source importHfConfig gives a config read from `origin`.
std::string hfModelName(const Json &j, const std::string &origin);
std::string hfModelSource(const std::string &origin);

} // namespace nest
