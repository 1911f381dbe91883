//! Assembling the modules of the next candidates on a few threads while the GPU times the
//! current one (with `ptxas`, [`super::ptxas`]; the driver then loads machine code).
//!
//! On the H200 the driver's PTX JIT (`cuModuleLoadDataEx`) was 90–96% of the measure stage of
//! small problems, at 0.15–0.4 s a module, one module after the other. The worker hands the
//! modules of the candidates it was told come next to a few loader threads
//! ([`Preloader::preload`]), each running `ptxas` on one; measuring a candidate then takes its
//! machine code ([`Preloader::take`]), waiting only for what is still assembling. A module that
//! fails to assemble fails the same way when taken: the error stays that candidate's outcome.
//! Identical module text (the same PTX from two configs) is assembled once.
//!
//! The type is generic over what a load makes so its ordering and error handling are tested
//! without a GPU; the CUDA measurer instantiates it with [`super::ptxas::Image`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

/// Turns module text into a loaded module, or the loader's error (the JIT log).
pub(crate) type LoadFn<M> = Arc<dyn Fn(&str) -> Result<M, String> + Send + Sync>;

/// Environment variable that sets the number of loader threads (0: each module is assembled
/// when its candidate is measured; unset: see [`default_threads`]).
pub const JIT_THREADS_ENV: &str = "CONVTUNE_JIT_THREADS";

/// Loader threads by default: one per core but one (at most 16) when `ptxas` assembles the
/// modules ([`super::ptxas`]), none when the driver JITs them. Measured on the H200 (BENCHMARKS,
/// session 6 final pass B, `scripts/session6/fast-check.sh`): concurrent driver JITs
/// (`cuModuleLoadDataEx` on PTX) on one context slowed the timing thread instead of overlapping
/// with it (2.4 vs 4.4 candidates/s on a 1x1 problem), so driver JITs stay on the measuring
/// thread; `ptxas` runs in processes of its own and holds no context.
pub(crate) fn default_threads(assembler: bool) -> usize {
    if !assembler {
        return 0;
    }
    thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(1))
        .clamp(1, 16)
}

/// The loader thread count the environment asks for (see [`JIT_THREADS_ENV`]).
pub(crate) fn threads_from_env(assembler: bool) -> usize {
    std::env::var(JIT_THREADS_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| default_threads(assembler))
}

enum State<M> {
    /// Waiting for a loader thread.
    Queued,
    /// A thread is loading it; the id tells a stale result (after `clear`) from a live one.
    Loading(u64),
    /// Loaded (or failed), with the seconds the load took on whichever thread ran it.
    Done(Result<Arc<M>, String>, f64),
}

struct Entry<M> {
    state: State<M>,
    /// Candidates announced with this text and not yet measured.
    uses: usize,
}

struct Inner<M> {
    entries: HashMap<Arc<str>, Entry<M>>,
    queue: VecDeque<Arc<str>>,
    next_id: u64,
    shutdown: bool,
}

struct Shared<M> {
    inner: Mutex<Inner<M>>,
    changed: Condvar,
}

impl<M> Shared<M> {
    fn lock(&self) -> MutexGuard<'_, Inner<M>> {
        // A loader that panicked leaves consistent data (states are replaced whole).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A module taken for measuring.
pub(crate) struct Taken<M> {
    /// The loaded module, or why it could not be loaded.
    pub module: Result<Arc<M>, String>,
    /// Seconds the load itself took, on whichever thread ran it.
    pub jit_s: f64,
}

/// Loads announced modules on a bounded pool of threads, in the order they were announced.
pub(crate) struct Preloader<M: Send + Sync + 'static> {
    shared: Arc<Shared<M>>,
    load: LoadFn<M>,
}

impl<M: Send + Sync + 'static> Preloader<M> {
    /// A preloader with `threads` loader threads (0: every module is loaded when taken).
    pub fn new(threads: usize, load: LoadFn<M>) -> Preloader<M> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                queue: VecDeque::new(),
                next_id: 0,
                shutdown: false,
            }),
            changed: Condvar::new(),
        });
        for _ in 0..threads {
            let (shared, load) = (shared.clone(), load.clone());
            // A thread that cannot be spawned leaves fewer loaders; `take` loads the rest.
            let _ = thread::Builder::new()
                .name("jit-loader".into())
                .spawn(move || loader(&shared, &load));
        }
        Preloader { shared, load }
    }

    /// Announces the module texts of the next candidates, in the order they will be measured;
    /// returns how many new loads were queued (a text already announced is counted, not
    /// loaded again).
    pub fn preload(&self, texts: impl IntoIterator<Item = String>) -> usize {
        let mut inner = self.shared.lock();
        let mut queued = 0;
        for text in texts {
            let key: Arc<str> = text.into();
            match inner.entries.get_mut(&key) {
                Some(e) => e.uses += 1,
                None => {
                    inner.entries.insert(
                        key.clone(),
                        Entry {
                            state: State::Queued,
                            uses: 1,
                        },
                    );
                    inner.queue.push_back(key);
                    queued += 1;
                }
            }
        }
        drop(inner);
        self.shared.changed.notify_all();
        queued
    }

    /// The module for `text`: a preloaded one (waiting for it if a thread is loading it), else
    /// loaded here and now. An announced module stays for the other candidates announced with
    /// the same text and is dropped after the last.
    pub fn take(&self, text: &str) -> Taken<M> {
        enum Next {
            Unannounced,
            Ready,
            Wait,
            Claim,
        }
        let mut inner = self.shared.lock();
        loop {
            let next = match inner.entries.get(text).map(|e| &e.state) {
                None => Next::Unannounced,
                Some(State::Done(..)) => Next::Ready,
                Some(State::Loading(_)) => Next::Wait,
                Some(State::Queued) => Next::Claim,
            };
            match next {
                Next::Unannounced => {
                    drop(inner);
                    let (module, jit_s) = timed(&self.load, text);
                    return Taken { module, jit_s };
                }
                Next::Ready => {
                    let Some(entry) = inner.entries.get_mut(text) else {
                        continue;
                    };
                    let State::Done(module, jit_s) = &entry.state else {
                        continue;
                    };
                    let (module, jit_s) = (module.clone(), *jit_s);
                    entry.uses = entry.uses.saturating_sub(1);
                    if entry.uses == 0 {
                        inner.entries.remove(text);
                    }
                    return Taken { module, jit_s };
                }
                Next::Wait => {
                    inner = self
                        .shared
                        .changed
                        .wait(inner)
                        .unwrap_or_else(|p| p.into_inner());
                }
                Next::Claim => {
                    // No thread has reached it: load it here rather than wait behind others.
                    let id = claim(&mut inner, text);
                    drop(inner);
                    let (module, jit_s) = timed(&self.load, text);
                    inner = self.shared.lock();
                    finish(&mut inner, text, id, module, jit_s);
                    self.shared.changed.notify_all();
                }
            }
        }
    }

    /// Forgets every announced module (a new problem: the old candidates will not come).
    /// Loads in flight finish on their threads and are dropped.
    pub fn clear(&self) {
        let mut inner = self.shared.lock();
        inner.entries.clear();
        inner.queue.clear();
    }

    /// Modules announced and not yet taken by every candidate that announced them.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.shared.lock().entries.len()
    }
}

impl<M: Send + Sync + 'static> Drop for Preloader<M> {
    fn drop(&mut self) {
        // The threads are not joined: one may be inside a JIT of many seconds, and the worker
        // should exit now. They end after their current load.
        self.shared.lock().shutdown = true;
        self.shared.changed.notify_all();
    }
}

fn timed<M>(load: &LoadFn<M>, text: &str) -> (Result<Arc<M>, String>, f64) {
    let t = Instant::now();
    let module = load(text).map(Arc::new);
    (module, t.elapsed().as_secs_f64())
}

/// Marks a queued entry as being loaded by the caller; returns the load's id.
fn claim<M>(inner: &mut Inner<M>, key: &str) -> u64 {
    let id = inner.next_id;
    inner.next_id += 1;
    if let Some(e) = inner.entries.get_mut(key) {
        e.state = State::Loading(id);
    }
    id
}

/// Stores a finished load, unless the entry was cleared or re-announced meanwhile.
fn finish<M>(inner: &mut Inner<M>, key: &str, id: u64, module: Result<Arc<M>, String>, jit_s: f64) {
    if let Some(e) = inner.entries.get_mut(key) {
        if matches!(e.state, State::Loading(i) if i == id) {
            e.state = State::Done(module, jit_s);
        }
    }
}

/// A loader thread: loads queued modules in announcement order until shut down.
fn loader<M>(shared: &Shared<M>, load: &LoadFn<M>) {
    let mut inner = shared.lock();
    loop {
        if inner.shutdown {
            return;
        }
        let Some(key) = inner.queue.pop_front() else {
            inner = shared
                .changed
                .wait(inner)
                .unwrap_or_else(|p| p.into_inner());
            continue;
        };
        // Skip what `take` claimed or `clear` removed.
        if !matches!(inner.entries.get(&key), Some(e) if matches!(e.state, State::Queued)) {
            continue;
        }
        let id = claim(&mut inner, &key);
        drop(inner);
        let (module, jit_s) = timed(load, &key);
        inner = shared.lock();
        finish(&mut inner, &key, id, module, jit_s);
        shared.changed.notify_all();
    }
}

#[cfg(test)]
#[path = "preload_tests.rs"]
mod tests;
