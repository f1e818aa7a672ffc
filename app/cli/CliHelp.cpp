#include "CliHelp.h"

#include "Precision.h"

#include "FrameworkProfile.h"
#include "PlannerRegistry.h"

#include <iterator>
#include <map>

namespace nest::cli {

const std::vector<CommandHelp> &commandHelps()
{
    static const std::vector<CommandHelp> list{
        {"presets", "list the device, cluster-template, cluster and model presets",
         "nest-cli presets\n  nest-cli presets --json"},
        {"inspect", "devices and levels of a cluster; parameters and FLOPs per token of a model",
         "nest-cli inspect --cluster paper-v100-16 --model llama2-7b"},
        {"evaluate", "cost report of one plan (a plan file or a uniform tp/pp/dp layout)",
         "nest-cli evaluate --cluster superpod-h100-256 --model llama3-70b --tp 8 --pp 4 --dp 8 "
         "--sp --zero 1 --schedule interleaved:2 --microbatch 1"},
        {"simulate", "discrete-event run of one iteration; the timeline as JSON with --out",
         "nest-cli simulate --cluster paper-v100-16 --model bert-large --tp 2 --pp 2 --dp 4 --out timeline.json"},
        {"plan", "search for the best plan (NEST, a baseline, or exhaustive search)",
         "nest-cli plan --cluster superpod-h100-256 --model llama3-70b --json --out plan.json\n"
         "  nest-cli plan --workspace sample_configs/workspaces/quickstart.nestws.json --planner mcmc --budget 500"},
        {"compare", "run NEST and the baselines on one cluster and model, side by side",
         "nest-cli compare --cluster paper-spineleaf-64 --model llama2-7b --planners nest,flat,megatron,mcmc"},
        {"reproduce", "the paper's evaluation grid: CSV, Markdown tables and plots",
         "nest-cli reproduce --out results/ --quick"},
        {"calibrate", "fit the cost model to measured runs (GEMM efficiency, step overhead) and write a calibration",
         "nest-cli calibrate --runs sample_configs/runs/mtnlg-530b.json --fit step_overhead --out cal.json\n"
         "  nest-cli evaluate --cluster sample_configs/runs/mtnlg-530b-2800.cluster.json "
         "--model sample_configs/runs/mtnlg-530b.model.json --tp 8 --pp 35 --dp 10 --batch 1920 --seq 2048 "
         "--zero 1 --recompute full --framework deepspeed --calibration cal.json"},
        {"export", "a plan as launch files for Megatron-LM, NeMo, DeepSpeed, torchtitan or the NEST artifact",
         "nest-cli export --plan plan.json --workspace sample_configs/workspaces/quickstart.nestws.json "
         "--format megatron --out run/launch_megatron.sh"},
        {"completion", "print a bash completion script",
         "source <(nest-cli completion bash)"},
        {"import-cluster", "a cluster file from a Slurm topology.conf, an NCCL topology XML, an nvidia-smi topo -m "
                           "matrix or an ASTRA-sim network YAML (docs/formats.md, Importing clusters)",
         "nest-cli import-cluster sample_configs/clusters/imports/slurm-topology.conf "
         "--node sample_configs/clusters/imports/dgx-h100-nccl-topo.xml --out cluster.json\n"
         "  nest-cli import-cluster sample_configs/clusters/imports/astra-sim-network.yml --device h100-sxm-80gb"},
        {"export-cluster", "a cluster as an ASTRA-sim network YAML (one dimension per level)",
         "nest-cli export-cluster --cluster a100-512 --format astra-sim --out network.yml"},
    };
    return list;
}

CommandHelp commandHelp(const std::string &command)
{
    for (const CommandHelp &c : commandHelps())
        if (c.name == command)
            return c;
    return {command, "", ""};
}

namespace {

// One option's help: its value name and description; `list`, when set, is a list of names
// from core (frameworks, planners, precisions) put between `text` and `textAfter`.
struct OptionRow {
    const char *key;   // the option, or COMMAND.OPTION for a per-command meaning
    const char *valueName;
    const char *text;
    std::string (*list)() = nullptr;
    const char *textAfter = "";
};

// The common meaning of each option.
const OptionRow kCommonOptions[] = {
    {"workspace", "FILE", "a workspace (*.nestws.json): its cluster, model and search settings"},
    {"cluster", "FILE|PRESET", "the cluster: a JSON file or a preset (nest-cli presets); optional when "
                                "--model is a NEST artifact input (its own cluster)"},
    {"model", "FILE|PRESET", "the model: JSON, a Hugging Face config.json, a profile, or a preset"},
    {"plan", "FILE", "a plan JSON file (instead of the layout options)"},
    {"tp", "N", "tensor-parallel width (default 1)"},
    {"pp", "N", "pipeline stages (default 1)"},
    {"dp", "N", "data-parallel replicas (default 1)"},
    {"ep", "N", "expert-parallel width: etp x ep divides tp x cp x dp (Megatron-Core's folding; default 1)"},
    {"etp", "N", "the experts' tensor-parallel width (default: tp)"},
    {"moe-imbalance", "F", "MoE: routed tokens of the most loaded expert rank over the mean, dropless "
                            "(default 1.1; docs/cost-model.md, \"MoE parallelism\")"},
    {"capacity-factor", "F", "MoE token dropping: an expert takes at most F x its mean tokens (default 0: "
                              "dropless)"},
    {"moe-dispatcher", "NAME", "MoE token dispatch: alltoall (flat) or deepep (hierarchical: once per remote "
                                "NVLink domain, forwarded over NVLink) (default alltoall)"},
    {"moe-a2a-overlap", "on|off", "MoE: Megatron-Core's expert-parallel overlap (--overlap-moe-expert-parallel-comm, "
                                  "Megatron-Bridge moe_a2a_overlap): one micro-batch's dispatch and combine behind "
                                  "another's forward and backward (default off)"},
    {"fp8-attention", "", "Transformer Engine's FP8 dot-product attention with an fp8 or mxfp8 precision: the "
                          "attention keeps Q, K, V and its output in FP8 (Megatron --fp8-dot-product-attention)"},
    {"cp", "N", "context-parallel width (default 1)"},
    {"sp", "", "sequence parallelism (with tp > 1)"},
    {"microbatch", "N", "samples per micro-batch (default 1)"},
    {"batch", "N", "global batch in samples (default: the model's)"},
    {"seq", "N", "sequence length in tokens (default: the model's)"},
    {"schedule", "NAME", "1f1b, gpipe or interleaved:V (default 1f1b)"},
    {"zero", "0-3", "ZeRO stage (default 0)"},
    {"recompute", "MODE", "activation recomputation: none, selective or full (default none)"},
    {"recompute-modules", "LIST", "what selective recomputation reruns, Megatron-Core's --recompute-modules: "
                                  "core_attn, layernorm, moe_act, mla_up_proj, comma-separated (default core_attn; "
                                  "docs/cost-model.md, \"Recomputation by module\")"},
    {"order", "ORDER", "rank order, fastest first (default tp-cp-ep-dp-pp)"},
    {"calibration", "FILE", "a calibration from nest-cli calibrate: fitted GEMM efficiency and step overhead"},
    {"runs", "FILE", "measured runs ({\"format\": \"nest-runs\"}, docs/validation.md)"},
    {"fit", "LIST", "parameters to fit: gemm_efficiency, step_overhead (default: both when there are at least as many runs as they make parameters, else the one the runs identify: gemm_efficiency of a compute-bound run, step_overhead otherwise; said on the output)"},
    {"rank-map", "FILE", "a rank map from nest-cli export: rank r (in --order) on the device it names"},
    {"stage-blocks", "LIST", "transformer blocks per stage, e.g. 7,9,8,8 (default: balanced)"},
    {"pipeline-units", "UNITS", "what the pipeline split counts: layers, layers+embedding or "
                                 "layers+embedding+loss (the embedding / the output layer and loss as one "
                                 "unit each, as NeMo's account_for_embedding/loss_in_pipeline_split and "
                                 "DeepSpeed's partition_method type:transformer|embedding; default layers)"},
    {"efficiency", "F", "large-GEMM fraction of peak in (0, 1] (default: the device class's)"},
    {"dp-overlap", "F", "fraction of gradient sync hidden behind backward, when the framework "
                         "does not overlap it itself (default 0)"},
    {"pipeline-grad-overlap", "on|off", "gradient reduction of a pipelined plan behind the backward (on) or "
                                         "after the flush (off) (default: the framework's; deepspeed: off)"},
    {"grad-reduce-overlap", "on|off", "gradient reduction per bucket behind the backward (on, as PyTorch DDP and "
                                       "--overlap-grad-reduce) or after it (off) (default: the framework and stack's)"},
    {"grad-bucket-mb", "N", "MiB per call of the data-parallel gradient reduction and parameter gather, each "
                            "call paying the collective's latency: the run's bucket_cap_mb (NeMo, PyTorch DDP) or "
                            "--ddp-bucket-size x gradient bytes (Megatron-Core) (default 50)"},
    {"optimizer-dtype", "fp32|bf16|bf16-moments", "Adam's master weights and moments: fp32 (12 B/param), bf16 (6 B/param, "
                                      "NeMo distributed_fused_adam with optim.dtype bf16) or bf16-moments (fp32 master "
                                      "weights, bf16 m and v: 8 B/param, Megatron-Core's precision-aware optimizer with "
                                      "exp_avg_dtype and exp_avg_sq_dtype bf16) (default fp32)"},
    {"grad-accum-dtype", "fp32|bf16|fp16", "dtype gradients accumulate in across micro-batches, as the run's config "
                                            "sets it (DeepSpeed data_types.grad_accum_dtype): fp32 (4 B/param) or the "
                                            "training dtype (2 B/param; on deepspeed at ZeRO 0/1 DeepSpeedZeroOptimizer "
                                            "instead of the BF16_Optimizer) (default: the framework's)"},
    {"framework", "NAME", "what overlaps and how memory is allocated: ", &frameworkNameList, " (default megatron-core)"},
    {"stack", "NAME", "how the framework is run: defaults (its command-line defaults: no TP-communication, "
                       "gradient-reduce or parameter-gather overlap where those are flags) or tuned (as its "
                       "published recipes run it) (default defaults; docs/cost-model.md, \"Stacks\")"},
    {"precision", "P", "the linear layers' number format: ", &numberFormatNames, " (the device must have it; docs/cost-model.md, \"Precision\")"},
    {"fp8-recipe", "R", "FP8 scaling: ", &fp8RecipeNames, " (default delayed, or the framework's own)"},
    {"planner", "NAME", "the planner: ", &plannerNameList, " (default nest)"},
    {"target", "FRAMEWORK", "plan only what this framework runs as it is: megatron, nemo, deepspeed, "
                             "torchtitan (default: any plan; the report then adds each framework's best)"},
    {"max-stages", "N", "pipeline depth limit, 0 = the layer count (default 0)"},
    {"max-states", "N", "the search limit: states (and the ~8 us each stands for) a search's estimate may "
                         "reach before it is refused (default 2e9, about 16,000 s; 1e3 to 1e12)"},
    {"memory-headroom", "F", "fraction of device memory kept free, in [0, 1) (default 0)"},
    {"vpp", "LIST", "1 = plain schedules, >= 2 interleaving depths (default 1,2,3,4)"},
    {"no-zero", "", "search ZeRO stage 0 only"},
    {"no-frameworks", "", "leave out the best plan of each framework from the report"},
    {"frameworks", "", "with --json: add each framework's best plan (\"frameworks\")"},
    {"match-artifact", "", "with a NEST artifact input as --model: its search space and memory accounting "
                            "(1F1B, the file's tensor widths, micro-batch and recomputation, no ZeRO, sp or cp; "
                            "weights + BF16 gradients + the file's optimizer, every layer's activations once "
                            "plus the stash of each further micro-batch in flight; docs/interop.md)"},
    {"no-recompute", "", "search without activation recomputation"},
    {"json", "", "machine-readable output"},
    {"progress", "", "progress and time left on stderr even when it is not a terminal (a terminal "
                      "always gets it after the first second)"},
    {"budget", "N", "plan evaluations the mcmc planner may spend (default 2000)"},
    {"seed", "N", "seed of the mcmc planner (default 1)"},
    {"planners", "LIST", "planners to run, comma-separated (default nest,flat,megatron,mcmc)"},
    {"threads", "N", "planners run at once (default: the cores, at most 4)"},
    {"quick", "", "a subset of the grid that runs in under a minute"},
};

// Where a command's option means something else (a list where others take one value).
const OptionRow kCommandOptions[] = {
    {"plan.cp", "LIST", "context-parallel degrees, searched as given (default 1,2,4,8,16 where "
                         "sequence / cp >= 4096 tokens)"},
    {"plan.microbatch", "LIST", "micro-batch sizes (default 1,2,4,8)"},
    {"plan.ep", "LIST", "expert-parallel widths on MoE stages (default 1,2,4,8,16,32,64; each divides the "
                         "experts)"},
    {"plan.etp", "LIST", "the experts' tensor widths on MoE stages (default: tp and 1)"},
    {"plan.precision", "LIST", "precisions searched, e.g. bf16,fp8 (default: every one the devices and the "
                                "framework support); the plan records the best"},
    {"compare.precision", "LIST", "precisions searched (default: every one the devices and the framework "
                                   "support)"},
    {"plan.recompute", "LIST", "recompute modes searched: none,selective,full (default all three)"},
    {"plan.out", "FILE", "write the plan as JSON"},
    {"plan.top", "K", "the K best distinct plans (shape or the tier a stage boundary crosses; "
                       "nest planner), each with its time and difference to the best (default 1)"},
    {"plan.threads", "N", "searches the nest planner deals its outer points to (default 1; the plan is "
                           "the one search's, bit for bit, found sooner on a machine with the cores)"},
    {"compare.microbatch", "LIST", "micro-batch sizes (default 1,2,4,8)"},
    {"compare.recompute", "LIST", "recompute modes searched: none,selective,full (default all three)"},
    {"compare.cp", "LIST", "context-parallel degrees, searched as given"},
    {"simulate.out", "FILE", "write the timeline as JSON"},
    {"reproduce.out", "DIR", "output folder (default nest-evaluation)"},
    {"completion.shell", "SHELL", "bash"},
    {"calibrate.out", "FILE", "write the calibration (nest-calibration JSON)"},
    {"export.format", "NAME", "megatron, nemo, deepspeed, torchtitan or nest"},
    {"export.out", "FILE", "the main file; side files (rank map, hostfile, launch script) go beside it "
                            "(default: the main file on stdout)"},
    {"export.strict", "", "refuse (exit 2) when the framework cannot run the plan as it is"},
    {"export.json", "", "what was exported, the fallback and both times, as JSON"},
    {"import-cluster.format", "FORMAT", "slurm, nccl-xml, nvidia-smi or astra-sim (default: detected from the content)"},
    {"import-cluster.node", "FILE", "the inside of every node of a Slurm tree: an NCCL topology XML or nvidia-smi topo -m matrix"},
    {"import-cluster.device", "PRESET", "the device (nest-cli presets); default: the GPU model the files name"},
    {"import-cluster.gpus-per-node", "N", "GPUs per node, where no --node file says"},
    {"import-cluster.bandwidth", "LIST", "GB/s per device, one value per level from the node outward (default: from the files)"},
    {"import-cluster.latency", "LIST", "us, one value per level from the node outward (default: from the files, else 0)"},
    {"import-cluster.oversubscription", "LIST", "ratio >= 1, one value per level from the node outward (default 1)"},
    {"import-cluster.out", "FILE", "write the cluster JSON (default: print it)"},
    {"export-cluster.cluster", "FILE|PRESET", "the cluster: a JSON file or a preset (nest-cli presets)"},
    {"export-cluster.format", "FORMAT", "astra-sim (the only one so far; default astra-sim)"},
    {"export-cluster.out", "FILE", "write the YAML (default: print it)"},
};

std::map<std::string, OptionHelp> tableOf(const OptionRow *begin, const OptionRow *end)
{
    std::map<std::string, OptionHelp> table;
    for (const OptionRow *row = begin; row != end; ++row)
        table.emplace(row->key, OptionHelp{row->valueName, row->list ? row->text + row->list() + row->textAfter
                                                                         : std::string(row->text)});
    return table;
}

} // namespace

OptionHelp optionHelp(const std::string &command, const std::string &option)
{
    static const std::map<std::string, OptionHelp> common = tableOf(std::begin(kCommonOptions), std::end(kCommonOptions));
    static const std::map<std::string, OptionHelp> perCommand =
        tableOf(std::begin(kCommandOptions), std::end(kCommandOptions));
    if (const auto it = perCommand.find(command + "." + option); it != perCommand.end())
        return it->second;
    if (const auto it = common.find(option); it != common.end())
        return it->second;
    return {"VALUE", ""};
}

} // namespace nest::cli
