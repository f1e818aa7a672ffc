// nest-cli export-cluster --cluster C --format astra-sim [--out FILE]
// A cluster in another tool's format: ASTRA-sim's network YAML, one dimension per level
// (core/interop/AstraSimNetwork.h). What the format cannot hold (oversubscription) is
// approximated and said on stderr; what it cannot approximate (a non-uniform tree) is refused.
#include "CliArgs.h"
#include "CliCommands.h"

#include "AstraSimNetwork.h"
#include "ClusterIO.h"
#include "FileGuard.h"

#include <cstdio>
#include <iostream>

namespace nest::cli {

int cmdExportCluster(const Args &argv)
{
    const CliArgs args(argv, {"cluster", "format", "out"}, {}, "export-cluster");
    if (!args.positional().empty())
        throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
    if (!args.has("cluster"))
        throw UsageError{"option --cluster is required"};
    const std::string format = args.value("format", "astra-sim");
    if (format != "astra-sim")
        throw UsageError{"option --format: unknown format '" + format + "' (known: astra-sim)"};
    const Result<Topology> t = resolveCluster(args.value("cluster"));
    if (!t)
        throw UsageError{t.error()};
    std::vector<std::string> notes;
    const Result<AstraSimNetwork> net = astraSimFromTopology(*t, &notes);
    if (!net)
        throw UsageError{args.value("cluster") + ": cannot be written as an ASTRA-sim network: " + net.error()};
    for (const std::string &note : notes)
        std::cerr << "nest-cli export-cluster: note: " << note << "\n";
    const std::string yaml = astraSimNetworkToYaml(*net);
    if (!args.has("out")) {
        std::cout << yaml;
        return 0;
    }
    if (auto written = writeFileAtomically(args.value("out"), yaml); !written)
        throw UsageError{written.error()};
    std::printf("%s: %zu dimensions, %d NPUs\n", args.value("out").c_str(), net->dimensions.size(), t->deviceCount());
    return 0;
}

} // namespace nest::cli
