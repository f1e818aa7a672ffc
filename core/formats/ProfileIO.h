#pragma once
// Measured per-layer profiles: our "nest-profile" JSON (docs/formats.md (Model inputs)) and the NEST
// paper artifact's per-layer solver input (nodes/edges keyed by tensor width). Measured
// times win over FLOP-derived ones in the cost model (LayerProfile::measuredFwdTime).
#include "JsonUtil.h"
#include "ModelProfile.h"
#include "Result.h"
#include "Topology.h"

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

// The NEST artifact's solver input ("nodes"/"edges" keyed by tensor width, docs/formats.md).
// Every width the file lists is read from its own nodes[t] into LayerProfile::byWidth (per
// device: latencies, parameterSize, activationSize, and the TP all-reduce the rule derives
// from the edges); ModelProfile::tensorWidths lists them, and no other width is allowed. The
// base per-layer fields hold the smallest width scaled back to width 1 (for totals). Also
// read: optimizerAlgorithm, ep_degree x cp_degree (groupDevices), mbsInBatch,
// activationRecomputation. Latencies are milliseconds per micro-batch (the artifact's cycles /
// frequency in kHz). Sequence length from the file name (..._sl_4096_...), else the file's
// "seq_length", else `seqLengthHint`; micro-batch from the name (..._mbs_4_...), else 4096 /
// mbsInBatch.
Result<ModelProfile> profileFromArtifactJson(const Json &j, const std::string &origin,
                                             std::optional<int> seqLengthHint = std::nullopt);
// The cluster the artifact's input describes: `devices_per_level` (innermost first) with
// `bws` (bytes/s) and `latency_per_level` (s), `maxMemoryPerDevice` bytes on the artifact's
// TPUv4-like device; the levels must multiply to `maxDevices`. With ep_degree x cp_degree = k
// > 1 each planning device is a group of k devices (the file's numbers are per device of
// such a group), so level 0 has devices_per_level[0] / k of them.
Result<Topology> artifactClusterFromJson(const Json &j, const std::string &origin);

} // namespace nest
