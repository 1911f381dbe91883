//! The split-K rules: `sk` splits K on the backward-weight pass only, leaving every slice of
//! every sub-GEMM at least one `bk`; `red` says how the slices are added up. `red=fixup` only
//! means something with split-K (a second name for the same kernel would double the space);
//! `red=stream` splits K itself (so `sk` is 1), not on `ld=tma` or `ld=wspp`
//! ([`PerfConfig::stream_refusal`]), and only where it helps: the data-parallel schedule's last
//! wave under half full (CUTLASS's rule) and at least [`StreamK::MIN_PER_BLOCK`] K tiles per
//! block in the stream-K region. Either workspace of partial tiles must be addressable with the
//! kernels' i32 indices.

use super::Checker;
use crate::config::{Cut, PerfConfig, Reduction, StreamCut, StreamK};
use crate::legality::rejection::Rejection;
use crate::problem::Direction;

/// Most f32 partials a split-K fix-up may keep: the kernels index the workspace in i32.
pub(crate) const MAX_FIXUP_PARTIALS: u64 = i32::MAX as u64;

impl Checker {
    /// Split-K (`sk`): backward weights only, every slice at least one `bk` of each sub-GEMM.
    pub(super) fn split_k(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.split_k <= 1 {
            return Ok(());
        }
        let direction = self.problem.direction();
        if direction != Direction::BwdWeight {
            return Err(Rejection::SplitKDirection {
                split_k: cfg.split_k,
                direction: direction.name(),
            });
        }
        for (gemm, &k_len) in self.k_lens.iter().enumerate() {
            let per_split = k_len / cfg.split_k;
            if per_split < cfg.block_k {
                return Err(Rejection::SplitKTooShort {
                    split_k: cfg.split_k,
                    k_len,
                    per_split,
                    block_k: cfg.block_k,
                    gemm: gemm as u32,
                });
            }
        }
        Ok(())
    }

    pub(in crate::legality) fn reduction(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        match cfg.red {
            Reduction::Atomic => return Ok(()),
            Reduction::Stream => return self.stream_k(cfg),
            Reduction::Fixup => {}
        }
        if cfg.split_k <= 1 {
            return Err(Rejection::ReductionWithoutSplit {
                red: cfg.red.name(),
            });
        }
        for (gemm, &[g, m, n]) in self.gmn.iter().enumerate() {
            let partials = cfg.fixup_partials(g, m, n);
            if partials > MAX_FIXUP_PARTIALS {
                return Err(Rejection::FixupWorkspace {
                    partials,
                    max: MAX_FIXUP_PARTIALS,
                    gemm: gemm as u32,
                });
            }
        }
        Ok(())
    }

    /// `cut=aligned`: a stream-K config whose aligned cut applies to some sub-GEMM (elsewhere
    /// it would be the `cut=tile` kernel again).
    pub(in crate::legality) fn cut(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        if cfg.cut == Cut::Tile {
            return Ok(());
        }
        let why = |why: String| Err(Rejection::StreamK { why });
        if cfg.red != Reduction::Stream {
            return why(format!(
                "cut=aligned cuts stream-K's region; red={} has none",
                cfg.red.name()
            ));
        }
        let aligned = self
            .stream_schedules(cfg)
            .any(|(_, sk)| sk.cut != StreamCut::Contiguous);
        if !aligned {
            let (num, den) = StreamK::ALIGNED_SLACK;
            return why(format!(
                "cut=aligned: no sub-GEMM's stream-K region has fewer tiles than SMs, pieces and \
                 tails of at least {} K tiles and a busiest block within {num}/{den} of the \
                 tile-major cut's: it would run tile-major",
                StreamK::MIN_PER_BLOCK
            ));
        }
        Ok(())
    }

    /// Each sub-GEMM's stream-K schedule under `cfg` (a `red=stream` config: its tiles, K tiles
    /// and cut) on this arch's SMs, from [`PerfConfig::stream_k`] as the code generator takes
    /// it: what the `red=stream` and `cut` rules judge.
    fn stream_schedules<'a>(
        &'a self,
        cfg: &'a PerfConfig,
    ) -> impl Iterator<Item = (usize, StreamK)> + 'a {
        let units = self.arch.compute_units;
        let gemms = self.gmn.iter().zip(&self.k_lens).enumerate();
        gemms.filter_map(move |(gemm, (&[g, m, n], &k))| {
            let tiles = g * m.div_ceil(cfg.block_m.max(1)) * n.div_ceil(cfg.block_n.max(1));
            let k_tiles = k.div_ceil(cfg.block_k.max(1));
            Some((gemm, cfg.stream_k(tiles, k_tiles, units)?))
        })
    }

    fn stream_k(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let why = |why: String| Err(Rejection::StreamK { why });
        if let Some(w) = cfg.stream_refusal() {
            return why(w);
        }
        let units = self.arch.compute_units;
        for (gemm, sk) in self.stream_schedules(cfg) {
            let tiles = sk.tiles;
            let tail = StreamK::data_parallel_tail(tiles, units);
            if tail == 0 || 2 * tail >= units {
                return why(format!(
                    "one block per tile fills the last wave well enough ({tiles} tiles on {units} \
                     SMs: {} in the last wave; sub-GEMM {gemm})",
                    if tail == 0 { units } else { tail }
                ));
            }
            if sk.per_block < StreamK::MIN_PER_BLOCK {
                return why(format!(
                    "{} K tiles per block, fewer than {} (sub-GEMM {gemm})",
                    sk.per_block,
                    StreamK::MIN_PER_BLOCK
                ));
            }
            let partials = sk.fixup(cfg.block_m, cfg.block_n).partials();
            if partials > MAX_FIXUP_PARTIALS {
                return Err(Rejection::FixupWorkspace {
                    partials,
                    max: MAX_FIXUP_PARTIALS,
                    gemm: gemm as u32,
                });
            }
        }
        Ok(())
    }
}
