//! The rules for the depthwise path (`mma=dw`): which problems it runs and whether the tile
//! ([`DwTile`]) fits, each piece checked at the loop level of the fields it reads, in the slot
//! of the GEMM rule of that level. None of the GEMM paths' rules applies to it; the fields it
//! does not read (`red` but in backward weight) are pruned to the space's smallest value, so
//! that one kernel is enumerated once.

use super::{Checker, Rule};
use crate::config::{DwTile, Field, PerfConfig};
use crate::legality::Rejection;
use crate::lowering::Dim;

impl Checker {
    /// Rule `rule` for a config of `mma=dw`.
    pub(super) fn depthwise_rule(&self, rule: Rule, cfg: &PerfConfig) -> Result<(), Rejection> {
        let shape = match (&self.depthwise, rule) {
            (Err(why), Rule::Threads) => return Err(Rejection::Depthwise { why: why.clone() }),
            (Ok(s), _) => s,
            // Refused once, by the rule above.
            (Err(_), _) => return Ok(()),
        };
        let dw = |why: Option<String>| match why {
            Some(why) => Err(Rejection::Depthwise { why }),
            None => Ok(()),
        };
        let tile = DwTile::of(cfg);
        let arch = &self.arch;
        match rule {
            Rule::NonZero => match cfg.zero_field() {
                Some(f) => Err(Rejection::ZeroField { param: f.key() }),
                None => Ok(()),
            },
            Rule::OversizedMN => {
                self.dw_ignored(cfg, &[Field::WarpM, Field::WarpN])?;
                let Some(pr) = &self.pruning else {
                    return Ok(());
                };
                let pixels = u64::from(shape.batch)
                    * u64::from(shape.dst_hw[0])
                    * u64::from(shape.dst_hw[1]);
                let pixels = pixels.min(u64::from(u32::MAX)) as u32;
                for (f, block, dim, len) in [
                    (Field::BlockM, cfg.block_m, Dim::M, shape.channels),
                    (Field::BlockN, cfg.block_n, Dim::N, pixels),
                ] {
                    let limit = u64::from(len.max(1))
                        .next_power_of_two()
                        .max(u64::from(pr.smallest[f]));
                    if u64::from(block) > limit {
                        return Err(Rejection::Oversized {
                            param: f.key(),
                            block,
                            dim,
                            len,
                            limit: Self::sat(limit),
                        });
                    }
                }
                Ok(())
            }
            Rule::OversizedK => self.dw_ignored(cfg, &[Field::BlockK]),
            Rule::SharedMemory => {
                self.dw_ignored(cfg, &[Field::Stages, Field::Lds])?;
                dw(shape.smem_refusal(tile.channels, arch))
            }
            Rule::Tma => self.dw_ignored(cfg, &[Field::Ld]),
            Rule::SplitK => self.dw_ignored(cfg, &[Field::SplitK]),
            // Backward weight reads `red` (how its blocks' sums meet: `atomic` or `fixup`), the
            // other directions not: both are searched, neither wins everywhere (on the H200 the
            // partials were 1.23x faster on the same tiles, geomean, one tile of 30 slower).
            Rule::Reduction if shape.reduce => dw(shape.sums_refusal(&tile)),
            Rule::Reduction => self.dw_ignored(cfg, &[Field::Red]),
            Rule::Raster => self.dw_ignored(cfg, &[Field::Raster]),
            Rule::Persistent => self.dw_ignored(cfg, &[Field::Persistent]),
            Rule::Cluster => self.dw_ignored(cfg, &[Field::Cluster]),
            Rule::Epilogue => self.dw_ignored(cfg, &[Field::Ep]),
            Rule::Cut => self.dw_ignored(cfg, &[Field::Cut]),
            Rule::VectorA => {
                dw(shape.vec_misfit(tile.vec, arch.max_vector_bytes))?;
                // Whole vectors per block (`misfit` says so first); `vb`, `vc` come later.
                if tile.channels.is_multiple_of(tile.vec) {
                    Ok(())
                } else {
                    dw(tile.misfit())
                }
            }
            Rule::VectorC => {
                dw(tile.misfit())?;
                dw(shape.thread_refusal(&tile, arch))?;
                let threads = tile.threads();
                self.space_limits(threads, threads.div_ceil(arch.warp_size))
            }
            // The problem (above); the GEMM tile's rules; `xf`, judged before this.
            Rule::Threads
            | Rule::WarpTile
            | Rule::Space
            | Rule::MmaShape
            | Rule::Registers
            | Rule::VectorB
            | Rule::Transform => Ok(()),
        }
    }

    /// What rule `rule` found for a config of `mma=dw` that passed it (`space --explain`).
    pub(in crate::legality) fn depthwise_detail(
        &self,
        rule: Rule,
        cfg: &PerfConfig,
        res: &crate::legality::Resources,
    ) -> String {
        let Ok(s) = &self.depthwise else {
            return "not depthwise".into();
        };
        let tile = DwTile::of(cfg);
        let ignored = |fields: &[Field]| {
            let keys: Vec<_> = fields.iter().map(|f| f.key()).collect();
            format!("mma=dw does not read {}", keys.join(", "))
        };
        match rule {
            Rule::Threads => format!(
                "depthwise: {} {} channels from the {} (multiplier {}), {}x{} taps{}",
                s.channels,
                s.dst.name(),
                s.src.name(),
                s.multiplier,
                s.taps[0],
                s.taps[1],
                if s.flip { ", filter flipped" } else { "" }
            ),
            Rule::OversizedMN => ignored(&[Field::WarpM, Field::WarpN]),
            Rule::OversizedK => ignored(&[Field::BlockK]),
            Rule::SharedMemory => format!(
                "{} bytes of f32 filter taps for bm = {} channels",
                res.lds_bytes, tile.channels
            ),
            Rule::Tma => ignored(&[Field::Ld]),
            Rule::SplitK => ignored(&[Field::SplitK]),
            Rule::Reduction if s.reduce => match tile.sums {
                Some(crate::config::DwSums::Partials) => {
                    "red=fixup: each block's sums to a workspace slot of its own, added in block \
                     order by a second kernel"
                        .into()
                }
                _ => {
                    "red=atomic: each block's sums added into the zeroed gradient by atomics".into()
                }
            },
            Rule::Reduction => ignored(&[Field::Red]),
            Rule::Raster => ignored(&[Field::Raster]),
            Rule::Persistent => ignored(&[Field::Persistent]),
            Rule::Cluster => ignored(&[Field::Cluster]),
            Rule::Epilogue => ignored(&[Field::Ep]),
            Rule::Cut => ignored(&[Field::Cut]),
            Rule::VectorA => format!(
                "va = {} channels a thread (widest legal {}), reading {} of the {}",
                tile.vec,
                s.widest_vec(self.arch.max_vector_bytes),
                s.src_vec(tile.vec),
                s.src.name()
            ),
            Rule::VectorC => format!(
                "{} threads ({} channel vectors × {} tiles of {}x{} pixels), {} registers \
                 (estimate)",
                res.threads,
                tile.channel_vectors(),
                tile.tiles(),
                tile.rows,
                tile.cols,
                res.registers
            ),
            Rule::NonZero => "all fields ≥ 1".into(),
            Rule::Transform => format!("xf={}", cfg.xf.name()),
            Rule::WarpTile | Rule::Space | Rule::MmaShape | Rule::Registers | Rule::VectorB => {
                "not a rule of mma=dw".into()
            }
        }
    }

    /// With a search space's pruning: each of `fields` at the space's smallest value.
    fn dw_ignored(&self, cfg: &PerfConfig, fields: &[Field]) -> Result<(), Rejection> {
        for &f in fields {
            if let Some(smallest) = self.off_smallest(cfg, f) {
                return Err(Rejection::DepthwiseIgnores {
                    param: f.key(),
                    smallest,
                });
            }
        }
        Ok(())
    }
}
