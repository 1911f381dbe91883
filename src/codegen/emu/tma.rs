//! Hopper TMA and `mbarrier`s in the emulator, written from the PTX ISA ("mbarrier",
//! "cp.async.bulk.tensor", "Tensor Map") independently of the kernel side (`codegen/tma.rs`).
//! The `mbarrier` state, its phases and the deadlock test are the block's [`sync`](super::sync).
//!
//! A TMA copy reads its box when issued (the tensors are not written during a kernel) and is
//! written to shared memory at the latest moment the ISA allows, when its phase completes. A
//! kernel that reads a stage without waiting for it therefore sees stale data, a wrong `expect_tx` count never completes
//! (reported as a deadlock after the block's wait limit, and the run goes on), more bytes than
//! announced are reported, and phases nobody waited for at exit are reported: a broken
//! pipeline fails here before it hangs a GPU.
//!
//! The host tensor map (what the emulator passes for a `TensorMap` argument) is 24 u64:
//! base address, rank, element bytes, the `CUtensorMapSwizzle` number, 5 dims, 4 byte strides, 5 boxes (two
//! per word), then the im2col mode, corners and element strides (`emu/im2col.rs` reads them).
//! Boxes land as in the PTX ISA's tile mode: elements in box order, dimension 0 fastest, and
//! with a swizzle of span S (32, 64 or 128 bytes: modes 1, 2, 3) address bits 4.. XOR bits
//! 7.. (log2(S/16) bits each), so 16-byte chunk c of S-byte line r (of the shared address,
//! 8·S-byte aligned) lies at chunk c ^ (r / (128/S)) % (S/16): c ^ r%8 for 128 bytes.

use super::runtime::{thread, Thread};
use super::sync::{bar_offset, with_bar, BlockSync, Landing, Mbar, Wait};
use crate::abi::{TensorMapSpec, TENSOR_MAP_RANK};

/// Words of the host tensor map.
pub(crate) const MAP_WORDS: usize = 24;
/// Word of the host map that says im2col (1) or tiled (0); the corners and element strides
/// follow (see [`host_map`]).
pub(crate) const IM2COL_WORD: usize = 16;

/// The host tensor map of `spec` over the buffer at `base`.
pub(crate) fn host_map(spec: &TensorMapSpec, base: usize) -> [u64; MAP_WORDS] {
    let mut m = [0u64; MAP_WORDS];
    m[0] = base as u64 + spec.offset;
    m[1] = spec.rank as u64;
    m[2] = spec.dtype.bytes() as u64;
    m[3] = u64::from(u32::from(spec.swizzle));
    m[4..9].copy_from_slice(&spec.dims);
    m[9..13].copy_from_slice(&spec.strides);
    for i in 0..TENSOR_MAP_RANK {
        m[13 + i / 2] |= (spec.boxes[i] as u64) << (32 * (i % 2));
    }
    if let Some(im) = spec.im2col {
        // 16: mode, 17..20: lower corners, 20..23: upper corners (as i64), 23: element
        // strides (8 bits each).
        m[IM2COL_WORD] = 1;
        for d in 0..TENSOR_MAP_RANK - 2 {
            m[17 + d] = im.lower[d] as i64 as u64;
            m[20 + d] = im.upper[d] as i64 as u64;
        }
        for (d, &e) in spec.element_strides().iter().enumerate() {
            m[23] |= (e as u64 & 0xFF) << (8 * d);
        }
    }
    m
}

/// The host map at `map`, as a copy's runtime function receives it.
///
/// # Safety
/// `map` points at the [`MAP_WORDS`] words of a host map the emulator passed (any alignment).
pub(super) unsafe fn read_map(map: *const u64) -> [u64; MAP_WORDS] {
    std::ptr::read_unaligned(map as *const [u64; MAP_WORDS])
}

/// The fields of a host map that both modes read.
pub(super) struct HostMap {
    pub base: u64,
    pub rank: usize,
    pub eb: usize,
    /// Swizzle span in bytes (0: none), decoded from the `CUtensorMapSwizzle` number.
    pub swizzle: usize,
    pub dims: [u64; TENSOR_MAP_RANK],
    pub strides: [u64; TENSOR_MAP_RANK - 1],
    pub boxes: [usize; TENSOR_MAP_RANK],
}

impl HostMap {
    pub fn of(m: &[u64; MAP_WORDS]) -> Self {
        HostMap {
            base: m[0],
            rank: m[1] as usize,
            eb: m[2] as usize,
            swizzle: match m[3] {
                1 => 32,
                2 => 64,
                3 => 128,
                _ => 0,
            },
            dims: std::array::from_fn(|i| m[4 + i]),
            strides: std::array::from_fn(|i| m[9 + i]),
            boxes: std::array::from_fn(|i| {
                ((m[13 + i / 2] >> (32 * (i % 2))) & 0xFFFF_FFFF) as usize
            }),
        }
    }
    /// Byte stride of dimension `d`.
    pub fn stride(&self, d: usize) -> i64 {
        if d == 0 {
            self.eb as i64
        } else {
            self.strides[d - 1] as i64
        }
    }
}

pub(crate) extern "C" fn emu_mbar_init(ctx: *const u8, bar: *const u8, count: u32) {
    // SAFETY: called by emulated kernels with their context.
    let t = unsafe { thread(ctx) };
    let Some(at) = bar_offset(t, bar, "mbarrier.init") else {
        return;
    };
    let mut st = t.block.sync.lock();
    if st.bars.get(&at).is_some_and(|m| !m.copies.is_empty()) {
        t.record(&format!(
            "mbarrier.init at {at:#x} while TMA copies are in flight on it"
        ));
    }
    st.bars.insert(
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
        // A due phase has completed by now: this arrival belongs to the next one.
        tma.complete_if_due(t, m);
        if m.pending == 0 {
            t.record(&format!(
                "mbarrier at {at:#x}: more arrivals than its count"
            ));
            return;
        }
        m.pending -= 1;
        m.expected += bytes as u64;
        BlockSync::check_bytes(t, at, m);
        tma.cv.notify_all();
    });
}

pub(crate) extern "C" fn emu_mbar_wait(ctx: *const u8, bar: *const u8, parity: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let Some(at) = bar_offset(t, bar, "mbarrier.try_wait") else {
        return;
    };
    let tma = &t.block.sync;
    if !tma.lock().bars.contains_key(&at) {
        t.record(&format!(
            "mbarrier.try_wait on the uninitialised mbarrier at {at:#x}"
        ));
        return;
    }
    // Due phases were completed by `block_on` before it asks.
    tma.block_on(t, Wait::Phase { at, parity }, |st| {
        st.bars.get(&at).is_some_and(|m| m.phase % 2 != parity % 2)
    });
    t.skew();
}

/// Reads the tile-mode box at `coords` of the host map `m` as 16-byte chunks with their shared
/// offsets (from `dst`, swizzled), or records why the copy is invalid.
fn read_box(t: &Thread, m: &[u64; MAP_WORDS], coords: &[i32], dst: usize) -> Option<Vec<Landing>> {
    let h = HostMap::of(m);
    let rank = h.rank;
    if m[IM2COL_WORD] != 0 {
        t.record("a tile-mode TMA copy from an im2col tensor map");
        return None;
    }
    if coords.len() != rank || rank == 0 || rank > TENSOR_MAP_RANK {
        t.record(&format!(
            "TMA copy with {} coordinates for a rank-{rank} map",
            coords.len()
        ));
        return None;
    }
    let boxes = h.boxes;
    let elems: usize = boxes[..rank].iter().product();
    land(t, &h, boxes[0], elems, dst, |e| {
        let mut rest = e;
        let mut src = h.base as i64;
        for d in 0..rank {
            let c = coords[d] as i64 + (rest % boxes[d]) as i64;
            rest /= boxes[d];
            if c < 0 || c as u64 >= h.dims[d] {
                return None;
            }
            src += c * h.stride(d);
        }
        Some(src)
    })
}

/// Checks a copy of `elems` elements in lines of `inner` (box dimension 0) into shared memory
/// at `dst`, then reads element `e` from the address `src(e)` (zero for `None`: outside the
/// tensor) and returns the box as 16-byte chunks at their (swizzled) shared offsets, or records
/// why the copy is invalid.
pub(super) fn land(
    t: &Thread,
    h: &HostMap,
    inner: usize,
    elems: usize,
    dst: usize,
    src: impl Fn(usize) -> Option<i64>,
) -> Option<Vec<Landing>> {
    let eb = h.eb;
    let rank = h.rank;
    let inner_bytes = inner * eb;
    let total = elems * eb;
    if h.boxes[..rank.min(TENSOR_MAP_RANK)]
        .iter()
        .any(|&b| b == 0 || b > 256)
        || !inner_bytes.is_multiple_of(16)
    {
        t.record(&format!(
            "TMA box {:?} invalid (1..=256 elements, inner 16-byte multiple)",
            &h.boxes[..rank.min(TENSOR_MAP_RANK)]
        ));
        return None;
    }
    let span = h.swizzle;
    if span > 0 && (inner_bytes > span || !dst.is_multiple_of(8 * span)) {
        t.record(&format!(
            "TMA {span}-byte swizzle needs an inner box of at most {span} bytes ({inner_bytes}) \
             and a {}-byte aligned destination (offset {dst:#x})",
            8 * span
        ));
        return None;
    }
    if !t.block.in_smem(t.block.smem as usize + dst, total) {
        t.record(&format!(
            "TMA destination {dst:#x} + {total} bytes outside shared memory"
        ));
        return None;
    }
    let mut bytes = vec![0u8; total];
    for e in 0..elems {
        let Some(from) = src(e) else { continue };
        if !t.block.in_buffer(from as usize, eb) {
            t.record(&format!(
                "TMA read of {eb} bytes at {from:#x} outside every buffer"
            ));
            return None;
        }
        // SAFETY: the source was checked to lie in a buffer of the run.
        unsafe {
            std::ptr::copy_nonoverlapping(from as *const u8, bytes.as_mut_ptr().add(e * eb), eb);
        }
    }
    Some(
        bytes
            .chunks(16)
            .enumerate()
            .map(|(i, c)| {
                let off = dst + 16 * i;
                // Bits 4.. XOR bits 7..: as many as the span has 16-byte chunks' bits.
                let off = match span {
                    0 => off,
                    _ => off ^ ((off >> 3) & ((span / 16 - 1) << 4)),
                };
                let mut w = [0u8; 16];
                w.copy_from_slice(c);
                Landing {
                    off,
                    bytes: w,
                    len: 16,
                }
            })
            .collect(),
    )
}

/// Queues the chunks of one copy on `bar` (they land when its phase completes).
pub(super) fn queue(t: &Thread, bar: *const u8, chunks: Vec<Landing>) {
    with_bar(t, bar, "cp.async.bulk.tensor", |tma, at, mb| {
        // Bytes of a due phase would start the next one (before its expect_tx): complete it.
        tma.complete_if_due(t, mb);
        mb.landed += 16 * chunks.len() as u64;
        mb.copies.extend(chunks);
        BlockSync::check_bytes(t, at, mb);
        tma.cv.notify_all();
    });
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
    // SAFETY: as above; `map` is the host map the emulator passed.
    let t = unsafe { thread(ctx) };
    // SAFETY: as above.
    if let Some(chunks) = unsafe { tile_chunks(t, dst, map, n, [c0, c1, c2, c3, c4]) } {
        queue(t, bar, chunks);
    }
}

/// The chunks of the tile-mode copy of `emu_tma_load`'s arguments.
///
/// # Safety
/// `map` is a host map the emulator passed.
unsafe fn tile_chunks(
    t: &Thread,
    dst: *const u8,
    map: *const u64,
    n: u32,
    coords: [i32; 5],
) -> Option<Vec<Landing>> {
    // SAFETY: see the function contract.
    let m = unsafe { read_map(map) };
    let n = (n as usize).min(TENSOR_MAP_RANK);
    let d = (dst as usize).wrapping_sub(t.block.smem as usize);
    read_box(t, &m, &coords[..n], d)
}

/// `emu_tma_load` with `.multicast::cluster` to the cluster blocks in `mask`.
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn emu_tma_load_multicast(
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
    mask: u32,
) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    // SAFETY: as above.
    if let Some(chunks) = unsafe { tile_chunks(t, dst, map, n, [c0, c1, c2, c3, c4]) } {
        super::cluster::multicast(t, bar, chunks, mask);
    }
}

/// The runtime functions of this file, by the names the host spec declares.
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_mbar_init", emu_mbar_init as *const () as usize),
        ("emu_mbar_fence", emu_mbar_fence as *const () as usize),
        (
            "emu_mbar_arrive_tx",
            emu_mbar_arrive_tx as *const () as usize,
        ),
        ("emu_mbar_wait", emu_mbar_wait as *const () as usize),
        ("emu_tma_load", emu_tma_load as *const () as usize),
        (
            "emu_tma_load_multicast",
            emu_tma_load_multicast as *const () as usize,
        ),
        (
            "emu_tma_load_im2col_multicast",
            super::im2col::emu_tma_load_im2col_multicast as *const () as usize,
        ),
        (
            "emu_tma_load_im2col",
            super::im2col::emu_tma_load_im2col as *const () as usize,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::emu::runtime::{Block, Violations};
    use crate::problem::DType;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A 6-row tensor of 64 bf16 per row (row r, element e holds r·64 + e) and its map with a
    /// box of 64 × 4 and the 128-byte swizzle.
    fn tensor() -> (Vec<u16>, TensorMapSpec) {
        let data = (0..6 * 64).map(|i| i as u16).collect();
        let spec = TensorMapSpec {
            dtype: DType::BF16,
            rank: 2,
            dims: [64, 6, 1, 1, 1],
            strides: [128, 0, 0, 0],
            offset: 0,
            boxes: [64, 4, 1, 1, 1],
            swizzle: crate::abi::MapSwizzle::Swizzle128B,
            im2col: None,
        };
        (data, spec)
    }

    /// Runs `f` as thread 0 of a one-thread block with 2 KiB of shared memory (poisoned) and
    /// the tensor as buffer 0; returns the shared memory and the violations.
    fn with_thread(f: impl FnOnce(*const u8, usize, &[u64; MAP_WORDS])) -> (Vec<u8>, Violations) {
        let (mut data, spec) = tensor();
        let mut smem = vec![u128::MAX; 128];
        let violations = Mutex::new(Violations::default());
        let buffers = [
            (data.as_mut_ptr() as usize, data.len() * 2),
            (0, 0),
            (0, 0),
            (0, 0),
        ];
        let map = host_map(&spec, buffers[0].0);
        {
            let mut block = Block::new(1, 32, [0; 3], &mut smem, buffers, &violations);
            block.sync.wait_limit = Duration::from_millis(100);
            let t = Thread::new(0, &block);
            f(&t as *const Thread as *const u8, block.smem as usize, &map);
        }
        let bytes = smem.iter().flat_map(|w| w.to_le_bytes()).collect();
        (bytes, violations.into_inner().unwrap())
    }

    fn element(smem: &[u8], off: usize) -> u16 {
        u16::from_le_bytes([smem[off], smem[off + 1]])
    }

    #[test]
    fn a_copy_lands_swizzled_when_its_phase_is_waited_for() {
        let (smem, v) = with_thread(|ctx, base, map| {
            let bar = (base + 1024) as *const u8;
            emu_mbar_init(ctx, bar, 1);
            emu_mbar_arrive_tx(ctx, bar, 64 * 4 * 2);
            emu_tma_load(ctx, base as *const u8, map.as_ptr(), 2, 0, 3, 0, 0, 0, bar);
            // Not waited for yet: shared memory still holds the poison.
            // SAFETY: base is the block's shared memory, 2 KiB.
            assert_eq!(unsafe { *(base as *const u16) }, 0xFFFF);
            emu_mbar_wait(ctx, bar, 0);
            // The next phase (parity 1) has not completed: a deadlock, reported.
            emu_mbar_wait(ctx, bar, 1);
        });
        // Box rows 0..4 are tensor rows 3..7: rows 3, 4, 5 real, the last zero-filled.
        for r in 0..4usize {
            for e in [0usize, 9, 63] {
                let chunk = (e * 2 / 16) ^ (r % 8);
                let off = r * 128 + chunk * 16 + (e * 2) % 16;
                let want = if r + 3 < 6 {
                    ((r + 3) * 64 + e) as u16
                } else {
                    0
                };
                assert_eq!(element(&smem, off), want, "row {r} element {e}");
            }
        }
        assert_eq!(v.count, 1, "{:?}", v.messages);
        assert!(v.messages[0].contains("deadlock"), "{:?}", v.messages);
    }

    #[test]
    fn a_wrong_transaction_count_is_a_reported_deadlock() {
        let (_, v) = with_thread(|ctx, base, map| {
            let bar = (base + 1024) as *const u8;
            emu_mbar_init(ctx, bar, 1);
            // Twice the box's bytes announced: the phase never completes.
            emu_mbar_arrive_tx(ctx, bar, 2 * 64 * 4 * 2);
            emu_tma_load(ctx, base as *const u8, map.as_ptr(), 2, 0, 0, 0, 0, 0, bar);
            emu_mbar_wait(ctx, bar, 0);
        });
        assert!(
            v.messages.iter().any(|m| m.contains("deadlock")),
            "{:?}",
            v.messages
        );
    }

    #[test]
    fn bad_copies_are_refused() {
        let (_, v) = with_thread(|ctx, base, map| {
            let bar = (base + 1024) as *const u8;
            // Not initialised, then misaligned for the swizzle.
            emu_tma_load(ctx, base as *const u8, map.as_ptr(), 2, 0, 0, 0, 0, 0, bar);
            emu_mbar_init(ctx, bar, 1);
            emu_tma_load(
                ctx,
                (base + 128) as *const u8,
                map.as_ptr(),
                2,
                0,
                0,
                0,
                0,
                0,
                bar,
            );
            emu_tma_load(ctx, base as *const u8, map.as_ptr(), 3, 0, 0, 0, 0, 0, bar);
        });
        let all = v.messages.join("\n");
        assert!(all.contains("uninitialised"), "{all}");
        assert!(all.contains("1024-byte aligned"), "{all}");
        assert!(all.contains("3 coordinates"), "{all}");
    }
}
