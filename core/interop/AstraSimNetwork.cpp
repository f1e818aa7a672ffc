#include "AstraSimNetwork.h"

#include "ImportError.h"
#include "Limits.h"
#include "TextCase.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

namespace nest {

namespace {

constexpr double AstraGB = 1073741824.0;   // 2^30 bytes: ASTRA-sim's "GB"
constexpr double NsPerSecond = 1e9;        // exactly representable: ns -> s divides by it

const std::vector<std::string> &topologyNames()
{
    static const std::vector<std::string> names{"Ring", "FullyConnected", "Switch"};
    return names;
}

int lineOf(const YAML::Node &n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

// The shortest decimal that reads back to exactly `v`.
std::string shortest(double v)
{
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// A flow sequence of scalars under `key`; each entry converted by `convert` (false = bad).
template <typename T, typename Convert>
std::string readList(const YAML::Node &root, const char *key, const std::string &origin, std::vector<T> &out,
                     std::vector<int> &lines, Convert convert)
{
    const YAML::Node list = root[key];
    if (!list)
        return importError(origin, lineOf(root), std::string("no '") + key + "' list");
    if (!list.IsSequence())
        return importError(origin, lineOf(list), std::string("'") + key + "' must be a list [ ... ]");
    for (const YAML::Node &item : list) {
        T value{};
        std::string why;
        if (!item.IsScalar() || !convert(item.Scalar(), value, why))
            return importError(origin, lineOf(item), std::string(key) + ": " +
                                                         (why.empty() ? "'" + (item.IsScalar() ? item.Scalar() : std::string("?")) +
                                                                            "' is not a valid entry"
                                                                      : why));
        out.push_back(value);
        lines.push_back(lineOf(item));
    }
    return {};
}

// The latency in ns that reads back (ns / 1e9) to exactly `seconds`, written as briefly as
// possible: of the doubles next to seconds * 1e9 that do, the one with the shortest decimal
// form (500, not 499.99999999999994), so a file's round trip keeps its numbers.
double nanoseconds(double seconds)
{
    const double guess = seconds * NsPerSecond;
    double best = guess;
    size_t bestLength = std::string::npos;
    double down = guess, up = guess;
    for (int step = 0; step < 16; ++step) {
        for (double x : {down, up}) {
            if (x / NsPerSecond != seconds)
                continue;
            const size_t length = shortest(x).size();
            if (length < bestLength) {
                best = x;
                bestLength = length;
            }
        }
        down = std::nextafter(down, -INFINITY);
        up = std::nextafter(up, INFINITY);
    }
    return best;
}

bool toNumber(const std::string &s, double &value, std::string &why)
{
    const char *begin = s.data(), *end = s.data() + s.size();
    const auto r = std::from_chars(begin, end, value);
    if (r.ec != std::errc() || r.ptr != end || !std::isfinite(value)) {
        why = "'" + s + "' is not a number";
        return false;
    }
    return true;
}

} // namespace

Result<AstraSimNetwork> parseAstraSimNetwork(const std::string &text, const std::string &origin)
{
    using R = Result<AstraSimNetwork>;
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::DeepRecursion &e) {
        // yaml-cpp's own bound on nesting (its message is "bad file"); an ASTRA-sim network
        // nests two levels (issue 48).
        return R::failure(importError(origin, e.mark.line + 1, "not valid YAML: nested " + std::to_string(e.depth()) +
                                                                   " levels deep, far more than a network file has"));
    } catch (const YAML::ParserException &e) {
        return R::failure(importError(origin, e.mark.line + 1, "not valid YAML: " + e.msg));
    }
    if (!root.IsMap())
        return R::failure(importError(origin, lineOf(root), "expected the keys topology, npus_count, bandwidth, latency"));
    for (const auto &kv : root) {
        const std::string key = kv.first.Scalar();
        if (key != "topology" && key != "npus_count" && key != "bandwidth" && key != "latency")
            return R::failure(importError(origin, lineOf(kv.first), "unknown key '" + key +
                                                                        "' (expected topology, npus_count, bandwidth, latency)"));
    }
    std::vector<std::string> topologies;
    std::vector<double> npus, bandwidth, latency;
    std::vector<int> topologyLines, npusLines, bandwidthLines, latencyLines;
    auto name = [](const std::string &s, std::string &value, std::string &why) {
        const auto &known = topologyNames();
        if (std::find(known.begin(), known.end(), s) == known.end()) {
            why = "unknown topology '" + s + "' (ASTRA-sim knows Ring, FullyConnected, Switch)";
            return false;
        }
        value = s;
        return true;
    };
    if (std::string why = readList(root, "topology", origin, topologies, topologyLines, name); !why.empty())
        return R::failure(why);
    if (std::string why = readList(root, "npus_count", origin, npus, npusLines, toNumber); !why.empty())
        return R::failure(why);
    if (std::string why = readList(root, "bandwidth", origin, bandwidth, bandwidthLines, toNumber); !why.empty())
        return R::failure(why);
    if (std::string why = readList(root, "latency", origin, latency, latencyLines, toNumber); !why.empty())
        return R::failure(why);
    if (topologies.empty())
        return R::failure(importError(origin, lineOf(root["topology"]), "'topology' is empty: no dimension"));
    if (topologies.size() > static_cast<size_t>(Topology::maxLevels))
        return R::failure(importError(origin, lineOf(root["topology"]), std::to_string(topologies.size()) +
                                                                            " dimensions, more than the " +
                                                                            std::to_string(Topology::maxLevels) + " levels a cluster may have"));
    const std::pair<const char *, size_t> lengths[] = {
        {"npus_count", npus.size()}, {"bandwidth", bandwidth.size()}, {"latency", latency.size()}};
    for (const auto &[key, size] : lengths)
        if (size != topologies.size())
            return R::failure(importError(origin, lineOf(root[key]), std::string("'") + key + "' has " +
                                                                         std::to_string(size) + " entries, 'topology' " +
                                                                         std::to_string(topologies.size())));
    AstraSimNetwork net;
    double total = 1;
    for (size_t d = 0; d < topologies.size(); ++d) {
        if (npus[d] != std::floor(npus[d]) || npus[d] < 2)
            return R::failure(importError(origin, npusLines[d], "npus_count must be a whole number >= 2 (ASTRA-sim's rule), found " +
                                                                    shortest(npus[d])));
        total *= npus[d];
        if (total > Topology::maxDevices)
            return R::failure(importError(origin, npusLines[d], "more than " + std::to_string(Topology::maxDevices) + " NPUs"));
        if (!(bandwidth[d] > 0))
            return R::failure(importError(origin, bandwidthLines[d], "bandwidth must be > 0, found " + shortest(bandwidth[d])));
        if (!(latency[d] >= 0))
            return R::failure(importError(origin, latencyLines[d], "latency must be >= 0, found " + shortest(latency[d])));
        // The cluster loader's ranges (Limits.h), so that what import-cluster writes,
        // --cluster reads (issue 48: 1e200 GB/s was written, then refused).
        if (const auto why = rangeProblem(bandwidth[d] * AstraGB / 1e9, limits::bandwidthGBps))
            return R::failure(importError(origin, bandwidthLines[d], "bandwidth " + shortest(bandwidth[d]) +
                                                                        " GB/s (2^30 bytes/s): " + *why));
        if (const auto why = rangeProblem(latency[d] / 1000, limits::latencyUs))
            return R::failure(importError(origin, latencyLines[d], "latency " + shortest(latency[d]) + " ns: " + *why));
        net.dimensions.push_back({topologies[d], static_cast<int>(npus[d]), bandwidth[d], latency[d], topologyLines[d]});
    }
    return net;
}

std::string astraSimNetworkToYaml(const AstraSimNetwork &network)
{
    std::string topology, npus, bandwidth, latency;
    for (const AstraSimDimension &d : network.dimensions) {
        const std::string sep = topology.empty() ? " " : ", ";
        topology += sep + d.topology;
        npus += sep + std::to_string(d.npus);
        bandwidth += sep + shortest(d.bandwidthGBps);
        latency += sep + shortest(d.latencyNs);
    }
    return "# ASTRA-sim analytical network (written by NEST Planner)\n"
           "topology: [" + topology + " ]\n"
           "npus_count: [" + npus + " ]  # NPUs per dimension, innermost first\n"
           "bandwidth: [" + bandwidth + " ]  # GB/s (2^30 bytes/s) per link and direction\n"
           "latency: [" + latency + " ]  # ns\n";
}

// How ASTRA-sim's analytical network moves a message inside one dimension
// (astra-network-analytical, congestion_unaware/*.cpp): a FullyConnected dimension of n NPUs
// gives every NPU n - 1 links of `bandwidth`, one to each peer, which a collective drives at
// once; a Switch routes NPU -> switch -> NPU, two links, so a message pays `latency` twice.
// A Ring's neighbour is one hop over one link.
static int linksPerNpu(const std::string &topology, int npus) { return topology == "FullyConnected" ? std::max(npus - 1, 1) : 1; }
static int hopsPerMessage(const std::string &topology) { return topology == "Switch" ? 2 : 1; }

Topology topologyFromAstraSim(const AstraSimNetwork &network, const DeviceSpec &device, const std::string &name)
{
    std::vector<UniformLevel> levels;
    std::set<std::string> used;
    for (size_t d = 0; d < network.dimensions.size(); ++d) {
        const AstraSimDimension &dim = network.dimensions[d];
        std::string levelName = asciiLower(dim.topology);
        if (!used.insert(levelName).second) {
            levelName += "-" + std::to_string(d);
            used.insert(levelName);
        }
        LinkParams link;
        link.bandwidth = dim.bandwidthGBps * AstraGB * linksPerNpu(dim.topology, dim.npus);
        link.latency = dim.latencyNs * hopsPerMessage(dim.topology) / NsPerSecond;
        levels.push_back({levelName, dim.npus, link});
    }
    return Topology::uniform(name, device, levels);
}

Result<AstraSimNetwork> astraSimFromTopology(const Topology &t, std::vector<std::string> *notes)
{
    using R = Result<AstraSimNetwork>;
    if (const std::string why = t.validate(); !why.empty())
        return R::failure(why);
    AstraSimNetwork net;
    for (int l = 0; l < t.levelCount(); ++l) {
        // Every group of the level must have the same fanout and no override.
        int fanout = -1;
        for (int g : t.groupsAtLevel(l)) {
            const TopoGroup &group = t.groups[g];
            const int n = static_cast<int>(l == 0 ? group.devices.size() : group.children.size());
            if (fanout >= 0 && n != fanout)
                return R::failure("level " + std::to_string(l) + " (" + t.levels[l].name + ") has groups of " +
                                  std::to_string(fanout) + " and of " + std::to_string(n) +
                                  ": ASTRA-sim's dimensions are uniform");
            fanout = n;
            if (group.linkOverride)
                return R::failure("group '" + group.name + "' overrides its level's link: ASTRA-sim has one link per dimension");
        }
        if (fanout < 2)
            return R::failure("level " + std::to_string(l) + " (" + t.levels[l].name +
                              ") has groups of 1: ASTRA-sim needs at least 2 NPUs per dimension");
        const std::string name = asciiLower(t.levels[l].name);
        std::string topology = "Switch";
        for (const std::string &known : topologyNames())
            if (name.rfind(asciiLower(known), 0) == 0)
                topology = known;
        const LinkParams &link = t.levels[l].link;
        double bandwidth = link.bandwidth;
        if (link.oversubscription != 1) {
            bandwidth /= link.oversubscription;
            if (notes)
                notes->push_back("level " + std::to_string(l) + " (" + t.levels[l].name + "): oversubscription " +
                                 shortest(link.oversubscription) + " folded into the bandwidth (" +
                                 shortest(link.bandwidth / 1e9) + " -> " + shortest(bandwidth / 1e9) + " GB/s)");
        }
        net.dimensions.push_back({topology, fanout, bandwidth / linksPerNpu(topology, fanout) / AstraGB,
                                  nanoseconds(link.latency / hopsPerMessage(topology)), 0});
    }
    return net;
}

} // namespace nest
