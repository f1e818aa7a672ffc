#pragma once
// The figures of `nest-cli reproduce`: DIR/throughput-FAMILY-MODEL.{png,svg} (throughput
// against devices, one line per planner) and DIR/microbatch-MODEL.{png,svg}, drawn with
// QCustomPlot (ui/SeriesChart.h) on the offscreen platform. Only in the GUI build
// (NEST_BUILD_GUI=ON: library nestfigures, NEST_HAVE_FIGURES on nest-cli); this header
// itself is Qt-free so cli_reproduce.cpp compiles the same either way.
#include "PaperEvaluation.h"

#include <filesystem>
#include <string>
#include <vector>

namespace nest::cli {

// Creates a QApplication when there is none (offscreen unless QT_QPA_PLATFORM is set),
// writes every figure of `rows` into `dir` and returns the files written. Throws UsageError
// ("FILE: reason") when one cannot be written.
std::vector<std::string> writeReproduceFigures(const std::vector<EvaluationRow> &rows, const EvaluationGrid &grid,
                                               const std::filesystem::path &dir);

} // namespace nest::cli
