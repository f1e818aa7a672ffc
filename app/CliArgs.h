#pragma once
// Minimal argument parsing for nest-cli sub-commands: "--key value", "--key=value" and
// boolean "--flag". Unknown options are an error (exit 2), so typos never pass silently.
#include <map>
#include <set>
#include <string>
#include <vector>

namespace nest::cli {

// Thrown for bad usage; main prints the message on stderr and exits 2.
struct UsageError {
    std::string message;
};

class CliArgs {
public:
    // valueOptions take a value ("--cluster FILE"); flags do not ("--json").
    CliArgs(const std::vector<std::string> &args, const std::set<std::string> &valueOptions,
            const std::set<std::string> &flags);

    bool flag(const std::string &name) const { return m_flags.count(name) > 0; }
    bool has(const std::string &name) const { return m_values.count(name) > 0; }
    std::string value(const std::string &name, const std::string &fallback = {}) const;
    // Whole number >= minValue; UsageError naming the option otherwise.
    int intValue(const std::string &name, int fallback, int minValue = 1) const;
    // Comma-separated whole numbers ("1,2,4,8").
    std::vector<int> intList(const std::string &name, const std::vector<int> &fallback) const;
    const std::vector<std::string> &positional() const { return m_positional; }

private:
    std::map<std::string, std::string> m_values;
    std::set<std::string> m_flags;
    std::vector<std::string> m_positional;
};

} // namespace nest::cli
