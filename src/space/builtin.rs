//! Which built-in spaces a problem is tuned over when no `--space` is given.
//!
//! The vendor's space (`search-spaces/nvidia.toml`) leaves the Hopper load paths out (`ld`,
//! `pk`: listed, the product would pass [`super::MAX_RAW_POINTS`]), so a 16-bit problem on an
//! arch with wgmma and TMA is also enumerated over `search-spaces/nvidia-hopper.toml`, where the
//! shipped sm_90 winners come from. On the H200 (session 11, `scripts/session11/call4.sh`) a
//! default `--time 10` search of three problems outside the suite ended at 61.0, 55.3 and
//! 36.9 µs where a 40 s search of the Hopper space found 44.5, 43.5 and 33.0 (cuDNN 56.5, 48.4,
//! 22.6): the vendor's space alone could not reach them.

use super::{enumerate_lowered, Enumeration, SearchSpace};
use crate::arch::Arch;
use crate::lowering::Lowering;
use rayon::prelude::*;
use std::sync::OnceLock;

const NVIDIA_HOPPER_TOML: &str = include_str!("../../search-spaces/nvidia-hopper.toml");

/// The Hopper space, embedded (parsed once).
pub fn hopper() -> &'static SearchSpace {
    static HOPPER: OnceLock<SearchSpace> = OnceLock::new();
    HOPPER.get_or_init(|| {
        // The embedded file is checked by this module's tests; failing here is a build bug.
        SearchSpace::from_toml(
            NVIDIA_HOPPER_TOML,
            "<embedded search-spaces/nvidia-hopper.toml>",
        )
        .unwrap_or_else(|e| panic!("embedded search space is invalid: {e}"))
    })
}

/// Whether `arch` runs the Hopper space's kernels (wgmma and TMA).
fn has_hopper_paths(arch: &Arch) -> bool {
    arch.features.wgmma.is_some() && arch.features.tma
}

/// The spaces besides the vendor's that a problem's built-in search enumerates: the Hopper
/// space for 16-bit problems where the arch has wgmma and TMA, else none.
pub fn extra_spaces(lowering: &Lowering, arch: &Arch) -> Vec<&'static SearchSpace> {
    if lowering.problem.dtype().bytes() == 2 && has_hopper_paths(arch) {
        vec![hopper()]
    } else {
        Vec::new()
    }
}

/// The spaces a search enumerates ([`enumerate_search`]): `space` alone when the user gave it,
/// else it and [`extra_spaces`].
pub fn search_spaces<'s>(
    lowering: &Lowering,
    arch: &Arch,
    space: &'s SearchSpace,
    given: bool,
) -> Vec<&'s SearchSpace> {
    let extras = if given {
        Vec::new()
    } else {
        extra_spaces(lowering, arch)
    };
    std::iter::once(space).chain(extras).collect()
}

/// How reports name the built-in search on `arch`.
pub fn builtin_origin(arch: &Arch) -> String {
    let hopper = if has_hopper_paths(arch) {
        " (+ nvidia-hopper for 16-bit problems)"
    } else {
        ""
    };
    format!("built-in {}{hopper}", arch.vendor.name())
}

/// The legal candidates of the built-in search: the vendor's `space`, then each of
/// [`extra_spaces`], each config once. The spaces are walked at the same time (a walk is
/// parallel only over its outermost level, and the tuner waits for this before its first
/// candidate: 0.88 s for a bf16 bwd-weight 3×3 problem's 4 M configs on the H200 host).
pub fn enumerate_builtin(lowering: &Lowering, arch: &Arch, space: &SearchSpace) -> Enumeration {
    let spaces = search_spaces(lowering, arch, space, false);
    let extras = &spaces[1..];
    let (mut e, more) = rayon::join(
        || enumerate_lowered(lowering, arch, space),
        || {
            extras
                .par_iter()
                .map(|x| enumerate_lowered(lowering, arch, x))
                .collect::<Vec<_>>()
        },
    );
    let mut earlier = vec![space];
    for (extra, found) in extras.iter().zip(more) {
        e.absorb(found, lowering, arch, &earlier);
        earlier.push(extra);
    }
    e
}

/// The candidates a search enumerates: `space` as it is when the user gave it (`--space`),
/// else the built-in search ([`enumerate_builtin`]). The tuner, the dry run, `convtune space`
/// and the lookup's heuristic all ask here.
pub fn enumerate_search(
    lowering: &Lowering,
    arch: &Arch,
    space: &SearchSpace,
    given: bool,
) -> Enumeration {
    if given {
        enumerate_lowered(lowering, arch, space)
    } else {
        enumerate_builtin(lowering, arch, space)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoadPath, PerfConfig};
    use crate::lowering::lower;

    #[test]
    fn sixteen_bit_problems_on_hopper_get_the_hopper_load_paths() {
        let space = SearchSpace::default_for(&Arch::SM_90);
        let bf16 = lower(
            &"convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
                .parse()
                .unwrap(),
        );
        let vendor = enumerate_lowered(&bf16, &Arch::SM_90, &space).legal;
        let both = enumerate_builtin(&bf16, &Arch::SM_90, &space).legal;
        assert!(!vendor.iter().any(|c| c.ld == LoadPath::Ws));
        assert!(both.iter().any(|c| c.ld == LoadPath::Ws));
        let mut unique = both.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), both.len(), "a config listed twice");
        assert!(both.starts_with(&vendor));
        // f32, and sm_80 (no wgmma): the vendor's space alone.
        let f32 = lower(
            &"conv -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1"
                .parse()
                .unwrap(),
        );
        assert!(extra_spaces(&f32, &Arch::SM_90).is_empty());
        assert!(extra_spaces(&bf16, &Arch::SM_80).is_empty());
    }

    /// The join drops exactly the Hopper space's configs the vendor's list already holds
    /// (checked per config, not by hashing the vendor's list): every config of either space's
    /// enumeration once, the vendor's first in their order. The bwd-weight problem's split-K
    /// values overlap between the two spaces.
    #[test]
    fn the_join_is_the_union_of_both_lists_each_config_once() {
        use std::collections::HashSet;
        let space = SearchSpace::default_for(&Arch::SM_90);
        let mut overlap = 0;
        for p in [
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "convfp16 -n 4 -c 96 -H 9 -W 9 -k 32 -y 1 -x 1 -F 2 --layout NHWC",
        ] {
            let l = lower(&p.parse().unwrap());
            let vendor = enumerate_lowered(&l, &Arch::SM_90, &space).legal;
            let hopper = enumerate_lowered(&l, &Arch::SM_90, hopper()).legal;
            let both = enumerate_builtin(&l, &Arch::SM_90, &space).legal;
            assert!(both.starts_with(&vendor), "{p}");
            let union: HashSet<PerfConfig> = vendor.iter().chain(&hopper).copied().collect();
            assert_eq!(
                both.len(),
                union.len(),
                "{p}: a config listed twice or lost"
            );
            assert_eq!(both.iter().copied().collect::<HashSet<_>>(), union, "{p}");
            let vendor: HashSet<PerfConfig> = vendor.into_iter().collect();
            overlap += hopper.iter().filter(|c| vendor.contains(c)).count();
        }
        assert!(overlap > 0, "the premise: the two spaces share configs");
    }

    /// One kernel, one name across the spaces too: the vendor's space lists `va`/`vb` from 1
    /// and the Hopper space from 2, so a config that TMA loads and that both spaces held would
    /// keep two names. The vendor's space has no `ld` (every config of it reads its operand
    /// widths) and both list `vc` from 1, so the join holds no two configs that differ only in
    /// widths their kernel does not read ([`Checker::reads_width`]).
    #[test]
    fn the_join_names_each_kernel_once() {
        use crate::legality::Checker;
        use std::collections::HashSet;
        let space = SearchSpace::default_for(&Arch::SM_90);
        for p in [
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
            "convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
            "convfp16 -n 4 -c 96 -H 9 -W 9 -k 32 -y 1 -x 1 -F 2 --layout NHWC",
        ] {
            let l = lower(&p.parse().unwrap());
            let checker = Checker::new(&l, &Arch::SM_90);
            let both = enumerate_builtin(&l, &Arch::SM_90, &space).legal;
            let kernels: HashSet<PerfConfig> = both
                .iter()
                .map(|c| {
                    let mut k = *c;
                    for (i, w) in [&mut k.vec_a, &mut k.vec_b, &mut k.vec_c]
                        .into_iter()
                        .enumerate()
                    {
                        if !checker.reads_width(c, i) {
                            *w = 0;
                        }
                    }
                    k
                })
                .collect();
            assert_eq!(
                kernels.len(),
                both.len(),
                "{p}: a kernel listed under two names"
            );
        }
    }
}
