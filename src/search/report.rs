//! Efficiency reports: the markdown table and the convergence plot that BENCHMARKS.md shows.
//!
//! The plot is hand-written SVG (no plotting crate to build): best-so-far as a percentage of
//! the exhaustive best against evaluations, one polyline per strategy, so that "reaches 98% in
//! 10% of the evaluations" can be read off it.

use super::replay::{Efficiency, CHECKPOINTS, TARGET};
use std::fmt::Write;

/// Line colours, one per strategy in order (colour-blind-safe Okabe–Ito palette).
const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// Best-so-far times (µs) as a percentage of the exhaustive best (100 = found it; 0 before the
/// first success), the y axis of [`plot_convergence`].
pub fn percent_of_best(curve: &[f64], best_us: f64) -> Vec<f64> {
    curve
        .iter()
        .map(|&b| {
            if b.is_finite() && b > 0.0 {
                100.0 * best_us / b
            } else {
                0.0
            }
        })
        .collect()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG line plot of convergence: each curve is (strategy name, best-so-far as % of the
/// exhaustive best after each evaluation, see [`percent_of_best`]). Evaluations run on a log
/// axis (most of the story is in the first few percent of the space), with a dashed vertical
/// line at 10% of the space and a dashed horizontal one at the 98% target; the y axis spans
/// from a multiple of 10% at or below the lowest point (but not below 50%: lower points sit on
/// the axis) to 100%.
pub fn plot_convergence(curves: &[(String, Vec<f64>)], title: &str) -> String {
    let (w, h) = (720.0, 440.0);
    let (left, right, top, bottom) = (64.0, 170.0, 40.0, 52.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let max_x = curves.iter().map(|c| c.1.len()).max().unwrap_or(0).max(2) as f64;
    let lowest = curves
        .iter()
        .flat_map(|c| c.1.iter().copied())
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(100.0f64, f64::min);
    let y_min = ((lowest.min(90.0) / 10.0).floor() * 10.0).clamp(50.0, 90.0);
    // Evaluation i (1-based) on a log axis from 1 to max_x.
    let x_of = |i: f64| left + pw * i.max(1.0).ln() / max_x.ln();
    let y_of = |v: f64| top + ph * (1.0 - (v.clamp(y_min, 100.0) - y_min) / (100.0 - y_min));

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let shown: String = if title.chars().count() > 95 {
        title.chars().take(94).chain(std::iter::once('…')).collect()
    } else {
        title.to_string()
    };
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="12">{}</text>"#,
        w / 2.0,
        escape(&shown)
    );
    // Grid and ticks: every 10% (5% on a short axis); 1, 2, 5 × powers of ten.
    let step = if 100.0 - y_min <= 20.0 { 5.0 } else { 10.0 };
    let mut v = y_min;
    while v <= 100.0 + 1e-9 {
        let y = y_of(v);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0}%</text>"##,
            left + pw,
            left - 6.0,
            y + 4.0
        );
        v += step;
    }
    let mut decade = 1.0f64;
    while decade <= max_x {
        for m in [1.0, 2.0, 5.0] {
            let i = decade * m;
            if i > max_x {
                break;
            }
            let x = x_of(i);
            let label = if m == 1.0 || max_x < 1000.0 {
                format!("{i:.0}")
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
                top + ph,
                top + ph + 16.0
            );
        }
        decade *= 10.0;
    }
    let tenth = x_of((0.1 * max_x).ceil());
    let _ = writeln!(
        s,
        r##"<line x1="{tenth:.1}" y1="{top}" x2="{tenth:.1}" y2="{:.1}" stroke="#888" stroke-dasharray="5,4"/><text x="{:.1}" y="{:.1}" fill="#555">10% of space</text>"##,
        top + ph,
        tenth + 4.0,
        top + ph - 6.0
    );
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let target = y_of(100.0 * TARGET);
    let _ = writeln!(
        s,
        r##"<line x1="{left}" y1="{target:.1}" x2="{:.1}" y2="{target:.1}" stroke="#888" stroke-dasharray="5,4"/>"##,
        left + pw
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">evaluations (log scale)</text>"#,
        left + pw / 2.0,
        h - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">best so far, % of exhaustive best</text>"#,
        top + ph / 2.0,
        top + ph / 2.0
    );
    // One polyline per strategy, drawn as the step function it is: a point only where the
    // best-so-far changes (so a 10^5-evaluation curve stays small).
    for (k, (name, curve)) in curves.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let mut pts = String::new();
        let mut last: Option<f64> = None;
        for (i, &v) in curve.iter().enumerate() {
            let (x, y) = (x_of((i + 1) as f64), y_of(v));
            match last {
                Some(prev) if (prev - y).abs() < 0.05 && i + 1 < curve.len() => continue,
                Some(prev) => {
                    let _ = write!(pts, "{x:.1},{prev:.1} ");
                }
                None => {}
            }
            let _ = write!(pts, "{x:.1},{y:.1} ");
            last = Some(y);
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            pts.trim_end()
        );
        let ly = top + 14.0 + 18.0 * k as f64;
        let lx = left + pw + 12.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 20.0,
            lx + 26.0,
            ly + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// [`plot_convergence`] of efficiencies measured on one recording (their curves, as % of the
/// recording's best).
pub fn plot_efficiencies(effs: &[Efficiency], title: &str) -> String {
    let curves: Vec<(String, Vec<f64>)> = effs
        .iter()
        .map(|e| (e.strategy.clone(), percent_of_best(&e.curve, e.best_us)))
        .collect();
    plot_convergence(&curves, title)
}

fn pct(f: f64) -> String {
    format!("{:.1}%", 100.0 * f)
}

/// A markdown table of efficiency: one row per (problem, strategy) with the evaluations to reach
/// ≥ 98% of the exhaustive best and the best reached at 5%, 10% and 25% of the space, then one
/// summary row per strategy (geometric mean and worst case of the fraction of the space needed;
/// a strategy that never reaches the target counts as needing all of it). `rows` are
/// (problem label, one [`Efficiency`] per strategy).
pub fn efficiency_table(rows: &[(String, Vec<Efficiency>)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| problem | strategy | space | evals to ≥{:.0}% | fraction of space | best at {} | best at {} | best at {} |",
        100.0 * TARGET,
        pct(CHECKPOINTS[0]),
        pct(CHECKPOINTS[1]),
        pct(CHECKPOINTS[2])
    );
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|\n");
    let mut names: Vec<String> = Vec::new();
    for (problem, effs) in rows {
        for e in effs {
            if !names.contains(&e.strategy) {
                names.push(e.strategy.clone());
            }
            let evals = e
                .evals_to_target
                .map_or("never".to_string(), |v| v.to_string());
            let frac = e
                .evals_to_target
                .map_or("—".to_string(), |_| pct(e.fraction_to_target()));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                problem.replace('|', "\\|"),
                e.strategy,
                e.space,
                evals,
                frac,
                pct(e.at_checkpoints[0]),
                pct(e.at_checkpoints[1]),
                pct(e.at_checkpoints[2])
            );
        }
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "| strategy | problems | geomean fraction to ≥{:.0}% | worst fraction | problems within 10% |",
        100.0 * TARGET
    );
    s.push_str("|---|---:|---:|---:|---:|\n");
    for name in &names {
        let fr: Vec<f64> = rows
            .iter()
            .flat_map(|(_, effs)| effs.iter().filter(|e| &e.strategy == name))
            .map(|e| e.fraction_to_target().max(1e-9))
            .collect();
        let within = rows
            .iter()
            .flat_map(|(_, effs)| effs.iter().filter(|e| &e.strategy == name))
            .filter(|e| e.meets(0.10))
            .count();
        let geo = (fr.iter().map(|f| f.ln()).sum::<f64>() / fr.len().max(1) as f64).exp();
        let worst = fr.iter().copied().fold(0.0f64, f64::max);
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {within}/{} |",
            fr.len(),
            pct(geo),
            pct(worst),
            fr.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eff(name: &str, evals: Option<usize>) -> Efficiency {
        Efficiency {
            strategy: name.into(),
            space: 200,
            best_us: 10.0,
            evals_to_target: evals,
            at_checkpoints: [0.5, 0.9, 1.0],
            curve: vec![],
        }
    }

    #[test]
    fn svg_has_one_polyline_per_strategy_and_escapes_text() {
        let curves = vec![
            (
                "guided".to_string(),
                percent_of_best(&[f64::INFINITY, 20.0, 10.0], 10.0),
            ),
            (
                "random <seed 1>".to_string(),
                percent_of_best(&[40.0, 20.0, 12.0, 11.0], 10.0),
            ),
            ("exhaustive".to_string(), vec![10.0; 500]),
        ];
        assert_eq!(curves[0].1, vec![0.0, 50.0, 100.0]);
        let svg = plot_convergence(&curves, "a & b");
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert!(svg.contains("a &amp; b") && svg.contains("random &lt;seed 1&gt;"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        // Balanced tags: every element opened is closed or self-closing.
        let opens = svg.matches('<').count();
        assert_eq!(opens, svg.matches('>').count());
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        // The y axis stops at 50% (the lowest point, 10%, sits on it) and tops out at 100%.
        assert!(svg.contains(">50%<") && svg.contains(">100%<") && !svg.contains(">40%<"));
        assert!(
            svg.contains(">100<") && svg.contains("10% of space"),
            "{svg}"
        );
        let empty = plot_convergence(&[], "nothing");
        assert!(empty.starts_with("<svg") && !empty.contains("<polyline"));
    }

    #[test]
    fn table_rows_and_summary() {
        let rows = vec![
            (
                "p1".to_string(),
                vec![eff("guided", Some(10)), eff("random", None)],
            ),
            (
                "p2 | odd".to_string(),
                vec![eff("guided", Some(40)), eff("random", Some(100))],
            ),
        ];
        let t = efficiency_table(&rows);
        assert!(
            t.contains("| p1 | guided | 200 | 10 | 5.0% | 50.0% | 90.0% | 100.0% |"),
            "{t}"
        );
        assert!(t.contains("| p1 | random | 200 | never | — |"), "{t}");
        assert!(t.contains("p2 \\| odd"));
        // guided: fractions 0.05 and 0.2 → geomean 10%, worst 20%, 1 of 2 within 10%.
        assert!(t.contains("| guided | 2 | 10.0% | 20.0% | 1/2 |"), "{t}");
        assert!(t.contains("| random | 2 | 70.7% | 100.0% | 0/2 |"), "{t}");
    }
}
