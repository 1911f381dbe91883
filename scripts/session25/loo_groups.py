"""Writes `--try` groups for scripts/session25/groups.sh: problems with the same number of
configs share a directory g<N>/ with problems.txt and tries.txt (`PROBLEM | CONFIG` lines)."""
import os


def write_groups(out, groups):
    """`groups`: {N: [(problem, [config, ...]), ...]}; prints one line per group."""
    for n, items in sorted(groups.items()):
        d = f"{out}/g{n}"
        os.makedirs(d, exist_ok=True)
        open(f"{d}/problems.txt", "w").write("".join(p + "\n" for p, _ in items))
        open(f"{d}/tries.txt", "w").write("".join(f"{p} | {c}\n" for p, cs in items for c in cs))
        print(f"g{n}: {len(items)} problems, {n} configs each")
