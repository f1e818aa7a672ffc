#pragma once
// What a training framework overlaps and how it allocates memory (docs/cost-model.md,
// "Framework profiles"). The evaluator charges communication as exposed unless the profile
// overlaps it; overlapped communication is never free: the compute it hides behind slows by
// `contention` x the hidden communication time (SM and HBM shared with the NCCL kernels).
#include "Precision.h"

#include <optional>
#include <string>
#include <vector>

namespace nest {

// Serial: nothing overlapped, fp32 gradients, no fragmentation or contention: the
// conservative bound (and the NEST paper's own cost model), used by hand-checked tests.
enum class Framework { MegatronCore, MegatronLM, DeepSpeed, Fsdp, Torchtitan, Serial };

// The software stack a prediction assumes (docs/cost-model.md, "Stacks"): the framework as
// NVIDIA's and the framework authors' tuned recipes run it (every overlap and fusion their
// published configurations turn on: the profiles below), or as its command-line defaults
// run it, without those flags. Every reported time names the one it assumes ("megatron-core,
// defaults"). Defaults is the default: on published runs the model was not fitted to, it is
// the one that is not optimistic (docs/validation.md).
enum class Stack { Defaults, Tuned };
const char *toString(Stack s);
// "defaults" or "tuned" (case-insensitive).
std::optional<Stack> stackFromString(const std::string &name);

struct FrameworkProfile {
    Framework id = Framework::MegatronCore;
    const char *name = "megatron-core";
    // Tensor-parallel all-gather / reduce-scatter split into chunks and pipelined with the
    // GEMMs they feed (Transformer Engine userbuffers, --tp-comm-overlap); needs sequence
    // parallelism, as in Megatron-Core.
    bool tpOverlap = false;
    // Without that, the backward's TP collective still runs asynchronously beside the
    // weight-gradient GEMM (Megatron-LM --async-tensor-model-parallel-allreduce, 2021+).
    bool tpBackwardOverlap = false;
    // Gradient reduce (-scatter) launched per bucket during the last micro-batch's backward.
    bool gradReduceOverlap = false;
    // Distributed-optimizer / ZeRO-1,2 parameter all-gather overlapped with the next forward.
    bool paramGatherOverlap = false;
    // Pipeline send / recv overlapped with compute (Megatron-Core with interleaving).
    bool p2pOverlap = false;
    // ZeRO-2/3 traffic prefetched / bucketed behind the layer compute (CostOptions::zeroOverlap
    // scales the window).
    bool zeroPrefetch = true;
    // Context-parallel ring exchange overlapped with the blockwise attention.
    bool cpOverlap = false;
    // Kernels: Transformer Engine's fused attention (cuDNN / FlashAttention-3 class on
    // Hopper) vs FlashAttention-2; fused norm / activation kernels (1 HBM pass) vs eager
    // PyTorch (about 2 passes per element-wise op).
    bool fusedAttention = false;
    double elementwisePasses = 1;
    // Megatron's vocab-parallel cross-entropy works in place on one FP32 copy of the logits;
    // eager PyTorch (logits.float() then cross_entropy) holds a second FP32 buffer.
    bool fusedLoss = true;
    // Bytes per parameter of the gradient buffer that accumulates across micro-batches
    // (4 = fp32 main grads, 2 = bf16).
    double gradBytesPerParam = 4;
    // What happens when the model is pipelined (more than one stage). The gradient reduction
    // stays overlapped with the backward (gradReduceOverlap) only when this is set: DeepSpeed's
    // PipelineEngine turns its backward all-reduce off and runs ReduceGrads after the last
    // BackwardPass of the schedule (runtime/pipe/engine.py: enable_backward_allreduce = False;
    // schedule.py: ReduceTiedGrads, ReduceGrads, OptimizerStep in the last step).
    // CostOptions::pipelineGradOverlap overrides it.
    bool pipelineGradReduceOverlap = true;
    // Pipeline send and receive are separate blocking calls, one after the other, each a
    // rendezvous with the neighbour (DeepSpeed runtime/pipe/p2p.py send / recv): the four
    // transfers of a micro-batch on an interior stage (receive the activation and send the
    // input gradient in its forward step; send the activation and receive the gradient in
    // its backward step) are serial, where Megatron batches each pair of opposite-direction
    // transfers into one call (batch_isend_irecv) that runs them at once.
    bool blockingP2p = false;
    // The 1F1B pipeline runs as DeepSpeed's TrainSchedule (runtime/pipe/schedule.py): 2 (M + S - 1)
    // steps, a stage alternating forward steps (exchanging with the previous stage) and
    // backward steps (exchanging with the next), each step's exchange a blocking rendezvous
    // with that neighbour (deepSpeedSteps() in Pipeline.h; the simulator runs this stream).
    bool trainScheduleSteps = false;
    // ZeRO 0/1 runs DeepSpeed's BF16_Optimizer (runtime/bf16_optimizer.py): besides the bf16
    // weights it keeps an fp32 gradient buffer for every local parameter (gradients accumulate
    // in fp32: 4 B/param, never sharded), the bf16 gradients autograd writes (2 B/param; the
    // pipeline engine calls update_hp_grads(clear_lp_grads=False), so they stay allocated) and
    // the fp32 master weights + Adam m, v for its data-parallel shard (12 B/param / d, the
    // optimizer state). The fp32 buffer is all-reduced whole (buffered_allreduce_fallback),
    // not reduce-scattered; each rank then steps its shard and all-gathers the bf16 weights.
    bool bf16Optimizer = false;
    // Elements of one contiguous-gradient reduce buffer of DeepSpeedZeroOptimizer (ZeRO 1/2,
    // runtime/zero/stage_1_and_2.py: ipg_buffer of reduce_bucket_size elements in the training
    // dtype; zero_optimization.reduce_bucket_size defaults to 5e8). 0: the framework has none.
    double reduceBucketElements = 0;
    // What --recompute selective means: Megatron's (Korthikanti et al. Sec. 5: rerun the core
    // attention, keep the rest) or torchtitan's op-level policy (keep every other matmul's
    // output and the fused attention's, rerun the rest of the block; ModelBuilder.cpp
    // opSelectiveStash). Layers without the op-level figures use Megatron's.
    enum class SelectivePolicy { CoreAttention, AlternateMatmuls };
    SelectivePolicy selectivePolicy = SelectivePolicy::CoreAttention;
    // The precisions it trains in (precisionBit() set; docs/cost-model.md, "Precision").
    unsigned precisions = precisionBit({});
    // The precisions (precisionBit() set) whose parameters are kept and all-gathered in the
    // low precision (Megatron-Core's --fp8-param-gather as Megatron-Bridge's mixed-precision
    // presets set it, torchtitan's enable_fsdp_float8_all_gather): such a plan's linear
    // weights hold no BF16 copy and their ZeRO / FSDP gathers move the low-precision bytes.
    // The others gather BF16 and keep their low-precision copies beside it.
    unsigned lowPrecisionGather = 0;
    bool gathersLowPrecision(const Precision &p) const
    {
        return p.lowPrecision() && (lowPrecisionGather & precisionBit(p)) != 0;
    }
    // MoE: the shared experts' GEMMs run beside the token dispatch and combine (Megatron-Core
    // --moe-shared-expert-overlap), hiding the all-to-all behind them.
    bool sharedExpertOverlap = false;
    // MoE: whether the framework has an expert-parallel communication overlap that pairs one
    // micro-batch's forward with another's backward (Megatron-Core
    // --overlap-moe-expert-parallel-comm, since 0.14): what CostOptions::moeA2aOverlap asks for.
    bool epA2aOverlap = false;
    // MoE: the router's probabilities weight the tokens inside the experts' fused activation
    // (Megatron-Core's TEGroupedMLP: weighted_bias_swiglu_impl(fc1 output, probs)), so the
    // combine is a plain sum and the experts' outputs are not kept for backward
    // (LayerProfile::moeCombineStashBytes).
    bool moeProbsInActivation = false;
    bool supports(const Precision &p) const { return (precisions & precisionBit(p)) != 0; }
    // Fraction of the activation memory lost to allocator fragmentation.
    double fragmentation = 0.0;
    // Compute slowdown per second of communication hidden behind it.
    double contention = 0.0;
};

// The profiles, Megatron-Core first (the default), as their tuned recipes run them.
const std::vector<FrameworkProfile> &frameworkProfiles();
const FrameworkProfile &frameworkProfile(Framework f);
// A profile as `stack` runs it: Stack::Tuned is frameworkProfile(f); Stack::Defaults turns
// off what the framework's own defaults leave off (docs/cost-model.md, "Stacks").
const FrameworkProfile &frameworkProfile(Framework f, Stack stack);
// "megatron-core", "megatron-lm", "deepspeed", "fsdp", "torchtitan", "serial"
// (case-insensitive; "megatron", "mcore" and "nemo" mean megatron-core).
std::optional<Framework> frameworkFromString(const std::string &name);
const char *toString(Framework f);
// "megatron-core, megatron-lm, ..." for error messages.
std::string frameworkNameList();

} // namespace nest
