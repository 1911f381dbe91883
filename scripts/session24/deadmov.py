"""Finds the trace of the ptxas IMAD.HI merge (session 24): in SASS from `nvdisasm -c`, a plain
register write that is overwritten in the same basic block before anything reads it. ptxas -O3
leaves no such write on its own; the miscompile leaves the move of a second slot's addend
(`IMAD.MOV.U32 R41, RZ, RZ, R5`) dead after merging that slot's `IMAD.HI` into the first's.

    python3 deadmov.py FILE.sass...   prints `FILE: N dead writes` and each one
"""
import re
import sys

INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;")
REG = re.compile(r"\bR(\d+)\b")


def regs(text):
    return {int(r) for r in REG.findall(text)}


def dead_writes(lines):
    found = []
    pending = {}  # register -> (address, instruction) written and not read yet
    for line in lines:
        m = INS.search(line)
        if not m:
            if re.match(r"\s*\.L_|^\s*\w+:", line):
                pending.clear()  # a label: a block starts
            continue
        addr, pred, op, args = m.groups()
        if op.startswith(("P2R", "R2P")):
            continue
        if op.startswith(("BRA", "EXIT", "BAR", "RET", "CALL", "BSYNC", "BSSY", "WARPSYNC")):
            pending.clear()
            continue
        parts = [a.strip() for a in args.split(",")] if args else []
        if not parts:
            continue
        dst, srcs = parts[0], ",".join(parts[1:])
        # 64-bit and vector sources read the next registers too: be generous with reads.
        read = regs(srcs)
        read |= {r + i for r in read for i in (1, 2, 3)}
        for r in read:
            pending.pop(r, None)
        if op.startswith(("ST", "RED", "ATOM", "LDGSTS", "HMMA", "LDSM", "LD", "SYNCS", "UTMA", "WGMMA")):
            pending.clear()  # memory/wide ops: writes of several registers, leave them be
            continue
        d = REG.fullmatch(dst.split(".")[0]) if dst.startswith("R") else None
        if d is None or pred:
            continue
        r = int(d.group(1))
        if r in pending:
            found.append((pending[r], f"{addr} {op} {args}"))
        pending[r] = f"{addr} {op} {args}"
    return found


total = 0
for path in sys.argv[1:]:
    lines = open(path).read().splitlines()
    found = dead_writes(lines)
    total += len(found)
    print(f"{path}: {len(found)} dead writes")
    for first, second in found[:5]:
        print(f"   {first}   <- overwritten by   {second}")
sys.exit(1 if total else 0)
