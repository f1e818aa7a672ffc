#include "NvidiaSmiTopology.h"

#include "ImportError.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

namespace nest {

namespace {

// Removes ANSI escape sequences (ESC [ ... letter).
std::string withoutEscapes(const std::string &s)
{
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
            i += 2;
            while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i])))
                ++i;
            continue;
        }
        out += s[i];
    }
    return out;
}

std::vector<std::string> words(const std::string &line)
{
    std::vector<std::string> out;
    std::stringstream in(line);
    std::string w;
    while (in >> w)
        out.push_back(w);
    return out;
}

// GPU<k> -> k, else -1.
int gpuIndex(const std::string &word)
{
    static const std::regex gpu(R"(GPU(\d{1,4}))");
    std::smatch m;
    return std::regex_match(word, m, gpu) ? std::stoi(m[1]) : -1;
}

// The NVLink count of a cell: NV# -> #, PCIe paths and X -> 0; -1 for an unknown cell.
int linksOfCell(const std::string &cell)
{
    static const std::set<std::string> pcie{"X", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"};
    if (pcie.count(cell))
        return 0;
    static const std::regex nv(R"(NV(\d{1,3}))");
    std::smatch m;
    return std::regex_match(cell, m, nv) ? std::stoi(m[1]) : -1;
}

} // namespace

Result<NvidiaSmiMatrix> parseNvidiaSmiMatrix(const std::string &text, const std::string &origin)
{
    using R = Result<NvidiaSmiMatrix>;
    NvidiaSmiMatrix m;
    std::stringstream in(withoutEscapes(text));
    std::string line;
    int lineNo = 0;
    int columns = 0;          // matrix columns: GPUs first, then NICs
    std::vector<int> rowLine;
    while (std::getline(in, line)) {
        ++lineNo;
        const std::vector<std::string> w = words(line);
        if (w.empty())
            continue;
        if (w.front().rfind("Legend", 0) == 0)
            break;
        if (m.headerLine == 0) {
            if (gpuIndex(w.front()) != 0)
                continue;   // text before the matrix
            // The header: GPU0 GPU1 ... then NICs; the affinity columns start with "CPU".
            m.headerLine = lineNo;
            for (const std::string &word : w) {
                if (word == "CPU" || word == "NUMA")
                    break;
                const int g = gpuIndex(word);
                if (g >= 0 && g != m.gpuCount)
                    return R::failure(importError(origin, lineNo, "column '" + word + "' where GPU" +
                                                                      std::to_string(m.gpuCount) + " was expected"));
                if (g >= 0 && columns != m.gpuCount)
                    return R::failure(importError(origin, lineNo, "column '" + word + "' after a NIC column"));
                m.gpuCount += g >= 0 ? 1 : 0;
                ++columns;
            }
            m.nvlinks.assign(m.gpuCount, std::vector<int>(m.gpuCount, -1));
            rowLine.assign(m.gpuCount, 0);
            continue;
        }
        const int row = gpuIndex(w.front());
        if (row < 0)
            continue;   // a NIC row
        if (row >= m.gpuCount)
            return R::failure(importError(origin, lineNo, "row " + w.front() + " but the header has " +
                                                              std::to_string(m.gpuCount) + " GPU columns"));
        if (rowLine[row])
            return R::failure(importError(origin, lineNo, "a second row " + w.front() + " (the first is on line " +
                                                              std::to_string(rowLine[row]) + ")"));
        rowLine[row] = lineNo;
        if (static_cast<int>(w.size()) < 1 + m.gpuCount)
            return R::failure(importError(origin, lineNo, "row " + w.front() + " has " + std::to_string(w.size() - 1) +
                                                              " cells, fewer than the " + std::to_string(m.gpuCount) +
                                                              " GPU columns"));
        for (int c = 0; c < m.gpuCount; ++c) {
            const std::string &cell = w[1 + c];
            const int links = linksOfCell(cell);
            if (links < 0)
                return R::failure(importError(origin, lineNo, "cell '" + cell + "' in column GPU" + std::to_string(c) +
                                                                  " is not X, NV#, PIX, PXB, PHB, NODE or SYS"));
            if ((c == row) != (cell == "X"))
                return R::failure(importError(origin, lineNo, c == row ? "GPU" + std::to_string(row) +
                                                                             " against itself must read X, found '" + cell + "'"
                                                                       : "'X' off the diagonal, in column GPU" + std::to_string(c)));
            m.nvlinks[row][c] = links;
        }
    }
    if (m.headerLine == 0)
        return R::failure(importError(origin, 0, "no header line starting with GPU0: not an `nvidia-smi topo -m` matrix"));
    for (int g = 0; g < m.gpuCount; ++g)
        if (!rowLine[g])
            return R::failure(importError(origin, m.headerLine, "no row for GPU" + std::to_string(g)));
    for (int i = 0; i < m.gpuCount; ++i)
        for (int j = i + 1; j < m.gpuCount; ++j)
            if (m.nvlinks[i][j] != m.nvlinks[j][i])
                return R::failure(importError(origin, rowLine[j], "GPU" + std::to_string(j) + " to GPU" + std::to_string(i) +
                                                                      " has " + std::to_string(m.nvlinks[j][i]) +
                                                                      " NVLinks, but line " + std::to_string(rowLine[i]) +
                                                                      " says " + std::to_string(m.nvlinks[i][j])));
    return m;
}

Result<NodeDescription> parseNvidiaSmiTopology(const std::string &text, const std::string &origin)
{
    auto m = parseNvidiaSmiMatrix(text, origin);
    if (!m)
        return Result<NodeDescription>::failure(m.error());
    NodeDescription node;
    node.origin = origin;
    node.gpuCount = m->gpuCount;
    node.gpuCountLine = m->headerLine;
    std::set<int> pairCounts;
    for (int i = 0; i < m->gpuCount; ++i)
        for (int j = 0; j < m->gpuCount; ++j)
            if (i != j)
                pairCounts.insert(m->nvlinks[i][j]);
    const int n = m->gpuCount;
    auto linkSum = [&](int i) {
        int sum = 0;
        for (int j = 0; j < n; ++j)
            sum += i == j ? 0 : m->nvlinks[i][j];
        return sum;
    };
    if (pairCounts.size() == 1) {
        node.nvlinksPerGpu = *pairCounts.begin();   // NVSwitch: every pair sees all links
        return node;
    }
    // Direct links: the GPUs they join are islands unless they reach every GPU (Azure NCv4:
    // NV12 between GPUs 0-1 and 2-3, SYS across). Union-find over the NV# pairs.
    std::vector<int> parent(n);
    for (int g = 0; g < n; ++g)
        parent[g] = g;
    const auto root = [&parent](int x) {
        while (parent[x] != x)
            x = parent[x] = parent[parent[x]];
        return x;
    };
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j)
            if (m->nvlinks[i][j] > 0)
                parent[root(i)] = root(j);
    std::vector<int> order, size(n, 0);
    for (int g = 0; g < n; ++g) {
        if (size[root(g)]++ == 0)
            order.push_back(root(g));
    }
    if (order.size() > 1 && *pairCounts.rbegin() > 0)
        for (int r : order)
            node.islandSizes.push_back(size[r]);
    int fewest = -1;
    for (int i = 0; i < n; ++i)
        if (node.islandSizes.empty() || size[root(i)] >= 2)
            fewest = fewest < 0 ? linkSum(i) : std::min(fewest, linkSum(i));
    node.nvlinksPerGpu = std::max(fewest, 0);
    return node;
}

} // namespace nest
