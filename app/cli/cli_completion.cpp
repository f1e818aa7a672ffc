// nest-cli completion bash: a bash completion script for the sub-commands and their
// options, generated from the same tables that build the parsers (CliHelp), by asking
// each command for its --help.
#include "CliArgs.h"
#include "CliCommands.h"
#include "CliHelp.h"

#include <iostream>
#include <sstream>

namespace nest::cli {

namespace {

// The long options a command's help lists.
std::string optionsOf(const std::string &command)
{
    const std::map<std::string, Command> &commands = commandTable();
    const auto it = commands.find(command);
    if (it == commands.end() || command == "completion")
        return "--help";
    std::string help;
    try {
        it->second({"--help"});
    } catch (const HelpRequested &h) {
        help = h.text;
    }
    std::string words;
    std::istringstream in(help);
    std::string token;
    while (in >> token) {
        if (token.rfind("--", 0) != 0)
            continue;
        while (!token.empty() && (token.back() == ',' || token.back() == ':'))
            token.pop_back();
        if (words.find(token + " ") == std::string::npos)
            words += token + " ";
    }
    return words;
}

} // namespace

int cmdCompletion(const Args &argv)
{
    const CliArgs args(argv, {"shell"}, {}, "completion");
    std::string shell = args.value("shell", "bash");
    if (!args.positional().empty())
        shell = args.positional().front();
    if (shell != "bash")
        throw UsageError{"only bash completion is available, got '" + shell + "'"};
    std::string names;
    for (const CommandHelp &c : commandHelps())
        names += c.name + " ";
    std::cout << "# bash completion for nest-cli: source <(nest-cli completion bash)\n"
                 "_nest_cli() {\n"
                 "  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
                 "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                 "    COMPREPLY=($(compgen -W \""
              << names
              << "--help --version\" -- \"$cur\")); return\n"
                 "  fi\n"
                 "  case \"${COMP_WORDS[1]}\" in\n";
    for (const CommandHelp &c : commandHelps()) {
        if (c.name == "completion")
            continue;
        std::cout << "    " << c.name << ") COMPREPLY=($(compgen -W \"" << optionsOf(c.name)
                  << "\" -- \"$cur\"));;\n";
    }
    std::cout << "  esac\n"
                 "  if [ ${#COMPREPLY[@]} -eq 0 ]; then COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
                 "}\n"
                 "complete -F _nest_cli nest-cli\n";
    return 0;
}

} // namespace nest::cli
