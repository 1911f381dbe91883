//! The progress of one problem's run: problem i/N, candidates, failures, best so far, elapsed
//! and ETA. On a terminal it is an indicatif bar; when stderr is not a terminal (a log file, a
//! batch job) it is one plain line every few seconds, so a long run is never silent there.
//! The dry run shows the same line, counting compiled candidates instead of timed ones.

use crate::runtime::Outcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Seconds between plain progress lines when stderr is not a terminal; the environment
/// variable `CONVTUNE_PROGRESS_SECS` overrides it.
const PLAIN_EVERY_S: f64 = 5.0;

/// Where a problem stands in its list, for the progress line.
#[derive(Debug, Clone, Default)]
pub struct ListPosition {
    /// 1-based index of the problem.
    pub index: usize,
    /// Problems in the list.
    pub count: usize,
    /// The problem's key.
    pub problem: String,
    /// Expected time of the problems after this one (for the list's ETA), if known.
    pub after: Option<Duration>,
}

impl ListPosition {
    fn label(&self) -> String {
        if self.count == 0 {
            return String::new();
        }
        format!("problem {}/{} {}", self.index, self.count, self.problem)
    }
}

/// Counters behind the line (kept even when nothing is drawn).
#[derive(Default)]
struct Counts {
    compiling: u64,
    compiled: u64,
    done: u64,
    failed: u64,
    resumed: u64,
    screened: u64,
    best: Option<(f64, f64)>,
    last_plain: Option<Instant>,
}

/// How the line is drawn.
enum Draw {
    Bar(ProgressBar),
    Plain(Duration),
    Hidden,
}

/// The progress of one problem's run; usable from several compile threads at once. When
/// stderr is not a terminal a ticker thread prints the plain line every few seconds even while
/// nothing finishes (a long compile or measurement); on a terminal the bar ticks by itself.
pub(super) struct Progress {
    state: Arc<State>,
    ticker: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl std::ops::Deref for Progress {
    type Target = State;
    fn deref(&self) -> &State {
        &self.state
    }
}

/// What the line shows, shared with the ticker.
pub(super) struct State {
    draw: Draw,
    /// What a counted candidate is: `timed` or `compiled`.
    noun: &'static str,
    total: u64,
    start: Instant,
    deadline: Option<Instant>,
    position: ListPosition,
    counts: Mutex<Counts>,
}

impl Progress {
    pub(super) fn new(
        total: u64,
        visible: bool,
        noun: &'static str,
        position: Option<&ListPosition>,
        deadline: Option<Instant>,
    ) -> Self {
        let draw = match (visible, std::io::stderr().is_terminal()) {
            (false, _) => Draw::Hidden,
            (true, false) => Draw::Plain(plain_every()),
            (true, true) => {
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} {prefix} [{elapsed_precise}] {bar:25} {pos}/{len} {msg}",
                    )
                    .expect("static template")
                    .progress_chars("=> "),
                );
                Draw::Bar(bar)
            }
        };
        let position = position.cloned().unwrap_or_default();
        if let Draw::Bar(bar) = &draw {
            bar.set_prefix(position.label());
            bar.enable_steady_tick(Duration::from_secs(1));
        }
        let every = match draw {
            Draw::Plain(every) if !every.is_zero() => Some(every),
            _ => None,
        };
        let state = Arc::new(State {
            draw,
            noun,
            total,
            start: Instant::now(),
            deadline,
            position,
            counts: Mutex::new(Counts::default()),
        });
        let ticker = every.map(|every| {
            let stop = Arc::new(AtomicBool::new(false));
            let (state, stopped) = (Arc::clone(&state), Arc::clone(&stop));
            let thread = std::thread::spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100).min(every));
                    state.with(|_| {});
                }
            });
            (stop, thread)
        });
        Progress { state, ticker }
    }

    pub(super) fn finish(&mut self) {
        if let Some((stop, thread)) = self.ticker.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
        if let Draw::Bar(bar) = &self.draw {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

impl State {
    pub(super) fn compiling(&self, n: usize) {
        self.with(|c| c.compiling += n as u64);
    }

    pub(super) fn compiled(&self, n: usize) {
        self.with(|c| {
            c.compiled += n as u64;
            c.compiling = c.compiling.saturating_sub(n as u64);
        });
    }

    /// One candidate done: measured (or taken from the journal, `resumed`).
    pub(super) fn update(&self, outcome: &Outcome, resumed: bool) {
        self.with(|c| {
            c.done += 1;
            c.resumed += u64::from(resumed);
            match outcome.timing() {
                Some(t) => {
                    c.screened += u64::from(t.screened);
                    if c.best.is_none_or(|(us, _)| t.median_us < us) {
                        c.best = Some((t.median_us, t.tflops));
                    }
                }
                None if outcome.cut_off() => {}
                None => c.failed += 1,
            }
        });
    }

    /// One candidate of a dry run compiled (`ok`: without error).
    pub(super) fn compiled_one(&self, ok: bool) {
        self.with(|c| {
            c.done += 1;
            c.compiled += 1;
            c.failed += u64::from(!ok);
        });
    }

    fn with(&self, f: impl FnOnce(&mut Counts)) {
        let Ok(mut c) = self.counts.lock() else {
            return;
        };
        f(&mut c);
        match &self.draw {
            Draw::Hidden => {}
            Draw::Bar(bar) => {
                bar.set_position(c.done);
                bar.set_message(self.message(&c));
            }
            Draw::Plain(every) => {
                let now = Instant::now();
                let due = c.last_plain.unwrap_or(self.start) + *every;
                if now >= due {
                    c.last_plain = Some(now);
                    eprintln!("{}", self.plain_line(&c));
                }
            }
        }
    }

    /// The bar's message: counts, best, ETA.
    fn message(&self, c: &Counts) -> String {
        let mut m = self.noun.to_string();
        if self.noun == "timed" {
            m += &format!(
                " | compiled {} (+{} in flight), failed {}, screened {}, resumed {}",
                c.compiled, c.compiling, c.failed, c.screened, c.resumed
            );
        } else {
            m += &format!(" | failed {}", c.failed);
        }
        if let Some((us, tf)) = c.best {
            m += &format!(", best {us:.1} us ({tf:.1} TFLOP/s)");
        }
        m + &format!(", ETA {}", self.eta(c))
    }

    /// The line printed every few seconds when stderr is not a terminal.
    fn plain_line(&self, c: &Counts) -> String {
        let label = self.position.label();
        format!(
            "convtune: {}{}{}/{} {}, elapsed {}",
            label,
            if label.is_empty() { "" } else { ": " },
            c.done,
            self.total,
            self.message(c),
            secs(self.start.elapsed()),
        )
    }

    /// This problem's remaining time (by its rate, capped by its deadline), plus the list's.
    fn eta(&self, c: &Counts) -> String {
        let elapsed = self.start.elapsed();
        let by_rate = (c.done > 0)
            .then(|| elapsed.mul_f64(self.total.saturating_sub(c.done) as f64 / c.done as f64));
        let by_deadline = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        let own = match (by_rate, by_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (own, self.position.after) {
            (Some(own), Some(after)) if !after.is_zero() => {
                format!("{} (list {})", secs(own), secs(own + after))
            }
            (Some(own), _) => secs(own),
            (None, _) => "?".into(),
        }
    }
}

fn plain_every() -> Duration {
    let s = std::env::var("CONVTUNE_PROGRESS_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(PLAIN_EVERY_S);
    Duration::from_secs_f64(s)
}

/// A duration as people read it: `42 s`, `3 min 05 s`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_follows_the_rate_and_the_deadline_caps_it() {
        let p = Progress::new(100, false, "timed", None, None);
        let c = Counts {
            done: 0,
            ..Default::default()
        };
        assert_eq!(p.eta(&c), "?");
        let soon = Some(Instant::now() + Duration::from_secs(3));
        let p = Progress::new(100, false, "timed", None, soon);
        std::thread::sleep(Duration::from_millis(20));
        let c = Counts {
            done: 1,
            ..Default::default()
        };
        // By rate: ~2 s for 99 more; the deadline is 3 s away: the rate wins.
        let eta = p.eta(&c);
        assert!(eta == "2 s" || eta == "3 s", "{eta}");
        assert_eq!(secs(Duration::from_secs(185)), "3 min 05 s");
    }

    #[test]
    fn the_plain_line_names_the_problem_and_counts() {
        let pos = ListPosition {
            index: 2,
            count: 9,
            problem: "p".into(),
            after: Some(Duration::from_secs(70)),
        };
        let p = Progress::new(10, false, "timed", Some(&pos), None);
        let c = Counts {
            done: 5,
            failed: 1,
            screened: 2,
            best: Some((12.31, 40.0)),
            ..Default::default()
        };
        let line = p.plain_line(&c);
        assert!(
            line.starts_with("convtune: problem 2/9 p: 5/10 timed"),
            "{line}"
        );
        assert!(
            line.contains("screened 2") && line.contains("best 12.3 us"),
            "{line}"
        );
        assert!(line.contains("(list 1 min"), "{line}");
    }
}
