#include "NcclTopology.h"

#include "ImportError.h"
#include "NvLinkSpeed.h"
#include "TextCase.h"

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

// Union-find over GPU indices (the islands of direct NVLinks).
int findRoot(std::vector<int> &parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

} // namespace

namespace {

// One NCCL topology document read into a NodeDescription, step by step; each step returns an
// error message ("" when it went well) whose line is already in it.
class NcclReader {
public:
    NcclReader(const std::string &text, const std::string &origin) : m_text(text), m_origin(origin), m_lineOf(text)
    {
        m_node.origin = origin;
    }

    Result<NodeDescription> read()
    {
        using R = Result<NodeDescription>;
        for (auto step : {&NcclReader::parse, &NcclReader::findGpus, &NcclReader::readGpus, &NcclReader::readNvlinks,
                          &NcclReader::readNics})
            if (const std::string why = (this->*step)(); !why.empty())
                return R::failure(why);
        return m_node;
    }

private:
    const std::string &m_text;
    const std::string &m_origin;
    const LineIndex m_lineOf;
    pugi::xml_document m_doc;
    pugi::xml_node m_system;
    NodeDescription m_node;
    std::map<std::string, Result<DeviceSpec>> m_presets;
    std::vector<pugi::xml_node> m_gpus;
    std::vector<pugi::xml_node> m_pcis;  // the <pci> of each GPU (may be null in a dump)
    bool m_staticInput = false;
    std::vector<int> m_links, m_parent;  // NVLinks per GPU; the islands' union-find
    bool m_switchLinks = false, m_directLinks = false;

    int lineAt(std::ptrdiff_t offset) const { return m_lineOf(offset); }
    std::string error(int line, const std::string &why) const { return importError(m_origin, line, why); }

    std::string parse()
    {
        const pugi::xml_parse_result parsed = m_doc.load_buffer(m_text.data(), m_text.size());
        if (!parsed) {
            // A dump cut short (a full disk, a copy from a terminal) says so, not "Start-end
            // tags mismatch" (issue 49).
            if (const std::optional<OpenElement> open = openAtEnd(m_text, m_lineOf))
                return error(lineAt(static_cast<std::ptrdiff_t>(m_text.size())),
                             "the file ends inside <" + open->name + "> (opened on line " +
                                 std::to_string(open->line) + "): the file is cut short");
            return error(lineAt(parsed.offset), std::string("not well-formed XML: ") + parsed.description());
        }
        m_system = m_doc.document_element();
        if (std::string(m_system.name()) != "system")
            return error(lineAt(m_system.offset_debug()),
                         "the root element is <" + std::string(m_system.name()) +
                             ">, not <system> (an NCCL_TOPO_DUMP_FILE dump or NCCL_TOPO_FILE input)");
        return {};
    }

    // The GPUs: <gpu> elements in a dump; in a static NCCL_TOPO_FILE input (AWS p4d, Azure
    // ND) only their PCI devices, <pci class="0x0302..">, without <gpu> (NCCL probes the rest).
    std::string findGpus()
    {
        m_gpus = descendants(m_system, "gpu");
        m_staticInput = m_gpus.empty();
        if (m_staticInput) {
            for (const pugi::xml_node &pci : descendants(m_system, "pci"))
                if (startsWith(asciiLower(pci.attribute("class").value()), "0x03")) {
                    m_gpus.push_back(pci);
                    m_pcis.push_back(pci);
                }
            if (m_gpus.empty())
                return error(lineAt(m_system.offset_debug()),
                             "no GPU: neither <gpu> elements (an NCCL_TOPO_DUMP_FILE dump) nor "
                             "<pci class=\"0x0302..\"> devices (an NCCL_TOPO_FILE input)");
            m_node.nvlinkUnknownWhy = "the file is an NCCL_TOPO_FILE input: it lists the GPUs' PCI devices "
                                      "(class 0x03..) but not their NVLinks";
        } else {
            for (const pugi::xml_node &gpu : m_gpus)
                m_pcis.push_back(std::string(gpu.parent().name()) == "pci" ? gpu.parent() : pugi::xml_node());
        }
        return {};
    }

    std::string readGpus()
    {
        std::map<std::string, int> gpuOfBus;  // lower-case PCI bus id -> GPU index
        for (size_t g = 0; g < m_gpus.size(); ++g)
            if (m_pcis[g] && m_pcis[g].attribute("busid"))
                gpuOfBus[asciiLower(m_pcis[g].attribute("busid").value())] = static_cast<int>(g);
        const int n = static_cast<int>(m_gpus.size());
        m_links.assign(static_cast<size_t>(n), 0);
        m_parent.resize(static_cast<size_t>(n));
        for (int g = 0; g < n; ++g)
            m_parent[g] = g;
        for (int g = 0; g < n; ++g) {
            const int line = lineAt(m_gpus[g].offset_debug());
            std::string why = readGpu(g, line, gpuOfBus);
            if (!why.empty())
                return why;
            ++m_node.gpuCount;
            if (m_node.gpuCount == 1)
                m_node.gpuCountLine = line;
        }
        return {};
    }

    // GPU g: its compute capability, its NVLinks, its PCI device (the model) and PCIe link.
    std::string readGpu(int g, int line, const std::map<std::string, int> &gpuOfBus)
    {
        const pugi::xml_node &gpu = m_gpus[g];
        std::string why;
        if (!m_staticInput) {
            long long sm = 0;
            if (!intAttribute(gpu, "sm", 10, 1000, sm, why))
                return error(line, why);
            if (m_node.smVersion && *m_node.smVersion != sm)
                return error(line, "GPU with sm=" + std::to_string(sm) + " beside GPUs with sm=" +
                                       std::to_string(*m_node.smVersion) + ": a node of mixed GPU generations");
            m_node.smVersion = static_cast<int>(sm);
        }
        for (const pugi::xml_node nvlink : gpu.children("nvlink")) {
            long long count = 0;
            if (!intAttribute(nvlink, "count", 1, 1000, count, why))
                return error(lineAt(nvlink.offset_debug()), why);
            if (!nvlink.attribute("target"))
                return error(lineAt(nvlink.offset_debug()), "<nvlink> has no target= attribute");
            m_links[g] += static_cast<int>(count);
            // A link to another GPU (its bus id) joins their islands; any other target is an
            // NVSwitch (tclass 0x068000) or a CPU, which every GPU on it reaches.
            const auto peer = gpuOfBus.find(asciiLower(nvlink.attribute("target").value()));
            if (peer != gpuOfBus.end() && peer->second != g) {
                m_directLinks = true;
                m_parent[findRoot(m_parent, g)] = findRoot(m_parent, peer->second);
            } else {
                m_switchLinks = true;
            }
        }
        if (const pugi::xml_node &pci = m_pcis[g])
            return readPci(g, pci);
        m_node.pcieBandwidth.reset();
        return {};
    }

    // The GPU's PCI device: its model (one preset lookup per model, not per GPU; issue 48: a
    // lookup per <gpu> cost 1.3 ms, 130 s for a 100,000-GPU dump) and its PCIe link.
    std::string readPci(int g, const pugi::xml_node &pci)
    {
        const std::string id = asciiLower(pci.attribute("device").value());
        if (const auto it = knownGpuDevices().find(id); it != knownGpuDevices().end()) {
            auto cached = m_presets.find(it->second);
            if (cached == m_presets.end())
                cached = m_presets.emplace(it->second, devicePreset(it->second)).first;
            const auto &preset = cached->second;
            if (m_node.device && preset && !(*m_node.device == *preset))
                return error(lineAt(pci.offset_debug()), "GPU " + id + " (" + it->second + ") beside " +
                                                             m_node.device->name + ": a node of mixed GPU models");
            if (preset && !m_node.device) {
                m_node.device = *preset;
                m_node.deviceLine = lineAt(pci.offset_debug());
            }
        }
        const std::optional<double> pcie = pciLinkBandwidth(pci);
        if (g == 0 || m_node.pcieBandwidth)
            m_node.pcieBandwidth =
                pcie ? std::optional<double>(std::min(m_node.pcieBandwidth.value_or(*pcie), *pcie)) : std::nullopt;
        return {};
    }

    // Islands (GPUs joined by direct NVLinks that do not reach every GPU, and no NVSwitch),
    // the NVLinks per GPU (the fewest of any GPU; in an island of two or more, when there are
    // islands) and their bandwidth.
    std::string readNvlinks()
    {
        const int n = static_cast<int>(m_gpus.size());
        if (m_directLinks && !m_switchLinks) {
            std::map<int, std::vector<int>> islands;  // root -> GPUs, ordered by first GPU below
            std::vector<int> order;
            for (int g = 0; g < n; ++g) {
                const int r = findRoot(m_parent, g);
                if (!islands.count(r))
                    order.push_back(r);
                islands[r].push_back(g);
            }
            if (order.size() > 1)
                for (int r : order)
                    m_node.islandSizes.push_back(static_cast<int>(islands[r].size()));
        }
        int minLinks = -1;
        if (m_node.islandSizes.empty()) {
            for (int g = 0; g < n; ++g)
                minLinks = minLinks < 0 ? m_links[g] : std::min(minLinks, m_links[g]);
        } else {
            std::map<int, int> sizeOf;
            for (int g = 0; g < n; ++g)
                ++sizeOf[findRoot(m_parent, g)];
            for (int g = 0; g < n; ++g)
                if (sizeOf[findRoot(m_parent, g)] >= 2)
                    minLinks = minLinks < 0 ? m_links[g] : std::min(minLinks, m_links[g]);
        }
        m_node.nvlinksPerGpu = std::max(minLinks, 0);
        if (m_node.nvlinksPerGpu > 0) {
            const std::optional<double> perLink = nvlinkSpeedForSm(*m_node.smVersion);
            if (!perLink)
                return error(m_node.gpuCountLine,
                             "sm=" + std::to_string(*m_node.smVersion) + " has NVLinks but no known NVLink speed");
            m_node.nvlinkBandwidth = m_node.nvlinksPerGpu * *perLink;
        }
        if (m_node.islandSizes.empty())
            m_node.pcieBandwidth.reset();  // only the level between islands uses it
        return {};
    }

    std::string readNics()
    {
        double nicBitsPerSecond = 0;
        for (const pugi::xml_node &net : descendants(m_system, "net")) {
            long long mbps = 0;
            std::string why;
            if (!intAttribute(net, "speed", 1, 100'000'000, mbps, why))
                return error(lineAt(net.offset_debug()), why);
            nicBitsPerSecond += static_cast<double>(mbps) * 1e6;  // NCCL writes Mbit/s
        }
        if (nicBitsPerSecond > 0)
            m_node.nicBandwidthPerGpu = nicBitsPerSecond / 8 / m_node.gpuCount;
        return {};
    }
};

} // namespace

Result<NodeDescription> parseNcclTopology(const std::string &text, const std::string &origin)
{
    return NcclReader(text, origin).read();
}

} // namespace nest
