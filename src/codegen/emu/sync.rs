//! The synchronisation state of one emulated block: its `mbarrier`s (phases, arrivals,
//! transaction bytes and the copies that land with a phase), its named barriers, and who is
//! blocked on what, with the deadlock test every wait goes through. The instructions that use
//! it are in `tma.rs` (`mbarrier.init`/`arrive.expect_tx`/`try_wait`, TMA copies) and
//! `pipeline.rs` (`mbarrier.arrive`, `cp.async.mbarrier.arrive`, `bar.sync`, `setmaxnreg`).
//!
//! An `mbarrier` is kept per shared-memory address: arrivals pending in the current phase
//! (reset to the init count when a phase completes), the transaction bytes expected
//! (`expect_tx`) and landed, and the number of completed phases. A phase completes when no
//! arrival is pending and the landed bytes equal the expected ones; `try_wait.parity p`
//! succeeds once the current phase's parity differs from `p` (the phase of parity `p` is done).
//! A phase whose arrivals and bytes are all in is only *due*, and completes (its copies land)
//! when a thread first waits on it or the next operation on the barrier needs it done.

use super::runtime::{Block, Thread};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long an `mbarrier` wait may block before it is reported as a deadlock.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(20);

/// A copy that counts on an `mbarrier`'s phase and is written to shared memory when the phase
/// completes: the bytes were read when the copy was issued.
#[derive(Debug, Clone)]
pub(super) struct Landing {
    /// Shared-memory offset.
    pub off: usize,
    /// The bytes (the first `len`).
    pub bytes: [u8; 16],
    /// How many.
    pub len: usize,
}

/// One `mbarrier`.
#[derive(Debug)]
pub(super) struct Mbar {
    pub count: u32,
    pub pending: u32,
    pub expected: u64,
    pub landed: u64,
    pub phase: u32,
    /// Copies written when the phase completes: TMA boxes (their bytes count as landed) and
    /// `cp.async`s whose thread arrived with `cp.async.mbarrier.arrive` (they do not).
    pub copies: Vec<Landing>,
}

impl Mbar {
    /// Whether the current phase has all its arrivals and bytes (it completes when observed).
    pub fn due(&self) -> bool {
        self.pending == 0 && self.landed == self.expected
    }
}

/// What a blocked thread of the block waits for (deadlock detection).
#[derive(Debug, Clone, Copy)]
pub(super) enum Wait {
    /// The phase of parity `parity` of the `mbarrier` at shared offset `at`.
    Phase { at: usize, parity: u32 },
    /// Named barrier `id` to pass generation `generation`.
    Named { id: u32, generation: u64 },
    /// The cluster barrier to reach generation `generation` ([`super::cluster`]).
    Cluster { generation: u32 },
}

/// One named barrier (`bar.sync id, count`).
#[derive(Debug, Default)]
pub(super) struct Named {
    /// The thread count of the threads now arrived (they must agree).
    pub count: u32,
    pub arrived: u32,
    pub generation: u64,
}

/// The synchronisation state of one block: its `mbarrier`s by shared-memory offset, its named
/// barriers, and who is blocked on what. Every wait is registered here, so when every thread
/// still running is blocked on something that cannot happen (a phase nobody will complete, a
/// named barrier some threads never reach) the block's waits end at once with one report
/// instead of a hang.
#[derive(Debug, Default)]
pub(super) struct SyncState {
    pub bars: HashMap<usize, Mbar>,
    pub named: HashMap<u32, Named>,
    pub waiting: HashMap<u32, Wait>,
    /// Threads of the block that have returned from the kernel.
    pub exited: u32,
    /// Set once a deadlock was reported: every wait of the block returns at once after it.
    pub deadlocked: bool,
    /// `setmaxnreg` values per (warpgroup, the thread's n-th call).
    pub regs: HashMap<(u32, u32), (bool, u32)>,
    /// The generations the block's cluster barrier completed (shared by the cluster's
    /// blocks; the block's own when it has no cluster).
    pub cluster_gen: Arc<AtomicU32>,
}

impl SyncState {
    /// Whether a thread blocked on `w` can go on.
    fn can_progress(&self, w: &Wait) -> bool {
        match *w {
            Wait::Phase { at, parity } => self
                .bars
                .get(&at)
                .is_none_or(|m| m.due() || m.phase % 2 != parity % 2),
            Wait::Named { id, generation } => self
                .named
                .get(&id)
                .is_none_or(|n| n.generation != generation),
            Wait::Cluster { generation } => self.cluster_gen.load(Ordering::Acquire) >= generation,
        }
    }

    /// Whether the block is stuck: every thread not exited is blocked here and none can go on.
    pub(super) fn stuck(&self, threads: u32) -> bool {
        self.waiting.len() as u32 + self.exited >= threads
            && !self.waiting.values().any(|w| self.can_progress(w))
    }
}

/// The `mbarrier`s of one block, by shared-memory offset.
pub(crate) struct BlockSync {
    pub(super) state: Mutex<SyncState>,
    pub(super) cv: Condvar,
    /// How long a wait may block before it is reported as a deadlock (when the block has
    /// threads blocked elsewhere, so the stuck test above cannot decide).
    pub wait_limit: Duration,
    /// The block's shared memory (where the copies of its `mbarrier`s' phases land, whoever
    /// completes the phase: a thread of a peer block in a cluster too).
    pub smem_base: usize,
}

impl BlockSync {
    /// The state of the block whose shared memory starts at `smem_base`.
    pub fn new(smem_base: usize) -> Self {
        BlockSync {
            state: Mutex::default(),
            cv: Condvar::new(),
            wait_limit: WAIT_LIMIT,
            smem_base,
        }
    }
}

impl BlockSync {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reports copies or arrivals still outstanding after every thread of the block ended.
    pub fn finish(&self, block: &Block) {
        let st = self.lock();
        for (at, m) in st.bars.iter() {
            if !m.copies.is_empty() || m.expected > 0 {
                block.record(format!(
                    "block {:?}: mbarrier at shared offset {at:#x} ended with a phase nobody \
                     waited for ({} of {} bytes landed, {} arrivals pending, {} copies)",
                    block.bid,
                    m.landed,
                    m.expected,
                    m.pending,
                    m.copies.len()
                ));
            }
        }
    }

    /// Counts thread `t` out of the block (it returned from the kernel); a waiter that only
    /// it could have released is now stuck.
    pub fn exit(&self) {
        self.lock().exited += 1;
        self.cv.notify_all();
    }

    /// Reports a phase whose arrivals are in with more bytes landed than announced.
    pub(super) fn check_bytes(t: &Thread, at: usize, m: &Mbar) {
        if m.pending == 0 && m.landed > m.expected {
            t.record(&format!(
                "mbarrier at {at:#x}: TMA landed {} bytes, expect_tx announced {}",
                m.landed, m.expected
            ));
        }
    }

    /// Completes the phase of `m` if it is due, writing its copies to shared memory.
    pub(super) fn complete_if_due(&self, _t: &Thread, m: &mut Mbar) {
        if !m.due() {
            return;
        }
        for c in m.copies.drain(..) {
            // SAFETY: every copy's range was checked to lie in shared memory at issue.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    c.bytes.as_ptr(),
                    (self.smem_base as *mut u8).add(c.off),
                    c.len,
                );
            }
        }
        m.phase += 1;
        m.pending = m.count;
        m.expected = 0;
        m.landed = 0;
        self.cv.notify_all();
    }

    /// Blocks thread `t` until `done` holds (completing due phases of the barrier `w` waits
    /// on as it goes), the block is stuck, or the wait limit passed; `false` when it gave up
    /// (reported once per block).
    pub(super) fn block_on(
        &self,
        t: &Thread,
        w: Wait,
        mut done: impl FnMut(&mut SyncState) -> bool,
    ) -> bool {
        let start = Instant::now();
        let mut st = self.lock();
        loop {
            if let Wait::Phase { at, .. } = w {
                if let Some(m) = st.bars.get_mut(&at) {
                    self.complete_if_due(t, m);
                }
            }
            if done(&mut st) {
                st.waiting.remove(&t.tid);
                return true;
            }
            if st.deadlocked {
                st.waiting.remove(&t.tid);
                return false;
            }
            st.waiting.insert(t.tid, w);
            // In a cluster, a peer block's threads may still release this one's.
            let stuck = st.stuck(t.block.threads) && t.peers_stuck();
            if stuck || start.elapsed() > self.wait_limit {
                let msg = format!(
                    "block {:?}: deadlock: thread {} waits for {w:?}{}; {} threads blocked ({}), \
                     {} exited",
                    t.block.bid,
                    t.tid,
                    describe(&st, &w),
                    st.waiting.len(),
                    summary(&st),
                    st.exited
                );
                st.deadlocked = true;
                st.waiting.remove(&t.tid);
                drop(st);
                t.block.record(msg);
                self.cv.notify_all();
                t.peers_deadlocked();
                return false;
            }
            st = self
                .cv
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// The state of what `w` waits on, in words.
fn describe(st: &SyncState, w: &Wait) -> String {
    match *w {
        Wait::Phase { at, .. } => match st.bars.get(&at) {
            Some(m) => format!(
                " (phase {}, {} of {} arrivals pending, {} of {} bytes landed)",
                m.phase, m.pending, m.count, m.landed, m.expected
            ),
            None => " (not initialised)".into(),
        },
        Wait::Named { id, .. } => match st.named.get(&id) {
            Some(n) => format!(" ({} of {} arrived)", n.arrived, n.count),
            None => String::new(),
        },
        Wait::Cluster { .. } => format!(
            " (cluster barrier at generation {})",
            st.cluster_gen.load(Ordering::Acquire)
        ),
    }
}

/// The distinct waits of the blocked threads with how many wait on each (first few).
fn summary(st: &SyncState) -> String {
    let mut by: Vec<(String, u32)> = Vec::new();
    for w in st.waiting.values() {
        let k = format!("{w:?}");
        match by.iter_mut().find(|(x, _)| *x == k) {
            Some((_, n)) => *n += 1,
            None => by.push((k, 1)),
        }
    }
    by.sort();
    by.iter()
        .take(4)
        .map(|(k, n)| format!("{n} on {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The shared offset of an `mbarrier` pointer, if valid (in shared memory, 8-byte aligned).
pub(super) fn bar_offset(t: &Thread, bar: *const u8, what: &str) -> Option<usize> {
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
pub(super) fn with_bar(
    t: &Thread,
    bar: *const u8,
    what: &str,
    f: impl FnOnce(&BlockSync, usize, &mut Mbar),
) {
    let Some(at) = bar_offset(t, bar, what) else {
        return;
    };
    with_bar_in(t, t.block, at, what, f)
}

/// [`with_bar`] on the `mbarrier` at shared offset `at` of `block` (a cluster peer's too).
pub(super) fn with_bar_in(
    t: &Thread,
    block: &Block,
    at: usize,
    what: &str,
    f: impl FnOnce(&BlockSync, usize, &mut Mbar),
) {
    let tma = &block.sync;
    let mut st = tma.lock();
    match st.bars.get_mut(&at) {
        Some(m) => f(tma, at, m),
        None => t.record(&format!("{what} on the uninitialised mbarrier at {at:#x}")),
    }
}
