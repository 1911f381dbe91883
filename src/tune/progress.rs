//! The progress line of a tuning run: candidates compiled and timed, failures, best so far, ETA.

use crate::config::PerfConfig;
use crate::runtime::Outcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Counters behind the progress bar (kept even when nothing is drawn).
pub(super) struct Progress {
    bar: ProgressBar,
    compiling: u64,
    compiled: u64,
    failed: u64,
    resumed: u64,
    best: Option<(f64, f64)>,
}

impl Progress {
    pub(super) fn new(total: u64, visible: bool) -> Self {
        let bar = ProgressBar::with_draw_target(
            Some(total),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} timed, ETA {eta} {msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        Progress {
            bar,
            compiling: 0,
            compiled: 0,
            failed: 0,
            resumed: 0,
            best: None,
        }
    }

    pub(super) fn compiling(&mut self, n: usize) {
        self.compiling += n as u64;
        self.redraw();
    }

    pub(super) fn compiled(&mut self, n: usize) {
        self.compiled += n as u64;
        self.compiling = self.compiling.saturating_sub(n as u64);
        self.redraw();
    }

    pub(super) fn update(&mut self, _cfg: &PerfConfig, outcome: &Outcome, resumed: bool) {
        if resumed {
            self.resumed += 1;
        }
        match outcome.timing() {
            Some(t) => {
                if self.best.is_none_or(|(us, _)| t.median_us < us) {
                    self.best = Some((t.median_us, t.tflops));
                }
            }
            None => self.failed += 1,
        }
        self.bar.inc(1);
        self.redraw();
    }

    fn redraw(&self) {
        let best = self.best.map_or("-".to_string(), |(us, tf)| {
            format!("{us:.1} us ({tf:.1} TFLOP/s)")
        });
        self.bar.set_message(format!(
            "| compiled {} (+{} in flight), failed {}, resumed {}, best {best}",
            self.compiled, self.compiling, self.failed, self.resumed
        ));
    }

    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
