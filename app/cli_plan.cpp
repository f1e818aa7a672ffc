// Placeholder until the plan command lands; replaced by its owner.
#include "CliCommands.h"

#include <iostream>

namespace nest::cli {

int cmdPlan(const Args &)
{
    std::cerr << "nest-cli plan: not implemented yet\n";
    return 1;
}

} // namespace nest::cli
