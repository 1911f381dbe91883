//! The search space's pruning rules ([`Pruning`]): limits on threads and warps, and tiles or
//! raster groups larger than the problem needs. They cut configs that could run but are not
//! worth timing, so they run only in enumeration ([`Checker::with_pruning`]), never at lookup.

use super::{Checker, Rule};
use crate::config::{Field, PerField, PerfConfig};
use crate::legality::rejection::Rejection;
use crate::lowering::Dim;

/// Limits a search space adds on top of legality: they cut candidates that could run but are
/// not worth timing, so a tuned config is never rejected for them at lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruning {
    /// Most threads per block.
    pub max_threads: u32,
    /// Fewest warps per block.
    pub min_warps: u32,
    /// Most warps per block.
    pub max_warps: u32,
    /// Smallest value (code) of each field in the space: a tile (bm, bn, bk) or raster group
    /// is oversized only above max(next power of two of the GEMM length, this).
    pub smallest: PerField<u32>,
}

fn round_up_pow2(x: u32) -> u64 {
    (x.max(1) as u64).next_power_of_two()
}

impl Checker {
    /// Under a search space's pruning, the space's smallest value of `f` when `cfg` holds
    /// another: a field the kernel does not read is enumerated at that value only, so that one
    /// kernel has one name (`mma=dw`'s ignored fields, the GEMM paths' unread widths).
    pub(super) fn off_smallest(&self, cfg: &PerfConfig, f: Field) -> Option<u32> {
        let smallest = self.pruning.as_ref()?.smallest[f];
        (cfg.code(f) != smallest).then_some(smallest)
    }

    /// The name this checker's pruning gives `cfg`'s kernel: each field the kernel does not read
    /// (an unread vector width, a field `mma=dw` ignores) at the space's smallest value. A
    /// config named otherwise (a database entry tuned before the pruning, the fallback's pick)
    /// is then found as the point of the enumeration that a search walks from, and is not
    /// timed twice under two names (session 39: about a tenth of a first use's second round
    /// re-timed a measured `ld=ws` kernel under other widths). `cfg` itself without pruning;
    /// a config the rules refuse for another reason is still renamed (each rule asked alone).
    pub fn renamed(&self, cfg: &PerfConfig) -> PerfConfig {
        let mut named = *cfg;
        // Rule by rule, not the first refusal of `check`: a config off the space's grid (a
        // split-K it lacks) is refused before its widths are looked at. A rule names one
        // field at a time (`mma=dw` ignores two at its tile rule): asked again until it names
        // none, at most once per field.
        for rule in Rule::ALL {
            for _ in 0..Field::COUNT {
                let (param, smallest) = match self.rule(rule, &named) {
                    Err(Rejection::WidthUnread {
                        param, smallest, ..
                    })
                    | Err(Rejection::DepthwiseIgnores { param, smallest }) => (param, smallest),
                    _ => break,
                };
                let mut codes = named.codes();
                match Field::ALL.into_iter().find(|f| f.key() == param) {
                    Some(f) => codes[f] = smallest,
                    None => break,
                }
                match PerfConfig::from_codes(&codes) {
                    Some(c) => named = c,
                    None => break,
                }
            }
        }
        named
    }

    /// The search space's pruning limits on a block of `threads` threads in `warps` warps
    /// (none without pruning): the `Space` rule of the GEMM paths and of `mma=dw` alike.
    pub(super) fn space_limits(&self, threads: u32, warps: u32) -> Result<(), Rejection> {
        let Some(pr) = &self.pruning else {
            return Ok(());
        };
        let space = |what, value, constraint, limit| {
            Err(Rejection::Space {
                what,
                value,
                constraint,
                limit,
            })
        };
        if threads > pr.max_threads {
            return space("threads", threads, "max_threads", pr.max_threads);
        }
        if warps < pr.min_warps {
            return space("warps", warps, "min_warps", pr.min_warps);
        }
        if warps > pr.max_warps {
            return space("warps", warps, "max_warps", pr.max_warps);
        }
        Ok(())
    }

    /// The `Space` rule of the GEMM paths: [`Self::space_limits`] on the config's warps.
    pub(super) fn space(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let warps = Self::sat(Self::warps(cfg));
        self.space_limits(Self::sat(warps as u64 * self.arch.warp_size as u64), warps)
    }

    /// bm and bn (`mn`), or bk, not larger than needed.
    pub(super) fn oversized(&self, cfg: &PerfConfig, mn: bool) -> Result<(), Rejection> {
        let Some(pr) = &self.pruning else {
            return Ok(());
        };
        let checks: &[(Field, u32, Dim)] = if mn {
            &[
                (Field::BlockM, cfg.block_m, Dim::M),
                (Field::BlockN, cfg.block_n, Dim::N),
            ]
        } else {
            &[(Field::BlockK, cfg.block_k, Dim::K)]
        };
        for &(field, block, dim) in checks {
            let (param, smallest) = (field.key(), pr.smallest[field]);
            let len = self.max_len[dim as usize];
            let limit = round_up_pow2(len).max(smallest as u64);
            if block as u64 > limit {
                return Err(Rejection::Oversized {
                    param,
                    block,
                    dim,
                    len,
                    limit: Self::sat(limit),
                });
            }
        }
        Ok(())
    }

    /// Rasterisation group not larger than the grid's rows of tiles need.
    pub(super) fn raster(&self, cfg: &PerfConfig) -> Result<(), Rejection> {
        let Some(pr) = &self.pruning else {
            return Ok(());
        };
        let grid_m = self.max_len[Dim::M as usize].div_ceil(cfg.block_m.max(1));
        let limit = round_up_pow2(grid_m).max(pr.smallest[Field::Raster] as u64);
        if cfg.raster as u64 > limit {
            return Err(Rejection::Raster {
                raster: cfg.raster,
                grid_m,
            });
        }
        Ok(())
    }
}
