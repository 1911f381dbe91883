//! The preloader against a fake loader: order, overlap, errors, duplicates, clearing.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A loader that sleeps `ms` (the JIT), fails texts starting with "bad", and logs what it
/// loaded, in the order loads started.
fn fake(ms: u64) -> (LoadFn<String>, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let load: LoadFn<String> = Arc::new(move |text: &str| {
        l.lock().unwrap().push(text.to_string());
        thread::sleep(Duration::from_millis(ms));
        if text.starts_with("bad") {
            Err(format!("ptxas: {text} is not PTX"))
        } else {
            Ok(format!("loaded {text}"))
        }
    });
    (load, log)
}

fn texts(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn announced_modules_load_in_parallel_and_in_order() {
    let (load, log) = fake(100);
    let p = Preloader::new(4, load);
    let t = Instant::now();
    assert_eq!(p.preload(texts(&["a", "b", "c", "d"])), 4);
    for name in ["a", "b", "c", "d"] {
        let taken = p.take(name);
        assert_eq!(taken.module.as_deref(), Ok(&format!("loaded {name}")));
        assert!(taken.jit_s >= 0.09, "{}", taken.jit_s);
    }
    // Four 100 ms loads on four threads: well under the 400 ms of loading them one by one.
    let wall = t.elapsed().as_secs_f64();
    assert!(wall < 0.3, "took {wall} s");
    assert_eq!(log.lock().unwrap().len(), 4, "each loaded once");
    assert_eq!(p.pending(), 0);
}

#[test]
fn one_thread_loads_in_announcement_order() {
    let (load, log) = fake(10);
    let p = Preloader::new(1, load);
    p.preload(texts(&["c", "a", "b"]));
    p.preload(texts(&["d"]));
    thread::sleep(Duration::from_millis(150));
    assert_eq!(*log.lock().unwrap(), texts(&["c", "a", "b", "d"]));
    let t = Instant::now();
    for name in ["c", "a", "b", "d"] {
        assert!(p.take(name).module.is_ok());
    }
    assert!(
        t.elapsed() < Duration::from_millis(5),
        "all were loaded ahead"
    );
}

#[test]
fn a_failed_load_is_that_candidates_error_and_the_next_still_loads() {
    let (load, _) = fake(10);
    let p = Preloader::new(2, load);
    p.preload(texts(&["ok1", "bad2", "ok3"]));
    assert!(p.take("ok1").module.is_ok());
    let e = p.take("bad2").module.unwrap_err();
    assert!(e.contains("bad2 is not PTX"), "{e}");
    assert_eq!(
        p.take("ok3").module.as_deref(),
        Ok(&"loaded ok3".to_string())
    );
}

#[test]
fn identical_text_is_loaded_once_and_kept_until_its_last_candidate() {
    let (load, log) = fake(10);
    let p = Preloader::new(2, load);
    assert_eq!(p.preload(texts(&["same", "other", "same"])), 2);
    let first = p.take("same").module.unwrap();
    assert_eq!(
        p.pending(),
        2,
        "kept for the second candidate with the same text"
    );
    let second = p.take("same").module.unwrap();
    assert!(Arc::ptr_eq(&first, &second), "one module, loaded once");
    p.take("other").module.unwrap();
    assert_eq!(p.pending(), 0);
    let loads = log.lock().unwrap().iter().filter(|t| *t == "same").count();
    assert_eq!(loads, 1);
}

#[test]
fn without_threads_or_announcement_the_module_is_loaded_when_taken() {
    let (load, log) = fake(20);
    let p = Preloader::new(0, load);
    p.preload(texts(&["x"]));
    assert!(
        log.lock().unwrap().is_empty(),
        "nothing loads in the background"
    );
    let t = Instant::now();
    let taken = p.take("x");
    assert!(taken.module.is_ok() && t.elapsed() >= Duration::from_millis(19));
    let unannounced = p.take("never announced");
    assert!(unannounced.module.is_ok());
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[test]
fn taking_a_module_no_thread_reached_loads_it_at_once() {
    // One thread busy with a slow first module: the second, taken first, is loaded by the
    // caller instead of waiting behind the first.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let load: LoadFn<String> = Arc::new(move |text: &str| {
        c.fetch_add(1, Ordering::SeqCst);
        if text == "slow" {
            thread::sleep(Duration::from_millis(300));
        }
        Ok(text.to_string())
    });
    let p = Preloader::new(1, load);
    p.preload(texts(&["slow", "fast"]));
    thread::sleep(Duration::from_millis(20)); // let the thread pick up "slow"
    let t = Instant::now();
    assert!(p.take("fast").module.is_ok());
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    assert!(p.take("slow").module.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), 2, "each loaded once");
}

#[test]
fn clear_forgets_announced_modules() {
    let (load, log) = fake(50);
    let p = Preloader::new(1, load);
    p.preload(texts(&["old1", "old2", "old3"]));
    thread::sleep(Duration::from_millis(10));
    p.clear();
    assert_eq!(p.pending(), 0);
    // The old candidates' modules are not loaded after the clear (one may be in flight).
    thread::sleep(Duration::from_millis(150));
    assert!(log.lock().unwrap().len() <= 1, "{:?}", log.lock().unwrap());
    // A module of the new problem with the same text as the one in flight loads fresh.
    p.preload(texts(&["old1"]));
    assert!(p.take("old1").module.is_ok());
}
