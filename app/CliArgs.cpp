#include "CliArgs.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace nest::cli {

CliArgs::CliArgs(const std::vector<std::string> &args, const std::set<std::string> &valueOptions,
                 const std::set<std::string> &flags)
{
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a.rfind("--", 0) != 0 || a == "--") {
            m_positional.push_back(a);
            continue;
        }
        std::string name = a.substr(2);
        std::string val;
        bool inlineValue = false;
        if (const auto eq = name.find('='); eq != std::string::npos) {
            val = name.substr(eq + 1);
            name = name.substr(0, eq);
            inlineValue = true;
        }
        if (flags.count(name)) {
            if (inlineValue)
                throw UsageError{"option --" + name + " takes no value"};
            m_flags.insert(name);
        } else if (valueOptions.count(name)) {
            if (!inlineValue) {
                if (i + 1 >= args.size())
                    throw UsageError{"option --" + name + " needs a value"};
                val = args[++i];
            }
            m_values[name] = val;
        } else {
            throw UsageError{"unknown option --" + name};
        }
    }
}

std::string CliArgs::value(const std::string &name, const std::string &fallback) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second;
}

static int parseInt(const std::string &name, const std::string &text, int minValue)
{
    errno = 0;
    char *end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < minValue || v > 1'000'000'000)
        throw UsageError{"option --" + name + " expects a whole number >= " + std::to_string(minValue) +
                         ", got '" + text + "'"};
    return static_cast<int>(v);
}

int CliArgs::intValue(const std::string &name, int fallback, int minValue) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : parseInt(name, it->second, minValue);
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

} // namespace nest::cli
