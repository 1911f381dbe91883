//! Which configs a search's enumeration lists, and the one name it lists a kernel under when
//! configs that differ only in fields the kernel does not read name the same kernel.
//!
//! Why: a space's pruning enumerates each such kernel once, at the space's smallest values of
//! the unread fields ([`Checker::renamed`]), but configs arrive under other names too: database
//! entries tuned before the pruning, and so the fallback's picks, the first-use times measured
//! on them. Found under the enumeration's name, such a config is the point a search walks
//! from, and the search does not time its kernel again under the other name.

use super::space_file::SearchSpace;
use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::legality::Checker;
use crate::lowering::Lowering;

/// The enumeration of some spaces for one problem, each with its pruning, asked per config
/// (no set of the millions of configs it lists).
pub struct Listing<'s> {
    spaces: Vec<(&'s SearchSpace, Checker)>,
    /// Legality without a space's pruning: an unlisted kernel's name must run.
    plain: Checker,
}

impl<'s> Listing<'s> {
    /// The listing of `spaces`' enumerations of `lowering` on `arch`.
    pub fn new(lowering: &Lowering, arch: &Arch, spaces: &[&'s SearchSpace]) -> Self {
        Listing {
            spaces: spaces
                .iter()
                .map(|s| (*s, Checker::new(lowering, arch).with_pruning(s.pruning())))
                .collect(),
            plain: Checker::new(lowering, arch),
        }
    }

    /// The spaces whose enumeration this is.
    pub fn spaces(&self) -> Vec<&'s SearchSpace> {
        self.spaces.iter().map(|(s, _)| *s).collect()
    }

    /// Whether `c` may run for the problem: legal, whatever the spaces' pruning says.
    pub fn runs(&self, c: &PerfConfig) -> bool {
        self.plain.check(c).is_ok()
    }

    /// Whether a space's enumeration lists `c`: the space holds its values and the space's
    /// pruning admits it.
    pub fn lists(&self, c: &PerfConfig) -> bool {
        self.spaces
            .iter()
            .any(|(s, k)| s.contains(c) && k.check(c).is_ok())
    }

    /// The name under which the enumeration knows `c`'s kernel, and whether it lists it: `c`
    /// where listed; else the name a space's pruning gives it where that is listed; else (a
    /// kernel no space lists, a split-K the spaces lack) the first pruning's name for it that
    /// is legal, so that its aliases share one name.
    pub fn name(&self, c: &PerfConfig) -> (PerfConfig, bool) {
        if self.lists(c) {
            return (*c, true);
        }
        let names: Vec<PerfConfig> = self.spaces.iter().map(|(_, k)| k.renamed(c)).collect();
        match names.iter().find(|n| *n != c && self.lists(n)) {
            Some(n) => (*n, true),
            None => {
                let legal = names.into_iter().find(|n| n != c && self.runs(n));
                (legal.unwrap_or(*c), false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Field;
    use crate::lowering::lower;

    /// A warp-specialised bf16 config under the widths a database entry carries (TMA loads
    /// both operands, so `va` and `vb` change no instruction): the Hopper space lists it under
    /// its smallest widths, and a pipeline depth the space lacks keeps it unlisted, with one
    /// name for its aliases.
    #[test]
    fn an_unread_width_is_listed_under_the_smallest() {
        let l = lower(
            &"convbfp16 -n 8 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
                .parse()
                .unwrap(),
        );
        let arch = Arch::SM_90;
        let default = SearchSpace::default_for(&arch);
        let spaces = super::super::search_spaces(&l, &arch, &default, false);
        let listing = Listing::new(&l, &arch, &spaces);
        let wide: PerfConfig = "v3:bm=64,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,\
                                sk=1,rs=1,mma=wg,red=atomic,ld=ws"
            .parse()
            .unwrap();
        assert!(crate::legality::check(&l, &wide, &arch).is_ok());
        assert!(!listing.lists(&wide));
        let (name, listed) = listing.name(&wide);
        assert!(listed, "{name}");
        let smallest = super::super::hopper().pruning().smallest;
        assert_eq!(name.vec_a, smallest[Field::VecA]);
        assert_eq!(name.vec_b, smallest[Field::VecB]);
        assert_eq!(
            PerfConfig {
                vec_a: 8,
                vec_b: 8,
                ..name
            },
            wide
        );
        // A listed config is its own name.
        assert_eq!(listing.name(&name), (name, true));
        // Deeper than the spaces' pipelines: unlisted, and both widths' aliases share a name.
        let off = PerfConfig { stages: 9, ..wide };
        let other = PerfConfig { vec_a: 4, ..off };
        let (a, la) = listing.name(&off);
        let (b, lb) = listing.name(&other);
        assert!(!la && !lb);
        assert_eq!(a, b);
        assert_eq!(a.stages, 9);
        assert!(crate::legality::check(&l, &a, &arch).is_ok(), "{a}");
    }
}
