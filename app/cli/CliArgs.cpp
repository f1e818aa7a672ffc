#include "CliArgs.h"

#include "CliHelp.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace nest::cli {

namespace {

std::string usageLine(const std::string &command)
{
    return "\nRun `nest-cli " + command + " --help` for its options.";
}

// CLI11's messages rephrased in the words the CLI has always used (scripts and tests
// match them): "unknown option --x", "option --x needs a value", "unexpected argument 'y'".
UsageError translate(const CLI::ParseError &e, const std::string &command)
{
    const std::string what = e.what();
    if (dynamic_cast<const CLI::ArgumentMismatch *>(&e)) {
        const std::string name = what.substr(0, what.find(':'));
        return {"option " + name + " needs a value"};
    }
    return {what + usageLine(command)};
}

} // namespace

CliArgs::CliArgs(const std::vector<std::string> &args, const std::set<std::string> &valueOptions,
                 const std::set<std::string> &flags, const std::string &command)
{
    const CommandHelp help = commandHelp(command);
    CLI::App app(help.summary, "nest-cli " + command);
    app.set_help_flag("-h,--help", "print this help and exit");
    if (!help.example.empty())
        app.footer("Example:\n  " + help.example +
                   "\n\nExit status: 0 success, 2 bad input or usage, 1 internal error.");
    app.get_formatter()->column_width(34);
    app.allow_extras();  // positional words come back in remaining(); unknown options are refused below

    std::map<std::string, std::string> storage;
    std::map<std::string, CLI::Option *> options;
    for (const std::string &name : valueOptions) {
        const OptionHelp h = optionHelp(command, name);
        CLI::Option *o = app.add_option("--" + name, storage[name], h.text);
        o->type_name(h.valueName)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        options[name] = o;
    }
    for (const std::string &name : flags) {
        const OptionHelp h = optionHelp(command, name);
        options[name] = app.add_flag("--" + name, h.text);
    }

    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11's order
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp &) {
        throw HelpRequested{app.help()};
    } catch (const CLI::ParseError &e) {
        throw translate(e, command);
    }
    for (const std::string &extra : app.remaining()) {
        if (extra.size() > 1 && extra[0] == '-')
            throw UsageError{"unknown option " + extra.substr(0, extra.find('=')) + usageLine(command)};
        m_positional.push_back(extra);
    }
    for (const std::string &name : valueOptions)
        if (options[name]->count() > 0)
            m_values[name] = storage[name];
    for (const std::string &name : flags)
        if (options[name]->count() > 0)
            m_flags.insert(name);
}

std::string CliArgs::value(const std::string &name, const std::string &fallback) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second;
}

// The whole number `text` spells, nullopt for anything else (empty, trailing text, overflow).
static std::optional<long> wholeNumber(const std::string &text)
{
    errno = 0;
    char *end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0)
        return std::nullopt;
    return v;
}

static int parseInt(const std::string &name, const std::string &text, int minValue)
{
    const std::optional<long> n = wholeNumber(text);
    const long v = n.value_or(0);
    if (!n || v < minValue || v > 1'000'000'000)
        throw UsageError{"option --" + name + " expects a whole number >= " + std::to_string(minValue) +
                         ", got '" + text + "'"};
    return static_cast<int>(v);
}

bool CliArgs::numberValue(const std::string &name, double &out) const
{
    const std::string text = value(name);
    char *end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return !text.empty() && *end == '\0';
}

int CliArgs::intValue(const std::string &name, int fallback, int minValue) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : parseInt(name, it->second, minValue);
}

static int parseInRange(const std::string &name, const std::string &text, const Range &range)
{
    const std::optional<long> v = wholeNumber(text);
    if (!v)
        throw UsageError{"option --" + name + " expects a whole number (" + describeRange(range) + "), got '" +
                         text + "'"};
    if (const auto problem = checkRange(static_cast<double>(*v), range, "option --" + name))
        throw UsageError{*problem};
    return static_cast<int>(*v);
}

int CliArgs::intValue(const std::string &name, int fallback, const Range &range) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : parseInRange(name, it->second, range);
}

std::vector<int> CliArgs::intList(const std::string &name, const std::vector<int> &fallback,
                                  const Range &range) const
{
    std::vector<int> out = intList(name, fallback);
    if (m_values.count(name))
        for (int v : out)
            if (const auto problem = checkRange(v, range, "option --" + name))
                throw UsageError{*problem};
    return out;
}

std::vector<int> CliArgs::intList(const std::string &name, const std::vector<int> &fallback) const
{
    const auto it = m_values.find(name);
    if (it == m_values.end())
        return fallback;
    std::vector<int> out;
    std::stringstream ss(it->second);
    std::string item;
    while (std::getline(ss, item, ','))
        out.push_back(parseInt(name, item, 1));
    if (out.empty())
        throw UsageError{"option --" + name + " expects a comma-separated list of whole numbers"};
    return out;
}

std::vector<std::string> CliArgs::wordList(const std::string &name,
                                           const std::vector<std::string> &fallback) const
{
    const auto it = m_values.find(name);
    if (it == m_values.end())
        return fallback;
    std::vector<std::string> out;
    const std::string &text = it->second;
    size_t at = 0;
    while (true) {
        const size_t comma = text.find(',', at);
        const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        if (item.empty())
            throw UsageError{"option --" + name + " has an empty item in '" + text + "'"};
        out.push_back(item);
        if (comma == std::string::npos)
            break;
        at = comma + 1;
    }
    return out;
}

} // namespace nest::cli
