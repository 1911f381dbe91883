//! A correction of the analytic model learned from measurements: log(measured / predicted) as
//! a linear function of the config's fields and the model's own terms, fitted to tuning
//! journals (`convtune db fit-model`), shipped as `tuned-db/model/<arch>.toml` and used where
//! the model has to choose without measuring (the untuned fallback, issue 16).
//!
//! Why: over the 39 problems of session 20's re-tune journal (14,083 timed candidates) the
//! model's rank correlation with measurement within a problem was 0.05–0.86, negative on three
//! f32 NCHW problems, and its first choice among the measured candidates ran at 0.74× the
//! best (geomean). Its errors are per config (session 19 found the kernel families' median
//! measured/predicted within 0.95–1.06 of each other), and that is what a fit over the
//! fields can learn.
//!
//! The fit centres each problem's samples (a problem's overall error cancels: only the order of
//! its configs matters) and weights every problem alike, so the 600 candidates of one problem
//! do not outvote the 110 of another. The correction is clamped to [`MAX_FACTOR`] either way:
//! a config unlike any measured one should not be moved far by extrapolation.

use super::{CostArch, CostModel, Estimate};
use crate::arch::Arch;
use crate::config::{Domain, Field, PerfConfig};
use crate::lowering::{lower, Lowering};
use crate::problem::ConvProblem;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The correction moves a prediction by at most this factor either way.
pub const MAX_FACTOR: f64 = 4.0;
/// Ridge strength, per problem (every problem has weight 1): keeps the coefficients of
/// features that few problems vary small. On session 20's journal, leave-one-problem-out,
/// 0.01 gave 0.817, 0.001 0.840, 0.0001 0.838 (the model's first choice's speed, geomean).
pub const RIDGE: f64 = 0.001;
/// Environment variable naming a correction file to use instead of the shipped one, or `none`
/// to use the model as it is (for measuring the fallback with and without it).
pub const ENV: &str = "CONVTUNE_MODEL_CORRECTION";

/// The model's terms offered as features (see [`features`]).
const TERMS: [&str; 7] = [
    "log(time)",
    "compute/time",
    "memory/time",
    "copy/time",
    "wave_efficiency",
    "log2(blocks_per_sm)",
    "log2(blocks)",
];

/// Fields a fit leaves out unless told otherwise (`convtune db fit-model --drop`): the vector
/// widths. Journals confound them (a search measures narrow widths mostly with tiles that
/// were slow anyway): a fit on session 20's journal learned "wider is slower", and on the
/// H200 its picks took `va=2` where the model's took `va=8` and ran at 0.36–0.90 of them
/// (leave-one-out, session 20 call 2), as sessions 7 and 9 had measured where widths alone
/// changed. The model's own width terms stay.
pub const DEFAULT_DROP: [Field; 3] = [Field::VecA, Field::VecB, Field::VecC];

/// Every feature a correction may use, with the config field it reads (`None`: a model
/// term): each numeric field as `log2(field)`, each named value but the first as
/// `field=value`, then the same for 16-bit problems (`f16:` prefix), then the model's terms.
pub fn catalogue() -> Vec<(String, Option<Field>)> {
    let mut config = Vec::new();
    for f in Field::ALL {
        match f.domain() {
            Domain::Named(values) => {
                config.extend(values[1..].iter().map(|v| (format!("{}={v}", f.key()), Some(f))))
            }
            _ => config.push((format!("log2({})", f.key()), Some(f))),
        }
    }
    let half: Vec<_> = config
        .iter()
        .map(|(n, f)| (format!("f16:{n}"), *f))
        .collect();
    config.extend(half);
    config.extend(TERMS.iter().map(|t| (t.to_string(), None)));
    config
}

/// The columns of [`catalogue`] that read none of the `drop` fields.
pub fn columns_without(drop: &[Field]) -> Vec<usize> {
    catalogue()
        .iter()
        .enumerate()
        .filter(|(_, (_, f))| f.is_none_or(|f| !drop.contains(&f)))
        .map(|(i, _)| i)
        .collect()
}

/// Every [`catalogue`] feature of `c` on the problem `l` describes, given the model's
/// estimate `e`.
pub fn features(l: &Lowering, c: &PerfConfig, e: &Estimate) -> Vec<f64> {
    let mut x = Vec::new();
    for f in Field::ALL {
        let code = c.code(f);
        match f.domain() {
            Domain::Named(values) => {
                x.extend((1..values.len() as u32).map(|v| f64::from(u8::from(code == v))))
            }
            _ => x.push(f64::from(code.max(1)).log2()),
        }
    }
    let half = if l.problem.dtype().bytes() == 2 {
        1.0
    } else {
        0.0
    };
    let scaled: Vec<f64> = x.iter().map(|v| v * half).collect();
    x.extend(scaled);
    let t = e.time_us.max(1e-9);
    x.extend([
        t.ln(),
        e.compute_us / t,
        e.memory_us / t,
        e.copy_us / t,
        e.wave_efficiency,
        f64::from(e.blocks_per_sm.max(1)).log2(),
        (e.blocks.max(1) as f64).log2(),
    ]);
    x
}

/// A fitted correction: `predicted × exp(coef · features)`, clamped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    /// The arch whose measurements it was fitted to.
    pub arch: String,
    /// Problems and timed candidates it was fitted to.
    pub problems: usize,
    /// Timed candidates.
    pub samples: usize,
    /// The features used, in the order of `coef`: names from [`catalogue`] (a file naming one
    /// this build does not know is not used).
    pub features: Vec<String>,
    /// log(measured / predicted) of a typical problem's configs beyond what the features
    /// explain (the fit is centred per problem, so this only places the clamp).
    pub intercept: f64,
    /// One coefficient a feature.
    pub coef: Vec<f64>,
    /// The [`catalogue`] column of each feature (resolved from the names on load).
    #[serde(skip)]
    columns: Vec<usize>,
}

/// One problem's measurements for [`Correction::fit`]: each candidate's features, predicted and
/// measured time.
#[derive(Debug, Clone, Default)]
pub struct ProblemSamples {
    /// The problem key (for reports).
    pub key: String,
    /// Per timed candidate: features, log(measured / predicted), log(measured).
    pub rows: Vec<(Vec<f64>, f64, f64)>,
}

impl ProblemSamples {
    /// The same samples with only the features in `columns`.
    pub fn select(&self, columns: &[usize]) -> ProblemSamples {
        ProblemSamples {
            key: self.key.clone(),
            rows: self
                .rows
                .iter()
                .map(|(x, y, t)| (columns.iter().map(|&i| x[i]).collect(), *y, *t))
                .collect(),
        }
    }

    /// Adds a measured candidate; configs the model cannot time are skipped.
    pub fn push(&mut self, l: &Lowering, c: &PerfConfig, e: &Estimate, measured_us: f64) {
        if e.time_us.is_finite() && e.time_us > 0.0 && measured_us > 0.0 {
            self.rows.push((
                features(l, c, e),
                (measured_us / e.time_us).ln(),
                measured_us.ln(),
            ));
        }
    }

    /// This problem's contribution to the normal equations (centred, weight 1 in all).
    fn normal(&self, m: usize) -> (Vec<f64>, Vec<f64>) {
        let n = self.rows.len() as f64;
        let mut a = vec![0.0; m * m];
        let mut b = vec![0.0; m];
        if self.rows.len() < 2 {
            return (a, b);
        }
        let mut mean = vec![0.0; m];
        let mut my = 0.0;
        for (x, y, _) in &self.rows {
            for (s, v) in mean.iter_mut().zip(x) {
                *s += v / n;
            }
            my += y / n;
        }
        for (x, y, _) in &self.rows {
            let d: Vec<f64> = x.iter().zip(&mean).map(|(v, mu)| v - mu).collect();
            for i in 0..m {
                if d[i] == 0.0 {
                    continue;
                }
                b[i] += d[i] * (y - my) / n;
                for j in 0..m {
                    a[i * m + j] += d[i] * d[j] / n;
                }
            }
        }
        (a, b)
    }
}

/// Groups measurements (problem key, config, measured µs) into [`ProblemSamples`] with the
/// model's estimates for `arch`; lines whose problem or config does not parse are skipped and
/// counted.
pub fn samples<'a>(
    arch: &Arch,
    measured: impl IntoIterator<Item = (&'a str, &'a str, f64)>,
) -> (Vec<ProblemSamples>, usize) {
    let mut by_problem: BTreeMap<&str, Vec<(PerfConfig, f64)>> = BTreeMap::new();
    let mut skipped = 0;
    for (key, config, us) in measured {
        match config.parse() {
            Ok(c) => by_problem.entry(key).or_default().push((c, us)),
            Err(_) => skipped += 1,
        }
    }
    let mut out = Vec::new();
    for (key, configs) in by_problem {
        let Ok(problem) = key.parse::<ConvProblem>() else {
            skipped += configs.len();
            continue;
        };
        let l = lower(&problem);
        let model = CostModel::new(&l, CostArch::from_arch(arch, problem.dtype()));
        let mut p = ProblemSamples {
            key: key.to_string(),
            rows: Vec::new(),
        };
        for (c, us) in configs {
            p.push(&l, &c, &model.estimate(&c), us);
        }
        out.push(p);
    }
    (out, skipped)
}

impl Correction {
    /// Fits the coefficients of the features in `columns` (of [`catalogue`]) to `problems`
    /// (ridge [`RIDGE`] per problem).
    pub fn fit(arch: &str, problems: &[ProblemSamples], columns: &[usize]) -> Correction {
        let problems: Vec<_> = problems.iter().map(|p| p.select(columns)).collect();
        let normals: Vec<_> = problems.iter().map(|p| p.normal(columns.len())).collect();
        let (coef, intercept) = fit_without(&problems, &normals, None);
        let names = catalogue();
        Correction {
            arch: arch.to_string(),
            problems: problems.len(),
            samples: problems.iter().map(|p| p.rows.len()).sum(),
            features: columns.iter().map(|&i| names[i].0.clone()).collect(),
            intercept,
            coef,
            columns: columns.to_vec(),
        }
    }

    /// Leave-one-problem-out: for each problem, the measured speed (best / chosen) of the
    /// model's first choice among its measured candidates, without and with the correction
    /// (features `columns`) fitted to the other problems.
    pub fn leave_one_out(problems: &[ProblemSamples], columns: &[usize]) -> Vec<(String, f64, f64)> {
        let problems: Vec<_> = problems.iter().map(|p| p.select(columns)).collect();
        let normals: Vec<_> = problems.iter().map(|p| p.normal(columns.len())).collect();
        problems
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.rows.is_empty())
            .map(|(i, p)| {
                let (coef, intercept) = fit_without(&problems, &normals, Some(i));
                let best = p.rows.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
                // log(predicted) = log(measured) − y; corrected adds coef · x, clamped as
                // in [`Correction::factor`].
                let chosen = |corrected: bool| {
                    let score = |r: &(Vec<f64>, f64, f64)| {
                        let c = (intercept + dot(&coef, &r.0)).clamp(-MAX_FACTOR.ln(), MAX_FACTOR.ln());
                        r.2 - r.1 + if corrected { c } else { 0.0 }
                    };
                    let pick = p.rows.iter().min_by(|a, b| score(a).total_cmp(&score(b)));
                    pick.map_or(0.0, |r| (best - r.2).exp())
                };
                (p.key.clone(), chosen(false), chosen(true))
            })
            .collect()
    }

    /// The correction as read from a file, its feature names resolved against this build's
    /// [`catalogue`]; `None` when it names a feature this build does not have or the counts
    /// disagree.
    pub fn resolved(mut self) -> Option<Correction> {
        let names = catalogue();
        self.columns = self
            .features
            .iter()
            .map(|f| names.iter().position(|(n, _)| n == f))
            .collect::<Option<_>>()?;
        (self.coef.len() == self.columns.len()).then_some(self)
    }

    /// The factor this correction applies to the model's estimate `e` of `c` on `l`: 1 when
    /// its features are not this build's.
    pub fn factor(&self, l: &Lowering, c: &PerfConfig, e: &Estimate) -> f64 {
        if self.coef.len() != self.columns.len() {
            return 1.0;
        }
        let x = features(l, c, e);
        let s: f64 = self.columns.iter().zip(&self.coef).map(|(&i, k)| k * x[i]).sum();
        (self.intercept + s)
            .exp()
            .clamp(1.0 / MAX_FACTOR, MAX_FACTOR)
    }

    /// The corrected estimate of `c`, µs.
    pub fn time_us(&self, l: &Lowering, c: &PerfConfig, e: &Estimate) -> f64 {
        e.time_us * self.factor(l, c, e)
    }
}

/// The coefficients fitted to every problem but `skip`, and the intercept: the mean over those
/// problems of their mean residual.
fn fit_without(
    problems: &[ProblemSamples],
    normals: &[(Vec<f64>, Vec<f64>)],
    skip: Option<usize>,
) -> (Vec<f64>, f64) {
    let coef = solve_sum(normals, skip, normals.first().map_or(0, |n| n.1.len()));
    let means: Vec<f64> = problems
        .iter()
        .enumerate()
        .filter(|(i, p)| Some(*i) != skip && !p.rows.is_empty())
        .map(|(_, p)| {
            let n = p.rows.len() as f64;
            p.rows.iter().map(|r| r.1 - dot(&coef, &r.0)).sum::<f64>() / n
        })
        .collect();
    let intercept = means.iter().sum::<f64>() / means.len().max(1) as f64;
    (coef, intercept)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Solves (Σ A_p + ridge·I) x = Σ b_p over the problems but `skip`, by Cholesky.
fn solve_sum(normals: &[(Vec<f64>, Vec<f64>)], skip: Option<usize>, m: usize) -> Vec<f64> {
    let mut a = vec![0.0; m * m];
    let mut b = vec![0.0; m];
    let mut count = 0.0_f64;
    for (i, (ap, bp)) in normals.iter().enumerate() {
        if Some(i) == skip {
            continue;
        }
        count += 1.0;
        a.iter_mut().zip(ap).for_each(|(s, v)| *s += v);
        b.iter_mut().zip(bp).for_each(|(s, v)| *s += v);
    }
    for i in 0..m {
        a[i * m + i] += RIDGE * count.max(1.0);
    }
    // Cholesky: a = L Lᵀ (a is symmetric positive definite with the ridge).
    let mut lo = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| lo[i * m + k] * lo[j * m + k]).sum();
            if i == j {
                lo[i * m + i] = (a[i * m + i] - s).max(1e-12).sqrt();
            } else {
                lo[i * m + j] = (a[i * m + j] - s) / lo[j * m + j];
            }
        }
    }
    let mut y = vec![0.0; m];
    for i in 0..m {
        let s: f64 = (0..i).map(|k| lo[i * m + k] * y[k]).sum();
        y[i] = (b[i] - s) / lo[i * m + i];
    }
    let mut x = vec![0.0; m];
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|k| lo[k * m + i] * x[k]).sum();
        x[i] = (y[i] - s) / lo[i * m + i];
    }
    x
}

include!(concat!(env!("OUT_DIR"), "/model_corrections.rs"));

/// The correction for `arch`: the file `$CONVTUNE_MODEL_CORRECTION` names (`none`: no
/// correction), else the one compiled into the binary, else none. A file that does not parse
/// is no correction (the model as it is), never an error: the fallback must always answer.
pub fn for_arch(arch: &str) -> Option<&'static Correction> {
    static OVERRIDE: OnceLock<Option<Correction>> = OnceLock::new();
    static SHIPPED: OnceLock<Vec<(&'static str, Correction)>> = OnceLock::new();
    if let Ok(path) = std::env::var(ENV) {
        return OVERRIDE
            .get_or_init(|| {
                if path == "none" {
                    return None;
                }
                let text = std::fs::read_to_string(&path).ok()?;
                toml::from_str::<Correction>(&text).ok()?.resolved()
            })
            .as_ref()
            .filter(|c| c.arch == arch);
    }
    SHIPPED
        .get_or_init(|| {
            MODEL_CORRECTIONS
                .iter()
                .filter_map(|(a, text)| {
                    Some((*a, toml::from_str::<Correction>(text).ok()?.resolved()?))
                })
                .collect()
        })
        .iter()
        .find(|(a, _)| *a == arch)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows whose error is a planted function of one feature (plus a per-problem offset the
    /// centring must remove).
    fn planted(key: &str, offset: f64, weight: f64, at: usize) -> ProblemSamples {
        let m = catalogue().len();
        let rows = (0..12)
            .map(|i| {
                let mut x = vec![0.0; m];
                x[at] = f64::from(i % 4);
                x[at + 1] = f64::from(i % 3);
                let log_measured = 3.0 + 0.1 * f64::from(i);
                (x.clone(), offset + weight * x[at], log_measured)
            })
            .collect();
        ProblemSamples {
            key: key.to_string(),
            rows,
        }
    }

    #[test]
    fn fit_recovers_a_planted_error_and_ignores_offsets() {
        let problems: Vec<_> = (0..6)
            .map(|i| planted(&format!("p{i}"), f64::from(i), 0.5, 3))
            .collect();
        let all: Vec<usize> = (0..catalogue().len()).collect();
        let c = Correction::fit("sm_90", &problems, &all);
        assert!((c.coef[3] - 0.5).abs() < 0.02, "{}", c.coef[3]);
        assert!(c.coef[4].abs() < 0.02, "{}", c.coef[4]);
        assert_eq!((c.problems, c.samples), (6, 72));
        // Without column 3 the planted error is not learned, and the file names say so.
        let without: Vec<usize> = all.iter().copied().filter(|&i| i != 3).collect();
        let d = Correction::fit("sm_90", &problems, &without);
        assert!(!d.features.contains(&catalogue()[3].0));
        let read: Correction = toml::from_str(&toml::to_string(&d).unwrap()).unwrap();
        assert_eq!(read.resolved().unwrap().columns, without);
    }

    #[test]
    fn leave_one_out_scores_the_choice_among_measured_candidates() {
        // The model ranks by log(measured) − y: with y growing in feature 3 it prefers the
        // candidates it is most wrong about; the correction learned from the others undoes it.
        let problems: Vec<_> = (0..5)
            .map(|i| planted(&format!("p{i}"), 0.0, 0.3, 3))
            .collect();
        let all: Vec<usize> = (0..catalogue().len()).collect();
        for (key, plain, corrected) in Correction::leave_one_out(&problems, &all) {
            assert!(plain < 0.8, "{key}: {plain}");
            assert!((corrected - 1.0).abs() < 1e-9, "{key}: {corrected}");
        }
    }

    #[test]
    fn shipped_corrections_match_this_builds_features() {
        // A new config field changes the features: the shipped file must then be fitted again
        // (`convtune db fit-model`), or the fallback would silently rank without it.
        for (arch, text) in MODEL_CORRECTIONS.iter() {
            let c: Correction = toml::from_str(text).unwrap_or_else(|e| panic!("{arch}: {e}"));
            assert_eq!(c.arch, *arch);
            let c = c.resolved().expect("a feature this build lacks: refit the correction");
            assert!(for_arch(arch).is_some() || std::env::var(ENV).is_ok());
            // The default fit leaves the vector widths out.
            let widths = columns_without(&[]).len() - columns_without(&DEFAULT_DROP).len();
            assert!(widths > 0 && c.columns.len() + widths <= catalogue().len());
        }
    }
}
