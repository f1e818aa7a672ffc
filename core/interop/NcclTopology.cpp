#include "NcclTopology.h"

#include "ImportError.h"
#include "NvLinkSpeed.h"

#include <pugixml.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
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


// What a truncated file leaves open: the innermost element not closed when the text ends
// (name and line), or nullopt when the tags pair up to the end (the error is elsewhere).
struct OpenElement {
    std::string name;
    int line = 0;
};
std::optional<OpenElement> openAtEnd(const std::string &text, const LineIndex &lineOf)
{
    std::vector<std::pair<std::string, std::ptrdiff_t>> open;
    size_t i = 0;
    while ((i = text.find('<', i)) != std::string::npos) {
        if (text.compare(i, 4, "<!--") == 0) {
            const size_t end = text.find("-->", i + 4);
            if (end == std::string::npos)
                break;
            i = end + 3;
            continue;
        }
        const size_t close = text.find('>', i);
        const bool closing = i + 1 < text.size() && text[i + 1] == '/';
        size_t n = i + (closing ? 2 : 1);
        const size_t nameStart = n;
        while (n < text.size() && (std::isalnum(static_cast<unsigned char>(text[n])) || text[n] == '_' || text[n] == '-' ||
                                   text[n] == ':' || text[n] == '.'))
            ++n;
        const std::string name = text.substr(nameStart, n - nameStart);
        if (close == std::string::npos)
            break;  // cut inside a tag: the element around it is what the file ends inside
        if (text[i + 1] == '?' || text[i + 1] == '!') {
        } else if (closing) {
            if (open.empty() || open.back().first != name)
                return std::nullopt;  // a real mismatch, not a cut
            open.pop_back();
        } else if (text[close - 1] != '/') {
            open.push_back({name, static_cast<std::ptrdiff_t>(i)});
        }
        i = close + 1;
    }
    if (open.empty())
        return std::nullopt;
    return OpenElement{open.back().first, lineOf(open.back().second)};
}

// Bytes/s of a PCIe link as NCCL reckons it (src/graph/topo.cc, kvDictPciGen: the rate per
// lane in units of 100 Mbit/s, 2.5 GT/s -> 15 ... 64 GT/s -> 480, times the width, no width
// meaning 16): Gen3 x16 = 12 GB/s, Gen4 x16 = 24 GB/s. nullopt without a known link_speed.
std::optional<double> pciLinkBandwidth(const pugi::xml_node &pci)
{
    std::string speed = pci.attribute("link_speed").value();
    if (const size_t p = speed.find(" PCIe"); p != std::string::npos)
        speed.erase(p);
    static const std::map<std::string, int> perLane{{"2.5 GT/s", 15},  {"5 GT/s", 30},   {"5.0 GT/s", 30},
                                                    {"8 GT/s", 60},    {"8.0 GT/s", 60}, {"16 GT/s", 120},
                                                    {"16.0 GT/s", 120}, {"32 GT/s", 240}, {"32.0 GT/s", 240},
                                                    {"64 GT/s", 480},  {"64.0 GT/s", 480}};
    const auto it = perLane.find(speed);
    if (it == perLane.end())
        return std::nullopt;
    int width = std::atoi(pci.attribute("link_width").value());
    if (width <= 0 || width > 64)
        width = 16;
    return width * it->second * 100e6 / 8;
}

bool startsWith(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

std::string lowerCopy(std::string s)
{
    for (char &c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Union-find over GPU indices (the islands of direct NVLinks).
int findRoot(std::vector<int> &parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

} // namespace

Result<NodeDescription> parseNcclTopology(const std::string &text, const std::string &origin)
{
    using R = Result<NodeDescription>;
    pugi::xml_document doc;
    const LineIndex lineOf(text);
    const auto lineAt = [&lineOf](const std::string &, std::ptrdiff_t offset) { return lineOf(offset); };
    const pugi::xml_parse_result parsed = doc.load_buffer(text.data(), text.size());
    if (!parsed) {
        // A dump cut short (a full disk, a copy from a terminal) says so, not "Start-end tags
        // mismatch" (issue 49).
        if (const std::optional<OpenElement> open = openAtEnd(text, lineOf))
            return R::failure(importError(origin, lineOf(static_cast<std::ptrdiff_t>(text.size())),
                                          "the file ends inside <" + open->name + "> (opened on line " +
                                              std::to_string(open->line) + "): the file is cut short"));
        return R::failure(importError(origin, lineAt(text, parsed.offset),
                                      std::string("not well-formed XML: ") + parsed.description()));
    }
    const pugi::xml_node system = doc.document_element();
    if (std::string(system.name()) != "system")
        return R::failure(importError(origin, lineAt(text, system.offset_debug()),
                                      "the root element is <" + std::string(system.name()) +
                                          ">, not <system> (an NCCL_TOPO_DUMP_FILE dump or NCCL_TOPO_FILE input)"));
    NodeDescription node;
    node.origin = origin;
    std::map<std::string, Result<DeviceSpec>> presets;
    // The GPUs: <gpu> elements in a dump; in a static NCCL_TOPO_FILE input (AWS p4d, Azure
    // ND) only their PCI devices, <pci class="0x0302..">, without <gpu> (NCCL probes the rest).
    std::vector<pugi::xml_node> gpus = descendants(system, "gpu");
    std::vector<pugi::xml_node> pcis;  // the <pci> of each GPU (may be null in a dump)
    const bool staticInput = gpus.empty();
    if (staticInput) {
        for (const pugi::xml_node &pci : descendants(system, "pci"))
            if (startsWith(lowerCopy(pci.attribute("class").value()), "0x03")) {
                gpus.push_back(pci);
                pcis.push_back(pci);
            }
        if (gpus.empty())
            return R::failure(importError(origin, lineAt(text, system.offset_debug()),
                                          "no GPU: neither <gpu> elements (an NCCL_TOPO_DUMP_FILE dump) nor "
                                          "<pci class=\"0x0302..\"> devices (an NCCL_TOPO_FILE input)"));
        node.nvlinkUnknownWhy = "the file is an NCCL_TOPO_FILE input: it lists the GPUs' PCI devices "
                                "(class 0x03..) but not their NVLinks";
    } else {
        for (const pugi::xml_node &gpu : gpus)
            pcis.push_back(std::string(gpu.parent().name()) == "pci" ? gpu.parent() : pugi::xml_node());
    }
    std::map<std::string, int> gpuOfBus;  // lower-case PCI bus id -> GPU index
    for (size_t g = 0; g < gpus.size(); ++g)
        if (pcis[g] && pcis[g].attribute("busid"))
            gpuOfBus[lowerCopy(pcis[g].attribute("busid").value())] = static_cast<int>(g);
    const int n = static_cast<int>(gpus.size());
    std::vector<int> links(n, 0), parent(n);
    for (int g = 0; g < n; ++g)
        parent[g] = g;
    bool switchLinks = false, directLinks = false;
    for (int g = 0; g < n; ++g) {
        const pugi::xml_node &gpu = gpus[g];
        const int line = lineAt(text, gpu.offset_debug());
        std::string why;
        if (!staticInput) {
            long long sm = 0;
            if (!intAttribute(gpu, "sm", 10, 1000, sm, why))
                return R::failure(importError(origin, line, why));
            if (node.smVersion && *node.smVersion != sm)
                return R::failure(importError(origin, line, "GPU with sm=" + std::to_string(sm) + " beside GPUs with sm=" +
                                                                std::to_string(*node.smVersion) +
                                                                ": a node of mixed GPU generations"));
            node.smVersion = static_cast<int>(sm);
        }
        for (const pugi::xml_node nvlink : gpu.children("nvlink")) {
            long long count = 0;
            if (!intAttribute(nvlink, "count", 1, 1000, count, why))
                return R::failure(importError(origin, lineAt(text, nvlink.offset_debug()), why));
            if (!nvlink.attribute("target"))
                return R::failure(importError(origin, lineAt(text, nvlink.offset_debug()),
                                              "<nvlink> has no target= attribute"));
            links[g] += static_cast<int>(count);
            // A link to another GPU (its bus id) joins their islands; any other target is an
            // NVSwitch (tclass 0x068000) or a CPU, which every GPU on it reaches.
            const auto peer = gpuOfBus.find(lowerCopy(nvlink.attribute("target").value()));
            if (peer != gpuOfBus.end() && peer->second != g) {
                directLinks = true;
                parent[findRoot(parent, g)] = findRoot(parent, peer->second);
            } else {
                switchLinks = true;
            }
        }
        if (const pugi::xml_node &pci = pcis[g]) {
            const std::string id = lowerCopy(pci.attribute("device").value());
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
            const std::optional<double> pcie = pciLinkBandwidth(pci);
            if (g == 0 || node.pcieBandwidth)
                node.pcieBandwidth = pcie ? std::optional<double>(std::min(node.pcieBandwidth.value_or(*pcie), *pcie))
                                          : std::nullopt;
        } else {
            node.pcieBandwidth.reset();
        }
        ++node.gpuCount;
        if (node.gpuCount == 1)
            node.gpuCountLine = line;
    }
    // Islands: GPUs joined by direct NVLinks that do not reach every GPU, and no NVSwitch.
    if (directLinks && !switchLinks) {
        std::map<int, std::vector<int>> islands;  // root -> GPUs, ordered by first GPU below
        std::vector<int> order;
        for (int g = 0; g < n; ++g) {
            const int r = findRoot(parent, g);
            if (!islands.count(r))
                order.push_back(r);
            islands[r].push_back(g);
        }
        if (order.size() > 1)
            for (int r : order)
                node.islandSizes.push_back(static_cast<int>(islands[r].size()));
    }
    // NVLinks per GPU: the fewest of any GPU (in an island of two or more, when there are islands).
    int minLinks = -1;
    if (node.islandSizes.empty()) {
        for (int g = 0; g < n; ++g)
            minLinks = minLinks < 0 ? links[g] : std::min(minLinks, links[g]);
    } else {
        std::map<int, int> sizeOf;
        for (int g = 0; g < n; ++g)
            ++sizeOf[findRoot(parent, g)];
        for (int g = 0; g < n; ++g)
            if (sizeOf[findRoot(parent, g)] >= 2)
                minLinks = minLinks < 0 ? links[g] : std::min(minLinks, links[g]);
    }
    node.nvlinksPerGpu = std::max(minLinks, 0);
    if (node.nvlinksPerGpu > 0) {
        const std::optional<double> perLink = nvlinkSpeedForSm(*node.smVersion);
        if (!perLink)
            return R::failure(importError(origin, node.gpuCountLine, "sm=" + std::to_string(*node.smVersion) +
                                                                         " has NVLinks but no known NVLink speed"));
        node.nvlinkBandwidth = node.nvlinksPerGpu * *perLink;
    }
    if (node.islandSizes.empty())
        node.pcieBandwidth.reset();  // only the level between islands uses it
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
