#!/usr/bin/env python3
"""mpt_table.py - every row of LLM Foundry's MPT throughput tables as a suite.

The shipped suite validation/mpt_llmfoundry.json takes 17 rows of MosaicML's
published tables (scripts/train/benchmarking/README.md of mosaicml/
llm-foundry): each model at sequence 2048 on each GPU. The tables at the
cited commit hold about 170 more (sequences 512 to 65536, 8 to 128 GPUs).
This script turns all of them into a suite file, outside the repository, so
that the model can be
checked where the shipped suite does not reach (docs/accuracy.md, "The MPT
tables beyond the suite"). Its rows are not validation rows: nothing is
fitted to them and the targets do not count them.

  git clone https://github.com/mosaicml/llm-foundry /tmp/llm-foundry
  scripts/mpt_table.py --llmfoundry /tmp/llm-foundry -o /tmp/mpt_all.json \\
      --run bin/stagecraft

Reads the README and scripts/train/yamls/pretrain/mpt-*.yaml at --commit
(default 061f2c7, the suite's citation) with git; pure Python otherwise.
Rows are built as the shipped suite's (docs/formats.md, validation): the gpt
generator with LLM Foundry's vocabulary, tied embedding, no dropout and two
training metrics; dp = GPUs, ZeRO 3 where the table's Sharding Strategy says
FULL_SHARD and 2 where it says SHARD_GRAD_OP (another strategy is left out);
full recompute where its Activation Checkpointing column says True. Each
table's runs are taken to have run the software of the commit that added the
table (the suite's citation, 061f2c7, for the tables it has; else the commit
that added the table, git log -S of its header): the gradients reduced in fp32 where the MP
Mode says DEFAULT and that commit's setup.py requires Composer 0.16.4 or
later (DEFAULT reduced in the parameters' bf16 before it, docs/accuracy.md),
in bf16 otherwise; the attention the run's attn_impl names, from that
commit's scripts/train/benchmarking/sweep.py where it has one (January 2024's
"Large Scale" table), else LLM Foundry's Triton kernel (the benchmark
script's default): 'flash' is FlashAttention-2 where the benchmark script
installs flash-attn 2 (the 'gpu-flash2' extra), else FlashAttention v1;
'torch' is unfused. The FP8 table
is left out (no row of the suite runs FP8), and so are rows whose global batch
is not a multiple of GPUs x microbatch (the benchmark then runs a short last
microbatch, which a layout cannot say). H100 rows are marked approximate (the
table does not give that network).

--triton-as fa1|fa2 gives the runs of the Triton kernel another kernel's
published rates instead of the stand-in's (a what-if: which rate the kernel
ran at is the largest unknown in these rows; its output says so).

With --run STAGECRAFT the suite is run and its errors printed grouped by
cluster and sequence length (`stagecraft validate --by cluster,seq`): rows,
MAPE, mean signed error, the lowest and the highest; then validate's memory
line (how many runs the memory model says do not fit, or the fullest).
"""
import argparse
import json
import os
import re
import subprocess
import sys

CITED = "061f2c7ce64e655100286584a7629e2a09f827ba"  # the shipped suite's citation
PRESETS = {"h100_80gb": "dgx-h100", "a100_80gb": "dgx-a100-80g", "a100_40gb": "p4d.24xlarge"}
SHORT = {"h100_80gb": "h100", "a100_80gb": "a100-80", "a100_40gb": "a100-40"}


def git_show_opt(repo, commit, path):
    """path's text at commit, or None where git cannot show it (and its message)."""
    r = subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"],
                       capture_output=True, text=True)
    return (r.stdout, None) if r.returncode == 0 else (None, r.stderr.strip())


def git_show(repo, commit, path):
    text, why = git_show_opt(repo, commit, path)
    if text is None:
        sys.exit(f"mpt_table.py: {repo}: cannot read {path} at {commit}: {why}")
    return text


def shape(repo, commit, name):
    text = git_show(repo, commit, f"scripts/train/yamls/pretrain/mpt-{name}.yaml")
    out = {}
    for key in ("d_model", "n_heads", "n_layers", "vocab_size", "expansion_ratio"):
        m = re.search(rf"^\s*{key}:\s*(\d+)", text, re.M)
        if not m:
            sys.exit(f"mpt_table.py: mpt-{name}.yaml at {commit}: no {key}")
        out[key] = int(m.group(1))
    if out["expansion_ratio"] != 4:
        sys.exit(f"mpt_table.py: mpt-{name}.yaml: expansion_ratio {out['expansion_ratio']}, "
                 "the gpt generator's MLP is 4 x hidden")
    return out


def reduce_fp32_default(repo, commit):
    """Whether Composer's DEFAULT mixed precision reduced in fp32 at commit:
    from 0.16.4 on; the setup.py's lowest allowed mosaicml release decides."""
    text = git_show_opt(repo, commit, "setup.py")[0] or ""
    m = re.search(r"mosaicml(?:\[[^\]]*\])?>=([0-9]+)\.([0-9]+)\.([0-9]+)", text)
    return bool(m) and tuple(int(x) for x in m.groups()) >= (0, 16, 4)


def sweep_attention(repo, commit):
    """{model: attn_impl} of sweep.py's model_args_list, where the commit has one."""
    text = git_show_opt(repo, commit, "scripts/train/benchmarking/sweep.py")[0] or ""
    out = {}
    for block in re.findall(r"\[([^\[\]]*--model_yamls[^\[\]]*)\]", text):
        m = re.search(r"--model_yamls\s+([0-9a-z.]+)\.yaml", block)
        a = re.search(r"--attn_impl\s+(\w+)", block)
        if m and a:
            out[m.group(1)] = a.group(1)
    return out


def kernel_of(attn_impl, flash2):
    """(attention, attention_kernel) of LLM Foundry's attn_impl."""
    if attn_impl == "triton":
        return "flash", "triton"
    if attn_impl == "flash":
        return "flash", "fa2" if flash2 else "fa1"
    if attn_impl == "torch":
        return "unfused", None
    sys.exit(f"mpt_table.py: attn_impl '{attn_impl}' is not triton, flash or torch")


def section_commit(repo, commit, section, cited_headers):
    """The commit whose software a table's runs ran: the suite's citation
    (CITED) where its README has the table (cited_headers: its '## ' lines),
    else the oldest commit before commit to change the count of its header
    (the one that added it). Not simply the latter: the 2023 tables reached
    the main branch in a squash merge (b2a43a147) whose setup.py is newer
    than what their runs used."""
    if f"## {section}" in cited_headers:
        return CITED
    r = subprocess.run(["git", "-C", repo, "log", "--format=%H", "-S", f"## {section}", commit,
                        "--", "scripts/train/benchmarking/README.md"],
                       capture_output=True, text=True)
    found = r.stdout.split() if r.returncode == 0 else []
    return found[-1] if found else commit


def software_of(repo, commit):
    """What a section's runs ran, read at the commit that added it."""
    return {"fp32_default": reduce_fp32_default(repo, commit),
            "sweep_attn": sweep_attention(repo, commit),
            "flash2": "gpu-flash2" in (git_show_opt(
                repo, commit, "scripts/train/benchmarking/submit_benchmarks.py")[0] or "")}


def rows_of(repo, commit):
    readme = git_show(repo, commit, "scripts/train/benchmarking/README.md")
    cited = git_show_opt(repo, CITED, "scripts/train/benchmarking/README.md")[0] or ""
    cited_headers = {line for line in cited.splitlines() if line.startswith("## ")}
    soft = {}
    section, header, rows, shapes, skipped = "", None, [], {}, 0
    for line in readme.splitlines():
        if line.startswith("## "):
            section, header = line[3:].strip(), None
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "Model":
            header = cells
            continue
        if header is None or "FP8" in section or set("".join(cells)) <= set("-: "):
            continue
        cols = header
        if len(cells) == len(header) + 1 and "HFU" in header:
            # at 061f2c7 the A100 40GB table's header lacks the TFLOP column its
            # rows carry after HFU
            i = header.index("HFU") + 1
            cols = header[:i] + ["TFLOP"] + header[i:]
        if len(cells) != len(cols):
            sys.exit(f"mpt_table.py: README at {commit}, section '{section}': "
                     f"{len(cells)} cells where the header has {len(cols)}")
        r = dict(zip(cols, cells))
        try:
            name, seq, gpus = r["Model"], int(r["SeqLen (T)"]), int(r["# GPUs"])
            gpu, mbs, accum = r["GPU"], int(r["MicroBatchSize"]), int(r["GradAccum"])
            batch, tps = int(r["GlobalBatchSize"]), int(r["Throughput (T/s)"])
            ckpt = r["Activation Checkpointing"] == "True"
            strategy, mp = r["Sharding Strategy"], r["MP Mode"]
        except (KeyError, ValueError) as e:
            sys.exit(f"mpt_table.py: README at {commit}, section '{section}': "
                     f"cannot read row {line.strip()[:60]}...: {e}")
        zero = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}.get(strategy)
        if gpu not in PRESETS or batch % (gpus * mbs) or tps <= 0 or zero is None:
            skipped += 1
            continue
        if section not in soft:
            soft[section] = software_of(repo, section_commit(repo, commit, section,
                                                             cited_headers))
        sw = soft[section]
        attn_impl = sw["sweep_attn"].get(name, "triton")
        attention, kernel = kernel_of(attn_impl, sw["flash2"])
        reduce_fp32 = mp == "DEFAULT" and sw["fp32_default"]
        if name not in shapes:
            shapes[name] = shape(repo, commit, name)
        s = shapes[name]
        rid = f"{SHORT[gpu]}-{name}-s{seq}-{gpus}gpu-mbs{mbs}"
        if any(x["id"] == rid for x in rows):
            skipped += 1
            continue
        row = {
            "id": rid,
            "source": "llmfoundry-bench",
            "where": f"table '{section}', row {name} / SeqLen {seq} / {gpus} GPUs: "
                     f"MicroBatchSize {mbs}, GradAccum {accum}, GlobalBatchSize {batch}, "
                     f"Activation Checkpointing {ckpt}, Throughput {tps} T/s",
            "hardware": f"{gpus} x {gpu}",
            "software": f"LLM Foundry (Composer), PyTorch FSDP {strategy}, mixed precision "
                        f"{mp}, attn_impl {attn_impl}",
            "model": {"generator": "gpt", "cross_entropy": "xentropy",
                      "layers": s["n_layers"], "hidden": s["d_model"], "heads": s["n_heads"],
                      "seq": seq, "vocab": s["vocab_size"], "tied": True,
                      "no_dropout": True, "train_metrics": 2},
            "layout": {"framework": "torch", "dp": gpus, "tp": 1, "pp": 1, "v": 1,
                       "schedule": "1f1b", "zero": zero,
                       "recompute": "full" if ckpt else "none", "sp": False,
                       "attention": attention, "mbs": mbs, "global_batch": batch},
            "cluster": {"preset": PRESETS[gpu], "nodes": max(1, gpus // 8)},
            "measured": {"tokens_per_s": tps,
                         "formula": "iteration time = global batch x sequence / "
                                    "Throughput (T/s), the table's own columns"},
        }
        if kernel:
            row["layout"]["attention_kernel"] = kernel
        if reduce_fp32:
            row["layout"]["grad_reduce_in_fp32"] = True
        if gpu == "h100_80gb":
            row["approximate"] = True
            row["assumptions"] = "the table does not state the H100 cluster's network"
        rows.append(row)
    return rows, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llmfoundry", required=True, metavar="DIR",
                    help="a git clone of mosaicml/llm-foundry")
    ap.add_argument("--commit", default=CITED,
                    help="the commit whose tables to read (default: the suite's citation)")
    ap.add_argument("-o", "--output", required=True, metavar="FILE",
                    help="where to write the suite (stagecraft.validation/1)")
    ap.add_argument("--run", metavar="STAGECRAFT",
                    help="run the suite with this stagecraft binary and summarise")
    ap.add_argument("--triton-as", metavar="KERNEL", choices=["fa1", "fa2"],
                    help="a what-if: the rows that ran LLM Foundry's Triton kernel take "
                         "this kernel's published rates instead (fa1, fa2), the bracket of "
                         "docs/accuracy.md's 'The MPT tables beyond the suite'")
    a = ap.parse_args()
    rows, skipped = rows_of(a.llmfoundry, a.commit)
    what_if = ""
    if a.triton_as:
        for r in rows:
            if r["layout"].get("attention_kernel") == "triton":
                r["layout"]["attention_kernel"] = a.triton_as
                r["approximate"] = True
                before = r.get("assumptions", "")
                r["assumptions"] = (before + "; " if before else "") + \
                    f"Triton's runs at {a.triton_as}'s rates (--triton-as)"
        what_if = f" What-if: the Triton runs at {a.triton_as}'s rates (--triton-as)."
    suite = {
        "format": "stagecraft.validation/1",
        "name": "mpt_llmfoundry_all",
        "description": "Every bf16 row of LLM Foundry's MPT throughput tables, built by "
                       "scripts/mpt_table.py: a check beyond the shipped suite, not a "
                       "validation suite." + what_if,
        "sources": [{"id": "llmfoundry-bench",
                     "citation": "MosaicML: MPT Training Benchmarks, "
                                 "scripts/train/benchmarking/README.md in "
                                 "github.com/mosaicml/llm-foundry (2023)",
                     "year": 2023,
                     "url": "https://github.com/mosaicml/llm-foundry/blob/"
                            f"{a.commit}/scripts/train/benchmarking/README.md",
                     "commit": a.commit}],
        "rows": rows,
    }
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(suite, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.output)
    print(f"mpt_table.py: {len(rows)} rows to {a.output}; {skipped} bf16 rows left out "
          "(global batch not a multiple of GPUs x microbatch, another GPU or sharding "
          "strategy, or a repeat)",
          file=sys.stderr)
    if a.run:
        r = subprocess.run([a.run, "validate", "--suite", a.output, "--by", "cluster,seq"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"mpt_table.py: {a.run} validate failed (exit {r.returncode}): "
                     f"{r.stderr.strip()}")
        text = r.stdout
        print(text[text.index("errors by"):text.index("\n\n", text.index("errors by"))])
        mem = [line for line in text.splitlines() if line.startswith("memory: ")]
        if mem:
            print(mem[0])


if __name__ == "__main__":
    main()
