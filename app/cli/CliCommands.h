#pragma once
// The nest-cli sub-commands. Each returns the process exit code: 0 success, 2 bad input or
// usage (message already printed on stderr), 1 an internal failure.
#include <map>
#include <string>
#include <vector>

namespace nest::cli {

using Args = std::vector<std::string>;

int cmdPresets(const Args &args);   // cli_presets.cpp
int cmdInspect(const Args &args);   // cli_inspect.cpp
int cmdEvaluate(const Args &args);  // cli_evaluate.cpp
int cmdSimulate(const Args &args);  // cli_simulate.cpp
int cmdPlan(const Args &args);      // cli_plan.cpp
int cmdCompare(const Args &args);   // cli_compare.cpp
int cmdReproduce(const Args &args); // cli_reproduce.cpp
int cmdCompletion(const Args &args);// cli_completion.cpp
int cmdExport(const Args &args);    // cli_export.cpp
int cmdCalibrate(const Args &args); // cli_calibrate.cpp
int cmdImportCluster(const Args &args);  // cli_import_cluster.cpp
int cmdExportCluster(const Args &args);  // cli_export_cluster.cpp

// Every sub-command by name (cli_main.cpp): the dispatcher and the completion script use it.
using Command = int (*)(const Args &);
const std::map<std::string, Command> &commandTable();

} // namespace nest::cli
