#pragma once
// Measured per-layer profiles: our "nest-profile" JSON (docs/formats.md (Model inputs)) and the NEST
// paper artifact's per-layer solver input (nodes/edges keyed by tensor width). Measured
// times win over FLOP-derived ones in the cost model (LayerProfile::measuredFwdTime).
#include "JsonUtil.h"
#include "ModelProfile.h"
#include "Result.h"

#include <optional>
#include <string>

namespace nest {

// {"format": "nest-profile", "seq_length", "micro_batch", "layers": [...], ...}. Times,
// FLOPs and activation/communication bytes in the file are per micro-batch of micro_batch
// samples; the profile holds them per sample. `origin` names the file in messages.
Result<ModelProfile> profileFromJson(const Json &j, const std::string &origin);
// Writes micro_batch 1 and every field, so profileFromJson(profileToJson(p)) == p up to
// the rounding of seconds <-> milliseconds.
Json profileToJson(const ModelProfile &p);

// The NEST artifact's solver input ("nodes"/"edges" keyed by tensor width). Uses nodes["1"]
// (tensor width 1); without it the smallest width t, scaled back to width 1 (latency * t,
// parameters * t for tensor-parallelised nodes) with a note. Latencies are read as
// milliseconds per micro-batch (the artifact's cycles / frequency-in-kHz). Sequence length
// and micro-batch size come from the file name ("..._mbs_4_sl_4096_...") or
// `seqLengthHint`; the micro-batch size otherwise is 4096 / mbsInBatch.
Result<ModelProfile> profileFromArtifactJson(const Json &j, const std::string &origin,
                                             std::optional<int> seqLengthHint = std::nullopt);

} // namespace nest
