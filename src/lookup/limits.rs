//! What a lookup's answer must satisfy besides legality: inside a search space the caller
//! narrowed (`--space FILE`), and, when asked, the same bits on every run.

use super::LegalityCheck;
use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::db::ConfigCheck;
use crate::legality::Checker;
use crate::lowering::Lowering;
use crate::problem::ConvProblem;
use crate::space::{Enumeration, SearchSpace};

/// The caller's limits on a lookup's answers (none by default). Every source obeys them: an
/// exact entry that does not is passed over with the reason, as an illegal one is, and the
/// fallback and the heuristic choose among the configs that do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits<'a> {
    /// Only configs of this space: a user who narrows the space (no split-K, fewer stages)
    /// means every answer, not only the guess, to stay inside it.
    pub space: Option<&'a SearchSpace>,
    /// Only configs whose results do not depend on the order the GPU runs their blocks in
    /// (no floating-point atomics: [`PerfConfig::adds_by_atomics`]), as PyTorch's
    /// `torch.use_deterministic_algorithms(True)` demands of every kernel it runs.
    pub deterministic: bool,
}

impl<'a> Limits<'a> {
    /// Only a space's configs (none: no limit).
    pub fn space(space: Option<&'a SearchSpace>) -> Limits<'a> {
        Limits {
            space,
            deterministic: false,
        }
    }

    /// Why `c` is outside the limits for `problem`, if it is.
    pub fn refusal(&self, problem: &ConvProblem, c: &PerfConfig) -> Option<&'static str> {
        if self.space.is_some_and(|s| !s.contains(c)) {
            return Some("outside the given search space");
        }
        if self.deterministic && c.adds_by_atomics(problem.direction()) {
            return Some("adds its sums with atomics, and deterministic results were asked for");
        }
        None
    }

    /// Whether `c` is inside the limits for `problem`.
    pub fn admit(&self, problem: &ConvProblem, c: &PerfConfig) -> bool {
        self.refusal(problem, c).is_none()
    }

    /// The search spaces a search inside the limits enumerates: the limits' space, else
    /// `default` (the arch's default space) and the spaces the built-in search adds for `l`
    /// ([`crate::space::extra_spaces`]).
    pub fn spaces<'s>(
        &self,
        default: &'s SearchSpace,
        l: &Lowering,
        arch: &Arch,
    ) -> Vec<&'s SearchSpace>
    where
        'a: 's,
    {
        crate::space::search_spaces(l, arch, self.space.unwrap_or(default), self.space.is_some())
    }

    /// The words the lookup's reason adds for the limits (empty without any).
    pub fn words(&self) -> &'static str {
        match (self.space.is_some(), self.deterministic) {
            (false, false) => "",
            (true, false) => " in the given space",
            (false, true) => " without atomics (deterministic)",
            (true, true) => " in the given space and without atomics (deterministic)",
        }
    }
}

/// `legal` without configs that add by atomics: each becomes its `red=fixup` twin
/// ([`PerfConfig::without_atomics`]) where that is legal (the depthwise kernel's partials,
/// split-K's in-kernel fix-up), else goes; order kept, no config twice. What a deterministic
/// search measures and a deterministic lookup's heuristic chooses among.
pub fn without_atomics(lowering: &Lowering, arch: &Arch, legal: &mut Vec<PerfConfig>) {
    let checker = Checker::new(lowering, arch);
    without_atomics_listed(lowering, &checker, legal, &Default::default());
}

/// [`without_atomics`] over an enumeration, its first space's configs still its prefix
/// ([`Enumeration::first`]).
pub fn enumeration_without_atomics(lowering: &Lowering, arch: &Arch, e: &mut Enumeration) {
    let checker = Checker::new(lowering, arch);
    let mut rest = e.legal.split_off(e.first.min(e.legal.len()));
    without_atomics_listed(lowering, &checker, &mut e.legal, &Default::default());
    let first: std::collections::HashSet<PerfConfig> = e.legal.iter().copied().collect();
    without_atomics_listed(lowering, &checker, &mut rest, &first);
    e.first = e.legal.len();
    e.legal.extend(rest);
}

/// [`without_atomics`], leaving out the configs (and twins) already in `before`.
fn without_atomics_listed(
    lowering: &Lowering,
    checker: &Checker,
    legal: &mut Vec<PerfConfig>,
    before: &std::collections::HashSet<PerfConfig>,
) {
    let direction = lowering.problem.direction();
    // A twin the list holds is legal already (the depthwise kernel's backward weight lists
    // both sums): no second check.
    let listed: std::collections::HashSet<PerfConfig> = legal.iter().copied().collect();
    let mut seen = before.clone();
    let kept: Vec<PerfConfig> = legal
        .iter()
        .filter_map(|&c| {
            if !c.adds_by_atomics(direction) {
                return Some(c);
            }
            let twin = c.without_atomics(direction);
            (listed.contains(&twin) || checker.check(&twin).is_ok()).then_some(twin)
        })
        .filter(|c| seen.insert(*c))
        .collect();
    *legal = kept;
}

impl ConfigCheck for Limits<'_> {
    fn check(&self, problem: &ConvProblem, arch: &str, config: &str) -> Result<(), String> {
        LegalityCheck.check(problem, arch, config)?;
        match config.parse::<PerfConfig>() {
            Ok(cfg) => self
                .refusal(problem, &cfg)
                .map_or(Ok(()), |why| Err(why.into())),
            Err(_) => Ok(()),
        }
    }
}
