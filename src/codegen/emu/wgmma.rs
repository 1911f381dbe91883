//! Hopper `wgmma` in the emulator: `wgmma.mma_async` computed from its shared-memory
//! descriptors, written from the PTX ISA independently of the kernel side (`math.rs`), and the
//! fence / commit / wait protocol checked per thread.
//!
//! Descriptor (PTX ISA "Matrix Descriptor Format" for wgmma): bits 0-13 start address >> 4,
//! 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 49-51
//! base offset, 62-63 swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte). Only what the
//! kernels use is emulated: the 128-byte swizzle mode with base offset 0, where a matrix is
//! groups of 8 lines of 128 bytes and the swizzle XORs address bits 4-6 with bits 7-9 (16-byte
//! chunk c of line r%8 lies at chunk c ^ r%8 when the atom is 1024-byte aligned).
//! - K-major (imm-trans 0): line r is row r of A (column r of B), at `start + (r/8)·SBO +
//!   (r%8)·128`, element k 2·k bytes further; the leading-dimension offset is unused (the 16
//!   k of one instruction lie within one 128-byte line).
//! - MN-major (imm-trans 1): line k holds 64 consecutive rows (columns of B), at `start +
//!   (k/8)·SBO + (k%8)·128`, row r at 2·(r%64) bytes further plus (r/64)·LBO (the next
//!   64-row block).
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

/// Shared-memory byte offset of element (line r, k) of a K-major 128-byte-swizzled operand.
fn sw128_offset(start: usize, sbo: usize, r: usize, k: usize) -> usize {
    swizzle(start + (r / 8) * sbo + (r % 8) * 128 + 2 * k)
}

/// Shared-memory byte offset of element (row r, k) of an MN-major 128-byte-swizzled operand.
fn sw128_mn_offset(start: usize, lbo: usize, sbo: usize, r: usize, k: usize) -> usize {
    swizzle(start + (k / 8) * sbo + (k % 8) * 128 + (r / 64) * lbo + 2 * (r % 64))
}

/// The 128-byte swizzle: address bits 4-6 XOR bits 7-9.
fn swizzle(off: usize) -> usize {
    off ^ ((off >> 3) & 0x70)
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
        let at = |r: usize, k: usize| {
            if mn {
                sw128_mn_offset(start, lbo, sbo, r, k)
            } else {
                sw128_offset(start, sbo, r, k)
            }
        };
        if mode != 1 || base_off != 0 {
            t.record(&format!(
                "wgmma {name} descriptor {d:#x}: swizzle mode {mode}, base offset {base_off} \
                 (only 128-byte swizzle with base offset 0 is emulated)"
            ));
            return;
        }
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
        assert_eq!(sw128_offset(0, 1024, 0, 9), 18);
        assert_eq!(sw128_offset(0, 1024, 3, 0), 3 * 128 + 3 * 16);
        assert_eq!(sw128_offset(0, 1024, 3, 40), 3 * 128 + 6 * 16);
        // Line 9: second 8-line group (SBO) at its line 1; a start 32 bytes into the line
        // (the second k16 step) swizzles as the unshifted address would.
        assert_eq!(sw128_offset(0, 1024, 9, 0), 1024 + 128 + 16);
        assert_eq!(sw128_offset(32, 1024, 1, 0), 128 + (2 ^ 1) * 16);
        // MN-major: line k (k-groups SBO apart), rows along the line, 64-row blocks LBO apart.
        assert_eq!(sw128_mn_offset(0, 8192, 1024, 8, 0), 16);
        assert_eq!(sw128_mn_offset(0, 8192, 1024, 0, 9), 1024 + 128 + 16);
        assert_eq!(sw128_mn_offset(0, 8192, 1024, 70, 0), 8192 + 12);
    }
}
