//! The direct depthwise kernel (`mma=dw`) on the CPU emulator: many seeded random depthwise
//! problems (odd sizes, strides, dilation, padding beyond the filter, channel counts that are
//! no multiple of 8, depth multiplier 2, backward data at stride 1, every type), each compared
//! bit-exactly with the f64 direct convolution; legality and codegen must agree on what runs
//! (`emulate_where_legal`), and refuse what the kernel does not do with a reason.

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, Target};
use convtune::config::{DwSums, DwTile, MmaPath, PerfConfig};
use convtune::legality;
use convtune::lowering::{depthwise::DwShape, lower};
use convtune::problem::ConvProblem;
use rand::{rngs::StdRng, Rng, SeedableRng};
mod common;

use common::{cfg, emulate_where_legal, problem};

/// A depthwise config: `bm` channels × `bn` pixels per block, `va` channels and `vc × vb`
/// pixels per thread; the fields the kernel ignores at the default space's smallest values.
fn dw(bm: u32, bn: u32, va: u32, vb: u32, vc: u32, xf: &str) -> PerfConfig {
    dw_red(bm, bn, va, vb, vc, xf, "atomic")
}

/// [`dw`] with `red` (backward weight: `atomic` or `fixup`, the partials).
fn dw_red(bm: u32, bn: u32, va: u32, vb: u32, vc: u32, xf: &str, red: &str) -> PerfConfig {
    cfg(&format!(
        "v4:bm={bm},bn={bn},bk=16,wm=16,wn=16,st=2,va={va},vb={vb},vc={vc},lds=pad,sk=1,rs=1,\
         mma=dw,red={red},ld=cp,pk=0,xf={xf}"
    ))
}

/// Runs `c` on `p` and demands that it ran as the one depthwise launch (plus transposes).
fn runs(p: &ConvProblem, c: &PerfConfig, arch: Arch, seed: u64) {
    let rep = emulate_where_legal(p, c, arch, seed).unwrap_or_else(|| {
        panic!(
            "{p} {c}: refused: {:?}",
            legality::check(&lower(p), c, &arch)
        )
    });
    assert!(
        rep.kernels.iter().any(|k| k.name == "convtune_depthwise"),
        "{p} {c}: {:?}",
        rep.kernels
    );
    // The launches besides the transposes are those the cost model charges.
    let tile = DwTile::of(c);
    if let Ok(shape) = DwShape::of(p) {
        let own = rep.kernels.iter();
        let own = own.filter(|k| !k.name.starts_with("convtune_relayout_"));
        assert_eq!(own.count() as u32, shape.launches(&tile), "{p} {c}");
    }
    // Backward weight by atomics: zeroed first; a 16-bit filter gradient converted from f32
    // after. As partials: no zeroing, the slots summed after.
    if p.direction() == convtune::problem::Direction::BwdWeight {
        let names: Vec<_> = rep.kernels.iter().map(|k| k.name.as_str()).collect();
        let at = |k: &str| names.iter().position(|n| *n == k);
        if tile.sums == Some(DwSums::Partials) {
            let order = (at("convtune_depthwise"), at("convtune_depthwise_sum"));
            assert!(matches!(order, (Some(d), Some(s)) if d < s), "{names:?}");
            assert_eq!(at("convtune_zero"), None, "{names:?}");
        } else {
            let finish = p.dtype() != convtune::problem::DType::F32;
            let order = (at("convtune_zero"), at("convtune_depthwise"));
            assert!(matches!(order, (Some(z), Some(d)) if z < d), "{names:?}");
            assert_eq!(
                names.contains(&"convtune_depthwise_finish"),
                finish,
                "{names:?}"
            );
        }
    }
}

/// A random depthwise problem and a config the kernel takes for it.
fn random_case(rng: &mut StdRng) -> (ConvProblem, PerfConfig) {
    loop {
        let dt = ["conv", "convfp16", "convbfp16"][rng.gen_range(0..3)];
        let bwd = rng.gen_bool(0.3);
        // Backward weight: any stride and multiplier, as forward.
        let wgrad = !bwd && rng.gen_bool(0.4);
        let c = [1, 3, 4, 6, 8, 12, 16, 24][rng.gen_range(0..8)];
        let m = if bwd || rng.gen_bool(0.7) { 1 } else { 2 };
        let (y, x) = (rng.gen_range(1..=5), rng.gen_range(1..=4));
        let (h, w) = (rng.gen_range(1..=9), rng.gen_range(1..=9));
        let (u, v) = if bwd {
            (1, 1)
        } else {
            (rng.gen_range(1..=3), rng.gen_range(1..=3))
        };
        let (l, j) = (rng.gen_range(1..=3), rng.gen_range(1..=2));
        // Padding up to beyond the filter.
        let (ph, pw) = (rng.gen_range(0..=y + 1), rng.gen_range(0..=x + 1));
        let n = rng.gen_range(1..=2);
        let dir = if bwd {
            2
        } else if wgrad {
            4
        } else {
            1
        };
        let line = format!(
            "{dt} -n {n} -c {c} -H {h} -W {w} -k {k} -y {y} -x {x} -p {ph} -q {pw} -u {u} -v {v} \
             -l {l} -j {j} -g {c} -F {dir} --layout NHWC",
            k = c * m
        );
        // Sizes that give an empty output are no problem.
        let Ok(p) = line.parse::<ConvProblem>() else {
            continue;
        };
        let shape = convtune::lowering::depthwise::DwShape::of(&p).unwrap();
        let widest = shape.widest_vec(16);
        // Draw tiles until one fits (a 5×5 filter with 8 channels and 8 pixels a thread
        // exceeds the register estimate).
        loop {
            let va = 1 << rng.gen_range(0..=widest.trailing_zeros());
            let (vb, vc) = (1 << rng.gen_range(0..3), 1 << rng.gen_range(0..2));
            let bm = va * [1, 2, 4][rng.gen_range(0..3)];
            let bn = vb * vc * [1, 2, 4][rng.gen_range(0..3)];
            let red = if wgrad && rng.gen_bool(0.5) {
                "fixup"
            } else {
                "atomic"
            };
            let c = dw_red(bm, bn, va, vb, vc, "none", red);
            if shape.tile_refusal(&DwTile::of(&c), &Arch::SM_90).is_none() {
                return (p, c);
            }
        }
    }
}

#[test]
fn emulated_random_depthwise_bit_exact() {
    let mut rng = StdRng::seed_from_u64(0xd3);
    for case in 0..48 {
        let (p, c) = random_case(&mut rng);
        runs(&p, &c, Arch::SM_90, case);
    }
}

/// The shapes the brief names, scaled down: 3×3 padded (the shipped problem's form), 3×3 at
/// stride 2, 5×5, multiplier 2 with 8-wide vectors (each reads 4 input channels), the
/// backward data of the first, and backward weight.
#[test]
fn emulated_named_shapes() {
    for (line, c) in [
        (
            "convfp16 -n 2 -c 32 -H 6 -W 7 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 1 --layout NHWC",
            dw(32, 8, 8, 4, 1, "none"),
        ),
        (
            "convbfp16 -n 1 -c 16 -H 7 -W 7 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 16 -F 1 --layout NHWC",
            dw(16, 8, 8, 2, 2, "none"),
        ),
        (
            "convfp16 -n 1 -c 16 -H 9 -W 8 -k 16 -y 5 -x 5 -p 2 -q 2 -g 16 -F 1 --layout NHWC",
            dw(16, 16, 4, 4, 2, "none"),
        ),
        (
            "convbfp16 -n 1 -c 8 -H 5 -W 6 -k 16 -y 3 -x 3 -p 1 -q 1 -g 8 -F 1 --layout NHWC",
            dw(16, 4, 8, 2, 2, "none"),
        ),
        (
            "conv -n 2 -c 8 -H 5 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -g 8 -F 2 --layout NHWC",
            dw(8, 8, 4, 2, 1, "none"),
        ),
        // Backward weight: several blocks share a channel block's pixels; a 16-bit gradient
        // through the f32 copy, an f32 one in place; stride 2 and multiplier 2.
        (
            "convbfp16 -n 3 -c 16 -H 9 -W 11 -k 16 -y 3 -x 3 -p 1 -q 1 -g 16 -F 4 --layout NHWC",
            dw(16, 4, 8, 2, 1, "none"),
        ),
        (
            "conv -n 2 -c 8 -H 7 -W 6 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 8 -F 4 --layout NHWC",
            dw(16, 8, 4, 1, 2, "none"),
        ),
        // The same two with their blocks' sums as partials, added by a second kernel.
        (
            "convbfp16 -n 3 -c 16 -H 9 -W 11 -k 16 -y 3 -x 3 -p 1 -q 1 -g 16 -F 4 --layout NHWC",
            dw_red(16, 4, 8, 2, 1, "none", "fixup"),
        ),
        (
            "conv -n 2 -c 8 -H 7 -W 6 -k 16 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 8 -F 4 --layout NHWC",
            dw_red(16, 8, 4, 1, 2, "none", "fixup"),
        ),
    ] {
        runs(&problem(line), &c, Arch::SM_90, 7);
    }
}

/// NCHW runs through the layout transform with the written tensor transposed back; without
/// it, or with `xf=nhwc` (which leaves the output channels-first), it is refused with reasons.
#[test]
fn nchw_through_the_transform() {
    let p = problem("convfp16 -n 2 -c 8 -H 5 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -g 8 -F 1");
    runs(&p, &dw(8, 4, 8, 2, 1, "nhwc_out"), Arch::SM_90, 3);
    // Backward weight reads both activations channels-last through the transform (a
    // depthwise filter is the same in either layout).
    let w = problem("convbfp16 -n 2 -c 8 -H 5 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -g 8 -F 4");
    let legal: Vec<_> = ["none", "nhwc", "nhwc_out"]
        .into_iter()
        .filter(|xf| legality::check(&lower(&w), &dw(8, 4, 8, 2, 1, xf), &Arch::SM_90).is_ok())
        .collect();
    assert!(!legal.is_empty() && !legal.contains(&"none"), "{legal:?}");
    for xf in legal {
        runs(&w, &dw(8, 4, 8, 2, 1, xf), Arch::SM_90, 5);
        runs(&w, &dw_red(8, 4, 8, 2, 1, xf, "fixup"), Arch::SM_90, 5);
    }
    for (xf, why) in [
        ("none", "xf=nhwc_out"),
        ("nhwc", "output is not channels-last"),
    ] {
        let e = legality::check(&lower(&p), &dw(8, 4, 8, 2, 1, xf), &Arch::SM_90).unwrap_err();
        assert!(e.to_string().contains(why), "{xf}: {e}");
    }
}

/// Refusals with reasons: not depthwise, strided bwd-data, a vector that does not
/// divide the channels, a tile that is not whole threads; and the GEMM paths still take the
/// depthwise problem.
#[test]
fn refusals_name_the_reason() {
    let arch = Arch::SM_90;
    let good = dw(32, 8, 8, 4, 1, "none");
    for (line, c, why) in [
        (
            "convfp16 -n 1 -c 32 -H 6 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -g 8 -F 1 --layout NHWC",
            good,
            "not depthwise: 4 input channels per group",
        ),
        (
            "convfp16 -n 1 -c 32 -H 6 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 32 -F 2 --layout NHWC",
            good,
            "stride 2x2",
        ),
        (
            "convfp16 -n 1 -c 12 -H 6 -W 6 -k 12 -y 3 -x 3 -p 1 -q 1 -g 12 -F 1 --layout NHWC",
            good,
            "va = 8 does not divide the 12 channels",
        ),
        (
            "convfp16 -n 1 -c 32 -H 6 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 1 --layout NHWC",
            dw(32, 8, 8, 4, 4, "none"),
            "bn = 8 pixels per block is not a whole number of vb × vc = 16",
        ),
        (
            // 512 threads of ~216 registers: more than an SM's register file.
            "convfp16 -n 1 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -g 256 -F 1 --layout NHWC",
            dw(256, 128, 8, 4, 2, "none"),
            "exceed the 65536 registers of an SM",
        ),
        (
            "convfp16 -n 1 -c 32 -H 6 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 4 --layout NHWC",
            dw_red(32, 8, 8, 4, 1, "none", "stream"),
            "red=stream is a GEMM schedule",
        ),
    ] {
        let p = problem(line);
        let e = legality::check(&lower(&p), &c, &arch).unwrap_err();
        assert!(e.to_string().contains(why), "{line}: {e}");
        // Codegen agrees (and says why too).
        let err = compile_conv(&lower(&p), &c, Target::of(arch)).unwrap_err();
        assert!(err.to_string().contains("mma=dw"), "{err}");
    }
    let p =
        problem("convfp16 -n 1 -c 32 -H 6 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1 -g 32 -F 1 --layout NHWC");
    let gemm = cfg("v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=8,vc=1,lds=pad,sk=1,rs=1");
    assert!(legality::check(&lower(&p), &gemm, &arch).is_ok());
}

/// AMD: the same kernel compiles for gfx90a (wave64) and runs exactly in the emulator.
#[test]
fn gfx90a_compiles_and_runs_it() {
    let p =
        problem("convfp16 -n 1 -c 16 -H 5 -W 7 -k 16 -y 3 -x 3 -p 1 -q 1 -g 16 -F 1 --layout NHWC");
    let c = dw(16, 8, 8, 2, 2, "none");
    runs(&p, &c, Arch::GFX90A, 9);
    let co = compile_conv(&lower(&p), &c, Target::of(Arch::GFX90A)).unwrap();
    assert!(co.resources.is_some());
}

/// The default space finds the path on the shipped depthwise problem, enumerating each
/// kernel once (the fields it ignores at one value), and the cost model ranks the best
/// depthwise candidate ahead of every GEMM candidate on that memory-bound problem.
#[test]
fn default_space_enumerates_and_ranks_it() {
    use convtune::search::cost::{CostArch, CostModel};
    use convtune::space::{enumerate_lowered, SearchSpace};
    let p = problem(
        "convfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -g 256 -F 1 --layout NHWC",
    );
    let arch = Arch::SM_90;
    let l = lower(&p);
    let e = enumerate_lowered(&l, &arch, &SearchSpace::default_for(&arch));
    let dws: Vec<_> = e
        .legal
        .iter()
        .filter(|c| c.mma == MmaPath::Depthwise)
        .collect();
    assert!(dws.len() > 10, "{} depthwise candidates", dws.len());
    let tiles: std::collections::BTreeSet<_> = dws
        .iter()
        .map(|c| {
            let t = DwTile::of(c);
            (t.channels, t.pixels, t.vec, t.cols, t.rows, c.xf)
        })
        .collect();
    assert_eq!(tiles.len(), dws.len(), "one name per depthwise kernel");
    let model = CostModel::new(&l, CostArch::from_arch(&arch, p.dtype()));
    let best = |dw: bool| {
        e.legal
            .iter()
            .filter(|c| (c.mma == MmaPath::Depthwise) == dw)
            .map(|c| model.estimate(c).time_us)
            .fold(f64::INFINITY, f64::min)
    };
    let (d, g) = (best(true), best(false));
    assert!(d.is_finite() && d < g, "depthwise {d} µs, GEMM {g} µs");
}

/// Backward weight as partials with more slots than the summing kernel's threads an element
/// and chains cover in one step (8 × 4), so that its loop runs several steps and ends part way.
#[test]
fn partials_of_many_blocks_sum_exactly() {
    for (line, va) in [
        (
            "convbfp16 -n 3 -c 16 -H 9 -W 11 -k 16 -y 3 -x 3 -p 1 -q 1 -g 16 -F 4 --layout NHWC",
            8,
        ),
        (
            "conv -n 5 -c 8 -H 9 -W 7 -k 8 -y 3 -x 2 -p 1 -q 1 -g 8 -F 4 --layout NHWC",
            4,
        ),
    ] {
        let p = problem(line);
        let c = dw_red(8, 2, va, 2, 1, "none", "fixup");
        let slots = DwShape::of(&p)
            .unwrap()
            .slices(&DwTile::of(&c), &Arch::SM_90);
        assert!(
            slots > 32 && !slots.is_multiple_of(32),
            "{line}: {slots} slots"
        );
        runs(&p, &c, Arch::SM_90, 11);
    }
}

/// Backward weight searches both sums a space lists: atomics and partials on the same tiles;
/// a space of `red = ["fixup"]` alone (deterministic results) the partials only; `stream` alone
/// leaves the direct kernel out.
#[test]
fn a_space_picks_how_backward_weight_sums() {
    use convtune::space::{enumerate_lowered, SearchSpace};
    let p = problem(
        "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -g 64 -F 4 --layout NHWC",
    );
    let (arch, l) = (Arch::SM_90, lower(&p));
    let text = include_str!("../search-spaces/nvidia.toml");
    let with = |red: &str| {
        let t = text.replace(
            r#"red = ["atomic", "fixup", "stream"]"#,
            &format!("red = [{red}]"),
        );
        assert!(
            t.contains(&format!("red = [{red}]")),
            "the built-in red list moved"
        );
        let space = SearchSpace::from_toml(&t, "test").unwrap();
        let dws: Vec<PerfConfig> = enumerate_lowered(&l, &arch, &space)
            .legal
            .into_iter()
            .filter(|c| c.mma == MmaPath::Depthwise)
            .collect();
        dws
    };
    let sums = |cs: &[PerfConfig]| {
        let s: std::collections::BTreeSet<_> = cs
            .iter()
            .map(|c| format!("{:?}", DwTile::of(c).sums))
            .collect();
        s.into_iter().collect::<Vec<_>>()
    };
    let default = with(r#""atomic", "fixup", "stream""#);
    let fixup = with(r#""fixup""#);
    assert!(!default.is_empty());
    assert_eq!(sums(&default), ["Some(Atomic)", "Some(Partials)"]);
    assert_eq!(sums(&fixup), ["Some(Partials)"]);
    assert_eq!(default.len(), 2 * fixup.len());
    assert!(with(r#""stream""#).is_empty());
}
