#pragma once
// Parameterised cluster shapes (fat-tree, spine-leaf, DGX-SuperPOD-like, 2D/3D torus, the
// clusters of the NEST paper's evaluation) and named presets built from them. Every template
// expands to a uniform Topology; the numbers and their sources are in
// docs/formats.md (Cluster files) and next to each template in ClusterTemplates.cpp.
#include "JsonUtil.h"
#include "Result.h"
#include "Topology.h"

#include <map>
#include <string>
#include <vector>

namespace nest {

struct TemplateParam {
    std::string key, label;   // key as in JSON "params" ("racks"), label for the GUI
    double value, min, max;   // default and inclusive range
    bool integer = true;
};

struct ClusterTemplate {
    std::string key, title, description;
    std::vector<TemplateParam> params;
    std::string defaultDevice;  // a device preset name, or "tpuv4-like" (paper-fattree)
};

const std::vector<ClusterTemplate> &clusterTemplates();
const ClusterTemplate *findClusterTemplate(const std::string &key);  // nullptr when unknown

// Missing params take defaults; unknown or out-of-range params give a clear error; device ""
// = the template's default; otherwise a device preset name.
Result<Topology> makeCluster(const std::string &templateKey, const std::map<std::string, double> &params,
                             const std::string &device = "");

// As makeCluster with a resolved device, for loaders that report JSON paths: throws
// JsonError whose path is childPath(paramsPath, parameter key) for a bad parameter.
Topology buildCluster(const ClusterTemplate &tmpl, const std::map<std::string, double> &params,
                      const DeviceSpec &device, const std::string &paramsPath);
// The DeviceSpec a template uses when none is given.
DeviceSpec templateDefaultDevice(const ClusterTemplate &tmpl);

struct ClusterPreset {
    std::string key, description, templateKey, device;  // device "" = template default
    std::map<std::string, double> params;
};

const std::vector<ClusterPreset> &clusterPresets();
// The preset's topology, named after its key.
Result<Topology> clusterPreset(const std::string &key);

// The unit conversions every cluster source uses (files and templates alike), so that a
// template and the file written from it give bit-identical values.
inline LinkParams linkFromUnits(double bandwidthGBps, double latencyUs, double oversubscription = 1)
{
    return {bandwidthGBps * 1e9, latencyUs * 1e-6, oversubscription};
}

} // namespace nest
