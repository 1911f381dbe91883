//! A pass over emitted PTX text: each `wgmma.wait_group` moves up its basic block past the
//! register arithmetic LLVM scheduled before it.
//!
//! ptxas serialises a warpgroup's `wgmma` pipeline (warning C7514, "non wgmma instructions
//! reading accumulator registers of a wgmma between start and end of the pipeline stage")
//! when ordinary instructions sit between the loop's last `wgmma` and the `wait_group` that
//! retires it, even instructions that touch no accumulator: LLVM sinks index arithmetic of
//! the epilogue into the K loop's exit block ahead of the drain's `wait_group 0`, and on
//! session 19's sample half of the persistent `mma=wg1` walks (13 of 14 with `rs=4`) were
//! serialised so. The wait is an inline-asm statement whose only ties are the accumulators,
//! which no instruction before it in its block reads or writes; waiting earlier is always
//! correct, so the pass moves it above pure register instructions (never above a label, a
//! branch, a memory access, a barrier or another inline-asm statement).

/// Opcodes (the part before the first `.`) of instructions that only read and write
/// registers: a `wait_group` may move above them.
const REGISTER_ONLY: &[&str] = &[
    "add", "sub", "mul", "mad", "div", "rem", "neg", "abs", "min", "max", "and", "or", "xor",
    "not", "shl", "shr", "bfe", "bfi", "setp", "selp", "cvt", "mov", "cvta",
];

/// Whether `line` is one instruction of [`REGISTER_ONLY`] (predicated or not).
fn register_only(line: &str) -> bool {
    let text = line.trim();
    let text = match text.strip_prefix('@') {
        Some(rest) => rest
            .split_once(char::is_whitespace)
            .map_or("", |(_, i)| i.trim()),
        None => text,
    };
    if !text.ends_with(';') {
        return false;
    }
    let opcode = text
        .split(|c: char| c == '.' || c.is_whitespace())
        .next()
        .unwrap_or("");
    REGISTER_ONLY.contains(&opcode)
}

/// `ptx` with every inline-asm `wgmma.wait_group` statement moved up its block past the
/// register-only instructions before it (see the module doc).
pub(crate) fn waits_first(ptx: &str) -> String {
    let mut lines: Vec<&str> = ptx.lines().collect();
    let mut i = 0;
    while i + 2 < lines.len() {
        let is_wait = lines[i].trim() == "// begin inline asm"
            && lines[i + 1].contains("wgmma.wait_group.sync.aligned")
            && lines[i + 2].trim() == "// end inline asm";
        if is_wait {
            let mut at = i;
            while at > 0 && register_only(lines[at - 1]) {
                at -= 1;
            }
            if at < i {
                let block: Vec<&str> = lines.drain(i..i + 3).collect();
                lines.splice(at..at, block);
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    let mut out = lines.join("\n");
    if ptx.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXIT_BLOCK: &str = "$L__BB0_20:
\tand.b32  \t%r46, %r41, 192;
\t@%p3 setp.gt.u32 \t%p16, %r141, 56;
\t// begin inline asm
\twgmma.wait_group.sync.aligned 0;
\t// end inline asm
\t@%p5 bra \t$L__BB0_22;
";

    #[test]
    fn a_wait_moves_above_register_arithmetic_to_its_block_start() {
        let out = waits_first(EXIT_BLOCK);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "$L__BB0_20:");
        assert_eq!(lines[2].trim(), "wgmma.wait_group.sync.aligned 0;");
        assert_eq!(lines[4].trim(), "and.b32  \t%r46, %r41, 192;");
        assert!(out.ends_with("bra \t$L__BB0_22;\n"));
        let sorted = |s: &str| {
            let mut v: Vec<String> = s.lines().map(str::to_string).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&out), sorted(EXIT_BLOCK), "only moved");
    }

    #[test]
    fn a_wait_stays_below_memory_barriers_and_other_asm() {
        for stop in [
            "\tst.shared.b16 \t[%rd1], %rs1;",
            "\tbar.sync \t1, 256;",
            "\t// end inline asm",
            "\tld.global.b32 \t%r1, [%rd2];",
            "\twgmma.commit_group.sync.aligned;",
        ] {
            let ptx = format!(
                "{stop}\n\tadd.s32 \t%r1, %r2, 1;\n\t// begin inline asm\n\twgmma.wait_group.sync.aligned 1;\n\t// end inline asm\n"
            );
            let out = waits_first(&ptx);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines[0], stop, "{out}");
            assert_eq!(lines[2].trim(), "wgmma.wait_group.sync.aligned 1;", "{out}");
        }
        // Nothing else moves.
        let plain = "\tadd.s32 \t%r1, %r2, 1;\n\t// begin inline asm\n\tfence.proxy.async;\n\t// end inline asm\n";
        assert_eq!(waits_first(plain), plain);
    }
}
