//! TMA stores in the emulator (`cp.async.bulk.tensor … .global.shared::cta.bulk_group`,
//! `cp.async.bulk.commit_group`, `cp.async.bulk.wait_group[.read]`), written from the PTX ISA
//! independently of the kernel side (`codegen/epilogue_tma.rs`), with the rules a kernel must
//! keep checked:
//!
//! - A store reads its shared-memory box at the latest moment the ISA allows: the
//!   `wait_group.read` of its issuing thread that covers its group (or the thread's exit). So a
//!   kernel that rewrites the box before that stores the new data, and every generic shared
//!   store into the box of a pending store is reported (the staging buffer reused without
//!   `wait_group.read`).
//! - The box must have been made visible to the async proxy: a store whose box overlaps shared
//!   bytes some thread wrote since its last `fence.proxy.async` is reported.
//! - Stores still pending at a thread's exit are reported (and then performed).
//!
//! Global writes are clipped to the map's `dims`, as the hardware clips a box at the tensor's
//! edge; the swizzle is the loads' (`emu/tma.rs`).

use super::runtime::{thread, Thread};
use super::tma::{read_map, HostMap, IM2COL_WORD, MAP_WORDS};
use crate::abi::TENSOR_MAP_RANK;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One TMA store in flight: where its box lies in shared memory and where it goes.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    /// Shared-memory offset of the box (1024-byte aligned when swizzled).
    src: usize,
    /// Bytes of the box.
    bytes: usize,
    map: [u64; MAP_WORDS],
    coords: [i32; TENSOR_MAP_RANK],
}

/// The block's TMA-store state: the shared ranges that pending stores will still read, and
/// each thread's shared bytes written since its last proxy fence.
pub(crate) struct StoreState {
    /// `(offset, bytes, issuing thread)` of every pending store's box.
    pending: Mutex<Vec<(usize, usize, u32)>>,
    /// `pending.len()`, read without the lock on every shared store.
    count: AtomicUsize,
    /// Per thread: `[lo, hi)` of shared offsets written since its last `fence.proxy.async`
    /// (`lo = usize::MAX`: none).
    unfenced: Vec<(AtomicUsize, AtomicUsize)>,
}

impl StoreState {
    pub fn new(threads: u32) -> Self {
        StoreState {
            pending: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
            unfenced: (0..threads)
                .map(|_| (AtomicUsize::new(usize::MAX), AtomicUsize::new(0)))
                .collect(),
        }
    }
}

/// Per-thread bulk groups: the open one and the committed ones, oldest first.
#[derive(Debug, Default)]
pub(crate) struct BulkGroups {
    open: Vec<Store>,
    committed: Vec<Vec<Store>>,
}

/// A generic shared-memory store of `bytes` at offset `off` by `t` (from the access guard):
/// reported when a pending TMA store will still read those bytes; remembered as not yet
/// fenced for the async proxy.
pub(super) fn shared_store(t: &Thread, off: usize, bytes: usize) {
    let st = &t.block.stores;
    if st.count.load(Ordering::Acquire) > 0 {
        let hit = st
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|&&(s, n, _)| off < s + n && s < off + bytes)
            .copied();
        if let Some((s, _, by)) = hit {
            t.record(&format!(
                "shared store of {bytes} bytes at {off:#x} into the box at {s:#x} of a TMA \
                 store thread {by} issued and has not waited for (cp.async.bulk.wait_group.read)"
            ));
        }
    }
    if let Some((lo, hi)) = st.unfenced.get(t.tid as usize) {
        // Only this thread writes its own entry.
        lo.store(lo.load(Ordering::Relaxed).min(off), Ordering::Relaxed);
        hi.store(
            hi.load(Ordering::Relaxed).max(off + bytes),
            Ordering::Release,
        );
    }
}

/// `fence.proxy.async.shared::cta` of `t`: its shared writes are visible to the async proxy.
pub(super) fn proxy_fence(t: &Thread) {
    if let Some((lo, hi)) = t.block.stores.unfenced.get(t.tid as usize) {
        lo.store(usize::MAX, Ordering::Relaxed);
        hi.store(0, Ordering::Release);
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn emu_tma_store(
    ctx: *const u8,
    src: *const u8,
    map: *const u64,
    n: u32,
    c0: i32,
    c1: i32,
    c2: i32,
    c3: i32,
    c4: i32,
) {
    // SAFETY: called by emulated kernels with their context and a host map.
    let t = unsafe { thread(ctx) };
    // SAFETY: as above.
    let m = unsafe { read_map(map) };
    let h = HostMap::of(&m);
    let rank = h.rank;
    let off = (src as usize).wrapping_sub(t.block.smem as usize);
    if m[IM2COL_WORD] != 0 || n as usize != rank || rank == 0 || rank > TENSOR_MAP_RANK {
        t.record(&format!(
            "TMA store with {n} coordinates through a rank-{rank} map (tiled maps only)"
        ));
        return;
    }
    let elems: usize = h.boxes[..rank].iter().product();
    let bytes = elems * h.eb;
    let inner = h.boxes[0] * h.eb;
    let span = h.swizzle;
    if (span > 0 && (inner > span || !off.is_multiple_of(8 * span)))
        || !off.is_multiple_of(128)
        || !t.block.in_smem(src as usize, bytes)
    {
        t.record(&format!(
            "TMA store source {off:#x} + {bytes} bytes: outside shared memory or misaligned \
             (128 bytes; 8 swizzle spans and an inner box of at most one span when swizzled)"
        ));
        return;
    }
    let st = &t.block.stores;
    for (tid, (lo, hi)) in st.unfenced.iter().enumerate() {
        let (lo, hi) = (lo.load(Ordering::Relaxed), hi.load(Ordering::Acquire));
        if lo < off + bytes && off < hi {
            t.record(&format!(
                "TMA store of the box at {off:#x}: thread {tid} wrote shared bytes \
                 [{lo:#x}, {hi:#x}) without fence.proxy.async since"
            ));
            break;
        }
    }
    {
        let mut p = st.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.push((off, bytes, t.tid));
        st.count.store(p.len(), Ordering::Release);
    }
    t.bulk.borrow_mut().open.push(Store {
        src: off,
        bytes,
        map: m,
        coords: [c0, c1, c2, c3, c4],
    });
}

pub(crate) extern "C" fn emu_bulk_commit(ctx: *const u8) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let mut g = t.bulk.borrow_mut();
    let open = std::mem::take(&mut g.open);
    g.committed.push(open);
}

/// `cp.async.bulk.wait_group[.read] pending`: the thread's oldest groups past `pending` are
/// read (and written: the emulator does both at once).
pub(crate) extern "C" fn emu_bulk_wait(ctx: *const u8, pending: u32, _read: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let done: Vec<Store> = {
        let mut g = t.bulk.borrow_mut();
        let keep = (pending as usize).min(g.committed.len());
        let n = g.committed.len() - keep;
        g.committed.drain(..n).flatten().collect()
    };
    for s in &done {
        perform(t, s);
    }
}

/// Stores still pending when `t` exits: reported, then performed.
pub(super) fn finish(t: &Thread) {
    let left: Vec<Store> = {
        let mut g = t.bulk.borrow_mut();
        let open = std::mem::take(&mut g.open);
        let mut all: Vec<Store> = g.committed.drain(..).flatten().collect();
        all.extend(open);
        all
    };
    if !left.is_empty() {
        t.record(&format!(
            "{} TMA stores still pending at kernel exit (no cp.async.bulk.wait_group)",
            left.len()
        ));
    }
    for s in &left {
        perform(t, s);
    }
}

/// Reads the box of `s` from shared memory (swizzled) and writes its elements inside the
/// map's dims to global memory; then it no longer counts as pending.
fn perform(t: &Thread, s: &Store) {
    let h = HostMap::of(&s.map);
    let (rank, eb) = (h.rank, h.eb);
    let elems = s.bytes / eb;
    let smem = t.block.smem as usize;
    for e in 0..elems {
        let mut rest = e;
        let mut dst = h.base as i64;
        let mut inside = true;
        for d in 0..rank {
            let c = s.coords[d] as i64 + (rest % h.boxes[d]) as i64;
            rest /= h.boxes[d];
            if c < 0 || c as u64 >= h.dims[d] {
                inside = false;
                break;
            }
            dst += c * h.stride(d);
        }
        if !inside {
            continue;
        }
        let mut off = s.src + e * eb;
        if h.swizzle > 0 {
            // As a load lands (`emu/tma.rs`): bits 4.. XOR bits 7.., one per 16-byte chunk bit.
            off ^= (off >> 3) & ((h.swizzle / 16 - 1) << 4);
        }
        if !t.block.in_buffer(dst as usize, eb) {
            t.record(&format!(
                "TMA store of {eb} bytes at {dst:#x} outside every buffer"
            ));
            break;
        }
        // SAFETY: the box was checked to lie in shared memory when issued (the swizzle stays
        // within its 1024-byte atoms), and the destination in a buffer of the run.
        unsafe {
            std::ptr::copy_nonoverlapping((smem + off) as *const u8, dst as *mut u8, eb);
        }
    }
    let st = &t.block.stores;
    let mut p = st.pending.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = p
        .iter()
        .position(|&(o, n, by)| o == s.src && n == s.bytes && by == t.tid)
    {
        p.remove(i);
    }
    st.count.store(p.len(), Ordering::Release);
}

/// The runtime functions of this file, by the names the host spec declares.
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_tma_store", emu_tma_store as *const () as usize),
        ("emu_bulk_commit", emu_bulk_commit as *const () as usize),
        ("emu_bulk_wait", emu_bulk_wait as *const () as usize),
    ]
}
