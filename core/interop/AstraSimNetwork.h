#pragma once
// ASTRA-sim's analytical network configuration (YAML), one entry per dimension, innermost
// first:
//   topology: [ Ring, FullyConnected, Switch ]
//   npus_count: [ 8, 4, 16 ]       # NPUs per dimension; the product is the NPU count
//   bandwidth: [ 400.0, 50.0, 25.0 ]  # GB/s per link and direction
//   latency: [ 100.0, 500.0, 1000.0 ] # ns
// Each dimension becomes a level of a uniform cluster (fanout = npus_count), so clusters
// go to and from the simulator the NEST paper costs communication with.
//
// Units: ASTRA-sim reads "GB" as 2^30 bytes (astra-network-analytical,
// common/NetworkFunction.cc: bw_GBps_to_Bpns = bw * (1 << 30) / 1e9), so 50 GB/s there is
// 53.687091 GB/s (10^9 bytes) in a cluster file. The factor is a power of two, so the
// conversion is exact both ways and astra-sim -> cluster -> astra-sim gives the same numbers.
#include "Result.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

struct AstraSimDimension {
    std::string topology;      // "Ring", "FullyConnected" or "Switch" (ASTRA-sim's spelling)
    int npus = 0;              // >= 2 (ASTRA-sim refuses 1)
    double bandwidthGBps = 0;  // ASTRA-sim's GB/s (2^30 bytes/s) per link and direction
    double latencyNs = 0;
    int line = 0;              // where its topology entry is (messages)
    bool operator==(const AstraSimDimension &o) const
    {
        return topology == o.topology && npus == o.npus && bandwidthGBps == o.bandwidthGBps && latencyNs == o.latencyNs;
    }
};

struct AstraSimNetwork {
    std::vector<AstraSimDimension> dimensions;   // innermost first
    bool operator==(const AstraSimNetwork &o) const { return dimensions == o.dimensions; }
};

// Errors "FILE:LINE: REASON": malformed YAML, unknown keys, a missing key, lists of different
// lengths, an unknown topology name, npus_count below 2, bandwidth <= 0, latency < 0.
Result<AstraSimNetwork> parseAstraSimNetwork(const std::string &text, const std::string &origin);
// The YAML ASTRA-sim reads, numbers written so they read back to the same doubles.
std::string astraSimNetworkToYaml(const AstraSimNetwork &network);

// Levels named after their topology ("ring", "fullyconnected", "switch"; a repeated one gets
// its dimension: "switch-2"), link = the dimension's bandwidth and latency, oversubscription 1.
Topology topologyFromAstraSim(const AstraSimNetwork &network, const DeviceSpec &device, const std::string &name);

// The network of a uniform cluster: one dimension per level, the topology from the level's
// name where it starts with ring / fullyconnected / switch (any case), else Switch. An
// oversubscribed level's bandwidth is divided by its oversubscription (ASTRA-sim has no such
// parameter; the note says so). Refused: a non-uniform tree, group link overrides, a level of
// fanout 1. `notes` receives what was approximated.
Result<AstraSimNetwork> astraSimFromTopology(const Topology &t, std::vector<std::string> *notes = nullptr);

} // namespace nest
