//! The legal candidates of a problem: the raw product of a search space filtered by the
//! legality rules and the space's pruning rules, with a count of rejections per rule.
//!
//! Loops nest by the fields' levels ([`Field::level`], in [`Field::ENUMERATION`] order); each
//! rule is evaluated as soon as the loops that fix its parameters are entered, and a failure rejects the whole
//! subtree below at once (counted by multiplying the inner list lengths). Rules run in the same
//! order as [`crate::legality::check`], so each rejected point is counted under the rule that
//! `check` would report for it.

use super::listing::Listing;
use super::space_file::SearchSpace;
use crate::arch::Arch;
use crate::config::{Field, PerField, PerfConfig};
use crate::legality::{Checker, RejectReasonKind, Rule};
use crate::lowering::{lower, Lowering};
use crate::problem::ConvProblem;
use rand::{rngs::StdRng, SeedableRng};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// The outcome of enumerating a space for one problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enumeration {
    /// Legal configs, in raw-product order ([`SearchSpace::iter_raw`]).
    pub legal: Vec<PerfConfig>,
    /// Size of the raw product.
    pub raw: u64,
    /// Rejected points per rule; the counts and `legal.len()` sum to `raw`.
    pub rejected: BTreeMap<RejectReasonKind, u64>,
    /// How many of `legal` (a prefix) the first space enumerated, before others were
    /// [absorbed](Self::absorb): the vendor space's own list in the built-in search.
    pub first: usize,
}

impl Enumeration {
    fn empty(raw: u64) -> Enumeration {
        Enumeration {
            legal: Vec::new(),
            raw,
            rejected: BTreeMap::new(),
            first: 0,
        }
    }

    /// Adds another space's enumeration of the same problem: its legal configs not already
    /// here (after these), its raw points and its rejections. `earlier` are the spaces whose
    /// enumerations made this list: a config of `other` (legal here) is already listed exactly
    /// when one of them holds it and its pruning admits it, which is checked per config of
    /// `other` (a bf16 problem's vendor list holds ~3-4 M configs; hashing them took 1.4 s of
    /// the tuner's fixed cost in session 13, hashing those inside the other space still
    /// ~0.25 s in session 25).
    pub fn absorb(
        &mut self,
        other: Enumeration,
        lowering: &Lowering,
        arch: &Arch,
        earlier: &[&SearchSpace],
    ) {
        let listing = Listing::new(lowering, arch, earlier);
        self.raw += other.raw;
        self.append(
            other.legal.into_iter().filter(|c| !listing.lists(c)),
            other.rejected,
        );
    }

    /// Appends `legal` after these configs and adds `rejected` to the counts.
    fn append(
        &mut self,
        legal: impl IntoIterator<Item = PerfConfig>,
        rejected: BTreeMap<RejectReasonKind, u64>,
    ) {
        self.legal.extend(legal);
        for (k, n) in rejected {
            *self.rejected.entry(k).or_default() += n;
        }
    }
}

/// Enumerates the legal configs of a problem.
pub fn enumerate_legal(problem: &ConvProblem, arch: &Arch, space: &SearchSpace) -> Enumeration {
    enumerate_lowered(&lower(problem), arch, space)
}

/// [`enumerate_legal`] for a problem already lowered.
pub fn enumerate_lowered(lowering: &Lowering, arch: &Arch, space: &SearchSpace) -> Enumeration {
    let checker = Checker::new(lowering, arch).with_pruning(space.pruning());
    let mut rules = vec![Vec::new(); Field::LEVELS];
    for r in Rule::ALL {
        rules[r.level()].push(r);
    }
    let levels: Vec<Vec<Field>> = (0..Field::LEVELS)
        .map(|l| Field::at_level(l).collect())
        .collect();
    let lens = space.lengths();
    // below[l]: raw points under one choice of level l's parameters.
    let mut below = vec![1u64; Field::LEVELS];
    for l in (0..Field::LEVELS - 1).rev() {
        below[l] = below[l + 1]
            * levels[l + 1]
                .iter()
                .map(|&f| lens[f] as u64)
                .product::<u64>();
    }
    let raw = space.raw_size();
    let mut walk = Walk {
        space,
        checker: &checker,
        rules: &rules,
        levels: &levels,
        lens,
        below,
        ix: PerField::default(),
        out: Enumeration::empty(0),
    };
    let mut out = Enumeration::empty(raw);
    if raw == 0 {
        return out;
    }
    // The outermost level's points (tile shapes and paths: hundreds) are walked in parallel,
    // each into its own list, and the lists joined in order: the same result as one walk
    // (a bf16 problem has ~3.5 M legal configs; 10-25% faster on 2 cores, more cores untimed).
    let mut outer = Vec::new();
    loop {
        outer.push(walk.ix);
        if !walk.advance(0) {
            break;
        }
    }
    let parts: Vec<Enumeration> = outer
        .into_par_iter()
        .map(|ix| {
            let mut w = Walk {
                ix,
                out: Enumeration::empty(0),
                ..walk.clone()
            };
            w.visit(0);
            w.out
        })
        .collect();
    out.legal
        .reserve_exact(parts.iter().map(|p| p.legal.len()).sum());
    for part in parts {
        out.append(part.legal, part.rejected);
    }
    out.first = out.legal.len();
    out
}

#[derive(Clone)]
struct Walk<'a> {
    space: &'a SearchSpace,
    checker: &'a Checker,
    /// Rules by level.
    rules: &'a [Vec<Rule>],
    /// Fields by level, in nesting order.
    levels: &'a [Vec<Field>],
    lens: PerField<usize>,
    below: Vec<u64>,
    ix: PerField<usize>,
    out: Enumeration,
}

impl Walk<'_> {
    /// Every point of `level`'s sub-product (and below it), from its first.
    fn level(&mut self, level: usize) {
        for &f in &self.levels[level] {
            self.ix[f] = 0;
        }
        loop {
            self.visit(level);
            if !self.advance(level) {
                break;
            }
        }
    }

    /// The point `ix` of `level`: its rules, then the levels below unless one failed.
    fn visit(&mut self, level: usize) {
        // Fields of later levels hold their first values; no rule of this level reads them.
        let cfg = self.space.params.pick(&self.ix);
        let failed = self.rules[level]
            .iter()
            .find_map(|&r| self.checker.rule(r, &cfg).err());
        match failed {
            Some(rej) => *self.out.rejected.entry(rej.kind()).or_insert(0) += self.below[level],
            None if level + 1 == self.levels.len() => self.out.legal.push(cfg),
            None => self.level(level + 1),
        }
    }

    /// Moves `ix` to the next point of `level`'s sub-product (last field fastest); false
    /// after the last.
    fn advance(&mut self, level: usize) -> bool {
        for &f in self.levels[level].iter().rev() {
            self.ix[f] += 1;
            if self.ix[f] < self.lens[f] {
                return true;
            }
            self.ix[f] = 0;
        }
        false
    }
}

/// Up to `n` distinct legal configs of a problem, chosen at random (reproducibly from `seed`)
/// and returned in enumeration order: candidates for code-generation and runtime tests.
pub fn sample_legal(
    problem: &ConvProblem,
    arch: &Arch,
    space: &SearchSpace,
    n: usize,
    seed: u64,
) -> Vec<PerfConfig> {
    let legal = enumerate_legal(problem, arch, space).legal;
    if legal.len() <= n {
        return legal;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut picked = rand::seq::index::sample(&mut rng, legal.len(), n).into_vec();
    picked.sort_unstable();
    picked.into_iter().map(|i| legal[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legality::Rejection;

    fn problem(line: &str) -> ConvProblem {
        line.parse().unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// A smaller space so the brute-force comparison stays quick in debug builds.
    fn small_space(arch: &Arch) -> SearchSpace {
        let mut s = SearchSpace::default_for(arch);
        s.params.block_m = vec![32, 64, 256];
        s.params.block_n = vec![32, 128];
        s.params.warp_m = vec![16, 32, 64];
        s.params.warp_n = vec![16, 64];
        s.params.stages = vec![1, 4];
        s.params.split_k = vec![1, 4];
        s.params.raster = vec![1, 8];
        s
    }

    /// The enumeration equals filtering the raw product through the rules one point at a time,
    /// and counts each rejection under the rule `check` reports first.
    fn matches_brute_force(p: &ConvProblem, arch: &Arch) {
        let space = small_space(arch);
        let e = enumerate_legal(p, arch, &space);
        let checker = Checker::new(&lower(p), arch).with_pruning(space.pruning());
        let mut legal = Vec::new();
        let mut rejected: BTreeMap<RejectReasonKind, u64> = BTreeMap::new();
        for cfg in space.iter_raw() {
            match checker.check(&cfg) {
                Ok(_) => legal.push(cfg),
                Err(r) => *rejected.entry(r.kind()).or_insert(0) += 1,
            }
        }
        assert_eq!(e.raw, space.raw_size());
        assert_eq!(e.legal, legal, "{p}");
        assert_eq!(e.rejected, rejected, "{p}");
        assert!(!e.legal.is_empty(), "{p} on {arch}: nothing legal");
    }

    #[test]
    fn enumeration_matches_pointwise_check() {
        matches_brute_force(
            &problem(
                "convbfp16 -n 16 -c 256 -H 1 -W 64 -k 256 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
            ),
            &Arch::SM_90,
        );
        matches_brute_force(
            &problem(
                "convfp16 -n 8 -c 64 -H 14 -W 14 -k 128 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            ),
            &Arch::GFX90A,
        );
        matches_brute_force(
            &problem("conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 1 -x 1 -p 1 -q 1 -F 2"),
            &Arch::SM_80,
        );
        matches_brute_force(
            &problem("convbfp16 -n 4 -c 3 -H 32 -W 32 -k 64 -y 7 -x 7 -p 3 -q 3 -u 2 -v 2 -F 1 --layout NHWC"),
            &Arch::GFX908,
        );
    }

    /// Whether `a` and `b` compile to the same module for the H200.
    fn same_ptx(l: &Lowering, a: &PerfConfig, b: &PerfConfig) -> bool {
        let module = |c| {
            crate::codegen::compile_conv(l, c, crate::codegen::Target::of(Arch::SM_90))
                .unwrap()
                .module
        };
        module(a) == module(b)
    }

    #[test]
    fn an_unread_vc_is_enumerated_once() {
        // Backward weight with split-K slices adding by atomics: the epilogue never stages C,
        // so `vc` changes no instruction (the code generator agrees below) and the search
        // lists one value of it; where C is staged, every width is still listed.
        let p = problem(
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        );
        let arch = Arch::SM_90;
        let space = small_space(&arch);
        let e = enumerate_legal(&p, &arch, &space);
        let (dir, smallest) = (p.direction(), space.pruning().smallest[Field::VecC]);
        let unread: Vec<&PerfConfig> = e.legal.iter().filter(|c| !c.reads_vec_c(dir)).collect();
        assert!(!unread.is_empty());
        assert!(unread.iter().all(|c| c.vec_c == smallest), "{}", unread[0]);
        assert!(e
            .legal
            .iter()
            .any(|c| c.reads_vec_c(dir) && c.vec_c != smallest));
        let twin = unread
            .iter()
            .map(|c| PerfConfig { vec_c: 4, ..**c })
            .find(|c| crate::legality::check(&lower(&p), c, &arch).is_ok())
            .expect("a legal twin with vc=4");
        let one = PerfConfig {
            vec_c: smallest,
            ..twin
        };
        assert!(
            same_ptx(&lower(&p), &one, &twin),
            "{one} and {twin} compile differently"
        );
    }

    #[test]
    fn an_operand_width_tma_does_not_read_is_enumerated_once() {
        // bf16 forward, NHWC: TMA loads both operands of a warp-specialised config (`ld=ws`),
        // so `va` and `vb` change no instruction (the code generator agrees below) and the
        // Hopper space's enumeration admits only their smallest values.
        let p = problem(
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
        );
        let (arch, space) = (Arch::SM_90, crate::space::builtin::hopper());
        let l = lower(&p);
        let pruned = Checker::new(&l, &arch).with_pruning(space.pruning());
        let smallest = space.pruning().smallest;
        let one: PerfConfig = "v3:bm=64,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,\
                               rs=1,mma=wg,red=atomic,ld=ws"
            .parse()
            .unwrap();
        let kept = PerfConfig {
            vec_a: smallest[Field::VecA],
            vec_b: smallest[Field::VecB],
            ..one
        };
        assert_ne!(one, kept);
        assert!(crate::legality::check(&l, &one, &arch).is_ok());
        assert!(pruned.check(&kept).is_ok(), "{kept}");
        assert!(
            matches!(pruned.check(&one), Err(Rejection::WidthUnread { .. })),
            "{:?}",
            pruned.check(&one)
        );
        assert!(
            same_ptx(&l, &one, &kept),
            "{one} and {kept} compile differently"
        );
    }

    #[test]
    fn rule_order_follows_loop_levels() {
        let levels: Vec<usize> = Rule::ALL.iter().map(|r| r.level()).collect();
        assert!(levels.windows(2).all(|w| w[0] <= w[1]), "{levels:?}");
        assert!(levels.iter().all(|&l| l < Field::LEVELS), "{levels:?}");
    }

    #[test]
    fn full_space_counts_add_up_and_split_k_only_for_bwd_weight() {
        let arch = Arch::SM_90;
        let space = SearchSpace::default_for(&arch);
        let p = problem(
            "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        );
        let e = enumerate_legal(&p, &arch, &space);
        assert_eq!(
            e.raw,
            5 * 5 * 3 * 4 * 5 * 4 * 4 * 4 * 4 * 2 * 6 * 3 * 3 * 3 * 2 * 2
        );
        // bwd-data NHWC: A (the filter) runs along M, so wgmma reads it M-major in blocks of
        // a swizzle atom's rows, which a warpgroup tile of 64 or 128 rows makes 64-row blocks.
        let wg: Vec<_> = e.legal.iter().filter(|c| c.mma.is_wgmma()).collect();
        assert!(!wg.is_empty() && wg.iter().all(|c| c.block_m % 64 == 0 && c.block_k == 64));
        assert!(wg.iter().any(|c| c.block_m > 64));
        assert_eq!(
            e.legal.len() as u64 + e.rejected.values().sum::<u64>(),
            e.raw
        );
        assert!(e.legal.iter().all(|c| c.split_k == 1));
        assert!(e.rejected[&RejectReasonKind::SplitK] > 0);
        // Every legal config really is legal without the space's pruning.
        let l = lower(&p);
        for cfg in e.legal.iter().step_by(997) {
            crate::legality::check(&l, cfg, &arch).unwrap();
        }
        let w = problem(
            "convbfp16 -n 16 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
        );
        let e = enumerate_legal(&w, &arch, &space);
        assert!(e.legal.iter().any(|c| c.split_k == 16));
        // Both reductions of split-K, the fix-up never without it, stream-K never with it.
        use crate::config::Reduction;
        assert!(e
            .legal
            .iter()
            .any(|c| c.split_k == 16 && c.red == Reduction::Fixup));
        assert!(e.legal.iter().all(|c| match c.red {
            Reduction::Atomic => true,
            Reduction::Fixup => c.split_k > 1,
            Reduction::Stream => c.split_k == 1,
        }));
        // bwd-weight NHWC: B (the pixels' channels and taps) is N-major; wgmma takes it in 16-
        // and 32-row swizzle atoms too, so tiles of 16 and 32 columns are legal, and every
        // legal one is whole atoms.
        let wg: Vec<_> = e.legal.iter().filter(|c| c.mma.is_wgmma()).collect();
        for bn in [16, 32] {
            assert!(
                wg.iter().any(|c| c.block_n == bn && c.warp_n == bn),
                "bn {bn}"
            );
        }
        assert!(wg.iter().all(|c| c.warp_n % 16 == 0 && c.block_n % 16 == 0));
    }

    #[test]
    fn tiny_problem_keeps_the_smallest_tiles() {
        // M = K = 3: every bm above the smallest in the space is oversized, but bm = 16 stays.
        let arch = Arch::SM_90;
        let space = SearchSpace::default_for(&arch);
        let p = problem("conv -n 1 -c 3 -H 8 -W 8 -k 3 -y 1 -x 1 -F 1");
        let e = enumerate_legal(&p, &arch, &space);
        assert!(!e.legal.is_empty());
        assert!(e.legal.iter().all(|c| c.block_m == 16 && c.block_k == 16));
        assert!(
            e.legal.iter().all(|c| c.raster == 1),
            "one block row: raster is moot"
        );
        let big = e.legal[0];
        let r = Checker::new(&lower(&p), &arch)
            .with_pruning(space.pruning())
            .check(&PerfConfig { block_m: 32, ..big });
        assert!(
            matches!(r, Err(Rejection::Oversized { param: "bm", .. })),
            "{r:?}"
        );
    }

    #[test]
    fn sampling_is_reproducible_and_legal() {
        let arch = Arch::GFX942;
        let space = SearchSpace::default_for(&arch);
        let p =
            problem("convfp16 -n 4 -c 64 -H 16 -W 16 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC");
        let a = sample_legal(&p, &arch, &space, 20, 7);
        assert_eq!(a.len(), 20);
        assert_eq!(a, sample_legal(&p, &arch, &space, 20, 7));
        assert_ne!(a, sample_legal(&p, &arch, &space, 20, 8));
        let l = lower(&p);
        for c in &a {
            crate::legality::check(&l, c, &arch).unwrap();
        }
    }
}
