#include "CliCommands.h"
#include <iostream>
namespace nest::cli {
int cmdInspect(const Args &) { std::cerr << "todo\n"; return 1; }
}
