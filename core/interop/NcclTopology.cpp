#include "NcclTopology.h"

#include "ImportError.h"
#include "NvLinkSpeed.h"

#include <pugixml.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

namespace nest {

namespace {

// 1-based lines of byte offsets: the newlines found once, each lookup a binary search (issue 48:
// counting from the start for every <gpu> made a 100,000-GPU dump take over 120 s).
class LineIndex {
public:
    explicit LineIndex(const std::string &text)
    {
        for (size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n')
                m_newlines.push_back(static_cast<std::ptrdiff_t>(i));
    }
    int operator()(std::ptrdiff_t offset) const
    {
        if (offset < 0)
            return 0;
        return 1 + static_cast<int>(std::lower_bound(m_newlines.begin(), m_newlines.end(), offset) - m_newlines.begin());
    }

private:
    std::vector<std::ptrdiff_t> m_newlines;
};

// A whole number attribute; false (with `why`) when absent or not a number in range.
bool intAttribute(const pugi::xml_node &node, const char *name, long long minValue, long long maxValue,
                  long long &value, std::string &why)
{
    const pugi::xml_attribute a = node.attribute(name);
    if (!a) {
        why = "<" + std::string(node.name()) + "> has no " + name + "= attribute";
        return false;
    }
    const std::string s = a.value();
    char *end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || v < minValue || v > maxValue) {
        why = "<" + std::string(node.name()) + " " + name + "=\"" + s + "\">: expected a whole number from " +
              std::to_string(minValue) + " to " + std::to_string(maxValue);
        return false;
    }
    value = v;
    return true;
}

// PCI device ids of the GPUs whose preset we know (the <pci device=...> of a <gpu>).
const std::map<std::string, std::string> &knownGpuDevices()
{
    static const std::map<std::string, std::string> ids{
        {"0x1db5", "v100-32gb"},       // Tesla V100-SXM2-32GB
        {"0x20b0", "a100-40gb"},       // A100-SXM4-40GB
        {"0x20b2", "a100-80gb"},       // A100-SXM4-80GB
        {"0x2330", "h100-sxm-80gb"},   // H100 80GB HBM3 (SXM5)
    };
    return ids;
}

// Every element named `name` below `root`, in document order.
std::vector<pugi::xml_node> descendants(const pugi::xml_node &root, const char *name)
{
    std::vector<pugi::xml_node> out;
    std::vector<pugi::xml_node> stack{root};
    while (!stack.empty()) {
        const pugi::xml_node n = stack.back();
        stack.pop_back();
        if (n != root && std::string(n.name()) == name)
            out.push_back(n);
        std::vector<pugi::xml_node> kids;
        for (const pugi::xml_node c : n.children())
            if (c.type() == pugi::node_element)
                kids.push_back(c);
        stack.insert(stack.end(), kids.rbegin(), kids.rend());
    }
    return out;
}

} // namespace

Result<NodeDescription> parseNcclTopology(const std::string &text, const std::string &origin)
{
    using R = Result<NodeDescription>;
    pugi::xml_document doc;
    const LineIndex lineOf(text);
    const auto lineAt = [&lineOf](const std::string &, std::ptrdiff_t offset) { return lineOf(offset); };
    const pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
    if (!parsed)
        return R::failure(importError(origin, lineAt(text, parsed.offset),
                                      std::string("not well-formed XML: ") + parsed.description()));
    const pugi::xml_node system = doc.document_element();
    if (std::string(system.name()) != "system")
        return R::failure(importError(origin, lineAt(text, system.offset_debug()),
                                      "the root element is <" + std::string(system.name()) +
                                          ">, not <system> (an NCCL_TOPO_DUMP_FILE dump)"));
    NodeDescription node;
    node.origin = origin;
    std::map<std::string, Result<DeviceSpec>> presets;
    int minLinks = -1;
    for (const pugi::xml_node &gpu : descendants(system, "gpu")) {
        const int line = lineAt(text, gpu.offset_debug());
        long long sm = 0;
        std::string why;
        if (!intAttribute(gpu, "sm", 10, 1000, sm, why))
            return R::failure(importError(origin, line, why));
        if (node.smVersion && *node.smVersion != sm)
            return R::failure(importError(origin, line, "GPU with sm=" + std::to_string(sm) + " beside GPUs with sm=" +
                                                            std::to_string(*node.smVersion) +
                                                            ": a node of mixed GPU generations"));
        node.smVersion = static_cast<int>(sm);
        int links = 0;
        for (const pugi::xml_node nvlink : gpu.children("nvlink")) {
            long long count = 0;
            if (!intAttribute(nvlink, "count", 1, 1000, count, why))
                return R::failure(importError(origin, lineAt(text, nvlink.offset_debug()), why));
            if (!nvlink.attribute("target"))
                return R::failure(importError(origin, lineAt(text, nvlink.offset_debug()),
                                              "<nvlink> has no target= attribute"));
            links += static_cast<int>(count);
        }
        minLinks = minLinks < 0 ? links : std::min(minLinks, links);
        const pugi::xml_node pci = gpu.parent();
        if (std::string(pci.name()) == "pci") {
            const std::string id = pci.attribute("device").value();
            if (const auto it = knownGpuDevices().find(id); it != knownGpuDevices().end()) {
                // One preset lookup per GPU model, not per GPU (issue 48: a lookup per <gpu>
                // cost 1.3 ms, 130 s for a 100,000-GPU dump).
                auto cached = presets.find(it->second);
                if (cached == presets.end())
                    cached = presets.emplace(it->second, devicePreset(it->second)).first;
                const auto &preset = cached->second;
                if (node.device && preset && !(*node.device == *preset))
                    return R::failure(importError(origin, lineAt(text, pci.offset_debug()),
                                                  "GPU " + id + " (" + it->second + ") beside " + node.device->name +
                                                      ": a node of mixed GPU models"));
                if (preset && !node.device) {
                    node.device = *preset;
                    node.deviceLine = lineAt(text, pci.offset_debug());
                }
            }
        }
        ++node.gpuCount;
        if (node.gpuCount == 1)
            node.gpuCountLine = line;
    }
    if (node.gpuCount == 0)
        return R::failure(importError(origin, lineAt(text, system.offset_debug()), "no <gpu> element: no GPU in this node"));
    node.nvlinksPerGpu = std::max(minLinks, 0);
    if (node.nvlinksPerGpu > 0) {
        const std::optional<double> perLink = nvlinkSpeedForSm(*node.smVersion);
        if (!perLink)
            return R::failure(importError(origin, node.gpuCountLine, "sm=" + std::to_string(*node.smVersion) +
                                                                         " has NVLinks but no known NVLink speed"));
        node.nvlinkBandwidth = node.nvlinksPerGpu * *perLink;
    }
    double nicBitsPerSecond = 0;
    for (const pugi::xml_node &net : descendants(system, "net")) {
        long long mbps = 0;
        std::string why;
        if (!intAttribute(net, "speed", 1, 100'000'000, mbps, why))
            return R::failure(importError(origin, lineAt(text, net.offset_debug()), why));
        nicBitsPerSecond += static_cast<double>(mbps) * 1e6;   // NCCL writes Mbit/s
    }
    if (nicBitsPerSecond > 0)
        node.nicBandwidthPerGpu = nicBitsPerSecond / 8 / node.gpuCount;
    return node;
}

} // namespace nest
