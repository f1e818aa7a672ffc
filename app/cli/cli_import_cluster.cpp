// nest-cli import-cluster FILE [--format F] [--node FILE] [--device PRESET] [--gpus-per-node N]
//                              [--bandwidth LIST] [--latency LIST] [--oversubscription LIST] [--out FILE]
// A cluster file from a Slurm topology.conf, an NCCL topology dump, an nvidia-smi topo -m
// matrix or an ASTRA-sim network YAML (core/interop/ClusterImport.h). Writes the cluster JSON
// to --out (compact when the tree is uniform, else explicit), or prints it.
#include "CliArgs.h"
#include "CliCommands.h"

#include "ClusterImport.h"
#include "ClusterIO.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace nest::cli {

namespace {

// A comma-separated list of numbers ("450,50,25").
std::vector<double> numberList(const CliArgs &args, const std::string &name)
{
    std::vector<double> out;
    for (const std::string &item : args.wordList(name, {})) {
        size_t used = 0;
        double v = 0;
        try {
            v = std::stod(item, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != item.size() || !std::isfinite(v))
            throw UsageError{"option --" + name + " expects comma-separated numbers, got '" + item + "'"};
        out.push_back(v);
    }
    return out;
}

} // namespace

int cmdImportCluster(const Args &argv)
{
    const CliArgs args(argv,
                       {"format", "node", "device", "gpus-per-node", "bandwidth", "latency", "oversubscription", "out"},
                       {}, "import-cluster");
    if (args.positional().size() != 1)
        throw UsageError{args.positional().empty() ? "which file? usage: nest-cli import-cluster FILE [options]"
                                                   : "one file at a time, got '" + args.positional()[1] + "' too"};
    const std::string file = args.positional().front();
    ClusterImportOptions options;
    if (args.has("format")) {
        options.format = clusterFormatFromName(args.value("format"));
        if (!options.format)
            throw UsageError{"option --format: unknown format '" + args.value("format") + "' (known: " +
                             clusterFormatNames() + ")"};
    }
    options.nodeFile = args.value("node");
    options.device = args.value("device");
    if (args.has("gpus-per-node"))
        options.gpusPerNode = args.intValue("gpus-per-node", 8, limits::devices);
    options.bandwidthGBps = numberList(args, "bandwidth");
    options.latencyUs = numberList(args, "latency");
    options.oversubscription = numberList(args, "oversubscription");

    const Result<Topology> t = importCluster(file, options);
    if (!t)
        throw UsageError{t.error()};
    const Json j = clusterToCompactJson(*t).value_or(clusterToJson(*t));
    // One rule (issue 48): what import-cluster writes, --cluster reads. The importers check the
    // loader's ranges; reading the result back with the loader itself guarantees it.
    if (auto back = clusterFromJson(j, file); !back)
        throw UsageError{"the imported cluster would not load back, so it is not written: " + back.error()};
    if (!args.has("out")) {
        std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
        return 0;
    }
    if (auto written = writeJsonFile(args.value("out"), j); !written)
        throw UsageError{written.error()};
    std::string levels;
    for (const TopoLevel &l : t->levels) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %g GB/s", levels.empty() ? "" : ", ", l.name.c_str(), l.link.bandwidth / 1e9);
        levels += buf;
    }
    std::printf("%s: %d devices (%s), %d levels: %s\n", args.value("out").c_str(), t->deviceCount(),
                t->deviceTypes.front().name.c_str(), t->levelCount(), levels.c_str());
    return 0;
}

} // namespace nest::cli
