// Every nest-cli sub-command by name: nest-cli's dispatcher (cli_main.cpp), the completion
// script and the Python module (python/) run the commands from this one table.
#include "CliCommands.h"

namespace nest::cli {

const std::map<std::string, Command> &commandTable()
{
    static const std::map<std::string, Command> table{
        {"presets", cmdPresets},   {"inspect", cmdInspect}, {"evaluate", cmdEvaluate},
        {"simulate", cmdSimulate}, {"plan", cmdPlan},       {"compare", cmdCompare},
        {"reproduce", cmdReproduce}, {"completion", cmdCompletion}, {"export", cmdExport},
        {"calibrate", cmdCalibrate}, {"import-cluster", cmdImportCluster}, {"export-cluster", cmdExportCluster}};
    return table;
}

} // namespace nest::cli
