#include "CliCommands.h"
#include <iostream>
namespace nest::cli {
int cmdPresets(const Args &) { std::cerr << "todo\n"; return 1; }
}
