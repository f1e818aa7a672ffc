// Placeholder until the simulate command lands; replaced by its owner.
#include "CliCommands.h"

#include <iostream>

namespace nest::cli {

int cmdSimulate(const Args &)
{
    std::cerr << "nest-cli simulate: not implemented yet\n";
    return 1;
}

} // namespace nest::cli
