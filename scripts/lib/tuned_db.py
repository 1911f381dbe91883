"""A tuned database as the device and leave-one-out scripts read it: one GPU's entries.

A database may hold entries tuned on several GPUs of its arch (the shipped one: the H200's and
an H100's). A lookup that names no GPU serves the home device's (the one most entries were
tuned on); a script that times entries, or holds one out to score the fallback, reads one
device's too, or it would time a problem twice and leave the held-out problem in the database
as another GPU's entry.

    from tuned_db import load
    head, blocks, entries = load("tuned-db/sm_90.toml")           # the home device's
    head, blocks, entries = load(path, ("NVIDIA H100 80GB HBM3", 132))  # that GPU's, if any
    head, blocks, entries = load(path, "NVIDIA H100 80GB HBM3")  # by name alone
    text = rewrite(head, blocks)                                   # a database of those blocks
"""
import re
import tomllib


def device(entry):
    """(GPU name, compute units) an entry was measured on."""
    fp = entry.get("fingerprint", {})
    return fp.get("gpu", ""), fp.get("compute_units", 0)


def pick(entries, here=None):
    """The device whose entries to read: `here` ((GPU name, compute units), or a GPU name)
    where the database holds any, else the home device (most entries; the first of equals, as
    `convtune db check` names it)."""
    counts = {}
    for e in entries:
        counts[device(e)] = counts.get(device(e), 0) + 1
    named = [d for d in counts if d == here or d[0] == here]
    if named:
        return max(named, key=counts.get)
    return max(counts, key=counts.get, default=None)


def load(path, here=None):
    """(header text, entry blocks, parsed entries) of one device's entries of `path`."""
    text = open(path).read()
    head, *blocks = text.split("\n[[entry]]\n")
    entries = tomllib.loads(text).get("entry", [])
    assert len(blocks) == len(entries), f"{path}: one [[entry]] block per entry"
    keep = pick(entries, here)
    kept = [(b, e) for b, e in zip(blocks, entries) if device(e) == keep]
    return head, [b for b, _ in kept], [e for _, e in kept]


def rewrite(head, blocks):
    """A database of `blocks` under `head`, its entry count fixed."""
    h = re.sub(r"^entries = \d+", f"entries = {len(blocks)}", head, flags=re.M)
    return h + "".join("\n[[entry]]\n" + b for b in blocks)
