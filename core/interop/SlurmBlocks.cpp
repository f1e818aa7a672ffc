#include "SlurmBlocks.h"

#include "ImportError.h"
#include "SafeText.h"
#include "TextCase.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

namespace nest {

namespace {

struct Line {
    int number = 0;
    std::string text;
};

// Lines without comments, continuations joined (numbered by their first line).
std::vector<Line> logicalLines(const std::string &text)
{
    std::vector<Line> out;
    std::stringstream in(text);
    std::string raw;
    int number = 0;
    Line current;
    bool continued = false;
    while (std::getline(in, raw)) {
        ++number;
        if (!raw.empty() && raw.back() == '\r')
            raw.pop_back();
        if (const auto hash = raw.find('#'); hash != std::string::npos)
            raw.erase(hash);
        const bool continues = !raw.empty() && raw.back() == '\\';
        if (continues)
            raw.pop_back();
        if (!continued)
            current = {number, {}};
        current.text += raw + " ";
        continued = continues;
        if (!continues && current.text.find_first_not_of(" \t") != std::string::npos)
            out.push_back(current);
    }
    if (continued && current.text.find_first_not_of(" \t") != std::string::npos)
        out.push_back(current);
    return out;
}

} // namespace

bool looksLikeSlurmBlocks(const std::string &text)
{
    for (const Line &l : logicalLines(text))
        if (asciiLower(l.text).find("blockname=") != std::string::npos)
            return true;
    return false;
}

Result<SlurmTopology> parseSlurmBlocks(const std::string &text, const std::string &origin)
{
    using R = Result<SlurmTopology>;
    SlurmTopology topo;
    std::map<std::string, int> byName;
    std::map<std::string, int> nodeOwner;
    HostlistBudget budget;
    for (const Line &line : logicalLines(text)) {
        std::stringstream words(line.text);
        std::string word;
        SlurmSwitch block;
        block.line = line.number;
        bool sizesLine = false, hasNodes = false;
        std::set<std::string> seen;
        while (words >> word) {
            const auto eq = word.find('=');
            if (eq == std::string::npos || eq == 0)
                return R::failure(importError(origin, line.number, "'" + word + "' is not KEY=VALUE"));
            const std::string key = asciiLower(word.substr(0, eq));
            const std::string value = word.substr(eq + 1);
            if (!seen.insert(key).second)
                return R::failure(importError(origin, line.number, "'" + word.substr(0, eq) + "' given twice"));
            if (value.empty())
                return R::failure(importError(origin, line.number, "'" + word.substr(0, eq) + "' has no value"));
            if (key == "blockname") {
                if (const std::string why = hostNameProblem(value); !why.empty())
                    return R::failure(importError(origin, line.number, "BlockName: " + why));
                block.name = value;
            } else if (key == "nodes") {
                auto names = expandHostlist(value, budget);
                if (!names)
                    return R::failure(importError(origin, line.number, "cannot read the hostlist '" +
                                                                           value.substr(0, 80) + "': " + names.error()));
                block.nodes = std::move(*names);
                hasNodes = true;
            } else if (key == "blocksizes") {
                // The block sizes jobs may ask for; checked, not needed for the cluster.
                std::stringstream sizes(value);
                std::string size;
                while (std::getline(sizes, size, ','))
                    if (size.empty() || size.size() > 9 ||
                        !std::all_of(size.begin(), size.end(), [](unsigned char c) { return std::isdigit(c); }) ||
                        std::stoi(size) < 1)
                        return R::failure(importError(origin, line.number, "BlockSizes: '" + size +
                                                                               "' is not a whole number of nodes >= 1"));
                sizesLine = true;
            } else {
                return R::failure(importError(origin, line.number, "unknown key '" + word.substr(0, eq) +
                                                                       "' (the block plugin knows BlockName, Nodes, "
                                                                       "BlockSizes)"));
            }
        }
        if (sizesLine) {
            if (!block.name.empty() || hasNodes)
                return R::failure(importError(origin, line.number, "BlockSizes= stands on a line of its own"));
            continue;
        }
        if (block.name.empty())
            return R::failure(importError(origin, line.number, "no BlockName= on this line"));
        if (!hasNodes || block.nodes.empty())
            return R::failure(importError(origin, line.number, "block '" + block.name + "' has no Nodes="));
        if (const auto it = byName.find(block.name); it != byName.end())
            return R::failure(importError(origin, line.number, "block '" + block.name + "' is already defined on line " +
                                                                   std::to_string(topo.switches[it->second].line)));
        const int index = static_cast<int>(topo.switches.size());
        for (const std::string &node : block.nodes) {
            const auto [it, fresh] = nodeOwner.emplace(node, index);
            if (!fresh)
                return R::failure(importError(origin, line.number, "node '" + node + "' is in two blocks: '" +
                                                                       topo.switches[it->second].name + "' (line " +
                                                                       std::to_string(topo.switches[it->second].line) +
                                                                       ") and '" + block.name + "'"));
        }
        block.height = 1;
        byName[block.name] = index;
        topo.switches.push_back(std::move(block));
    }
    if (topo.switches.empty())
        return R::failure(importError(origin, 0, "no BlockName= line: not a Slurm topology/block file"));
    if (topo.switches.size() == 1) {
        topo.root = 0;
        return topo;
    }
    SlurmSwitch root;
    root.name = "scale-out";
    root.line = topo.switches.front().line;
    root.height = 2;
    const int rootIndex = static_cast<int>(topo.switches.size());
    for (int b = 0; b < rootIndex; ++b) {
        root.children.push_back(b);
        topo.switches[static_cast<size_t>(b)].parent = rootIndex;
    }
    topo.switches.push_back(std::move(root));
    topo.root = rootIndex;
    return topo;
}

} // namespace nest
