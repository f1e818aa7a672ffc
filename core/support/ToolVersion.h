#pragma once
// The tool's one version (issue 51): CMake's project(VERSION ...) in the top-level
// CMakeLists.txt, compiled in as NEST_VERSION. `nest-cli --version`, `nest-planner --version`,
// nest_planner.__version__ and the Debian package all read it from there.
//
// Every JSON file NEST Planner writes in its own formats (plans, clusters, workspaces,
// calibrations, timelines, comparisons, autosaves) carries it as the top-level key
// "nest_planner_version" (jsonFileText(), used by writeJsonFile() and the window's writers).
// readJsonFile() takes the key out again before any loader sees it, so the formats and their
// loaders are unchanged; a file written by a newer version is remembered, and every message
// formatError() makes about that file says so. Files written for other tools (framework launch
// files, the NEST artifact's inputs, rank maps) and the CLI's stdout are not stamped.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace nest {

inline constexpr const char *kToolVersionKey = "nest_planner_version";

// "0.1.0"
const char *toolVersion();

// Dotted whole numbers compared part by part ("0.10.0" > "0.9.1", "1.0" == "1.0.0"): -1, 0, 1.
// Anything after the numbers ("1.2.0-rc1") is ignored.
int compareVersions(std::string_view a, std::string_view b);

// `j` as the text of a file: the version stamped on an object (a copy; arrays and scalars as
// they are), `indent` spaces, text that is not UTF-8 replaced by U+FFFD, a final newline.
std::string jsonFileText(const nlohmann::json &j, int indent = 2);

// For readJsonFile(): removes "nest_planner_version" from the object `j` read from `file`.
// A version newer than toolVersion() is remembered for newerVersionNote(file). Returns the
// reason when the key is not a version string.
std::optional<std::string> takeToolVersion(nlohmann::json &j, const std::string &file);

// " (FILE was written by NEST Planner 0.2.0, newer than this 0.1.0; ...)" when `file` was read
// from a newer version, else empty. formatError() appends it.
std::string newerVersionNote(std::string_view file);

} // namespace nest
