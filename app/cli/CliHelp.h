#pragma once
// The words of `nest-cli ... --help`: one line per sub-command, an example for each, and
// the value name and description of every option (per command where the meaning differs,
// e.g. --recompute is one mode for evaluate and a list for plan). CliArgs builds each
// command's CLI11 parser from these, so help and parsing cannot drift apart.
#include <string>
#include <vector>

namespace nest::cli {

struct CommandHelp {
    std::string name;
    std::string summary;   // one line
    std::string example;   // one or more example command lines
};

struct OptionHelp {
    std::string valueName;   // "FILE|PRESET", "N", "LIST"... (empty for flags)
    std::string text;        // description with its default
};

// Every sub-command, in the order of `nest-cli --help`.
const std::vector<CommandHelp> &commandHelps();
// The command's help; a placeholder for an unknown name.
CommandHelp commandHelp(const std::string &command);
// The option's help in `command` (its per-command entry, else the common one).
OptionHelp optionHelp(const std::string &command, const std::string &option);

} // namespace nest::cli
