#pragma once
// Slurm's topology.conf for the tree plugin: one switch per line,
//   SwitchName=leaf01 Nodes=gpu[001-016,020] LinkSpeed=400
//   SwitchName=spine0 Switches=leaf[01-04]
// with hostlist expressions (zero-padded ranges, comma lists, several bracket groups),
// case-insensitive keys, '#' comments and trailing-backslash continuations. Each line names
// either nodes (a leaf switch) or switches, never both (Slurm's topology.conf(5)).
//
// parseSlurmTopology() checks the whole file and returns it as a logical tree with every
// switch's height (leaf = 1, a switch above its highest child + 1): switches that serve the
// same child (a leaf under several spines, a node under two leaves) become one logical switch
// named after them ("spine0+spine1"), and several top-level switches (a fabric with no common
// root) get one logical root above them ("top"). Every error names the file and line:
// unknown keys, a line without SwitchName, a switch defined twice, an unparseable hostlist,
// a name under Switches= that is no switch, cycles and a switch with no children.
// LinkSpeed is read and kept, but Slurm's units are arbitrary ("currently not used"), so it
// sets no bandwidth.
#include "Result.h"

#include <string>
#include <vector>

namespace nest {

struct SlurmSwitch {
    std::string name;
    int line = 0;                      // where its SwitchName= line starts
    std::vector<std::string> nodes;    // expanded Nodes= (leaf switches)
    std::vector<int> children;         // indices of the switches of Switches=, in file order
    std::string linkSpeed;             // as written ("" when absent)
    int parent = -1;
    int height = 0;                    // 1 for a leaf switch
    // The file's switches this logical switch stands for: one, or several that serve the
    // same leaves (a leaf under several spines); empty for the root added above several
    // top-level switches (synthetic).
    std::vector<std::string> members;
    bool synthetic = false;
};

struct SlurmTopology {
    std::vector<SlurmSwitch> switches;   // in file order
    int root = -1;                       // the one switch no other lists
    int height() const { return root >= 0 ? switches[root].height : 0; }
    int nodeCount() const;
};

// What the hostlists of one file may expand to (issue 48: a few hundred bytes such as
// "n[0-99999999]", a 100,000-character name with a range, or 200 lines of a million names
// each ended in std::bad_alloc). Counted before anything is expanded; each expansion takes
// its share, so the bound holds for the whole file.
struct HostlistBudget {
    static constexpr long long maxNames = 1 << 20;             // names (the device limit)
    static constexpr long long maxChars = 32ll * 1024 * 1024;  // characters of all names
    long long names = maxNames;   // left
    long long chars = maxChars;   // left
};

// Expands a Slurm hostlist ("gpu[001-016,020],login1"); the error says what is wrong. Every
// name must be a host name (hostNameProblem); names longer than 253 characters and
// expansions past `budget` are refused before they are built.
Result<std::vector<std::string>> expandHostlist(const std::string &expression);
Result<std::vector<std::string>> expandHostlist(const std::string &expression, HostlistBudget &budget);

// `origin` names the file in messages.
Result<SlurmTopology> parseSlurmTopology(const std::string &text, const std::string &origin);

} // namespace nest
