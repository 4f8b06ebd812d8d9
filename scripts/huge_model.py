#!/usr/bin/env python3
"""huge_model.py - writes a model with LEAVES leaves (default 199,996: the
most the model loader's 200,000-module cap allows with the root and a flat
list of leaves): a GPT's embedding, then its blocks' leaves (ln1, attn, ln2,
mlp) repeated without block containers, the final norm and the head.
    bin/stagecraft model gen gpt --layers 1 --hidden 1024 --heads 16 -o g1.json
    scripts/huge_model.py g1.json [LEAVES] > huge.json
Used by issue 15's time bound check (scripts/hostile.sh, docs/commands.md).
The leaves are written without their kernel lists (each is then priced by
its totals): with them the file is about 121 MB, over the loader's 64 MiB
limit on a file: the check could not load it from the day the generators
began writing kernel lists (issue 13) until 2026-12-07."""
import json, sys

src = json.load(open(sys.argv[1]))
want = int(sys.argv[2]) if len(sys.argv) > 2 else 199996
kids = src["root"]["children"]
embed, block, tail = kids[0], kids[1], kids[2:]
body = want - 1 - len(tail)
def bare(leaf):
    return {k: v for k, v in leaf.items() if k != "kernels"}


embed, tail = bare(embed), [bare(t) for t in tail]
leaves = [embed]
i = 0
while len(leaves) - 1 < body:
    for leaf in block["children"]:
        if len(leaves) - 1 >= body:
            break
        c = bare(leaf)
        c["name"] = leaf["name"].replace("blocks.0.", "l%d." % i)
        leaves.append(c)
    i += 1
leaves += tail
src["name"] = "huge%d" % len(leaves)
src["root"]["children"] = leaves
json.dump(src, sys.stdout, separators=(",", ":"))
