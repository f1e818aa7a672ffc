#include "SlurmTopology.h"

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

// More names than a cluster can have devices is a typo ([1-1000000000]), not a cluster.
constexpr long long MaxHosts = 1 << 20;

std::string trimmedLine(const std::string &s)
{
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
        return {};
    const auto e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

bool allDigits(const std::string &s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The numbers of one bracket: "001-016,020" -> "001", ..., "016", "020". A range's numbers
// are zero-padded to the width of its lower bound when that has a leading zero (Slurm's rule).
// ", what is left of the file's 1048576 names" when an earlier line took its share.
std::string leftOfFile(long long most)
{
    return most < MaxHosts ? " (what is left of the file's " + std::to_string(MaxHosts) + " names)" : "";
}

Result<std::vector<std::string>> expandBracket(const std::string &inside, long long maxCount)
{
    std::vector<std::string> out;
    std::stringstream parts(inside);
    std::string part;
    if (inside.empty())
        return Result<std::vector<std::string>>::failure("empty brackets '[]'");
    while (std::getline(parts, part, ',')) {
        part = trimmedLine(part);
        const auto dash = part.find('-');
        if (dash == std::string::npos) {
            if (!allDigits(part))
                return Result<std::vector<std::string>>::failure("'" + part + "' in brackets is not a number or a range a-b");
            if (static_cast<long long>(out.size()) >= maxCount)
                return Result<std::vector<std::string>>::failure("brackets with more than " + std::to_string(maxCount) +
                                                                 " numbers" + leftOfFile(maxCount));
            out.push_back(part);
            continue;
        }
        const std::string lo = part.substr(0, dash), hi = part.substr(dash + 1);
        if (!allDigits(lo) || !allDigits(hi) || lo.size() > 9 || hi.size() > 9)
            return Result<std::vector<std::string>>::failure("'" + part + "' is not a range of numbers a-b");
        const long long a = std::stoll(lo), b = std::stoll(hi);
        if (b < a)
            return Result<std::vector<std::string>>::failure("range '" + part + "' runs backwards");
        if (b - a + 1 > MaxHosts)
            return Result<std::vector<std::string>>::failure("range '" + part + "' has more than " +
                                                             std::to_string(MaxHosts) + " names");
        // The bracket as a whole ("[0-999999,0-999999,...]"), before its numbers are built.
        if (static_cast<long long>(out.size()) + (b - a + 1) > maxCount)
            return Result<std::vector<std::string>>::failure("brackets with more than " + std::to_string(maxCount) +
                                                                 " numbers" + leftOfFile(maxCount));
        const size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
        for (long long v = a; v <= b; ++v) {
            std::string s = std::to_string(v);
            if (s.size() < width)
                s.insert(0, width - s.size(), '0');
            out.push_back(s);
        }
    }
    if (!inside.empty() && inside.back() == ',')
        return Result<std::vector<std::string>>::failure("a trailing ',' in brackets");
    return out;
}

// One host pattern without top-level commas: text and bracket groups, every combination.
// The count and the longest name are known before each step builds them: a name past a host
// name's 253 characters, or a pattern past what is left of `budget`, is refused first.
Result<std::vector<std::string>> expandPattern(const std::string &pattern, const HostlistBudget &budget)
{
    using R = Result<std::vector<std::string>>;
    const std::string shown = pattern.size() > 60 ? pattern.substr(0, 60) + "..." : pattern;
    std::vector<std::string> names{""};
    size_t longest = 0;  // of the names so far
    size_t i = 0;
    while (i < pattern.size()) {
        const char c = pattern[i];
        if (c == ']')
            return R::failure("']' without '[' in '" + shown + "'");
        if (c != '[') {
            if (longest + 1 > maxHostNameLength)
                return R::failure("'" + shown + "' makes names longer than " + std::to_string(maxHostNameLength) +
                                  " characters, the most a host name has");
            if (static_cast<long long>(names.size()) * static_cast<long long>(longest + 1) > budget.chars)
                return R::failure("'" + shown + "' expands to more than " +
                                  std::to_string(HostlistBudget::maxChars / (1024 * 1024)) +
                                  " MB of names, what is left of the most one file may give");
            for (auto &n : names)
                n += c;
            ++longest;
            ++i;
            continue;
        }
        const auto close = pattern.find(']', i);
        if (close == std::string::npos)
            return R::failure("'[' without ']' in '" + shown + "'");
        const std::string inside = pattern.substr(i + 1, close - i - 1);
        if (inside.find('[') != std::string::npos)
            return R::failure("nested '[' in '" + shown + "'");
        auto numbers = expandBracket(inside, std::min<long long>(MaxHosts, budget.names));
        if (!numbers)
            return R::failure(numbers.error() + " in '" + shown + "'");
        const long long count = static_cast<long long>(names.size()) * static_cast<long long>(numbers->size());
        const long long most = std::min<long long>(MaxHosts, budget.names);
        if (count > most)
            return R::failure("'" + shown + "' names more than " + std::to_string(most) +
                              (most < MaxHosts ? " hosts, what is left of the file's " : " hosts, the file's ") +
                              std::to_string(HostlistBudget::maxNames));
        size_t widest = 0;
        for (const std::string &num : *numbers)
            widest = std::max(widest, num.size());
        if (longest + widest > maxHostNameLength)
            return R::failure("'" + shown + "' makes names longer than " + std::to_string(maxHostNameLength) +
                              " characters, the most a host name has");
        if (count * static_cast<long long>(longest + widest) > budget.chars)
            return R::failure("'" + shown + "' expands to more than " +
                              std::to_string(HostlistBudget::maxChars / (1024 * 1024)) +
                              " MB of names, what is left of the most one file may give");
        longest += widest;
        std::vector<std::string> next;
        next.reserve(names.size() * numbers->size());
        for (const auto &n : names)
            for (const auto &num : *numbers)
                next.push_back(n + num);
        names = std::move(next);
        i = close + 1;
    }
    return names;
}

struct Statement {
    int line = 0;
    std::string text;
};

// Comments out, continuation lines joined; each statement keeps the line it starts on.
std::vector<Statement> statements(const std::string &text)
{
    std::vector<Statement> out;
    std::stringstream in(text);
    std::string raw;
    int lineNo = 0;
    Statement pending;
    bool continuing = false;
    while (std::getline(in, raw)) {
        ++lineNo;
        if (const auto hash = raw.find('#'); hash != std::string::npos)
            raw.erase(hash);
        std::string line = trimmedLine(raw);
        const bool continues = !line.empty() && line.back() == '\\';
        if (continues)
            line.pop_back();
        if (!continuing) {
            pending = {lineNo, ""};
        }
        pending.text += " " + line;
        continuing = continues;
        if (!continuing) {
            if (!trimmedLine(pending.text).empty())
                out.push_back({pending.line, trimmedLine(pending.text)});
        }
    }
    if (continuing && !trimmedLine(pending.text).empty())
        out.push_back({pending.line, trimmedLine(pending.text)});
    return out;
}

struct RawSwitch {
    SlurmSwitch sw;
    std::vector<std::string> switchNames;   // Switches= expanded
};

Result<RawSwitch> parseStatement(const Statement &st, const std::string &origin, HostlistBudget &budget)
{
    using R = Result<RawSwitch>;
    RawSwitch raw;
    raw.sw.line = st.line;
    std::stringstream words(st.text);
    std::string word;
    bool hasNodes = false, hasSwitches = false;
    std::set<std::string> seen;
    while (words >> word) {
        const auto eq = word.find('=');
        if (eq == std::string::npos || eq == 0)
            return R::failure(importError(origin, st.line, "'" + word + "' is not KEY=VALUE"));
        const std::string key = asciiLower(word.substr(0, eq));
        const std::string value = word.substr(eq + 1);
        if (!seen.insert(key).second)
            return R::failure(importError(origin, st.line, "'" + word.substr(0, eq) + "' given twice"));
        if (value.empty())
            return R::failure(importError(origin, st.line, "'" + word.substr(0, eq) + "' has no value"));
        if (key == "switchname") {
            if (const std::string why = hostNameProblem(value); !why.empty())
                return R::failure(importError(origin, st.line, "SwitchName: " + why));
            raw.sw.name = value;
        } else if (key == "nodes" || key == "switches") {
            auto names = expandHostlist(value, budget);
            if (!names)
                return R::failure(importError(origin, st.line, "cannot read the hostlist '" +
                                                                   oneLine(value.substr(0, 80)) +
                                                                   (value.size() > 80 ? "..." : "") +
                                                                   "': " + names.error()));
            // Node names are the hosts of the exported launch scripts (issue 48); switch
            // names follow the same rule.
            for (const std::string &name : *names)
                if (const std::string why = hostNameProblem(name); !why.empty())
                    return R::failure(importError(origin, st.line, std::string(key == "nodes" ? "Nodes" : "Switches") +
                                                                       ": " + why));
            if (key == "nodes") {
                raw.sw.nodes = std::move(*names);
                hasNodes = true;
            } else {
                raw.switchNames = std::move(*names);
                hasSwitches = true;
            }
        } else if (key == "linkspeed") {
            raw.sw.linkSpeed = value;
        } else {
            return R::failure(importError(origin, st.line, "unknown key '" + word.substr(0, eq) +
                                                               "' (the tree plugin knows SwitchName, Switches, Nodes, LinkSpeed)"));
        }
    }
    if (raw.sw.name.empty())
        return R::failure(importError(origin, st.line, "no SwitchName= on this line"));
    if (hasNodes && hasSwitches)
        return R::failure(importError(origin, st.line, "switch '" + raw.sw.name +
                                                           "' has both Nodes= and Switches= (a line names either nodes or switches)"));
    if (!hasNodes && !hasSwitches)
        return R::failure(importError(origin, st.line, "switch '" + raw.sw.name + "' has neither Nodes= nor Switches=: no node below it"));
    return raw;
}

// Heights bottom-up with cycle detection (an explicit stack, so a deep chain cannot overflow).
std::string computeHeights(SlurmTopology &topo, const std::string &origin)
{
    const int n = static_cast<int>(topo.switches.size());
    std::vector<int> state(n, 0);   // 0 new, 1 on the path, 2 done
    for (int start = 0; start < n; ++start) {
        if (state[start])
            continue;
        std::vector<std::pair<int, size_t>> stack{{start, 0}};
        state[start] = 1;
        while (!stack.empty()) {
            auto &[s, next] = stack.back();
            SlurmSwitch &sw = topo.switches[s];
            if (next < sw.children.size()) {
                const int c = sw.children[next++];
                if (state[c] == 1)
                    return importError(origin, sw.line, "switch '" + sw.name + "' lists '" + topo.switches[c].name +
                                                            "', which is above it: a cycle");
                if (state[c] == 0) {
                    state[c] = 1;
                    stack.push_back({c, 0});
                }
                continue;
            }
            sw.height = 1;
            for (int c : sw.children)
                sw.height = std::max(sw.height, topo.switches[c].height + 1);
            state[s] = 2;
            stack.pop_back();
        }
    }
    return {};
}

// A logical switch's name: its members joined by '+' ("spine0+spine1"), or the first and
// how many more when that grows long.
std::string mergedName(const std::vector<std::string> &members)
{
    std::string joined;
    for (const std::string &m : members)
        joined += (joined.empty() ? "" : "+") + m;
    if (members.size() <= 1 || joined.size() <= 48)
        return joined;
    return members.front() + "+" + std::to_string(members.size() - 1) + "-more";
}

} // namespace

int SlurmTopology::nodeCount() const
{
    int n = 0;
    for (const auto &s : switches)
        n += static_cast<int>(s.nodes.size());
    return n;
}

Result<std::vector<std::string>> expandHostlist(const std::string &expression)
{
    HostlistBudget budget;
    return expandHostlist(expression, budget);
}

Result<std::vector<std::string>> expandHostlist(const std::string &expression, HostlistBudget &budget)
{
    using R = Result<std::vector<std::string>>;
    std::vector<std::string> out;
    int depth = 0;
    std::string item;
    auto flush = [&]() -> std::string {
        const std::string pattern = trimmedLine(item);
        item.clear();
        if (pattern.empty())
            return "an empty name in '" + expression + "'";
        auto names = expandPattern(pattern, budget);
        if (!names)
            return names.error();
        // Hostlists name hosts (issue 48; the fuzzer found "a,b[1-3]\xff..." passing here).
        for (const std::string &n : *names)
            if (std::string why = hostNameProblem(n); !why.empty())
                return why;
        long long chars = 0;
        for (const std::string &n : *names)
            chars += static_cast<long long>(n.size());
        if (static_cast<long long>(names->size()) > budget.names)
            return "more than " + std::to_string(HostlistBudget::maxNames) + " names in the file";
        if (chars > budget.chars)
            return "more than " + std::to_string(HostlistBudget::maxChars / (1024 * 1024)) + " MB of names in the file";
        budget.names -= static_cast<long long>(names->size());
        budget.chars -= chars;
        out.insert(out.end(), names->begin(), names->end());
        return {};
    };
    for (const char c : expression) {
        if (c == '[')
            ++depth;
        else if (c == ']')
            --depth;
        if (c == ',' && depth == 0) {
            if (std::string why = flush(); !why.empty())
                return R::failure(why);
            continue;
        }
        item += c;
    }
    if (std::string why = flush(); !why.empty())
        return R::failure(why);
    return out;
}

namespace {

// The file's switches as written, merged into logical switches: switches that serve the same
// child (a leaf under several spines) or the same node (a dual-homed node) are one logical
// switch (issue 49), and merged switches' own parents merge in turn.
class SwitchMerger {
public:
    SwitchMerger(SlurmTopology &topo, const std::string &origin) : m_topo(topo), m_origin(origin) {}

    // The file's statements; an error message when one is wrong or a switch is defined twice.
    std::string read(const std::string &text)
    {
        HostlistBudget budget;  // for the whole file
        for (const Statement &st : statements(text)) {
            auto raw = parseStatement(st, m_origin, budget);
            if (!raw)
                return raw.error();
            if (const auto it = m_byName.find(raw->sw.name); it != m_byName.end())
                return importError(m_origin, st.line, "switch '" + raw->sw.name + "' is already defined on line " +
                                                          std::to_string(m_topo.switches[it->second].line));
            m_byName[raw->sw.name] = static_cast<int>(m_topo.switches.size());
            m_topo.switches.push_back(std::move(raw->sw));
            m_childNames.push_back(std::move(raw->switchNames));
        }
        if (m_topo.switches.empty())
            return importError(m_origin, 0, "no SwitchName= line: not a Slurm topology.conf");
        return {};
    }

    // The file's graph, children by index, and the merges it implies. A switch or node may be
    // listed under several switches (a leaf under several spines, a dual-homed node).
    std::string link()
    {
        const int raw = static_cast<int>(m_topo.switches.size());
        m_rawChildren.assign(static_cast<size_t>(raw), {});
        m_unionOf.resize(static_cast<size_t>(raw));
        for (int s = 0; s < raw; ++s)
            m_unionOf[s] = s;
        std::vector<int> firstParent(raw, -1);
        std::map<std::string, int> nodeOwner;
        for (int s = 0; s < raw; ++s) {
            const SlurmSwitch &sw = m_topo.switches[s];
            for (const std::string &name : m_childNames[s]) {
                const auto it = m_byName.find(name);
                if (it == m_byName.end())
                    return importError(m_origin, sw.line, "'" + name + "' under Switches= of '" + sw.name +
                                                              "' is no switch of this file (nodes belong under Nodes=)");
                if (it->second == s)
                    return importError(m_origin, sw.line, "switch '" + sw.name + "' lists itself: a cycle");
                m_rawChildren[s].push_back(it->second);
                // Switches that serve the same child are one logical switch (issue 49).
                if (firstParent[it->second] >= 0)
                    join(s, firstParent[it->second]);
                firstParent[it->second] = s;
            }
            for (const std::string &node : sw.nodes) {
                if (m_byName.count(node))
                    return importError(m_origin, sw.line, "'" + node + "' under Nodes= of '" + sw.name +
                                                              "' is a switch (switches belong under Switches=)");
                const auto [it, fresh] = nodeOwner.emplace(node, s);
                if (!fresh)
                    join(s, it->second);  // a node under two leaves: the leaves are one logical leaf
            }
        }
        mergeParents();
        return {};
    }

    // The logical switches, in the file order of their first member, with their nodes and
    // children once each.
    void merge()
    {
        const int raw = static_cast<int>(m_topo.switches.size());
        std::vector<int> logicalOf(raw, -1);
        std::vector<SlurmSwitch> logical;
        std::vector<std::vector<std::string>> members;
        for (int s = 0; s < raw; ++s) {
            const int cls = find(s);
            if (logicalOf[cls] < 0) {
                logicalOf[cls] = static_cast<int>(logical.size());
                logical.push_back(SlurmSwitch{});
                logical.back().line = m_topo.switches[s].line;
                logical.back().linkSpeed = m_topo.switches[s].linkSpeed;
                members.emplace_back();
            }
            logicalOf[s] = logicalOf[cls];
            members[logicalOf[s]].push_back(m_topo.switches[s].name);
        }
        std::vector<std::set<std::string>> seenNodes(logical.size());
        std::vector<std::set<int>> seenChildren(logical.size());
        for (int s = 0; s < raw; ++s) {
            SlurmSwitch &l = logical[logicalOf[s]];
            for (const std::string &node : m_topo.switches[s].nodes)
                if (seenNodes[logicalOf[s]].insert(node).second)
                    l.nodes.push_back(node);
            for (int c : m_rawChildren[s]) {
                const int lc = logicalOf[c];
                if (lc != logicalOf[s] && seenChildren[logicalOf[s]].insert(lc).second)
                    l.children.push_back(lc);
            }
        }
        for (size_t l = 0; l < logical.size(); ++l) {
            logical[l].name = mergedName(members[l]);
            logical[l].members = members[l];
            for (int c : logical[l].children)
                logical[c].parent = static_cast<int>(l);
        }
        m_topo.switches = std::move(logical);
    }

    bool isName(const std::string &name) const { return m_byName.count(name) > 0; }

private:
    SlurmTopology &m_topo;
    const std::string &m_origin;
    std::map<std::string, int> m_byName;
    std::vector<std::vector<std::string>> m_childNames;
    std::vector<std::vector<int>> m_rawChildren;
    std::vector<int> m_unionOf;

    int find(int x)
    {
        while (m_unionOf[x] != x)
            x = m_unionOf[x] = m_unionOf[m_unionOf[x]];
        return x;
    }
    void join(int a, int b) { m_unionOf[find(a)] = find(b); }

    // Merged switches' own parents merge in turn, until every logical switch has one parent.
    void mergeParents()
    {
        const int raw = static_cast<int>(m_topo.switches.size());
        for (bool changed = true; changed;) {
            changed = false;
            std::map<int, int> parentOfClass;
            for (int s = 0; s < raw; ++s)
                for (int c : m_rawChildren[s]) {
                    const int cls = find(c), p = find(s);
                    if (p == cls)
                        continue;
                    const auto [it, fresh] = parentOfClass.emplace(cls, p);
                    if (!fresh && find(it->second) != p) {
                        join(p, it->second);
                        changed = true;
                    }
                }
        }
    }
};

// Several top-level switches (Slurm accepts fabrics with no common root; jobs do not span
// them): one logical root above them all, so the cluster is one tree.
std::string addRoot(SlurmTopology &topo, const SwitchMerger &names, const std::string &origin)
{
    std::vector<int> roots;
    for (int s = 0; s < static_cast<int>(topo.switches.size()); ++s)
        if (topo.switches[s].parent < 0)
            roots.push_back(s);
    if (roots.empty())  // every switch has a parent: the chain closes on itself
        return importError(origin, topo.switches.front().line, "every switch has a parent: a cycle");
    if (roots.size() == 1) {
        topo.root = roots.front();
        return {};
    }
    SlurmSwitch top;
    top.name = "top";
    for (int k = 1; names.isName(top.name); ++k)
        top.name = "top" + std::to_string(k);
    top.line = 0;
    top.synthetic = true;
    top.height = 0;
    for (int r : roots) {
        top.children.push_back(r);
        topo.switches[r].parent = static_cast<int>(topo.switches.size());
        top.height = std::max(top.height, topo.switches[r].height + 1);
    }
    topo.switches.push_back(top);
    topo.root = static_cast<int>(topo.switches.size()) - 1;
    return {};
}

} // namespace

Result<SlurmTopology> parseSlurmTopology(const std::string &text, const std::string &origin)
{
    using R = Result<SlurmTopology>;
    SlurmTopology topo;
    SwitchMerger merger(topo, origin);
    if (std::string why = merger.read(text); !why.empty())
        return R::failure(why);
    if (std::string why = merger.link(); !why.empty())
        return R::failure(why);
    merger.merge();
    if (std::string why = computeHeights(topo, origin); !why.empty())
        return R::failure(why);
    if (std::string why = addRoot(topo, merger, origin); !why.empty())
        return R::failure(why);
    return topo;
}

} // namespace nest
