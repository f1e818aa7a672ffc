#!/usr/bin/python3
"""Hugging Face config.json import against an independent count (issue 45, point 1).

  check_hf_import.py --cli build/app/nest-cli --root .

For every real config.json in sample_configs/models/hf/:
1. the independent oracle (tests/hf/hf_param_count.py, written from each family's transformers
   modelling code, not from our builder) agrees with the real model's published count within
   0.1 % (tests/hf/published_counts.json; rounded published figures are reported, not asserted);
2. `nest-cli inspect --model CONFIG --json` counts the oracle's total within 0.1 %, its MTP
   modules' parameters within 0.1 %, and every block's parameters and kind (dense / MoE / Mamba)
   as the oracle's layer groups say, in order;
3. the sliding / global layers follow the config's own rule (its layer_types list, Gemma 2's
   even layers, Gemma 3's sliding_window_pattern), re-derived here from the config;
4. every model_type the issue names is accepted, and an unknown one exits 2 listing them.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 0.001
REQUIRED_TYPES = ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek",
                  "deepseek_v2", "deepseek_v3", "gemma", "gemma2", "gemma3", "phi", "phi3", "minicpm",
                  "gpt_neox", "gptj", "falcon", "starcoder2", "gpt_oss", "nemotron_h", "llama4"]
failures = []
passes = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    (passes if ok else failures).append(what)


def rel(a, b):
    return abs(a - b) / max(abs(b), 1)


def oracle(script, config):
    out = subprocess.run([sys.executable, script, config], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def inspect(cli, config):
    out = subprocess.run([cli, "inspect", "--model", config, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout)["model"], ""


OUR_KIND = {"dense": "transformer", "encoder": "transformer", "attention": "transformer", "mlp": "transformer",
            "moe": "moe", "mamba": "mamba"}


def expected_windows(config):
    """Per layer, 'sliding' or 'global' by the config's own rule; None when it has none."""
    text = config.get("text_config") or config
    mtype = text.get("model_type", config.get("model_type"))
    n = text.get("num_hidden_layers")
    if isinstance(text.get("layer_types"), list):
        return ["sliding" if t == "sliding_attention" else "global" for t in text["layer_types"]]
    if mtype == "gemma2":
        return ["sliding" if i % 2 == 0 else "global" for i in range(n)]
    if mtype in ("gemma3", "gemma3_text"):
        period = text.get("sliding_window_pattern", 6)
        return ["global" if (i + 1) % period == 0 else "sliding" for i in range(n)]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "hf_param_count.py")
    hf_dir = os.path.join(args.root, "sample_configs", "models", "hf")
    published = json.load(open(os.path.join(here, "published_counts.json")))

    seen_types = set()
    for name in sorted(os.listdir(hf_dir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(hf_dir, name)
        config = json.load(open(path))
        seen_types.add(config.get("model_type"))
        o = oracle(script, path)
        pub = published.get(name)
        extras = o.get("extras", {})
        if pub and isinstance(pub.get("params"), (int, float)):
            # What the published figure counts beyond the model class: vision towers, copies
            # of shared weights and scales the checkpoint stores, BERT's pre-training heads.
            as_published = o["total"] + sum(extras.get(k, 0) for k in pub.get("adds", []))
            d = rel(as_published, pub["params"])
            if not pub.get("exact", True):
                print("info  %s: oracle %d vs published %s (rounded figure, %.2f %%)" %
                      (name, as_published, pub["params"], 100 * d))
            else:
                check(d <= TOLERANCE, "%s: oracle %d within 0.1 %% of the published %d (%.4f %%)" %
                      (name, as_published, pub["params"], 100 * d))
        m, err = inspect(args.cli, path)
        if m is None:
            check(False, "%s: nest-cli inspect failed: %s" % (name, err))
            continue
        # Our BERT is BertForPreTraining (MLM head, pooler and NSP classifier, docs/formats.md).
        total = o["total"] + extras.get("checkpoint_bert_pretraining_heads", 0)
        d = rel(m["parameters"], total)
        check(d <= TOLERANCE, "%s: %d parameters, oracle %d (%.4f %%)" % (name, m["parameters"], total, 100 * d))
        check(rel(m["mtp_parameters"], o.get("mtp", 0)) <= TOLERANCE,
              "%s: MTP parameters %d, oracle %d" % (name, m["mtp_parameters"], o.get("mtp", 0)))
        blocks = [(k, p) for k, p in zip(m["layer_kinds"], m["layer_parameters"])
                  if k in ("transformer", "moe", "mamba")]
        expected = [(OUR_KIND[g["kind"]], g["params"]) for g in o["layer_groups"] for _ in range(g["count"])]
        same_kinds = [k for k, _ in blocks] == [k for k, _ in expected]
        worst = max((rel(p, q) for (_, p), (_, q) in zip(blocks, expected)), default=0)
        check(same_kinds and len(blocks) == len(expected) and worst <= TOLERANCE,
              "%s: %d blocks of the oracle's kinds and sizes (worst %.4f %%)" % (name, len(blocks), 100 * worst))
        windows = expected_windows(config)
        if windows is not None:
            labels = [lab for lab, k in zip(m["layer_labels"], m["layer_kinds"]) if k in ("transformer", "moe", "mamba")]
            ours = ["sliding" if lab == "sliding" else "global" for lab in labels]
            check(ours == windows, "%s: sliding / global layers as the config's rule (%d sliding of %d)" %
                  (name, windows.count("sliding"), len(windows)))

    missing = [t for t in REQUIRED_TYPES if t not in seen_types]
    check(not missing, "a real config for every required model_type (missing: %s)" % ", ".join(missing))
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "config.json")
        json.dump({"model_type": "t5", "d_model": 512}, open(bad, "w"))
        out = subprocess.run([args.cli, "inspect", "--model", bad], capture_output=True, text=True)
        listed = all(t in out.stderr for t in REQUIRED_TYPES)
        check(out.returncode == 2 and "model_type" in out.stderr and listed,
              "unknown model_type exits 2 (got %d) naming model_type and every supported type" % out.returncode)
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
