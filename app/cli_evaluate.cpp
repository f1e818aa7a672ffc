// Placeholder until the evaluate command lands; replaced by its owner.
#include "CliCommands.h"

#include <iostream>

namespace nest::cli {

int cmdEvaluate(const Args &)
{
    std::cerr << "nest-cli evaluate: not implemented yet\n";
    return 1;
}

} // namespace nest::cli
