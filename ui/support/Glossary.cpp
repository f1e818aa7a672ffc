#include "Glossary.h"

#include <QCoreApplication>

namespace nest::ui {

QString termTip(const QString &key)
{
    const auto tr = [](const char *text) { return QCoreApplication::translate("Glossary", text); };
    if (key == QLatin1String("mfu"))
        return tr("Model FLOPs utilisation: the model's useful FLOPs per second (6 x parameters x tokens, "
                  "plus attention; recomputation not counted) divided by the peak FLOP/s of the devices the "
                  "plan uses. Devices the plan leaves idle are not in it: see MFU over the cluster.");
    if (key == QLatin1String("cluster_mfu"))
        return tr("MFU over the whole cluster: the MFU of the devices used times the share of the cluster's "
                  "devices the plan uses. A plan that leaves devices idle scores lower here.");
    if (key == QLatin1String("zero"))
        return tr("ZeRO (DeepSpeed's Zero Redundancy Optimizer, Megatron's distributed optimizer, FSDP): "
                  "stage 1 shards the optimizer state over the data-parallel replicas, stage 2 also the "
                  "gradients, stage 3 also the weights (gathered before each use). Less memory per device, "
                  "more traffic.");
    if (key == QLatin1String("bubble_share"))
        return tr("Pipeline bubble: the share of the iteration in which a stage waits for the first "
                  "micro-batch to arrive or the last to drain, about (stages - 1) / (micro-batches + "
                  "stages - 1) for 1F1B. More micro-batches per replica shrink it.");
    if (key == QLatin1String("comm_share"))
        return tr("The share of the iteration spent in communication that compute does not hide: tensor, "
                  "expert and context parallel collectives, pipeline sends, gradient sync and ZeRO gathers.");
    if (key == QLatin1String("recompute"))
        return tr("Activation recomputation: none keeps every activation; selective recomputes the attention "
                  "core in backward; full keeps only each block's input and reruns its forward.");
    if (key == QLatin1String("sp"))
        return tr("Sequence parallelism (Megatron): the layer norms and dropouts are split over the tensor-"
                  "parallel group along the sequence, which shrinks their activations.");
    if (key == QLatin1String("throughput"))
        return tr("Training samples per second over the whole job: global batch / iteration time.");
    if (key == QLatin1String("tokens_per_s") || key == QLatin1String("tokens"))
        return tr("Tokens per second: samples per second x sequence length.");
    if (key == QLatin1String("iteration") || key == QLatin1String("iteration_time"))
        return tr("The time of one optimizer step: every micro-batch forward and backward through the "
                  "pipeline, the gradient sync and the optimizer.");
    if (key == QLatin1String("microbatch"))
        return tr("Each data-parallel replica splits its share of the global batch into micro-batches that "
                  "flow through the pipeline one after another.");
    if (key == QLatin1String("memory") || key == QLatin1String("peak_memory"))
        return tr("The largest memory any device needs: weights, gradients, optimizer state, stashed "
                  "activations and working buffers.");
    return QString();
}

} // namespace nest::ui
