// nest-cli: the planner without a window. Sub-commands live in cli_<name>.cpp.
#include "CliArgs.h"
#include "CliCommands.h"

#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>

namespace {

const char *kUsage =
    "usage: nest-cli <command> [options]\n"
    "\n"
    "commands:\n"
    "  presets   [--json]                       list devices, cluster templates, models\n"
    "  inspect   [--cluster C] [--model M] [--json]\n"
    "                                           devices, levels, parameters, FLOPs/token\n"
    "  evaluate  (--cluster C --model M | --workspace W) (--plan FILE | --tp N --pp N --dp N ...)\n"
    "            [--json]                       cost report of one plan\n"
    "  simulate  (same options as evaluate) [--out FILE]\n"
    "                                           discrete-event run, timeline JSON\n"
    "  plan      (--cluster C --model M | --workspace W) [--planner nest|exhaustive]\n"
    "            [--microbatch 1,2,4] [--cp 1,2,4] [--vpp 1,2,3,4]\n"
    "            [--recompute none,selective,full] [--max-stages N] [--memory-headroom F]\n"
    "            [--no-zero] [--no-recompute] [--batch N] [--seq N] [--json] [--out FILE]\n"
    "            [--pipeline-units layers|layers+embedding|layers+embedding+loss]\n"
    "            [--target megatron|nemo|deepspeed|torchtitan] [--no-frameworks]\n"
    "                                           search for the best plan\n"
    "            candidate lists: --cp context-parallel degrees, taken as given (default\n"
    "            1,2,4,8,16 where sequence / cp >= 4096 tokens); --vpp 1 = the plain\n"
    "            schedules (1F1B, GPipe), >= 2 = interleaving depths (default 1,2,3,4;\n"
    "            without 1: interleaved only); --recompute modes (default all three)\n"
    "            planners: nest (default), exhaustive, flat, megatron, mcmc [--budget N --seed N]\n"
    "  compare   (same inputs as plan) [--planners nest,flat,megatron,mcmc] [--json]\n"
    "                                           NEST against the baselines, one row each\n"
    "  export    --plan FILE (--cluster C --model M | --workspace W)\n"
    "            --format megatron|nemo|deepspeed|torchtitan|nest [--out FILE] [--strict]\n"
    "                                           launch files for a framework, placement kept\n"
    "  calibrate --runs RUNS.json [--fit gemm_efficiency,step_overhead] [--out CAL.json]\n"
    "                                           fit the cost model to measured runs\n"
    "  reproduce [--out DIR] [--quick] [--calibration CAL.json]\n"
    "                                           the paper's evaluation grid: CSV, tables, plots\n"
    "  import-cluster FILE [--format slurm|nccl-xml|nvidia-smi|astra-sim] [--node FILE]\n"
    "            [--device PRESET] [--gpus-per-node N] [--bandwidth LIST] [--latency LIST]\n"
    "            [--oversubscription LIST] [--out FILE]\n"
    "                                           a cluster file from Slurm, NCCL, nvidia-smi, ASTRA-sim\n"
    "  export-cluster --cluster C --format astra-sim [--out FILE]\n"
    "                                           a cluster as an ASTRA-sim network YAML\n"
    "  completion bash                          bash completion script\n"
    "\n"
    "cost model (evaluate, simulate, plan):\n"
    "            [--framework megatron-core|megatron-lm|deepspeed|fsdp|torchtitan|serial]\n"
    "            what overlaps and how memory is allocated (default megatron-core);\n"
    "            [--efficiency F] large-GEMM fraction of peak (default: the device class's)\n"
    "            [--recompute none|selective|full] (evaluate: the plan's mode)\n"
    "            evaluate also reads back an export: [--order O] [--rank-map F.ranks.json]\n"
    "            [--stage-blocks LIST] (transformer blocks per stage)\n"
    "            [--pipeline-units UNITS] (evaluate, plan: the embedding and the loss as pipeline units)\n"
    "            [--calibration CAL.json] (evaluate, simulate, plan, compare, export, reproduce): a\n"
    "            fitted calibration, in place of a workspace's \"calibration\"; reported times\n"
    "            carry the model's error band (±x %, its basis)\n"
    "\n"
    "C and M are a file (JSON) or a preset name; see `nest-cli presets`. W is a workspace\n"
    "(*.nestws.json): its cluster, model and search settings, as the window plans them;\n"
    "explicit search flags override the workspace's settings.\n"
    "`nest-cli COMMAND --help` lists a command's options with their defaults and an example.\n"
    "Exit status: 0 success, 2 bad input or usage, 1 internal error.\n";

} // namespace

int main(int argc, char **argv)
{
    using namespace nest::cli;
    // Past a file-size limit (ulimit -f) a write fails with EFBIG and the writers report it
    // with the previous files intact, instead of the process dying by SIGXFSZ (issue 48).
    std::signal(SIGXFSZ, SIG_IGN);
    const std::map<std::string, Command> &commands = commandTable();

    if (argc < 2) {
        std::cerr << kUsage;
        return 2;
    }
    const std::string name = argv[1];
    if (name == "-h" || name == "--help" || name == "help") {
        std::cout << kUsage;
        return 0;
    }
    if (name == "--version" || name == "-V") {
        std::cout << "nest-cli " << NEST_VERSION << "\n";
        return 0;
    }
    const auto it = commands.find(name);
    if (it == commands.end()) {
        std::cerr << "nest-cli: unknown command '" << name << "'\n\n" << kUsage;
        return 2;
    }
    // What went to stdout must have reached it: `nest-cli plan --json > FILE` on a full disk
    // exited 0 with a truncated FILE. A failed flush is exit 2 with the reason.
    const auto flushed = [&name](int rc) {
        std::cout.flush();
        if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
            const int e = errno;
            std::cerr << "nest-cli " << name << ": writing the output failed (" << std::strerror(e != 0 ? e : EIO)
                      << ")\n";
            return 2;
        }
        return rc;
    };
    try {
        return flushed(it->second(Args(argv + 2, argv + argc)));
    } catch (const HelpRequested &h) {
        std::cout << h.text;
        return 0;
    } catch (const UsageError &e) {
        std::cerr << "nest-cli " << name << ": " << e.message << "\n";
        return 2;
    } catch (const std::exception &e) {
        std::cerr << "nest-cli " << name << ": internal error: " << e.what() << "\n";
        return 1;
    }
}
