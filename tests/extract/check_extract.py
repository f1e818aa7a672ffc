#!/usr/bin/python3
"""nest-extract against core's analytic model and against hand counts (issue 22, point 2).

  check_extract.py --cli build/app/nest-cli --root .

1. Reference configs (sample_configs/models/hf/gpt2.json, llama2-7b.json, mistral-7b.json, traced
   on the meta device): total parameters and FLOPs per token of the extracted profile, summed
   here from its JSON, against `nest-cli inspect --model CONFIG --json`; the activation bytes
   each block (and the head) saves, against the analytic profile's stash, read from `nest-cli
   evaluate --json` of a plan with one layer per stage (framework serial: no fragmentation),
   divided by the micro-batches the stage holds. The analytic model is configured as the
   reference module runs: materialised attention (flash_attention false), dropout as the config
   says. All within 2 %.
2. A user module (tests/extract/user_modules.py:TinyMlpLM) against counts derived by hand.
3. --granularity op sums to the block profile; --time gives positive times on this machine;
   nest-cli loads every profile and plans with it on paper-v100-16.
4. Bad input: exit 2 and one line naming the file or flag and the reason.

Exit 77 (CTest SKIP_RETURN_CODE) when this interpreter cannot import torch.
"""
import argparse
import json
import os
import stat
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401  (only to know that nest-extract can run)
except ImportError as e:
    print("SKIP: %s cannot import torch (%s); install Debian's python3-torch" % (sys.executable, e))
    sys.exit(77)

TOLERANCE = 0.02
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def close(extracted, analytic, what):
    rel = abs(extracted - analytic) / analytic if analytic else abs(extracted)
    check(rel <= TOLERANCE, "%s: extracted %.6g, analytic %.6g (%+.3f %%)"
          % (what, extracted, analytic, 100.0 * (extracted - analytic) / analytic if analytic else 0.0))


def run(cmd, expect=0):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != expect:
        print("command: " + " ".join(cmd))
        print(r.stdout[-2000:] + r.stderr[-2000:])
        raise SystemExit("FAIL: exit %d, expected %d" % (r.returncode, expect))
    return r


def extract(a, tmp, name, args):
    out = os.path.join(tmp, name + ".json")
    run([sys.executable, a.extract] + args + ["--out", out])
    with open(out) as f:
        return out, json.load(f)


def inspect(a, model):
    return json.loads(run([a.cli, "inspect", "--model", model, "--json"]).stdout)


def per_layer_stash(a, tmp, model, layers, seq):
    """The analytic profile's stash per layer (bytes per sample) for the embedding, block0, the
    remaining blocks together and the head: one stage each, tp 1, micro-batch 1."""
    plan = {"format": "nest-plan", "version": 1, "global_batch": 1, "micro_batch": 1, "seq_length": seq,
            "schedule": "1f1b", "dp": 1,
            "stages": [{"first_layer": 0, "end_layer": 1, "devices": [[0]]},
                       {"first_layer": 1, "end_layer": 2, "devices": [[1]]},
                       {"first_layer": 2, "end_layer": layers + 1, "devices": [[2]]},
                       {"first_layer": layers + 1, "end_layer": layers + 2, "devices": [[3]]}]}
    path = os.path.join(tmp, "one-layer-per-stage.json")
    with open(path, "w") as f:
        json.dump(plan, f)
    r = json.loads(run([a.cli, "evaluate", "--cluster", "paper-v100-16", "--model", model, "--plan", path,
                        "--framework", "serial", "--json"]).stdout)
    return [s["memory_bytes"]["stash"] / s["stashed_micro_batches"] for s in r["stages"]]


def totals(profile):
    """Parameters and FLOPs per token summed from the extracted JSON (per micro-batch values)."""
    mb, s = profile["micro_batch"], profile["seq_length"]
    params = sum(l["params"] for l in profile["layers"])
    flops = sum(l["fwd_flops"] + l["bwd_flops"] for l in profile["layers"]) / mb / s
    return params, flops


def stash(layer, mb):
    return (layer["stash_tp_bytes"] + layer["stash_sp_bytes"]) / mb


REFERENCES = [
    # (config, analytic model for the stash: our model file with the reference module's choices)
    ("gpt2.json", None),  # the HF import: gpt family, materialised attention, dropout (pdrop 0.1)
    ("llama2-7b.json", {"family": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32,
                        "ffn_hidden": 11008, "vocab": 32000, "seq_length": 4096,
                        "flash_attention": False, "dropout": False}),
    ("mistral-7b.json", {"family": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
                         "ffn_hidden": 14336, "vocab": 32000, "seq_length": 4096,
                         "flash_attention": False, "dropout": False}),
]


def check_reference(a, tmp, config, model_file):
    hf = os.path.join(a.root, "sample_configs", "models", "hf", config)
    name = os.path.splitext(config)[0]
    print("--- %s" % config)
    out, prof = extract(a, tmp, name, ["--hf-config", hf])
    s, mb = prof["seq_length"], prof["micro_batch"]
    core = inspect(a, hf)
    params, flops = totals(prof)
    close(params, core["parameters"], "%s total parameters" % name)
    close(flops, core["flops_per_token"], "%s FLOPs per token" % name)
    loaded = inspect(a, out)  # nest-cli reads the extracted profile to the same totals
    check(abs(loaded["parameters"] - params) <= 1e-9 * params and
          abs(loaded["flops_per_token"] - flops) <= 1e-9 * flops, "%s: nest-cli reads the profile back" % name)

    if model_file is None:
        analytic_model = hf
    else:
        analytic_model = os.path.join(tmp, name + "-model.json")
        with open(analytic_model, "w") as f:
            json.dump(dict(model_file, name=name), f)
        # The same architecture as the config: same totals.
        same = inspect(a, analytic_model)
        check(same["parameters"] == core["parameters"], "%s: the model file has the config's parameters" % name)
    layers = [l for l in prof["layers"] if l["kind"] == "transformer"]
    emb, blocks, head = prof["layers"][0], layers, prof["layers"][-1]
    a_emb, a_block0, a_rest, a_head = per_layer_stash(a, tmp, analytic_model, len(blocks), s)
    close(stash(blocks[0], mb), a_block0, "%s block0 activation bytes" % name)
    rest = sum(stash(b, mb) for b in blocks[1:])
    close(rest, a_rest, "%s blocks 1..%d activation bytes" % (name, len(blocks) - 1))
    check(all(stash(b, mb) == stash(blocks[0], mb) for b in blocks), "%s: every block saves the same" % name)
    close(stash(head, mb), a_head, "%s head activation bytes" % name)
    # Not compared: the embedding also saves the int64 token (and position) ids its lookups keep
    # for backward, 8 bytes per token each, which the analytic model leaves out.
    print("      %s embedding activation bytes: extracted %d, analytic %d" % (name, stash(emb, mb), a_emb))
    return out


def check_user_module(a, tmp):
    """TinyMlpLM(layers 3, hidden 32, vocab 100) at micro-batch 2, sequence 16, counted by hand."""
    print("--- user module TinyMlpLM")
    L, h, V, f, b, s = 3, 32, 100, 128, 2, 16
    mod = os.path.join(a.root, "tests", "extract", "user_modules.py")
    out, prof = extract(a, tmp, "tiny-mlp", ["--module", mod + ":TinyMlpLM", "--args",
                                             json.dumps({"layers": L, "hidden": h, "vocab": V}),
                                             "--seq", str(s), "--micro-batch", str(b)])
    names = [l["name"] for l in prof["layers"]]
    check(names == ["embedding", "block0", "block1", "block2", "head"], "layers %s" % names)
    emb, blk, head = prof["layers"][0], prof["layers"][1], prof["layers"][-1]
    check(emb["params"] == V * h, "embedding parameters V*h = %d (found %d)" % (V * h, emb["params"]))
    block_params = 2 * h + h * f + f + f * h + h  # LayerNorm, up (+bias), down (+bias)
    check(blk["params"] == block_params, "block parameters %d (found %d)" % (block_params, blk["params"]))
    check(head["params"] == 2 * h + h * V, "head parameters %d (found %d)" % (2 * h + h * V, head["params"]))
    fwd = 2 * b * s * (h * f + f * h)
    check(blk["fwd_flops"] == fwd, "block forward FLOPs 2bs(hf + fh) = %d (found %g)" % (fwd, blk["fwd_flops"]))
    check(head["fwd_flops"] == 2 * b * s * h * V, "head forward FLOPs 2bshV (found %g)" % head["fwd_flops"])
    # Saved for backward, BF16: the LayerNorm input and its FP32 mean and 1/std per row, the up
    # projection's input (the norm output), the GeLU input, the down projection's input.
    sp = 2 * b * s * h + 2 * 4 * b * s + 2 * b * s * h
    tp = 2 * b * s * f + 2 * b * s * f
    check(blk["stash_sp_bytes"] == sp, "block replicated stash %d (found %d)" % (sp, blk["stash_sp_bytes"]))
    check(blk["stash_tp_bytes"] == tp, "block tensor-parallel stash %d (found %d)" % (tp, blk["stash_tp_bytes"]))
    check(emb["stash_sp_bytes"] == 8 * b * s, "embedding saves the int64 ids (found %d)" % emb["stash_sp_bytes"])
    check(blk["output_bytes"] == 2 * b * s * h, "block output 2bsh (found %d)" % blk["output_bytes"])
    check(prof["hidden"] == h, "hidden read from the first block's input (found %s)" % prof.get("hidden"))
    inspect(a, out)
    # Issue 48: --module is built on meta from the start. 8 blocks of hidden 16384 (inner 65536)
    # are 17e9 parameters, 69 GB in FP32 on the CPU: under a 3 GB address-space cap it must
    # still extract, with the same parameter count.
    L, h, V = 8, 16384, 100
    f = 4 * h
    wide = os.path.join(tmp, "wide-mlp.json")
    r = subprocess.run(["/bin/bash", "-c", "ulimit -v 3000000 && exec \"$@\"", "bash", sys.executable, a.extract,
                        "--module", mod + ":TinyMlpLM", "--args", json.dumps({"layers": L, "hidden": h, "vocab": V}),
                        "--seq", "8", "--out", wide], capture_output=True, text=True)
    check(r.returncode == 0, "a 17e9-parameter module under a 3 GB cap: exit %d, %r" % (r.returncode, r.stderr[-300:]))
    if r.returncode == 0:
        with open(wide) as fh:
            blocks = [l for l in json.load(fh)["layers"] if l["name"].startswith("block")]
        block_params = 2 * h + h * f + f + f * h + h
        check(len(blocks) == L and all(l["params"] == block_params for l in blocks),
              "wide blocks of %d parameters each" % block_params)


def check_op_granularity(a, tmp):
    print("--- --granularity op")
    cfg = os.path.join(a.root, "tests", "extract", "tiny-llama.json")
    _, blocks = extract(a, tmp, "tiny-llama", ["--hf-config", cfg])
    out, ops = extract(a, tmp, "tiny-llama-op", ["--hf-config", cfg, "--granularity", "op"])
    check(len(ops["layers"]) > len(blocks["layers"]), "op level: %d nodes" % len(ops["layers"]))
    for key in ("params", "fwd_flops", "stash_tp_bytes", "stash_sp_bytes", "attention_stash_bytes",
                "tied_params"):
        x, y = sum(l[key] for l in ops["layers"]), sum(l[key] for l in blocks["layers"])
        check(x == y, "op-level %s sums to the block profile (%g, %g)" % (key, x, y))
    per_layer = {}
    for l in ops["layers"]:
        per_layer.setdefault(l["comment"]["layer"], 0)
        per_layer[l["comment"]["layer"]] += l["fwd_flops"]
    check(all(per_layer[l["name"]] == l["fwd_flops"] for l in blocks["layers"]),
          "op-level FLOPs per block equal the block entries")
    inspect(a, out)
    run([a.cli, "plan", "--cluster", "paper-v100-16", "--model", out])


def check_time(a, tmp):
    print("--- --time")
    cfg = os.path.join(a.root, "tests", "extract", "tiny-gpt2.json")
    out, prof = extract(a, tmp, "tiny-gpt2-timed", ["--hf-config", cfg, "--time", "--repeat", "2",
                                                    "--warmup", "1", "--seq", "64"])
    check(all(l["fwd_ms"] > 0 and l["bwd_ms"] > 0 for l in prof["layers"]),
          "every layer has positive fwd_ms and bwd_ms: %s"
          % ", ".join("%s %.3g/%.3g" % (l["name"], l["fwd_ms"], l["bwd_ms"]) for l in prof["layers"]))
    run([a.cli, "plan", "--cluster", "paper-v100-16", "--model", out])


def check_bad_input(a, tmp):
    print("--- bad input")
    mod = os.path.join(a.root, "tests", "extract", "user_modules.py")
    bad_json = os.path.join(tmp, "broken.json")
    with open(bad_json, "w") as f:
        f.write('{"model_type": "gpt2", ')
    bert = os.path.join(a.root, "sample_configs", "models", "hf", "bert-large-uncased.json")
    no_layers = os.path.join(tmp, "no-layers.json")
    with open(no_layers, "w") as f:
        json.dump({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                   "intermediate_size": 128, "vocab_size": 100}, f)
    # Issue 48: 100,000-deep JSON (a RecursionError traceback before) is refused like nest-cli.
    deep_json = os.path.join(tmp, "deep.json")
    with open(deep_json, "w") as f:
        f.write('{"model_type": "gpt2", "x": ' + "[" * 100000 + "]" * 100000 + "}")
    cases = [
        (["--hf-config", deep_json], "deep.json: objects and arrays nested more than 256 levels deep (100001) at line 1"),
        (["--module", mod + ":TinyMlpLM", "--args", "[" * 50000 + "]" * 50000, "--seq", "8"],
         "--args: objects and arrays nested more than 256 levels deep"),
        # Issue 48: what nest-extract writes, nest-cli reads: its ranges, before any tracing.
        (["--hf-config", bert, "--seq", "1000000000"], "--seq must be at most 16777216"),
        (["--hf-config", bert, "--micro-batch", "100000"], "--micro-batch must be at most 65536"),
        (["--hf-config", bert, "--global-batch", "100000000"], "--global-batch must be at most 16777216"),
        (["--module", mod + ":TinyMlpLM", "--args", '{"layers": 1, "hidden": 1024, "vocab": 100}',
          "--seq", "16777216", "--micro-batch", "65536", "--global-batch", "16777216"],
         "layers[0].output_bytes would be 2.2518e+15 bytes, outside nest-cli's range 0 to 1e+15"),
        (["--module", os.path.join(tmp, "missing.py") + ":X", "--seq", "8"], "missing.py: no such file"),
        (["--module", mod + ":NoSuchClass", "--seq", "8"], "no class 'NoSuchClass'"),
        (["--module", mod + ":TinyMlpLM", "--args", "{layers: 2}", "--seq", "8"], "--args: bad JSON"),
        (["--module", mod + ":TinyMlpLM", "--args", '{"layers": 2}', "--seq", "8"], "TinyMlpLM(...) failed"),
        (["--module", mod + ":Untraceable", "--seq", "8"], "user_modules.py:Untraceable cannot be traced by torch.fx"),
        (["--hf-config", os.path.join(tmp, "missing.json")], "missing.json: no such file"),
        (["--hf-config", bad_json], "broken.json: bad JSON"),
        (["--hf-config", bert], "model_type \"bert\" is not supported"),
        (["--hf-config", no_layers], "no-layers.json: missing key 'num_hidden_layers'"),
        (["--hf-config", os.path.join(a.root, "tests", "extract", "tiny-gpt2.json"), "--seq", "4096"],
         "exceeds the model's positions"),
        (["--hf-config", bert, "--micro-batch", "0"], "--micro-batch must be at least 1"),
    ]
    for args, expected in cases:
        r = subprocess.run([sys.executable, a.extract] + args, capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and expected in lines[0] and not r.stdout,
              "exit %d, %r" % (r.returncode, r.stderr.strip()[:160]))
    check_hostile_modules_and_outputs(a, tmp)


def check_hostile_modules_and_outputs(a, tmp):
    """Issue 48: a module raising KeyboardInterrupt or calling sys.exit(0) at import is bad input
    (a SIGINT traceback and a silent exit 0 before); --out follows nest-cli's writer rules: no
    FIFO replaced, a symlink written through, a pre-placed OUT.tmp symlink never followed, no
    temporary left and the old file intact past a file-size limit."""
    print("--- hostile modules and outputs")
    for name, body, expected in [("ki.py", "raise KeyboardInterrupt\n", "ki.py: cannot import: KeyboardInterrupt"),
                                 ("ex.py", "import sys\nsys.exit(0)\n", "ex.py: cannot import: SystemExit: 0")]:
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(body)
        r = subprocess.run([sys.executable, a.extract, "--module", path + ":X", "--seq", "8"],
                           capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and expected in lines[0] and not r.stdout,
              "%s: exit %d, %r" % (name, r.returncode, r.stderr.strip()[:160]))
    tiny = os.path.join(a.root, "tests", "extract", "tiny-gpt2.json")
    folder = os.path.join(tmp, "outs")
    os.makedirs(folder)

    def extract_to(out, limit_kb=None):
        cmd = [sys.executable, a.extract, "--hf-config", tiny, "--out", out]
        if limit_kb:
            cmd = ["/bin/bash", "-c", "ulimit -f %d && exec \"$@\"" % limit_kb, "bash"] + cmd
        return subprocess.run(cmd, capture_output=True, text=True)

    fifo = os.path.join(folder, "fifo.json")
    os.mkfifo(fifo)
    r = extract_to(fifo)
    check(r.returncode == 2 and "fifo.json: not a regular file (refusing to replace a FIFO)" in r.stderr
          and stat.S_ISFIFO(os.lstat(fifo).st_mode), "--out FIFO: exit %d, %r" % (r.returncode, r.stderr[:160]))
    secret = os.path.join(folder, "secret.txt")
    with open(secret, "w") as f:
        f.write("secret\n")
    out = os.path.join(folder, "out.json")
    os.symlink(secret, out + ".tmp")
    r = extract_to(out)
    check(r.returncode == 0 and open(secret).read() == "secret\n" and json.load(open(out))["format"] == "nest-profile",
          "a pre-placed OUT.tmp symlink is not followed: exit %d, %r" % (r.returncode, r.stderr[:160]))
    link = os.path.join(folder, "link.json")
    os.symlink("out.json", link)
    os.unlink(out)
    r = extract_to(link)
    check(r.returncode == 0 and os.path.islink(link) and json.load(open(out))["format"] == "nest-profile",
          "--out a symlink: written through, the link kept")
    with open(out, "w") as f:
        f.write("OLD\n")
    before = sorted(os.listdir(folder))
    r = extract_to(out, limit_kb=1)
    check(r.returncode == 2 and "out.json: write failed (File too large); the previous file is unchanged" in r.stderr
          and open(out).read() == "OLD\n" and sorted(os.listdir(folder)) == before,
          "past a file-size limit: exit %d, %r, %s" % (r.returncode, r.stderr[:160], sorted(os.listdir(folder))))
    loop = os.path.join(folder, "l1")
    os.symlink("l2", loop)
    os.symlink("l1", os.path.join(folder, "l2"))
    r = extract_to(loop)
    check(r.returncode == 2 and "l1: too many levels of symbolic links" in r.stderr, "--out a symlink loop")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True)
    p.add_argument("--root", required=True)
    a = p.parse_args()
    a.extract = os.path.join(a.root, "app", "nest-extract")
    with tempfile.TemporaryDirectory() as tmp:
        gpt2 = None
        for config, model_file in REFERENCES:
            out = check_reference(a, tmp, config, model_file)
            gpt2 = gpt2 or out
        print("--- planning with the extracted GPT-2 profile")
        r = run([a.cli, "plan", "--cluster", "paper-v100-16", "--model", gpt2])
        check("best plan" in r.stdout, "nest-cli plan --cluster paper-v100-16 --model gpt2 (extracted)")
        check_user_module(a, tmp)
        check_op_granularity(a, tmp)
        check_time(a, tmp)
        check_bad_input(a, tmp)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
