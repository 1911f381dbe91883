#!/usr/bin/env python3
"""The entries of database OLD whose problem database NEW has no entry for, written to REST
(whole `[[entry]]` blocks as they are, so their checksums hold; the header's count fixed).
    Usage: rest.py OLD NEW REST"""
import re, sys, tomllib
old, new, rest = sys.argv[1:]
tuned = {e["problem"] for e in tomllib.load(open(new, "rb")).get("entry", [])}
text = open(old).read()
head, *blocks = text.split("\n[[entry]]\n")
entries = tomllib.load(open(old, "rb"))["entry"]
assert len(blocks) == len(entries), "one [[entry]] block per entry"
keep = [b for b, e in zip(blocks, entries) if e["problem"] not in tuned]
head = re.sub(r"entries = \d+", f"entries = {len(keep)}", head)
open(rest, "w").write(head + "".join("\n[[entry]]\n" + b for b in keep))
print(f"re-tuned {len(tuned)}, kept from {old}: {len(keep)}")
