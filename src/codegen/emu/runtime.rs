//! The emulator runtime: what the host kernels call instead of GPU instructions.
//!
//! A block runs as one OS thread per GPU thread. `__syncthreads` is a real barrier; warp-level
//! instructions (`ldmatrix`, `mma.sync`, MFMA) meet at a per-warp barrier, exchange operands and
//! compute each lane's result from the documented fragment layouts (the same tables as in
//! `math.rs`, implemented independently here from the ISA documents). `cp.async` copies are
//! queued and performed at the latest moment the ISA allows (the `wait_group` that covers them),
//! so a kernel that reads shared memory too early sees stale data. Every memory access is
//! checked against the buffers and shared memory, with its alignment; a bad one is recorded and
//! redirected to scratch memory so the run finishes and reports it.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How long a barrier waits before declaring a deadlock (threads that never arrive).
const DEADLOCK: Duration = Duration::from_secs(60);

/// Keeps at most this many violation messages per run (the count is kept in full).
const MAX_MESSAGES: usize = 20;

/// A reusable barrier that aborts the process on deadlock instead of hanging the test run: a
/// kernel whose threads disagree on barrier counts would hang a GPU too.
pub(crate) struct Barrier {
    n: usize,
    state: Mutex<(usize, u64)>,
    cv: Condvar,
}

impl Barrier {
    pub fn new(n: usize) -> Self {
        Barrier {
            n,
            state: Mutex::new((0, 0)),
            cv: Condvar::new(),
        }
    }
    pub fn wait(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let generation = g.1;
        g.0 += 1;
        if g.0 == self.n {
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            return;
        }
        loop {
            let (ng, to) = self
                .cv
                .wait_timeout(g, DEADLOCK)
                .unwrap_or_else(|e| e.into_inner());
            g = ng;
            if g.1 != generation {
                return;
            }
            if to.timed_out() {
                eprintln!(
                    "emulated kernel deadlocked at a barrier ({} of {} threads arrived)",
                    g.0, self.n
                );
                std::process::abort();
            }
        }
    }
}

/// Operand exchange of one warp.
pub(crate) struct Warp {
    barrier: Barrier,
    slots: Mutex<Vec<[u64; 24]>>,
}

/// Violations of one emulation run.
#[derive(Default)]
pub(crate) struct Violations {
    pub count: usize,
    pub messages: Vec<String>,
}

/// What all threads of one block share.
pub(crate) struct Block<'r> {
    pub threads: u32,
    pub warp: u32,
    pub bid: [u32; 3],
    pub smem: *mut u8,
    pub smem_len: usize,
    /// Kernel arguments: (address, length in bytes); length 0 for null.
    pub buffers: [(usize, usize); 4],
    pub barrier: Barrier,
    pub warps: Vec<Warp>,
    pub violations: &'r Mutex<Violations>,
    /// The block's `mbarrier`s and the TMA copies in flight on them.
    pub sync: super::sync::BlockSync,
    /// The TMA stores in flight and the shared writes not yet fenced for them.
    pub stores: super::tma_store::StoreState,
}

// SAFETY: the raw pointers are the block's shared memory and the run's buffers, which outlive
// the block's threads; concurrent access through them is what the emulated kernel does, and
// what a GPU allows (data races there are kernel bugs the comparison exposes).
unsafe impl Sync for Block<'_> {}

impl<'r> Block<'r> {
    pub fn new(
        threads: u32,
        warp: u32,
        bid: [u32; 3],
        smem: &mut [u128],
        buffers: [(usize, usize); 4],
        violations: &'r Mutex<Violations>,
    ) -> Self {
        let warps = threads.div_ceil(warp);
        let smem_base = smem.as_mut_ptr() as usize;
        Block {
            threads,
            warp,
            bid,
            smem: smem.as_mut_ptr() as *mut u8,
            smem_len: smem.len() * 16,
            buffers,
            barrier: Barrier::new(threads as usize),
            warps: (0..warps)
                .map(|_| Warp {
                    barrier: Barrier::new(warp.min(threads) as usize),
                    slots: Mutex::new(vec![[0; 24]; warp as usize]),
                })
                .collect(),
            violations,
            sync: super::sync::BlockSync::new(smem_base),
            stores: super::tma_store::StoreState::new(threads),
        }
    }

    pub(super) fn record(&self, msg: String) {
        let mut v = self.violations.lock().unwrap_or_else(|e| e.into_inner());
        v.count += 1;
        if v.messages.len() < MAX_MESSAGES {
            v.messages.push(msg);
        }
    }

    pub(super) fn in_smem(&self, p: usize, bytes: usize) -> bool {
        let s = self.smem as usize;
        p >= s && p + bytes <= s + self.smem_len
    }

    pub(super) fn in_buffer(&self, p: usize, bytes: usize) -> bool {
        self.buffers
            .iter()
            .any(|&(b, len)| len > 0 && p >= b && p + bytes <= b + len)
    }
}

/// One queued `cp.async`.
pub(super) struct Copy {
    pub dst: usize,
    pub src: usize,
    pub bytes: usize,
    pub src_bytes: usize,
}

/// One thread's `wgmma` protocol state (checked in `wgmma.rs`, and at exit here).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WgState {
    /// A `wgmma.fence` since the last `wait_group`.
    pub fenced: bool,
    /// `mma_async` issued since the last commit.
    pub uncommitted: u32,
    /// Committed groups not yet waited for.
    pub groups: u32,
}

/// One emulated GPU thread.
pub(crate) struct Thread<'b, 'r> {
    pub tid: u32,
    pub block: &'b Block<'r>,
    /// The block's cluster and its rank there (`None`, 0: a block of its own).
    pub cluster: Option<(&'b super::cluster::Cluster<'r>, u32)>,
    /// Cluster barriers this thread passed (what [`super::cluster`] orders remote accesses
    /// and exits by).
    pub cluster_gen: std::cell::Cell<u32>,
    scratch: RefCell<[u128; 4]>,
    groups: RefCell<Vec<Vec<Copy>>>,
    open: RefCell<Vec<Copy>>,
    /// `wgmma` protocol state (see `wgmma.rs`).
    pub(super) wg: RefCell<WgState>,
    /// Bulk (TMA store) groups (see `tma_store.rs`).
    pub(super) bulk: RefCell<super::tma_store::BulkGroups>,
    reallocs: RefCell<u32>,
}

impl<'b, 'r> Thread<'b, 'r> {
    pub fn new(tid: u32, block: &'b Block<'r>) -> Self {
        Thread {
            tid,
            block,
            cluster: None,
            cluster_gen: std::cell::Cell::new(0),
            scratch: RefCell::new([0; 4]),
            groups: RefCell::new(Vec::new()),
            open: RefCell::new(Vec::new()),
            wg: RefCell::new(Default::default()),
            bulk: RefCell::new(Default::default()),
            reallocs: RefCell::new(0),
        }
    }

    /// Every `cp.async` this thread issued and nobody waited for yet, oldest first (what a
    /// `cp.async.mbarrier.arrive` tracks), taken out of its groups.
    pub(super) fn take_copies(&self) -> Vec<Copy> {
        let mut all: Vec<Copy> = self.groups.borrow_mut().drain(..).flatten().collect();
        all.append(&mut self.open.borrow_mut());
        all
    }

    /// The number of `setmaxnreg` calls of this thread before this one (and counts this one).
    pub(super) fn next_realloc(&self) -> u32 {
        let mut n = self.reallocs.borrow_mut();
        *n += 1;
        *n - 1
    }

    pub(super) fn record(&self, what: &str) {
        let b = self.block;
        b.record(format!("block {:?} thread {}: {what}", b.bid, self.tid));
    }

    /// Checks the thread ended with no copies in flight, and counts it out of the block's
    /// waits.
    pub fn finish(&self) {
        if let Some((c, _)) = self.cluster {
            c.exit(self);
        }
        super::tma_store::finish(self);
        self.block.sync.exit();
        if !self.groups.borrow().is_empty() || !self.open.borrow().is_empty() {
            self.record("cp.async copies still pending at kernel exit");
        }
        let wg = *self.wg.borrow();
        if wg.uncommitted > 0 || wg.groups > 0 {
            self.record("wgmma operations not committed or not waited for at kernel exit");
        }
    }

    fn warp(&self) -> (&Warp, usize) {
        let w = self.block.warp;
        (
            &self.block.warps[(self.tid / w) as usize],
            (self.tid % w) as usize,
        )
    }

    /// Waits until every lane of this thread's warp got here (a `.sync.aligned` instruction).
    pub(super) fn warp_sync(&self) {
        self.warp().0.barrier.wait();
    }

    /// Deposits this lane's words, waits for the warp, runs `f` on all lanes' words, waits again
    /// (so no lane overwrites its slot while another still reads it).
    fn exchange<T>(&self, words: &[u64], f: impl FnOnce(&[[u64; 24]], usize) -> T) -> T {
        let (warp, lane) = self.warp();
        {
            let mut s = warp.slots.lock().unwrap_or_else(|e| e.into_inner());
            s[lane][..words.len()].copy_from_slice(words);
        }
        warp.barrier.wait();
        let r = {
            let s = warp.slots.lock().unwrap_or_else(|e| e.into_inner());
            f(&s, lane)
        };
        warp.barrier.wait();
        r
    }
}

/// Recovers the thread from the context argument.
///
/// # Safety
/// `ctx` is the `&Thread` the emulator passed to the kernel, alive for the call.
pub(super) unsafe fn thread<'a>(ctx: *const u8) -> &'a Thread<'a, 'a> {
    // SAFETY: see the function contract.
    unsafe { &*(ctx as *const Thread) }
}

pub(super) fn half_to_f32(bits: u16, code: u32) -> f32 {
    if code == 1 {
        half::bf16::from_bits(bits).to_f32()
    } else {
        half::f16::from_bits(bits).to_f32()
    }
}

pub(crate) extern "C" fn emu_tid(ctx: *const u8) -> u32 {
    // SAFETY: called by emulated kernels with their context.
    unsafe { thread(ctx) }.tid
}

pub(crate) extern "C" fn emu_bid(ctx: *const u8, dim: u32) -> u32 {
    // SAFETY: as above.
    unsafe { thread(ctx) }.block.bid[dim as usize % 3]
}

pub(crate) extern "C" fn emu_smem(ctx: *const u8) -> *mut u8 {
    // SAFETY: as above.
    unsafe { thread(ctx) }.block.smem
}

pub(crate) extern "C" fn emu_barrier(ctx: *const u8) {
    // SAFETY: as above.
    unsafe { thread(ctx) }.block.barrier.wait();
}

pub(crate) extern "C" fn emu_guard(
    ctx: *const u8,
    ptr: *mut u8,
    bytes: u32,
    align: u32,
    flags: u32,
) -> *mut u8 {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let (shared, store) = (flags & 1 != 0, flags & 2 != 0);
    let p = ptr as usize;
    let inside = if shared {
        t.block.in_smem(p, bytes as usize)
    } else {
        t.block.in_buffer(p, bytes as usize)
    };
    let aligned = align <= 1 || p.is_multiple_of(align as usize);
    if inside && aligned {
        if shared && store {
            super::tma_store::shared_store(t, p - t.block.smem as usize, bytes as usize);
        }
        return ptr;
    }
    let what = if store { "store" } else { "load" };
    let space = if shared { "shared" } else { "global" };
    let why = if inside {
        format!("misaligned (align {align})")
    } else {
        "out of bounds".to_string()
    };
    t.record(&format!("{space} {what} of {bytes} bytes at {p:#x}: {why}"));
    t.scratch.as_ptr() as *mut u8
}

pub(crate) extern "C" fn emu_half_to_f32(bits: u32, code: u32) -> f32 {
    half_to_f32(bits as u16, code)
}

pub(crate) extern "C" fn emu_f32_to_half(v: f32, code: u32) -> u32 {
    if code == 1 {
        half::bf16::from_f32(v).to_bits() as u32
    } else {
        half::f16::from_f32(v).to_bits() as u32
    }
}

/// `ldmatrix.sync.aligned.m8n8.x4[.trans].b16`: lanes 8q..8q+7 address the 8 rows (16 bytes
/// each) of matrix q. Lane l gets in register q: without `.trans`, row l/4, 16-bit elements
/// 2·(l%4) and 2·(l%4)+1; with `.trans`, element l/4 of rows 2·(l%4) and 2·(l%4)+1.
pub(crate) extern "C" fn emu_ldmatrix_x4(
    ctx: *const u8,
    ptr: *const u8,
    trans: u32,
    out: *mut u32,
) {
    // SAFETY: as above; `out` points to 4 u32 of the caller.
    let t = unsafe { thread(ctx) };
    let regs = t.exchange(&[ptr as u64], |s, lane| {
        let mut regs = [0u32; 4];
        for (q, r) in regs.iter_mut().enumerate() {
            let rows: Vec<usize> = (0..8).map(|i| s[8 * q + i][0] as usize).collect();
            if let Some(bad) = rows.iter().find(|&&a| !t.block.in_smem(a, 16) || a % 16 != 0) {
                t.record(&format!(
                    "ldmatrix row address {bad:#x} (matrix {q}) outside shared memory or not 16-byte aligned"
                ));
                continue;
            }
            // SAFETY (both reads): every row address was checked to lie in shared memory
            // with its 16 bytes, and the offsets stay below 16.
            let half = |row: usize, elem: usize| unsafe { std::ptr::read_unaligned((rows[row] + 2 * elem) as *const u16) } as u32;
            let (lo, hi) = if trans == 0 {
                (half(lane / 4, 2 * (lane % 4)), half(lane / 4, 2 * (lane % 4) + 1))
            } else {
                (half(2 * (lane % 4), lane / 4), half(2 * (lane % 4) + 1, lane / 4))
            };
            *r = lo | (hi << 16);
        }
        regs
    });
    // SAFETY: `out` has 4 elements (emitted by the host spec).
    unsafe { std::ptr::copy_nonoverlapping(regs.as_ptr(), out, 4) };
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32` (PTX ISA fragment tables):
/// A: a_r holds row g + 8·(r%2), columns 2t + 8·(r/2) (+0 low half, +1 high half);
/// B: b_r holds column g, rows 2t + 8·r (+0, +1); C/D: c_r at row g + 8·(r/2), column 2t + r%2;
/// with g = lane/4, t = lane%4.
pub(crate) extern "C" fn emu_mma16816(
    ctx: *const u8,
    code: u32,
    a: *const u32,
    b: *const u32,
    c: *mut f32,
) {
    // SAFETY: as above; a has 4, b 2, c 4 elements.
    let t = unsafe { thread(ctx) };
    let (a, b, cin) = unsafe {
        (
            std::slice::from_raw_parts(a, 4),
            std::slice::from_raw_parts(b, 2),
            std::slice::from_raw_parts(c, 4),
        )
    };
    let words: Vec<u64> = a.iter().chain(b).map(|&x| x as u64).collect();
    let d = t.exchange(&words, |s, lane| {
        let mut am = [[0f32; 16]; 16];
        let mut bm = [[0f32; 8]; 16];
        for (l, w) in s.iter().enumerate().take(32) {
            let (g, tq) = (l / 4, l % 4);
            for r in 0..4 {
                for h in 0..2 {
                    let v = half_to_f32((w[r] >> (16 * h)) as u16, code);
                    am[g + 8 * (r % 2)][2 * tq + 8 * (r / 2) + h] = v;
                }
            }
            for r in 0..2 {
                for h in 0..2 {
                    bm[2 * tq + 8 * r + h][g] = half_to_f32((w[4 + r] >> (16 * h)) as u16, code);
                }
            }
        }
        let (g, tq) = (lane / 4, lane % 4);
        std::array::from_fn::<f32, 4, _>(|r| {
            let (row, col) = (g + 8 * (r / 2), 2 * tq + r % 2);
            (0..16).fold(cin[r], |acc, k| acc + am[row][k] * bm[k][col])
        })
    });
    // SAFETY: c has 4 elements.
    unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), c, 4) };
}

/// `v_mfma_f32_{m}x{m}x{k}{f32,f16,bf16}` (wave64, one block), from the AMD matrix
/// instruction tables: with g = 64/m lane groups and kpl = k/g, lane l holds
/// A[l%m][kpl·(l/m) + i] and B[kpl·(l/m) + i][l%m] for i < kpl; D element r (of m·m/64) of
/// lane l is at row 4g·(r/4) + 4·(l/m) + r%4, column l%m. `code`: 0 f16, 1 bf16, 2 f32.
pub(crate) extern "C" fn emu_mfma(
    ctx: *const u8,
    code: u32,
    m: u32,
    k: u32,
    a: *const u8,
    b: *const u8,
    c: *mut f32,
) {
    // SAFETY: as above; a and b hold kpl elements of the type, c holds m·m/64 floats.
    let t = unsafe { thread(ctx) };
    let (m, k) = (m as usize, k as usize);
    let groups = 64 / m;
    let kpl = k / groups;
    let per = m * m / 64;
    let elem = |p: *const u8, i: usize| -> u64 {
        // SAFETY: i < kpl, within the caller's operand.
        unsafe {
            if code == 2 {
                std::ptr::read_unaligned((p as *const u32).add(i)) as u64
            } else {
                std::ptr::read_unaligned((p as *const u16).add(i)) as u64
            }
        }
    };
    let value = |w: u64| -> f32 {
        if code == 2 {
            f32::from_bits(w as u32)
        } else {
            half_to_f32(w as u16, code)
        }
    };
    // SAFETY: c has `per` elements.
    let cin = unsafe { std::slice::from_raw_parts(c, per) }.to_vec();
    let words: Vec<u64> = (0..kpl)
        .map(|i| elem(a, i))
        .chain((0..kpl).map(|i| elem(b, i)))
        .collect();
    let d = t.exchange(&words, |s, lane| {
        let mut am = vec![vec![0f32; k]; m];
        let mut bm = vec![vec![0f32; m]; k];
        for (l, w) in s.iter().enumerate().take(64) {
            for i in 0..kpl {
                am[l % m][kpl * (l / m) + i] = value(w[i]);
                bm[kpl * (l / m) + i][l % m] = value(w[kpl + i]);
            }
        }
        (0..per)
            .map(|r| {
                let (row, col) = (4 * groups * (r / 4) + 4 * (lane / m) + r % 4, lane % m);
                (0..k).fold(cin[r], |acc, kk| acc + am[row][kk] * bm[kk][col])
            })
            .collect::<Vec<f32>>()
    });
    // SAFETY: c has `per` elements.
    unsafe { std::ptr::copy_nonoverlapping(d.as_ptr(), c, per) };
}

pub(crate) extern "C" fn emu_cp_async(
    ctx: *const u8,
    dst: *mut u8,
    src: *const u8,
    bytes: u32,
    src_bytes: u32,
) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let (d, s, n) = (dst as usize, src as usize, bytes as usize);
    if !matches!(bytes, 4 | 8 | 16) || src_bytes > bytes {
        t.record(&format!("cp.async of {bytes} bytes reading {src_bytes}"));
        return;
    }
    if !t.block.in_smem(d, n) || d % n != 0 {
        t.record(&format!(
            "cp.async destination {d:#x} outside shared memory or misaligned"
        ));
        return;
    }
    if src_bytes > 0 && (!t.block.in_buffer(s, src_bytes as usize) || s % n != 0) {
        t.record(&format!(
            "cp.async source {s:#x} out of bounds or misaligned"
        ));
        return;
    }
    t.open.borrow_mut().push(Copy {
        dst: d,
        src: s,
        bytes: n,
        src_bytes: src_bytes as usize,
    });
}

pub(crate) extern "C" fn emu_cp_commit(ctx: *const u8) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let group = std::mem::take(&mut *t.open.borrow_mut());
    t.groups.borrow_mut().push(group);
}

pub(crate) extern "C" fn emu_cp_wait(ctx: *const u8, n: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let mut groups = t.groups.borrow_mut();
    while groups.len() > n as usize {
        for c in groups.remove(0) {
            // SAFETY: both ranges were checked when the copy was queued.
            unsafe {
                std::ptr::copy_nonoverlapping(c.src as *const u8, c.dst as *mut u8, c.src_bytes);
                std::ptr::write_bytes((c.dst + c.src_bytes) as *mut u8, 0, c.bytes - c.src_bytes);
            }
        }
    }
}

/// The runtime functions of this file, by the names the host spec declares (`wgmma.rs` has
/// its own).
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_tid", emu_tid as *const () as usize),
        ("emu_bid", emu_bid as *const () as usize),
        ("emu_smem", emu_smem as *const () as usize),
        ("emu_barrier", emu_barrier as *const () as usize),
        ("emu_guard", emu_guard as *const () as usize),
        ("emu_half_to_f32", emu_half_to_f32 as *const () as usize),
        ("emu_f32_to_half", emu_f32_to_half as *const () as usize),
        ("emu_ldmatrix_x4", emu_ldmatrix_x4 as *const () as usize),
        ("emu_mma16816", emu_mma16816 as *const () as usize),
        ("emu_mfma", emu_mfma as *const () as usize),
        ("emu_cp_async", emu_cp_async as *const () as usize),
        ("emu_cp_commit", emu_cp_commit as *const () as usize),
        ("emu_cp_wait", emu_cp_wait as *const () as usize),
    ]
}
