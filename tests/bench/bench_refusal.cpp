// Refusals before any search (issue 49, point 4): how long and how much memory it takes each
// planning path to say "nothing fits in memory" for a model whose weights, gradients and
// optimizer state exceed the whole cluster's memory. A plain main(); each path runs in a
// fresh child process so that its peak resident set is its own (figures in docs/reliability.md).
//   bench_refusal [CLUSTER] [MODEL] [LAYERS]   defaults: paper-v100-8, gpt3-175b, 30000
#include "ClusterIO.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "NestPlanner.h"
#include "PlannerRegistry.h"
#include "PlanningSession.h"
#include "SearchEstimate.h"
#include "SearchSettings.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace nest;

namespace {

struct Path {
    const char *name;
    std::function<std::string()> run;  // returns the refusal message ("" = planned)
};

void runIsolated(const Path &p)
{
    int fds[2];
    if (pipe(fds) != 0)
        return;
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        const auto start = std::chrono::steady_clock::now();
        const std::string message = p.run();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        char line[512];
        const int n = std::snprintf(line, sizeof line, "| %s | %.3f | %.0f | %.90s |\n", p.name, s,
                                    u.ru_maxrss / 1024.0, message.empty() ? "(planned)" : message.c_str());
        (void)!write(fds[1], line, n);
        _exit(0);
    }
    close(fds[1]);
    char buf[512];
    const ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (n > 0) {
        buf[n] = 0;
        std::fputs(buf, stdout);
    }
}

} // namespace

int main(int argc, char **argv)
{
    const std::string clusterName = argc > 1 ? argv[1] : "paper-v100-8";
    const std::string modelName = argc > 2 ? argv[2] : "gpt3-175b";
    const int layers = argc > 3 ? std::atoi(argv[3]) : 30000;
    const Result<Topology> cluster = resolveCluster(clusterName);
    const Result<ModelConfig> base = modelPreset(modelName);
    if (!cluster || !base) {
        std::fprintf(stderr, "%s\n", !cluster ? cluster.error().c_str() : base.error().c_str());
        return 2;
    }
    ModelConfig config = base.value();
    const ModelProfile fits = buildProfile(config);
    config.layers = layers;
    const ModelProfile huge = buildProfile(config);
    const Topology &topo = cluster.value();
    const SearchSettings settings;
    const SearchOptions options = searchOptionsFrom(settings, huge);

    std::printf("%s, %s at %d layers: resident set is the child's peak (MB)\n\n", clusterName.c_str(),
                modelName.c_str(), layers);
    std::printf("| path | seconds | peak MB | message |\n| --- | ---: | ---: | --- |\n");
    std::vector<Path> paths;
    for (const char *name : {"nest", "exhaustive", "flat", "megatron", "mcmc"})
        paths.push_back({name, [&, name] { return makePlanner(name)->plan(topo, huge, options).message; }});
    paths.push_back({"estimateSearch", [&] {
                         const auto e = estimateSearch(topo, huge, options, "nest");
                         return e ? std::string("(estimated)") : e.error();
                     }});
    paths.push_back({"live re-plan after a plan", [&] {
                         PlanningSession session;
                         (void)session.replan(topo, fits, searchOptionsFrom(settings, fits));
                         return session.replan(topo, huge, options).message;
                     }});
    for (const Path &p : paths)
        runIsolated(p);
    return 0;
}
