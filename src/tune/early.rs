//! Compiles started before the search asks for them (issue 16: the fixed cost of a problem).
//!
//! The candidates measured first (the lookup's seeds and the `--try` configs) are known as soon
//! as the problem is lowered, before the space is enumerated and the reference has run; a
//! bwd-weight problem of the Hopper space enumerates ~4 M configs for about a second, and its
//! first candidate then waited another second for its own compile. Started here, those compiles
//! run beside the enumeration and the reference, and the search's compile of the same config
//! takes the result instead of compiling it again.

use crate::config::PerfConfig;
use crate::runtime::LaunchPlan;
use std::collections::HashMap;
use std::sync::{mpsc, Arc, Mutex};

/// A compile's result as the tuner's compiler passes it on (the error as text).
type Compiled = Result<LaunchPlan, String>;

/// At most this many configs compile early: the head of the first batch, enough to keep the
/// GPU busy until the search's own first batch compiles (`--try` lists of hundreds of configs
/// compile with the search, not all at once before it).
pub(super) const EARLY_COMPILES: usize = 8;

/// How a config compiles (shared with the compile pool's threads).
type CompileFn = Arc<dyn Fn(&PerfConfig) -> Compiled + Send + Sync>;

/// Compiles in flight or done, by config; each is taken once.
#[derive(Clone, Default)]
pub(super) struct EarlyCompiles {
    slots: Arc<Mutex<HashMap<PerfConfig, mpsc::Receiver<Compiled>>>>,
    compile: Option<CompileFn>,
}

impl EarlyCompiles {
    /// Nothing started yet; [`EarlyCompiles::start`] compiles with `compile`.
    pub(super) fn new<C>(compile: C) -> Self
    where
        C: Fn(&PerfConfig) -> Compiled + Send + Sync + 'static,
    {
        EarlyCompiles {
            slots: Arc::default(),
            compile: Some(Arc::new(compile)),
        }
    }

    /// Starts compiling `configs` not started yet on the compile pool, while fewer than
    /// [`EARLY_COMPILES`] have been (none without a compiler: [`EarlyCompiles::default`]).
    /// Every one of them is queued before the search queues anything, and the pool serves its
    /// queue in order, so a search job that waits for an early one
    /// ([`EarlyCompiles::take_or`]) never holds the thread that early one needs.
    pub(super) fn start(&self, configs: impl IntoIterator<Item = PerfConfig>) {
        let (Some(compile), Ok(mut slots)) = (&self.compile, self.slots.lock()) else {
            return;
        };
        for c in configs {
            if slots.len() == EARLY_COMPILES {
                break;
            }
            if slots.contains_key(&c) {
                continue;
            }
            let (done, result) = mpsc::channel();
            let compile = Arc::clone(compile);
            super::plan::spawn_on_compile_pool(move || {
                // The search may have ended first (its deadline): nobody waits for it.
                let _ = done.send(compile(&c));
            });
            slots.insert(c, result);
        }
    }

    /// How many compiles were started early.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.lock().map_or(0, |s| s.len())
    }

    /// The early result for `c` (waiting for it if it is still compiling), else `compile(c)`.
    /// A config is taken once: asked again (a search that proposes it twice), it compiles.
    pub(super) fn take_or(
        &self,
        c: &PerfConfig,
        compile: impl FnOnce(&PerfConfig) -> Compiled,
    ) -> Compiled {
        let early = self.slots.lock().ok().and_then(|mut s| s.remove(c));
        match early.map(|r| r.recv()) {
            Some(Ok(compiled)) => compiled,
            // The early compile panicked (its sender dropped): compile it here, which reports
            // the same failure as a compile of the search's own would.
            Some(Err(_)) | None => compile(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn configs(n: usize) -> Vec<PerfConfig> {
        crate::tune::tests::configs(n as u32)
    }

    #[test]
    fn an_early_result_is_taken_once_and_then_compiled_again() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let compile = move |_: &PerfConfig| {
            counted.fetch_add(1, Ordering::SeqCst);
            Err::<LaunchPlan, _>("no codegen in this test".to_string())
        };
        let cs = configs(3);
        let early = EarlyCompiles::new(compile);
        early.start([cs[0]]);
        early.start(cs.iter().copied().chain([cs[0]]));
        assert_eq!(early.len(), 3, "a repeated config compiles once");
        // Taken: the early compile's result, and no compile here.
        let got = early.take_or(&cs[1], |_| panic!("must not compile again"));
        assert_eq!(got.unwrap_err(), "no codegen in this test");
        // Taken again: compiled by the caller.
        let again = early.take_or(&cs[1], |_| Err("compiled here".into()));
        assert_eq!(again.unwrap_err(), "compiled here");
        for c in [&cs[0], &cs[2]] {
            assert!(early.take_or(c, |_| panic!("early")).is_err());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn at_most_the_head_compiles_early() {
        let early = EarlyCompiles::new(|_: &PerfConfig| Err::<LaunchPlan, _>("x".to_string()));
        early.start(configs(EARLY_COMPILES + 5));
        assert_eq!(early.len(), EARLY_COMPILES);
        let none = EarlyCompiles::default();
        none.start(configs(2));
        assert_eq!(none.len(), 0, "no compiler, nothing started");
        let late = configs(EARLY_COMPILES + 5)[EARLY_COMPILES + 2];
        let got = early.take_or(&late, |_| Err("compiled here".into()));
        assert_eq!(got.unwrap_err(), "compiled here");
    }
}
