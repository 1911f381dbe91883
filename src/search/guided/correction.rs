//! The model's correction by measurements: per-field-value terms of the log-residual, fitted
//! by ridge backfitting, plus failure penalties and the exploration bonus (module doc of
//! [`guided`](super), steps 2 and 5).

use super::{Measured, State};
use crate::config::Field;
use rayon::prelude::*;

/// Field pairs whose interaction the correction fits (besides every single field): block tile
/// shape, warp tile shape, depth × pipeline, and the two load widths.
const PAIRS: [(Field, Field); 4] = [
    (Field::BlockM, Field::BlockN),
    (Field::WarpM, Field::WarpN),
    (Field::BlockK, Field::Stages),
    (Field::VecA, Field::VecB),
];
/// Number of features: one per field (its value's level), then one per pair.
const FEATURES: usize = Field::COUNT + PAIRS.len();
/// Ridge strength: a field value's correction counts as if it had this many zero residuals.
const SHRINK: f64 = 2.0;
/// Log-time penalty per failed lattice neighbour, and its cap.
pub(super) const FAIL_PENALTY: f64 = 0.08;
/// Exploration bonus (log-time) of a field value never proposed; it decays as 1/√(1 + tries).
const EXPLORE: f64 = 0.1;
const FAIL_CAP: f64 = 0.3;
/// Log-time penalty per unit of a field value's failure rate above the overall rate: a value
/// that always fails (a miscompiling width, say) sinks, one that fails as often as any does not.
const FAIL_FIELD: f64 = 2.0;

#[derive(Debug, Default)]
pub(super) struct Fit {
    on: usize,
    bias: f64,
    weights: Vec<Vec<f64>>,
}

impl State {
    /// Feature value ids of candidate `i`: one per field (in declaration order), then one per
    /// pair.
    pub(super) fn features(&self, i: usize) -> [usize; FEATURES] {
        let mut out = [0usize; FEATURES];
        let fields = Field::ALL.map(|f| self.lattice.level(i, f));
        let pairs = PAIRS.map(|(a, b)| {
            self.lattice.level(i, a) * self.lattice.levels(b) + self.lattice.level(i, b)
        });
        for (slot, v) in out.iter_mut().zip(fields.into_iter().chain(pairs)) {
            *slot = v;
        }
        out
    }

    /// How many values each feature of [`Self::features`] takes.
    pub(super) fn feature_sizes(&self) -> [usize; FEATURES] {
        let mut out = [0usize; FEATURES];
        let fields = Field::ALL.map(|f| self.lattice.levels(f).max(1));
        let pairs = PAIRS.map(|(a, b)| (self.lattice.levels(a) * self.lattice.levels(b)).max(1));
        for (slot, v) in out.iter_mut().zip(fields.into_iter().chain(pairs)) {
            *slot = v;
        }
        out
    }

    /// Refits the log-residual correction on the successes so far (see the module docs).
    pub(super) fn refit(&mut self, ok: &[(usize, f64)]) {
        let sizes = self.feature_sizes();
        let mut weights: Vec<Vec<f64>> = sizes.iter().map(|&s| vec![0.0; s]).collect();
        let feats: Vec<_> = ok.iter().map(|&(i, _)| self.features(i)).collect();
        let resid: Vec<f64> = ok.iter().map(|&(i, t)| t - self.prior[i]).collect();
        let bias = resid.iter().sum::<f64>() / resid.len().max(1) as f64;
        let mut fit = vec![bias; ok.len()];
        for _ in 0..4 {
            for (f, w) in weights.iter_mut().enumerate() {
                let mut sum = vec![0.0; w.len()];
                let mut cnt = vec![0.0; w.len()];
                for (s, ft) in feats.iter().enumerate() {
                    let v = ft[f];
                    fit[s] -= w[v];
                    sum[v] += resid[s] - fit[s];
                    cnt[v] += 1.0;
                }
                for v in 0..w.len() {
                    w[v] = sum[v] / (cnt[v] + SHRINK);
                }
                for (s, ft) in feats.iter().enumerate() {
                    fit[s] += w[ft[f]];
                }
            }
        }
        self.fit = Fit {
            on: ok.len(),
            bias,
            weights,
        };
    }

    /// ln-time score of every candidate: prior + fitted correction + failure penalties (lattice
    /// neighbours of failures; field values that fail more often than most) − exploration
    /// bonus (largest for a candidate with a field value rarely proposed yet).
    pub(super) fn scores(&mut self, measured: &[Measured], ok: &[(usize, f64)]) -> Vec<f64> {
        let n = self.prior.len();
        if ok.len() >= self.fit.on + (self.fit.on / 8).max(1) || (ok.is_empty() && self.fit.on > 0)
        {
            self.refit(ok);
        }
        for m in measured.iter().filter(|m| m.index < n) {
            if std::mem::replace(&mut self.counted[m.index], true) {
                continue;
            }
            let fail = u32::from(m.time_us.is_none());
            self.totals.0 += fail;
            self.totals.1 += 1;
            for f in Field::ALL {
                let slot = &mut self.outcomes[f][self.lattice.level(m.index, f)];
                slot.0 += fail;
                slot.1 += 1;
            }
        }
        let base = f64::from(self.totals.0) / f64::from(self.totals.1.max(1));
        for m in measured
            .iter()
            .filter(|m| m.index < n && m.time_us.is_none())
        {
            if !std::mem::replace(&mut self.failure_seen[m.index], true) {
                for j in self.lattice.neighbours(m.index) {
                    self.penalty[j] = (self.penalty[j] + FAIL_PENALTY).min(FAIL_CAP);
                }
            }
        }
        let this = &*self;
        (0..n)
            .into_par_iter()
            .map(|i| {
                let corr: f64 = if this.fit.weights.is_empty() {
                    0.0
                } else {
                    let ft = this.features(i);
                    this.fit.bias
                        + ft.iter()
                            .enumerate()
                            .map(|(f, &v)| this.fit.weights[f][v])
                            .sum::<f64>()
                };
                let rarest = Field::ALL
                    .into_iter()
                    .map(|f| this.tried[f][this.lattice.level(i, f)])
                    .min()
                    .unwrap_or(0);
                let bonus = EXPLORE / (1.0 + f64::from(rarest)).sqrt();
                // Failure rate of the candidate's worst field value, shrunk towards the
                // overall rate by two pseudo-measurements.
                let worst = Field::ALL
                    .into_iter()
                    .map(|f| {
                        let (bad, all) = this.outcomes[f][this.lattice.level(i, f)];
                        (f64::from(bad) + 2.0 * base) / (f64::from(all) + 2.0)
                    })
                    .fold(0.0f64, f64::max);
                let risky = FAIL_FIELD * (worst - base).max(0.0);
                this.prior[i] + corr + this.penalty[i] + risky - bonus
            })
            .collect()
    }
}
