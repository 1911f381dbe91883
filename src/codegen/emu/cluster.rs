//! Thread-block clusters in the emulator, written from the PTX ISA ("Cluster of Cooperative
//! Thread Arrays", `barrier.cluster`, `mapa`, `mbarrier.arrive` on `shared::cluster`,
//! `cp.async.bulk.tensor` with `.multicast::cluster`) independently of the kernel side
//! (`codegen/ws.rs`).
//!
//! The blocks of a cluster run at once (one OS thread per GPU thread, as a block does), each
//! with its own shared memory and `mbarrier`s; a thread reaches a peer's through the
//! instructions above. What the emulator checks, beyond the data:
//! - the cluster barrier counts every thread of every block that has not exited;
//! - a remote access (an arrival on a block's `mbarrier` through the cluster window, a
//!   multicast copy) must follow a cluster barrier (the target's `mbarrier`s may not be
//!   initialised before), and a block may exit (its last thread return: its shared memory is
//!   freed) only after a cluster barrier that follows every access to it. Both are checked by
//!   the generations of cluster barriers each side passed, so a missing barrier is reported
//!   on every run, whatever the timing;
//! - a multicast copy lands in the *issuing* block's shared memory when its phase completes
//!   (the latest the ISA allows, as every copy here), and in a *peer's* at once (the earliest:
//!   a producer that refills a stage the peer's consumers still read corrupts their data);
//! - blocks of rank ≥ 1 run their `mbarrier` waits late (a busy SM), so a producer that does
//!   not wait for the peer's consumers runs ahead of them.
//!
//! A block is stuck only when every block of its cluster is (a peer's threads may still
//! release it).

use super::runtime::{thread, Block, Thread};
use super::sync::{with_bar_in, BlockSync, Landing, Wait};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How late the waits of a block of rank ≥ 1 return (see the module doc).
const SKEW: Duration = Duration::from_micros(300);

/// The blocks of one cluster and its barrier.
pub(crate) struct Cluster<'r> {
    /// The blocks, by rank.
    pub blocks: Vec<Block<'r>>,
    /// Completed cluster-barrier generations (shared with each block's wait state).
    generation: Arc<AtomicU32>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Threads arrived at the current cluster barrier.
    arrived: u32,
    /// Threads that returned from the kernel.
    exited: u32,
    /// Per block: one more than the largest cluster-barrier generation an access to it was
    /// made in (0: none).
    access_gen: Vec<u32>,
    /// Per block: its threads that returned, and the fewest cluster barriers one of them
    /// passed.
    exits: Vec<(u32, Option<u32>)>,
}

impl<'r> Cluster<'r> {
    /// The cluster of `blocks` (by rank).
    pub fn new(blocks: Vec<Block<'r>>) -> Self {
        let generation = Arc::new(AtomicU32::new(0));
        for b in &blocks {
            b.sync.lock().cluster_gen = generation.clone();
        }
        let state = State {
            access_gen: vec![0; blocks.len()],
            exits: vec![(0, None); blocks.len()],
            ..State::default()
        };
        Cluster {
            blocks,
            generation,
            state: Mutex::new(state),
        }
    }

    fn threads(&self) -> u32 {
        self.blocks.iter().map(|b| b.threads).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Completes the barrier's generation when every thread not exited arrived.
    fn complete_if_all(&self, st: &mut State) {
        if st.arrived > 0 && st.arrived + st.exited >= self.threads() {
            st.arrived = 0;
            self.generation.fetch_add(1, Ordering::AcqRel);
            for b in &self.blocks {
                b.sync.cv.notify_all();
            }
        }
    }

    /// `barrier.cluster.arrive` + `wait` by `t`.
    fn sync(&self, t: &Thread) {
        let target = {
            let mut st = self.lock();
            st.arrived += 1;
            let target = self.generation.load(Ordering::Acquire) + 1;
            self.complete_if_all(&mut st);
            target
        };
        let gen = &self.generation;
        t.block
            .sync
            .block_on(t, Wait::Cluster { generation: target }, |_| {
                gen.load(Ordering::Acquire) >= target
            });
        t.cluster_gen.set(target);
    }

    /// The generation block `b` exited in (the fewest cluster barriers one of its threads
    /// passed), once all its threads returned.
    fn exited_in(&self, st: &State, b: usize) -> Option<u32> {
        let (n, gen) = st.exits[b];
        (n == self.blocks[b].threads).then_some(gen).flatten()
    }

    /// Counts `t` out (it returned from the kernel); when its block's last thread returns,
    /// checks that every access to the block was followed by a cluster barrier all of its
    /// threads passed.
    pub fn exit(&self, t: &Thread) {
        let b = self.rank_of(t);
        let mut st = self.lock();
        let g = t.cluster_gen.get();
        st.exited += 1;
        let (n, gen) = st.exits[b];
        st.exits[b] = (n + 1, Some(gen.map_or(g, |e| e.min(g))));
        if let Some(e) = self.exited_in(&st, b) {
            if st.access_gen[b] > e {
                t.record(&format!(
                    "block exits after {e} cluster barriers while its shared memory was accessed \
                     from the cluster after as many: a cluster barrier must follow the last \
                     access before the block exits"
                ));
            }
        }
        self.complete_if_all(&mut st);
    }

    fn rank_of(&self, t: &Thread) -> usize {
        t.cluster.map_or(0, |(_, r)| r as usize)
    }

    /// Checks the ordering of an access by `t` to block `b` (see the module doc).
    fn access(&self, t: &Thread, b: usize, what: &str) {
        let g = t.cluster_gen.get();
        let mut st = self.lock();
        if g == 0 {
            t.record(&format!(
                "{what} before any cluster barrier: the target's mbarriers may not be initialised"
            ));
        }
        st.access_gen[b] = st.access_gen[b].max(g + 1);
        if self.exited_in(&st, b).is_some_and(|e| e <= g) {
            t.record(&format!(
                "{what} to block rank {b} after {g} cluster barriers, when it already exited \
                 after as many"
            ));
        }
    }

    /// Whether every block but `me` is stuck (a busy block counts as not stuck).
    pub fn others_stuck(&self, me: &Block) -> bool {
        self.blocks
            .iter()
            .filter(|b| !std::ptr::eq(*b, me))
            .all(|b| match b.sync.state.try_lock() {
                Ok(st) => st.stuck(b.threads),
                Err(_) => false,
            })
    }

    /// Ends the waits of every block but `me` (a deadlock was reported in `me`).
    pub fn deadlock_others(&self, me: &Block) {
        for b in self.blocks.iter().filter(|b| !std::ptr::eq(*b, me)) {
            b.sync.lock().deadlocked = true;
            b.sync.cv.notify_all();
        }
    }
}

impl Thread<'_, '_> {
    /// Whether the blocks of this thread's cluster other than its own are all stuck (true
    /// without a cluster).
    pub(super) fn peers_stuck(&self) -> bool {
        self.cluster.is_none_or(|(c, _)| c.others_stuck(self.block))
    }

    /// Ends the peers' waits after a deadlock in this block.
    pub(super) fn peers_deadlocked(&self) {
        if let Some((c, _)) = self.cluster {
            c.deadlock_others(self.block);
        }
    }

    /// Delays a wait of a block of rank ≥ 1 (see the module doc).
    pub(super) fn skew(&self) {
        if self.cluster.is_some_and(|(_, r)| r > 0) {
            std::thread::sleep(SKEW);
        }
    }

    /// The cluster's block `rank` and the shared offset of `p` (an address in this block's
    /// shared memory), or why not (recorded).
    fn peer(&self, p: *const u8, rank: u32, what: &str) -> Option<(&Block<'_>, usize)> {
        let Some((c, _)) = self.cluster else {
            self.record(&format!("{what} in a block that is not in a cluster"));
            return None;
        };
        let Some(b) = c.blocks.get(rank as usize) else {
            self.record(&format!(
                "{what} to cluster rank {rank} of {}",
                c.blocks.len()
            ));
            return None;
        };
        let p = p as usize;
        if !self.block.in_smem(p, 8) {
            self.record(&format!("{what}: {p:#x} is not in shared memory"));
            return None;
        }
        c.access(self, rank as usize, what);
        Some((b, p - self.block.smem as usize))
    }
}

pub(crate) extern "C" fn emu_cluster_rank(ctx: *const u8) -> u32 {
    // SAFETY: called by emulated kernels with their context.
    let t = unsafe { thread(ctx) };
    t.cluster.map_or(0, |(_, r)| r)
}

pub(crate) extern "C" fn emu_cluster_sync(ctx: *const u8) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    match t.cluster {
        Some((c, _)) => c.sync(t),
        // A block of its own is a cluster of one.
        None => t.block.barrier.wait(),
    }
}

pub(crate) extern "C" fn emu_mbar_arrive_cluster(ctx: *const u8, bar: *const u8, rank: u32) {
    // SAFETY: as above.
    let t = unsafe { thread(ctx) };
    let what = "mbarrier.arrive.shared::cluster";
    let Some((b, at)) = t.peer(bar, rank, what) else {
        return;
    };
    with_bar_in(t, b, at, what, |sync, at, m| {
        sync.complete_if_due(t, m);
        if m.pending == 0 {
            t.record(&format!("{what} at {at:#x}: more arrivals than its count"));
            return;
        }
        m.pending -= 1;
        sync.cv.notify_all();
    });
}

/// Delivers the chunks of one multicast copy (offsets in every block's shared memory) to the
/// cluster blocks in `mask`, completing bytes on the `mbarrier` at `bar`'s offset in each:
/// queued in the issuing block, written at once in a peer (see the module doc).
pub(super) fn multicast(t: &Thread, bar: *const u8, chunks: Vec<Landing>, mask: u32) {
    let what = "cp.async.bulk.tensor.multicast::cluster";
    let own = t.cluster.map_or(0, |(_, r)| r);
    let bytes = 16 * chunks.len() as u64;
    for rank in (0..16).filter(|r| mask & (1 << r) != 0) {
        let Some((b, at)) = t.peer(bar, rank, what) else {
            return;
        };
        if rank == own {
            super::tma::queue(t, bar, chunks.clone());
            continue;
        }
        if let Some(c) = chunks.iter().find(|c| c.off + c.len > b.smem_len) {
            t.record(&format!(
                "{what}: offset {:#x} outside the peer's shared memory",
                c.off
            ));
            return;
        }
        with_bar_in(t, b, at, what, |sync, at, m| {
            sync.complete_if_due(t, m);
            for c in &chunks {
                // SAFETY: the chunk lies in the peer's shared memory (checked above).
                unsafe {
                    std::ptr::copy_nonoverlapping(c.bytes.as_ptr(), b.smem.add(c.off), c.len);
                }
            }
            m.landed += bytes;
            BlockSync::check_bytes(t, at, m);
            sync.cv.notify_all();
        });
    }
}

/// The runtime functions of this file, by the names the host spec declares.
pub(crate) fn symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("emu_cluster_rank", emu_cluster_rank as *const () as usize),
        ("emu_cluster_sync", emu_cluster_sync as *const () as usize),
        (
            "emu_mbar_arrive_cluster",
            emu_mbar_arrive_cluster as *const () as usize,
        ),
    ]
}
