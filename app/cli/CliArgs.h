#pragma once
// The options of one nest-cli sub-command, parsed by CLI11 from the option names the
// command accepts: "--key value", "--key=value" and boolean "--flag". The parser is built
// from CliHelp (value names, descriptions, defaults, the command's example), so `--help`
// lists exactly what is accepted. Unknown options are an error (exit 2), so typos never
// pass silently; the values stay text and the commands convert them (intValue, intList...)
// with messages that name the option.
#include "Limits.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace nest::cli {

// Thrown for bad usage; main prints the message on stderr and exits 2.
struct UsageError {
    std::string message;
};

// Thrown for --help: main prints the text on stdout and exits 0.
struct HelpRequested {
    std::string text;
};

class CliArgs {
public:
    // valueOptions take a value ("--cluster FILE"); flags do not ("--json"). `command`
    // names the sub-command for its help text.
    CliArgs(const std::vector<std::string> &args, const std::set<std::string> &valueOptions,
            const std::set<std::string> &flags, const std::string &command);

    bool flag(const std::string &name) const { return m_flags.count(name) > 0; }
    bool has(const std::string &name) const { return m_values.count(name) > 0; }
    std::string value(const std::string &name, const std::string &fallback = {}) const;
    // The option's whole text read as one number (std::strtod, nothing left over): false when it
    // is not one; the caller says what it expected. NaN and infinities are numbers here: range
    // checks refuse them.
    bool numberValue(const std::string &name, double &out) const;
    // Whole number >= minValue; UsageError naming the option otherwise.
    int intValue(const std::string &name, int fallback, int minValue = 1) const;
    // Whole number inside a documented range (core/support/Limits.h); UsageError with the range
    // ("option --seq: must be at most 16777216, found 100000000 (range 1 to 16777216)").
    int intValue(const std::string &name, int fallback, const Range &range) const;
    // Comma-separated whole numbers ("1,2,4,8").
    std::vector<int> intList(const std::string &name, const std::vector<int> &fallback) const;
    // The same, every item inside `range`.
    std::vector<int> intList(const std::string &name, const std::vector<int> &fallback, const Range &range) const;
    // Comma-separated words ("nest,flat"); empty items are an error.
    std::vector<std::string> wordList(const std::string &name, const std::vector<std::string> &fallback) const;
    const std::vector<std::string> &positional() const { return m_positional; }

private:
    std::map<std::string, std::string> m_values;
    std::set<std::string> m_flags;
    std::vector<std::string> m_positional;
};

} // namespace nest::cli
