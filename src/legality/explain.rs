//! Every rule with its verdict, for `convtune space --explain`: why a config runs or not, with
//! the numbers, so a user can see which knob to turn.

use super::rules::{Checker, Rule};
use crate::config::PerfConfig;
use crate::lowering::Dim;

impl Checker {
    /// One line per rule, `ok` or `FAIL`, in evaluation order; a line per sub-GEMM's vector
    /// facts first. Unlike [`Checker::check`], it does not stop at the first failure.
    pub fn explain(&self, cfg: &PerfConfig) -> Vec<String> {
        if let Ok(twin) = self.judge(cfg) {
            if !std::ptr::eq(twin, self) {
                let moved: Vec<_> = crate::lowering::relayout::relayouts(&self.problem, cfg.xf)
                    .iter()
                    .map(|r| r.tensor.name())
                    .collect();
                let mut out = vec![format!(
                    "xf={}: transposes {} in the workspace; the rules below judge the GEMMs on \
                     the copies",
                    cfg.xf.name(),
                    moved.join(", ")
                )];
                out.extend(twin.explain(cfg));
                return out;
            }
        }
        let mut out = Vec::new();
        let p = &self.problem;
        out.push(format!(
            "problem {} on {} ({} sub-GEMM{}, longest M={} N={} K={})",
            p,
            self.arch.name,
            self.vectors.len(),
            if self.vectors.len() == 1 { "" } else { "s" },
            self.max_len[Dim::M as usize],
            self.max_len[Dim::N as usize],
            self.max_len[Dim::K as usize],
        ));
        for (g, ops) in self.vectors.iter().enumerate() {
            for (name, v) in ['A', 'B', 'C'].iter().zip(ops) {
                let along = match v.dim {
                    Some(d) => format!("along {d}"),
                    None => "along no GEMM dimension".to_string(),
                };
                out.push(format!(
                    "  sub-GEMM {g} {name} ({}, contiguous {}): {along}, max width {} ({})",
                    v.tensor, v.tensor_dim, v.max.width, v.max.limit
                ));
            }
        }
        let res = self.resources(cfg);
        for rule in Rule::ALL {
            let skipped = self.pruning.is_none()
                && matches!(
                    rule,
                    Rule::Space | Rule::OversizedMN | Rule::OversizedK | Rule::Raster
                );
            let line = match self.rule(rule, cfg) {
                Err(e) => format!("FAIL  {}: {e}", rule.name()),
                Ok(()) if skipped => {
                    format!(
                        "skip  {}: applies only when enumerating a search space",
                        rule.name()
                    )
                }
                Ok(()) => format!("ok    {}: {}", rule.name(), self.ok_detail(rule, cfg, &res)),
            };
            out.push(line);
        }
        out
    }

    fn ok_detail(&self, rule: Rule, cfg: &PerfConfig, res: &super::Resources) -> String {
        if cfg.mma == crate::config::MmaPath::Depthwise {
            return self.depthwise_detail(rule, cfg, res);
        }
        let arch = &self.arch;
        match rule {
            Rule::NonZero => "all fields ≥ 1".into(),
            Rule::Transform => match cfg.xf {
                crate::config::Transform::None => "xf=none: every tensor in its own layout".into(),
                xf => format!("xf={}: channels-last GEMMs of {}", xf.name(), self.problem),
            },
            Rule::WarpTile => format!(
                "{}x{} warps of {}x{} tile the {}x{} block",
                cfg.block_m / cfg.warp_m,
                cfg.block_n / cfg.warp_n,
                cfg.warp_m,
                cfg.warp_n,
                cfg.block_m,
                cfg.block_n
            ),
            Rule::Threads => format!(
                "{} threads ≤ {} on {}",
                res.threads, arch.max_threads_per_block, arch.name
            ),
            Rule::Space => match &self.pruning {
                Some(pr) => format!(
                    "{} threads ≤ {}, {} ≤ {} warps ≤ {}",
                    res.threads, pr.max_threads, pr.min_warps, res.warps, pr.max_warps
                ),
                None => String::new(),
            },
            Rule::OversizedMN => format!(
                "bm={} for M ≤ {}, bn={} for N ≤ {}",
                cfg.block_m,
                self.max_len[Dim::M as usize],
                cfg.block_n,
                self.max_len[Dim::N as usize]
            ),
            Rule::OversizedK => format!(
                "bk={} for K ≤ {}",
                cfg.block_k,
                self.max_len[Dim::K as usize]
            ),
            Rule::MmaShape => format!(
                "{}x{} warp tile, bk={} built from {}",
                cfg.warp_m, cfg.warp_n, cfg.block_k, res.instr
            ),
            Rule::Registers => {
                let (acc, frag, staging) = self.register_parts(cfg, &res.instr);
                format!(
                    "{} ≤ {} ({acc} accumulators + {frag} fragments + {staging} staging + addressing)",
                    res.registers, arch.max_regs_per_thread
                )
            }
            Rule::SharedMemory => {
                let (bytes, padding) = self.lds_bytes(cfg);
                format!(
                    "{bytes} bytes (padding {padding}) ≤ {} per block; {} block(s) per {} by shared memory and registers",
                    arch.smem_per_block,
                    res.blocks_per_cu,
                    if arch.vendor == crate::arch::Vendor::Nvidia { "SM" } else { "CU" }
                )
            }
            Rule::SplitK => {
                if cfg.split_k <= 1 {
                    "no split".into()
                } else {
                    format!(
                        "K = {:?} split {} ways, ≥ bk = {} each",
                        self.k_lens, cfg.split_k, cfg.block_k
                    )
                }
            }
            Rule::Reduction => format!("red = {} with split_k = {}", cfg.red.name(), cfg.split_k),
            Rule::Raster => format!(
                "raster {} for {} block rows",
                cfg.raster,
                self.max_len[Dim::M as usize].div_ceil(cfg.block_m)
            ),
            Rule::Tma => match self.tma(cfg, [true, true]) {
                Ok(per_gemm) if !per_gemm.is_empty() => per_gemm
                    .iter()
                    .enumerate()
                    .map(|(g, ops)| {
                        let how = |t: &Option<crate::lowering::tma::TmaTile>| match t {
                            Some(t) => format!(
                                "TMA {} ({}, {} box(es) of {:?})",
                                t.map.mode(),
                                if t.kmajor { "K-major" } else { "MN-major" },
                                t.copies,
                                &t.map.boxes[..t.map.rank as usize]
                            ),
                            None => "cp.async".into(),
                        };
                        format!("sub-GEMM {g}: A {}, B {}", how(&ops[0]), how(&ops[1]))
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => "ld=cp: cp.async loads".into(),
            },
            Rule::VectorA | Rule::VectorB | Rule::VectorC => {
                let i = match rule {
                    Rule::VectorA => 0,
                    Rule::VectorB => 1,
                    _ => 2,
                };
                let width = [cfg.vec_a, cfg.vec_b, cfg.vec_c][i];
                format!(
                    "{width} ≤ {} (largest legal over the sub-GEMMs, {}-byte accesses)",
                    res.max_vector[i], arch.max_vector_bytes
                )
            }
            Rule::Persistent => match cfg.persistent {
                crate::config::Grid::PerTile => "pk=0: one block per work unit".into(),
                crate::config::Grid::Persistent => {
                    let units: Vec<String> = self
                        .gmn
                        .iter()
                        .map(|&[g, m, n]| {
                            let u = u64::from(g)
                                * u64::from(m.div_ceil(cfg.block_m))
                                * u64::from(n.div_ceil(cfg.block_n))
                                * u64::from(cfg.split_k);
                            u.to_string()
                        })
                        .collect();
                    format!(
                        "pk=1: at most {} blocks ({} SMs × resident) walk the work units ({} per \
                         sub-GEMM); the epilogue has its own shared memory",
                        u64::from(arch.compute_units) * u64::from(res.blocks_per_cu.max(1)),
                        arch.compute_units,
                        units.join(", ")
                    )
                }
            },
            Rule::Cut => match cfg.cut {
                crate::config::Cut::Tile => "cut=tile: stream-K's region cut tile-major".into(),
                crate::config::Cut::Aligned => {
                    "cut=aligned: every stream-K tile cut at the same K offsets".into()
                }
            },
            Rule::Epilogue => match cfg.epilogue {
                crate::config::Epilogue::Reg => "ep=reg: C stored from registers".into(),
                crate::config::Epilogue::Tma => {
                    "ep=tma: C staged in a swizzled shared-memory tile, stored by TMA".into()
                }
            },
            Rule::Cluster => match crate::lowering::Dim::of_cluster(cfg.cluster) {
                None => "cl=1: no cluster".into(),
                Some(d) => format!(
                    "cl={}: two blocks on neighbouring tiles along {d:?}, {} multicast",
                    cfg.cluster.name(),
                    ["A", "B"][cfg.cluster.shared_operand().unwrap_or(0)]
                ),
            },
        }
    }
}
