//! Ranking a big space whole on a thread of its own, while its first batches compile.
//!
//! A space of millions of configs takes seconds of CPU to rank (the cost model over every
//! config, the lattice, its index: ~3 s for 3–4 M bwd-weight configs). Done inside
//! `next_batch`, that stalled the tuner's loop: the first batch's measurements waited for it
//! (issue 16: fixed cost ≤ 2 s a problem). So the first call of a big space starts the
//! ranking here and returns picks from a sample; the second call returns more picks from the
//! same sample; the third, which the tuner makes once the first batch is measured, waits for
//! this ranking (by then usually done). Which call waits never depends on timing, so a seeded
//! search stays reproducible.

use super::State;
use crate::config::PerfConfig;
use crate::lowering::Lowering;
use crate::search::cost::{CostArch, CostModel};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A whole-space ranking in progress. Dropping it cancels the ranking at its next stage (a
/// search that ends early, e.g. `--budget 32`, does not leave seconds of ranking behind it
/// competing with the next problem for the cores).
#[derive(Debug)]
pub(super) struct Background {
    handle: Option<JoinHandle<Option<State>>>,
    cancel: Arc<AtomicBool>,
}

impl Background {
    /// Starts ranking `candidates` (copied: the thread outlives the caller's borrow) for
    /// `lowering` with the machine numbers `machine`; `None` when no thread could be started
    /// (the caller ranks in place).
    pub(super) fn start(
        seed: u64,
        machine: CostArch,
        lowering: &Lowering,
        candidates: &[PerfConfig],
    ) -> Option<Background> {
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&cancel);
        let lowering = lowering.clone();
        let candidates = candidates.to_vec();
        let handle = std::thread::Builder::new()
            .name("convtune-rank".into())
            .spawn(move || {
                let model = CostModel::new(&lowering, machine);
                State::build(seed, &model, &candidates, &stop)
            })
            .ok()?;
        Some(Background {
            handle: Some(handle),
            cancel,
        })
    }

    /// The finished ranking, waiting for it if need be; `None` if the thread failed.
    pub(super) fn wait(mut self) -> Option<State> {
        self.handle.take()?.join().ok().flatten()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// Whether a background ranking was told to stop.
pub(super) fn cancelled(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}
