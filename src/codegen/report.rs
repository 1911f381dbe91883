//! A plain-text summary of what a compiled candidate will use on the GPU, for logs and the CLI.

use super::Compiled;
use std::fmt::Write;

/// One line per kernel (launch shape, shared memory; registers, scratch and spills on AMD) and,
/// for PTX, how many tensor-core, `ldmatrix` and `cp.async` instructions it holds: enough to see
/// at a glance whether a candidate took the fast path or will spill.
pub fn resource_report(c: &Compiled) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "target {}, {} kernel(s), workspace {} bytes",
        c.target,
        c.kernels.len(),
        c.workspace_bytes
    );
    for k in &c.kernels {
        let _ = write!(
            s,
            "  {}: grid {}x{}x{}, block {}, shared {} B",
            k.name, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.shared_bytes
        );
        if let Some(r) = c.resources.as_ref().and_then(|r| r.kernel(&k.name)) {
            let _ = write!(
                s,
                ", vgpr {} agpr {} sgpr {}, lds(static) {} B, scratch {} B, spills v{} s{}",
                r.vgpr_count,
                r.agpr_count,
                r.sgpr_count,
                r.group_segment_fixed_size,
                r.private_segment_fixed_size,
                r.vgpr_spill_count,
                r.sgpr_spill_count
            );
        }
        s.push('\n');
    }
    if let Some(ptx) = c.module.ptx() {
        let count = |pat: &str| ptx.matches(pat).count();
        let _ = writeln!(
            s,
            "  ptx: {} bytes, mma.sync {}, ldmatrix {}, cp.async {}, ld.global {}, st.global {}",
            ptx.len(),
            count("mma.sync"),
            count("ldmatrix"),
            count("cp.async."),
            count("ld.global"),
            count("st.global")
        );
    }
    if let Some(co) = c.module.code_object() {
        let _ = writeln!(s, "  code object: {} bytes", co.len());
    }
    s
}
