#include "CliCommands.h"
#include "CliArgs.h"
namespace nest::cli {
int cmdReproduce(const Args &) { throw UsageError{"not yet"}; }
}
