//! Hopper TMA and `mbarrier`s in the emulator, written from the PTX ISA ("mbarrier",
//! "cp.async.bulk.tensor", "Tensor Map") independently of the kernel side (`codegen/tma.rs`).
//!
//! An `mbarrier` is kept per shared-memory address: arrivals pending in the current phase
//! (reset to the init count when a phase completes), the transaction bytes expected
//! (`expect_tx`) and landed, and the number of completed phases. A phase completes when no
//! arrival is pending and the landed bytes equal the expected ones; `try_wait.parity p`
//! succeeds once the current phase's parity differs from `p` (the phase of parity `p` is done).
//!
//! A TMA copy reads its box when issued (the tensors are not written during a kernel) and is
//! written to shared memory at the latest moment the ISA allows: when its `mbarrier` phase
//! completes. A kernel that reads a stage before waiting for it therefore sees stale data, a
//! wrong `expect_tx` count never completes (reported as a deadlock after [`WAIT_LIMIT`], and the
//! run goes on), more bytes than announced are reported, and copies still in flight at exit
//! are reported: a broken pipeline fails here before it hangs a GPU.
//!
//! The host tensor map (what the emulator passes for a `TensorMap` argument) is 16 u64:
//! base address, rank, element bytes, swizzle-128 flag, 5 dims, 4 byte strides, 5 boxes (two
//! per word). Boxes land as in the PTX ISA's tile mode: elements in box order, dimension 0
//! fastest, and with the 128-byte swizzle 16-byte chunk c of 128-byte line r (of the shared
//! address, 1024-byte aligned) at chunk c ^ r%8.

use super::runtime::{thread, Block, Thread};
use crate::abi::{TensorMapSpec, TENSOR_MAP_RANK};
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long an `mbarrier` wait may block before it is reported as a deadlock.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(20);

/// Words of the host tensor map.
pub(crate) const MAP_WORDS: usize = 16;

/// The host tensor map of `spec` over the buffer at `base`.
pub(crate) fn host_map(spec: &TensorMapSpec, base: usize) -> [u64; MAP_WORDS] {
    let mut m = [0u64; MAP_WORDS];
    m[0] = base as u64 + spec.offset;
    m[1] = spec.rank as u64;
    m[2] = spec.dtype.bytes() as u64;
    m[3] = u64::from(spec.swizzle128);
    m[4..9].copy_from_slice(&spec.dims);
    m[9..13].copy_from_slice(&spec.strides);
    for i in 0..TENSOR_MAP_RANK {
        m[13 + i / 2] |= (spec.boxes[i] as u64) << (32 * (i % 2));
    }
    m
}

/// One `mbarrier`.
#[derive(Debug)]
struct Mbar {
    count: u32,
    pending: u32,
    expected: u64,
    landed: u64,
    phase: u32,
    /// Copies whose bytes count as landed, written when the phase completes: (shared offset
    /// of each 16-byte chunk, chunk).
    copies: Vec<(usize, [u8; 16])>,
}

/// The `mbarrier`s of one block, by shared-memory offset.
#[derive(Default)]
pub(crate) struct BlockTma {
    bars: Mutex<HashMap<usize, Mbar>>,
    cv: Condvar,
}

impl BlockTma {
    /// Reports copies or arrivals still outstanding after every thread of the block ended.
    pub fn finish(&self, block: &Block) {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        for (at, m) in bars.iter() {
            if !m.copies.is_empty() || m.expected > 0 {
                block.record(format!(
                    "block {:?}: mbarrier at shared offset {at:#x} ended with a phase in flight \
                     ({} of {} bytes landed, {} arrivals pending)",
                    block.bid, m.landed, m.expected, m.pending
                ));
            }
        }
    }

    /// Completes the phase of `m` if it is due, writing its copies to shared memory.
    fn try_complete(&self, t: &Thread, at: usize, m: &mut Mbar) {
        if m.pending > 0 {
            return;
        }
        if m.landed > m.expected {
            t.record(&format!(
                "mbarrier at {at:#x}: TMA landed {} bytes, expect_tx announced {}",
                m.landed, m.expected
            ));
        }
        if m.landed != m.expected {
            return;
        }
        for (off, chunk) in m.copies.drain(..) {
            // SAFETY: every chunk's offset was checked to lie in shared memory at issue.
            unsafe {
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), t.block.smem.add(off), 16);
            }
        }
        m.phase += 1;
        m.pending = m.count;
        m.expected = 0;
        m.landed = 0;
        self.cv.notify_all();
    }
}

/// The shared offset of an `mbarrier` pointer, if valid (in shared memory, 8-byte aligned).
fn bar_offset(t: &Thread, bar: *const u8, what: &str) -> Option<usize> {
    let p = bar as usize;
    if !t.block.in_smem(p, 8) || !p.is_multiple_of(8) {
        t.record(&format!(
            "{what}: mbarrier address {p:#x} outside shared memory or not 8-byte aligned"
        ));
        return None;
    }
    Some(p - t.block.smem as usize)
}

/// Runs `f` on the `mbarrier` at `bar`, or records that it was never initialised.
fn with_bar(t: &Thread, bar: *const u8, what: &str, f: impl FnOnce(&BlockTma, usize, &mut Mbar)) {
    let Some(at) = bar_offset(t, bar, what) else {
        return;
    };
    let tma = &t.block.tma;
    let mut bars = tma.bars.lock().unwrap_or_else(|e| e.into_inner());
    match bars.get_mut(&at) {
        Some(m) => f(tma, at, m),
        None => t.record(&format!("{what} on the uninitialised mbarrier at {at:#x}")),
    }
}

pub(crate) extern "C" fn emu_mbar_init(ctx: *const u8, bar: *const u8, count: u32) {
    // SAFETY: called by emulated kernels with their context.
    let t = unsafe { thread(ctx) };
    let Some(at) = bar_offset(t, bar, "mbarrier.init") else {
        return;
    };
    let mut bars = t.block.tma.bars.lock().unwrap_or_else(|e| e.into_inner());
    if bars.get(&at).is_some_and(|m| !m.copies.is_empty()) {
        t.record(&format!("mbarrier.init at {at:#x} while TMA copies are in flight on it"));
    }
    bars.insert(
        at,
        Mbar {
            count,
            pending: count,
            expected: 0,
            landed: 0,
            phase: 0,
            copies: Vec::new(),
        },
    );
}

pub(crate) extern "C" fn emu_mbar_fence(_ctx: *const u8) {}

pub(crate) extern "C" fn emu_mbar_arrive_tx(ctx: *const u8, bar: *const u8, bytes: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    with_bar(t, bar, "mbarrier.arrive.expect_tx", |tma, at, m| {
        if m.pending == 0 {
            t.record(&format!("mbarrier at {at:#x}: more arrivals than its count"));
            return;
        }
        m.pending -= 1;
        m.expected += bytes as u64;
        tma.try_complete(t, at, m);
    });
}

pub(crate) extern "C" fn emu_mbar_wait(ctx: *const u8, bar: *const u8, parity: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let Some(at) = bar_offset(t, bar, "mbarrier.try_wait") else {
        return;
    };
    let tma = &t.block.tma;
    let start = Instant::now();
    let mut bars = tma.bars.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let Some(m) = bars.get(&at) else {
            t.record(&format!("mbarrier.try_wait on the uninitialised mbarrier at {at:#x}"));
            return;
        };
        if m.phase % 2 != parity % 2 {
            return;
        }
        if start.elapsed() > WAIT_LIMIT {
            let msg = format!(
                "mbarrier.try_wait.parity {parity} at {at:#x} never completed (deadlock: phase \
                 {}, {} arrivals pending, {} of {} bytes landed)",
                m.phase, m.pending, m.landed, m.expected
            );
            drop(bars);
            t.record(&msg);
            return;
        }
        bars = tma
            .cv
            .wait_timeout(bars, Duration::from_millis(200))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Reads the box at `coords` of the host map `m` as 16-byte chunks with their shared
/// offsets (from `dst`, swizzled), or records why the copy is invalid.
fn read_box(t: &Thread, m: &[u64; MAP_WORDS], coords: &[i32], dst: usize) -> Option<Vec<(usize, [u8; 16])>> {
    let rank = m[1] as usize;
    let eb = m[2] as usize;
    let swizzle = m[3] != 0;
    let dims = &m[4..9];
    let strides = &m[9..13];
    let boxes: Vec<usize> = (0..TENSOR_MAP_RANK)
        .map(|i| ((m[13 + i / 2] >> (32 * (i % 2))) & 0xFFFF_FFFF) as usize)
        .collect();
    if coords.len() != rank || rank == 0 || rank > TENSOR_MAP_RANK {
        t.record(&format!("TMA copy with {} coordinates for a rank-{rank} map", coords.len()));
        return None;
    }
    let inner = boxes[0] * eb;
    let total: usize = boxes[..rank].iter().product::<usize>() * eb;
    if boxes[..rank].iter().any(|&b| b == 0 || b > 256) || !inner.is_multiple_of(16) {
        t.record(&format!("TMA box {:?} invalid (1..=256 elements, inner 16-byte multiple)", &boxes[..rank]));
        return None;
    }
    if swizzle && (inner > 128 || !dst.is_multiple_of(1024)) {
        t.record(&format!(
            "TMA 128-byte swizzle needs an inner box of at most 128 bytes ({inner}) and a \
             1024-byte aligned destination (offset {dst:#x})"
        ));
        return None;
    }
    if !t.block.in_smem(t.block.smem as usize + dst, total) {
        t.record(&format!("TMA destination {dst:#x} + {total} bytes outside shared memory"));
        return None;
    }
    let mut bytes = vec![0u8; total];
    let mut idx = [0usize; TENSOR_MAP_RANK];
    for e in 0..total / eb {
        let mut rest = e;
        for d in 0..rank {
            idx[d] = rest % boxes[d];
            rest /= boxes[d];
        }
        let mut src = m[0] as i64;
        let mut inside = true;
        for d in 0..rank {
            let c = coords[d] as i64 + idx[d] as i64;
            inside &= c >= 0 && (c as u64) < dims[d];
            src += c * if d == 0 { eb as i64 } else { strides[d - 1] as i64 };
        }
        if !inside {
            continue;
        }
        if !t.block.in_buffer(src as usize, eb) {
            t.record(&format!("TMA read of {eb} bytes at {src:#x} outside every buffer"));
            return None;
        }
        // SAFETY: the source was checked to lie in a buffer of the run.
        unsafe {
            std::ptr::copy_nonoverlapping(src as *const u8, bytes.as_mut_ptr().add(e * eb), eb);
        }
    }
    Some(
        bytes
            .chunks(16)
            .enumerate()
            .map(|(i, c)| {
                let off = dst + 16 * i;
                let off = if swizzle { off ^ ((off >> 3) & 0x70) } else { off };
                let mut w = [0u8; 16];
                w.copy_from_slice(c);
                (off, w)
            })
            .collect(),
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn emu_tma_load(
    ctx: *const u8,
    dst: *const u8,
    map: *const u64,
    n: u32,
    c0: i32,
    c1: i32,
    c2: i32,
    c3: i32,
    c4: i32,
    bar: *const u8,
) {
    // SAFETY: as above; `map` is the host map the emulator passed (MAP_WORDS words).
    let t = unsafe { thread(ctx) };
    let m: [u64; MAP_WORDS] = unsafe { std::ptr::read_unaligned(map as *const [u64; MAP_WORDS]) };
    let coords = [c0, c1, c2, c3, c4];
    let n = (n as usize).min(TENSOR_MAP_RANK);
    let d = (dst as usize).wrapping_sub(t.block.smem as usize);
    let Some(chunks) = read_box(t, &m, &coords[..n], d) else {
        return;
    };
    with_bar(t, bar, "cp.async.bulk.tensor", |tma, at, mb| {
        mb.landed += 16 * chunks.len() as u64;
        mb.copies.extend(chunks);
        tma.try_complete(t, at, mb);
    });
}

/// The runtime functions of this file, by the names the host spec declares.
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_mbar_init", emu_mbar_init as *const () as usize),
        ("emu_mbar_fence", emu_mbar_fence as *const () as usize),
        ("emu_mbar_arrive_tx", emu_mbar_arrive_tx as *const () as usize),
        ("emu_mbar_wait", emu_mbar_wait as *const () as usize),
        ("emu_tma_load", emu_tma_load as *const () as usize),
    ]
}
