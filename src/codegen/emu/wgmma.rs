//! Hopper `wgmma` in the emulator: `wgmma.mma_async` computed from its shared-memory
//! descriptors, written from the PTX ISA independently of the kernel side (`math.rs`), and the
//! fence / commit / wait protocol checked per thread.
//!
//! Descriptor (PTX ISA "Matrix Descriptor Format" for wgmma): bits 0-13 start address >> 4,
//! 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 49-51
//! base offset, 62-63 layout type (0 interleave, 1 128-byte swizzle, 2 64-byte, 3 32-byte).
//! The swizzled modes with base offset 0 are emulated (interleave is not: no kernel uses it).
//! A mode of span S bytes lays a matrix out in lines of S bytes, 8 lines a group (the swizzle
//! atom, 8·S-byte aligned), and XORs address bits 4.. with bits 7.. (log2(S/16) bits each):
//! 16-byte chunk c of line r lies at chunk c ^ (r / (128/S)) % (S/16), c ^ r%8 for S = 128.
//! - K-major (imm-trans 0): line r is row r of A (column r of B), at `start + (r/8)·SBO +
//!   (r%8)·S`, element k 2·k bytes further; the leading-dimension offset is unused (the 16 k
//!   of one instruction lie within one line).
//! - MN-major (imm-trans 1, PTX ISA "Shared Memory Matrix Layout", CUTLASS's canonical
//!   MN-major layouts): line k holds S/2 consecutive rows (columns of B), at `start +
//!   (k/8)·SBO + (k%8)·S`, row r at 2·(r % (S/2)) bytes further plus (r / (S/2))·LBO (the next
//!   block of rows).
//!
//! The accumulator layout of m64nNk16 with f32 D: warp w of the warpgroup owns rows
//! 16w..16w+15; lane l holds d[i] at row 16w + l/4 + 8·((i%4)/2), column 8·(i/4) + 2·(l%4) +
//! i%2.
//!
//! What is not emulated: asynchrony (the product is computed when issued, so a kernel that reads
//! accumulators before `wait_group` is not caught), and the proxy ordering that
//! `fence.proxy.async` provides (a memory-model property the host cannot observe).

use super::runtime::{half_to_f32, thread};

/// The runtime functions of this file, by the names the host spec declares.
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_wgmma", emu_wgmma as *const () as usize),
        ("emu_wgmma_fence", emu_wgmma_fence as *const () as usize),
        ("emu_wgmma_commit", emu_wgmma_commit as *const () as usize),
        ("emu_wgmma_wait", emu_wgmma_wait as *const () as usize),
        ("emu_fence_proxy", emu_fence_proxy as *const () as usize),
    ]
}

/// Decoded fields of a descriptor: (start, lbo, sbo, base offset, mode).
fn decode(d: u64) -> (usize, usize, usize, u64, u64) {
    let f = |lo: u32| ((d >> lo) & 0x3FFF) as usize;
    (f(0) << 4, f(16) << 4, f(32) << 4, (d >> 49) & 7, d >> 62)
}

/// The span in bytes of a swizzled layout type, `None` for interleave (not emulated).
fn span_of(mode: u64) -> Option<usize> {
    match mode {
        1 => Some(128),
        2 => Some(64),
        3 => Some(32),
        _ => None,
    }
}

/// Shared-memory byte offset of element (line r, k) of a K-major operand of span `span`.
fn kmajor_offset(span: usize, start: usize, sbo: usize, r: usize, k: usize) -> usize {
    swizzle(span, start + (r / 8) * sbo + (r % 8) * span + 2 * k)
}

/// Shared-memory byte offset of element (row r, k) of an MN-major operand of span `span`.
fn mn_offset(span: usize, start: usize, lbo: usize, sbo: usize, r: usize, k: usize) -> usize {
    let atom = span / 2;
    swizzle(
        span,
        start + (k / 8) * sbo + (k % 8) * span + (r / atom) * lbo + 2 * (r % atom),
    )
}

/// The swizzle of span `span`: address bits 4.. XOR bits 7.., log2(span/16) of each.
fn swizzle(span: usize, off: usize) -> usize {
    off ^ ((off >> 3) & ((span / 16 - 1) << 4))
}

/// `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}.{f16,bf16}` (scale-d = 1): `acc`
/// (n/2 floats) += this thread's part of A·B. `code`: 0 f16, 1 bf16; `trans` bit 0: A is
/// M-major (imm-trans-a 1), bit 1: B is N-major.
pub(crate) extern "C" fn emu_wgmma(
    ctx: *const u8,
    code: u32,
    n: u32,
    trans: u32,
    da: u64,
    db: u64,
    acc: *mut f32,
) {
    // SAFETY: `ctx` is the running thread's context (host spec contract).
    let t = unsafe { thread(ctx) };
    let n = n as usize;
    {
        let mut wg = t.wg.borrow_mut();
        if !wg.fenced {
            t.record("wgmma.mma_async without a wgmma.fence since the last wait_group");
        }
        wg.uncommitted += 1;
    }
    if t.block.threads % 128 != 0 {
        t.record("wgmma in a block that is not whole warpgroups");
        return;
    }
    if n == 0 || !n.is_multiple_of(8) || n > 256 {
        t.record(&format!("wgmma with n = {n}"));
        return;
    }
    let base = t.block.smem as usize;
    let mut ops = Vec::new();
    for (name, d, lines, mn) in [
        ("A", da, 64usize, trans & 1 != 0),
        ("B", db, n, trans & 2 != 0),
    ] {
        let (start, lbo, sbo, base_off, mode) = decode(d);
        let span = match span_of(mode) {
            Some(span) if base_off == 0 => span,
            _ => {
                t.record(&format!(
                    "wgmma {name} descriptor {d:#x}: layout type {mode}, base offset {base_off} \
                     (only the swizzled modes with base offset 0 are emulated)"
                ));
                return;
            }
        };
        let at = |r: usize, k: usize| {
            if mn {
                mn_offset(span, start, lbo, sbo, r, k)
            } else {
                kmajor_offset(span, start, sbo, r, k)
            }
        };
        // Every element the instruction reads must lie in shared memory.
        let mut m = vec![[0f32; 16]; lines];
        for (r, row) in m.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                let p = base + at(r, k);
                if !t.block.in_smem(p, 2) {
                    t.record(&format!(
                        "wgmma {name} element ({r}, {k}): shared offset {:#x} outside shared memory",
                        at(r, k)
                    ));
                    return;
                }
                // SAFETY: `p` and its 2 bytes were checked to lie in shared memory.
                let bits = unsafe { std::ptr::read_unaligned(p as *const u16) };
                *v = half_to_f32(bits, code);
            }
        }
        ops.push(m);
    }
    let (a, b) = (&ops[0], &ops[1]);
    let w = ((t.tid / 32) % 4) as usize;
    let lane = (t.tid % 32) as usize;
    // SAFETY: the host spec passes n/2 floats.
    let d = unsafe { std::slice::from_raw_parts_mut(acc, n / 2) };
    for (i, x) in d.iter_mut().enumerate() {
        let row = 16 * w + lane / 4 + 8 * ((i % 4) / 2);
        let col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
        *x = (0..16).fold(*x, |s, k| s + a[row][k] * b[col][k]);
    }
}

/// `wgmma.fence.sync.aligned`.
pub(crate) extern "C" fn emu_wgmma_fence(ctx: *const u8) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    t.wg.borrow_mut().fenced = true;
}

/// `wgmma.commit_group.sync.aligned`.
pub(crate) extern "C" fn emu_wgmma_commit(ctx: *const u8) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let mut wg = t.wg.borrow_mut();
    wg.uncommitted = 0;
    wg.groups += 1;
}

/// `wgmma.wait_group.sync.aligned n`. `.sync.aligned`: the warp's lanes leave it together,
/// so no lane runs ahead of one still before it (a warp-specialised consumer's lane 0
/// releases the stage for the whole warp after it).
pub(crate) extern "C" fn emu_wgmma_wait(ctx: *const u8, n: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    {
        let mut wg = t.wg.borrow_mut();
        wg.groups = wg.groups.min(n);
        wg.fenced = false;
    }
    t.warp_sync();
}

/// `fence.proxy.async.shared::cta`: the host's memory is one proxy, so it only marks this
/// thread's shared writes as fenced for the TMA-store check (`tma_store.rs`).
pub(crate) extern "C" fn emu_fence_proxy(ctx: *const u8) {
    // SAFETY: as above.
    super::tma_store::proxy_fence(unsafe { thread(ctx) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_fields_and_swizzle() {
        let d = (0x2400u64 >> 4) | (1 << 16) | ((1024u64 >> 4) << 32) | (1 << 62);
        assert_eq!(decode(d), (0x2400, 16, 1024, 0, 1));
        // Line 0 is unpermuted; line 3's chunk 0 lies at chunk 3, chunk 5 at chunk 6.
        let k128 = |r, k| kmajor_offset(128, 0, 1024, r, k);
        assert_eq!(k128(0, 9), 18);
        assert_eq!(k128(3, 0), 3 * 128 + 3 * 16);
        assert_eq!(k128(3, 40), 3 * 128 + 6 * 16);
        // Line 9: second 8-line group (SBO) at its line 1; a start 32 bytes into the line
        // (the second k16 step) swizzles as the unshifted address would.
        assert_eq!(k128(9, 0), 1024 + 128 + 16);
        assert_eq!(kmajor_offset(128, 32, 1024, 1, 0), 128 + (2 ^ 1) * 16);
        // MN-major: line k (k-groups SBO apart), rows along the line, 64-row blocks LBO apart.
        assert_eq!(mn_offset(128, 0, 8192, 1024, 8, 0), 16);
        assert_eq!(mn_offset(128, 0, 8192, 1024, 0, 9), 1024 + 128 + 16);
        assert_eq!(mn_offset(128, 0, 8192, 1024, 70, 0), 8192 + 12);
        // 64-byte swizzle: 32-row blocks of 64-byte lines; lines 2-3 XOR chunks with 1, lines
        // 6-7 with 3, line 8 starts the next group (SBO 512) unpermuted.
        let mn64 = |r, k| mn_offset(64, 0, 4096, 512, r, k);
        let chunk = |c: usize, phase: usize| 16 * (c ^ phase);
        assert_eq!(mn64(0, 1), 64);
        assert_eq!(mn64(8, 2), 2 * 64 + chunk(1, 1));
        assert_eq!(mn64(8, 6), 6 * 64 + chunk(1, 3));
        assert_eq!(mn64(0, 8), 512);
        assert_eq!(mn64(33, 0), 4096 + 2);
        // 32-byte swizzle: 16-row blocks of 32-byte lines; lines 4-7 swap the two chunks.
        let mn32 = |r, k| mn_offset(32, 0, 2048, 256, r, k);
        assert_eq!(mn32(0, 4), 4 * 32 + 16);
        assert_eq!(mn32(8, 5), 5 * 32);
        assert_eq!(mn32(8, 3), 3 * 32 + 16);
        assert_eq!(mn32(17, 9), 2048 + 256 + 32 + 2);
        assert_eq!(span_of(0), None);
    }
}
