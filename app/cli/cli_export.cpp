// nest-cli export --plan FILE (--cluster C --model M | --workspace W)
//   --format megatron|nemo|deepspeed|torchtitan|nest [--out FILE] [--strict] [--json]
// The plan as a framework's launch files (core/interop/FrameworkExport.h, docs/interop.md):
// without --out the main file goes to stdout; with it the main file and its side files
// (rank map, hostfile, launch script) are written next to each other. What the framework
// cannot express is said, with both iteration times, on stderr (or in --json).
#include "CliCommands.h"
#include "CliPlanOptions.h"

#include "FileGuard.h"
#include "FrameworkExport.h"
#include "ModelConfig.h"
#include "PlanIO.h"

#include <filesystem>
#include <iostream>

namespace nest::cli {

namespace {

namespace fs = std::filesystem;

// --format, required.
ExportFormat formatOption(const CliArgs &args)
{
    if (!args.has("format"))
        throw UsageError{"--format is required: one of " + exportFormatNameList()};
    const auto format = exportFormatFromString(args.value("format"));
    if (!format)
        throw UsageError{"option --format expects one of " + exportFormatNameList() + ", got '" +
                         args.value("format") + "'"};
    return *format;
}

// The plan, its cluster and model and the cost options, with the main file's name (`out`,
// which must not be a folder) when the files are written.
ExportRequest exportRequest(const CliArgs &args, ExportFormat format, const std::string &out)
{
    PlanInputs in = loadPlanInputs(args);
    ExportRequest request;
    request.cost = costOptionsFor(args, in);
    request.config = modelConfigFor(args, in.modelSource);
    request.plan = std::move(in.plan);
    request.topology = std::move(in.topology);
    request.model = std::move(in.model);
    if (request.config)
        request.config->seqLength = request.plan.seqLength;
    request.strict = args.flag("strict");
    if (!out.empty()) {
        std::error_code dirError;  // a symlink loop is no directory: the writer names it below
        if (fs::is_directory(out, dirError))
            throw UsageError{out + ": is a directory; --out names the main file (for example " + out + "/" +
                             defaultExportFileName(format) + ")"};
        request.fileName = fs::path(out).filename().string();
    }
    return request;
}

// The export's files beside `out`, all or nothing (issue 48: a launch script must not be
// replaced when its rank map or hostfile cannot be written); their paths.
std::vector<std::string> writeExport(const std::string &out, const ExportResult &result)
{
    std::vector<std::string> written;
    const fs::path dir = fs::path(out).parent_path();
    std::error_code ec;
    if (!dir.empty() && !fs::exists(dir, ec) && !fs::create_directories(dir, ec))
        throw UsageError{out + ": cannot create the folder " + dir.string() + " (" + ec.message() + ")"};
    std::vector<FileToWrite> set;
    for (const ExportFile &f : result.files) {
        const std::string path = (dir / f.name).string();
        set.push_back({path, f.text, f.executable});
        written.push_back(path);
    }
    if (auto ok = writeFilesAtomically(set); !ok)
        throw UsageError{ok.error()};
    return written;
}

void printExportJson(ExportFormat format, const ExportResult &result, const std::vector<std::string> &written)
{
    Json j = {{"format", toString(format)},
              {"framework", exportFormatTitle(format)},
              {"fallback", result.runnable.changes},
              {"notes", result.runnable.notes},
              {"original_iteration_time_s", result.original.iterationTime},
              {"iteration_time_s", result.exported.iterationTime},
              {"fits_memory", result.exported.feasible},
              {"summary", result.summary()},
              {"devices_used", result.exported.devicesUsed},
              {"devices_available", result.devicesAvailable},
              {"files", written}};
    if (result.alternative)
        j["alternative"] = {{"iteration_time_s", result.alternative->report.iterationTime},
                            {"devices_used", result.alternative->report.devicesUsed},
                            {"layout", result.alternative->layout},
                            {"plan", planToJson(result.alternative->plan)}};
    std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

} // namespace

int cmdExport(const Args &argv)
{
    std::set<std::string> values = planValueOptions();
    values.insert({"format", "out"});
    std::set<std::string> flags = planFlagOptions();
    flags.insert({"strict", "json"});
    const CliArgs args(argv, values, flags, "export");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    if (!args.has("plan"))
        throw UsageError{"--plan FILE is required (a plan from `nest-cli plan --out` or the window)"};
    const ExportFormat format = formatOption(args);
    const std::string out = args.value("out");
    auto result = exportPlan(exportRequest(args, format, out), format);
    if (!result)
        throw UsageError{result.error()};

    const std::vector<std::string> written = out.empty() ? std::vector<std::string>{} : writeExport(out, *result);
    if (args.flag("json")) {
        printExportJson(format, *result, written);
        return 0;
    }
    if (out.empty()) {
        std::cout << result->files.front().text;
        std::cerr << result->summary() << "\n";
        return 0;
    }
    std::cout << result->summary() << "\n";
    for (const std::string &w : written)
        std::cout << "wrote " << w << "\n";
    return 0;
}

} // namespace nest::cli
