//! A plain-text summary of what a compiled candidate will use on the GPU, for logs and the CLI.

use super::Compiled;
use serde::Serialize;
use std::fmt::Write;

/// How many of the instructions that tell the fast path from the slow one a PTX module holds:
/// tensor-core instructions (`mma.sync` on sm_80+, `wgmma.mma_async` on sm_90a), their operand
/// feeders (`ldmatrix`, `cp.async.*`), and plain global loads and stores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PtxCounts {
    /// Size of the PTX text.
    pub bytes: usize,
    /// `mma.sync` instructions.
    pub mma_sync: usize,
    /// `wgmma.mma_async` instructions (Hopper warpgroup MMA).
    pub wgmma: usize,
    /// `ldmatrix` instructions.
    pub ldmatrix: usize,
    /// `cp.async.*` instructions (copies, commits and waits).
    pub cp_async: usize,
    /// `ld.global*` instructions.
    pub ld_global: usize,
    /// `st.global*` instructions.
    pub st_global: usize,
}

impl PtxCounts {
    /// Counts the instructions of one PTX module.
    pub fn of(ptx: &str) -> PtxCounts {
        let count = |pat: &str| ptx.matches(pat).count();
        PtxCounts {
            bytes: ptx.len(),
            mma_sync: count("mma.sync"),
            wgmma: count("wgmma.mma_async"),
            ldmatrix: count("ldmatrix"),
            cp_async: count("cp.async."),
            ld_global: count("ld.global"),
            st_global: count("st.global"),
        }
    }
}

/// One line per kernel (launch shape, shared memory; registers, scratch and spills on AMD) and,
/// for PTX, how many tensor-core (`mma.sync`, `wgmma`), `ldmatrix` and `cp.async` instructions it
/// holds ([`PtxCounts`]): enough to see
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
    if let Some(ptx) = &c.ptx {
        let n = PtxCounts::of(ptx);
        let _ = writeln!(
            s,
            "  ptx: {} bytes, mma.sync {}, wgmma {}, ldmatrix {}, cp.async {}, ld.global {}, st.global {}",
            n.bytes, n.mma_sync, n.wgmma, n.ldmatrix, n.cp_async, n.ld_global, n.st_global
        );
    }
    if let Some(co) = &c.code_object {
        let _ = writeln!(s, "  code object: {} bytes", co.len());
    }
    s
}
