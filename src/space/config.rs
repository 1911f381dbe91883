//! `PerfConfig`: one point of the search space, with a versioned string form that the database
//! stores, so old databases still parse after fields are added.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How the shared-memory (LDS) tiles are laid out to avoid bank conflicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LdsLayout {
    /// Each row padded by one 16-byte vector.
    Padded,
    /// XOR swizzle of 16-byte chunks within a row; no padding.
    Swizzled,
}

/// Which matrix instruction computes the tile (NVIDIA): the question the database must answer
/// per problem, since the Hopper path only wins where its larger tiles fill the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MmaPath {
    /// Per-warp `mma.sync` (or MFMA / FMA: whatever the target's warp-level unit is).
    Sync,
    /// Hopper `wgmma.mma_async` (sm_90a): `warp_m × warp_n` is then a warpgroup's tile (four
    /// consecutive warps), A and B read from shared memory through descriptors. Each K tile
    /// waits for its own group (`wait_group 0`); copies run `stages - 1` tiles ahead.
    Wgmma,
    /// `wgmma` with one group kept in flight (`wait_group 1`): the tensor cores run through the
    /// next tile's barrier and copy issue, but the copies run only `stages - 2` tiles ahead
    /// (the buffer they refill must be two tiles old), so it needs three stages or more. Which
    /// of the two wins depends on the problem (occupancy against overlap): a knob, not a rule.
    WgmmaInFlight,
}

impl MmaPath {
    /// Every path, in the lattice order the search walks.
    pub const ALL: [MmaPath; 3] = [MmaPath::Sync, MmaPath::Wgmma, MmaPath::WgmmaInFlight];

    /// The name in config strings and search-space files.
    pub fn name(self) -> &'static str {
        match self {
            MmaPath::Sync => "sync",
            MmaPath::Wgmma => "wg",
            MmaPath::WgmmaInFlight => "wg1",
        }
    }

    /// The path called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the tile is computed by Hopper `wgmma` (either variant).
    pub fn is_wgmma(self) -> bool {
        self != MmaPath::Sync
    }
}

/// The tuning parameters of one implicit-GEMM kernel. Every sub-GEMM of a problem runs with the
/// same config, so it must be legal for each of them.
///
/// Fields, in the fixed order of the string form `v1:`:
/// `bm`, `bn`, `bk` block tile; `wm`, `wn` warp (wave) tile; `st` pipeline stages;
/// `va`, `vb`, `vc` vector widths in elements for global loads of A and B and stores of C;
/// `lds` shared-memory layout; `sk` split-K factor; `rs` block rasterisation (group of block
/// rows that walk N together for L2 reuse; 1 = plain row-major order).
/// `v2:` appends `mma` (`sync`, `wg` or `wg1`); a config with `mma=sync` prints as `v1:` so that old
/// databases and new ones agree, and `v1:` strings parse as `mma=sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PerfConfig {
    /// Block tile rows (M).
    pub block_m: u32,
    /// Block tile columns (N).
    pub block_n: u32,
    /// Block tile reduction depth (K) per main-loop step.
    pub block_k: u32,
    /// Warp (wave) tile rows.
    pub warp_m: u32,
    /// Warp (wave) tile columns.
    pub warp_n: u32,
    /// Shared-memory pipeline stages (1 = load, sync, compute).
    pub stages: u32,
    /// Global load vector width of A, elements.
    pub vec_a: u32,
    /// Global load vector width of B, elements.
    pub vec_b: u32,
    /// Global store vector width of C, elements.
    pub vec_c: u32,
    /// Shared-memory layout.
    pub lds: LdsLayout,
    /// Split of the reduction across blocks (results combined with atomics or a second pass).
    pub split_k: u32,
    /// Rasterisation group size.
    pub raster: u32,
    /// Matrix instruction path.
    pub mma: MmaPath,
}

/// Field names of the string form, in order.
pub const FIELDS: [&str; 13] = [
    "bm", "bn", "bk", "wm", "wn", "st", "va", "vb", "vc", "lds", "sk", "rs", "mma",
];

/// A perf-config string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigParseError {
    /// Missing or unknown `vN:` prefix.
    #[error("perf config '{0}': expected the version prefix 'v1:' or 'v2:'")]
    Version(String),
    /// A field is missing, misnamed or out of order.
    #[error("perf config '{text}': expected field '{expected}' at position {pos}")]
    Field {
        /// The whole string.
        text: String,
        /// The field name expected there.
        expected: &'static str,
        /// 1-based position.
        pos: usize,
    },
    /// A field's value does not parse.
    #[error("perf config '{text}': field '{field}' has invalid value '{value}'")]
    Value {
        /// The whole string.
        text: String,
        /// The field.
        field: &'static str,
        /// The value found.
        value: String,
    },
    /// Extra text after the last field.
    #[error("perf config '{0}': unexpected text after the last field")]
    Trailing(String),
}

impl fmt::Display for PerfConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lds = match self.lds {
            LdsLayout::Padded => "pad",
            LdsLayout::Swizzled => "swz",
        };
        write!(
            f,
            "{}:bm={},bn={},bk={},wm={},wn={},st={},va={},vb={},vc={},lds={},sk={},rs={}",
            if self.mma == MmaPath::Sync {
                "v1"
            } else {
                "v2"
            },
            self.block_m,
            self.block_n,
            self.block_k,
            self.warp_m,
            self.warp_n,
            self.stages,
            self.vec_a,
            self.vec_b,
            self.vec_c,
            lds,
            self.split_k,
            self.raster
        )?;
        match self.mma {
            MmaPath::Sync => Ok(()),
            m => write!(f, ",mma={}", m.name()),
        }
    }
}

impl std::str::FromStr for PerfConfig {
    type Err = ConfigParseError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (body, nfields) = match (text.strip_prefix("v1:"), text.strip_prefix("v2:")) {
            (Some(b), _) => (b, 12),
            (_, Some(b)) => (b, 13),
            _ => return Err(ConfigParseError::Version(text.to_string())),
        };
        let mut parts = body.split(',');
        let mut values = ["sync"; 13];
        for (pos, (&name, slot)) in FIELDS
            .iter()
            .zip(values.iter_mut())
            .take(nfields)
            .enumerate()
        {
            let field_err = || ConfigParseError::Field {
                text: text.to_string(),
                expected: name,
                pos: pos + 1,
            };
            let part = parts.next().ok_or_else(field_err)?;
            let (k, v) = part.split_once('=').ok_or_else(field_err)?;
            if k != name {
                return Err(field_err());
            }
            *slot = v;
        }
        if parts.next().is_some() {
            return Err(ConfigParseError::Trailing(text.to_string()));
        }
        let num = |i: usize| {
            values[i]
                .parse::<u32>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| ConfigParseError::Value {
                    text: text.to_string(),
                    field: FIELDS[i],
                    value: values[i].to_string(),
                })
        };
        let lds = match values[9] {
            "pad" => LdsLayout::Padded,
            "swz" => LdsLayout::Swizzled,
            v => {
                return Err(ConfigParseError::Value {
                    text: text.to_string(),
                    field: "lds",
                    value: v.to_string(),
                })
            }
        };
        let mma = MmaPath::from_name(values[12]).ok_or_else(|| ConfigParseError::Value {
            text: text.to_string(),
            field: "mma",
            value: values[12].to_string(),
        })?;
        Ok(PerfConfig {
            block_m: num(0)?,
            block_n: num(1)?,
            block_k: num(2)?,
            warp_m: num(3)?,
            warp_n: num(4)?,
            stages: num(5)?,
            vec_a: num(6)?,
            vec_b: num(7)?,
            vec_c: num(8)?,
            lds,
            split_k: num(10)?,
            raster: num(11)?,
            mma,
        })
    }
}

impl PerfConfig {
    /// Warps (waves) per block: one per warp tile, four per warpgroup tile with `wgmma`.
    pub fn warps(&self) -> u32 {
        let per_tile = match self.mma {
            MmaPath::Sync => 1,
            MmaPath::Wgmma | MmaPath::WgmmaInFlight => 4,
        };
        (self.block_m / self.warp_m) * (self.block_n / self.warp_n) * per_tile
    }

    /// K tiles the copies run ahead of the one being multiplied: `stages - 1`, one fewer with
    /// `mma=wg1`, whose group in flight still reads the buffer before the current one.
    pub fn tiles_ahead(&self) -> u32 {
        match self.mma {
            MmaPath::WgmmaInFlight => self.stages.saturating_sub(2),
            _ => self.stages.saturating_sub(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let c = PerfConfig {
            block_m: 128,
            block_n: 64,
            block_k: 32,
            warp_m: 64,
            warp_n: 32,
            stages: 3,
            vec_a: 8,
            vec_b: 4,
            vec_c: 2,
            lds: LdsLayout::Swizzled,
            split_k: 1,
            raster: 8,
            mma: MmaPath::Sync,
        };
        let s = c.to_string();
        assert!(s.starts_with("v1:"));
        assert_eq!(s.parse::<PerfConfig>().unwrap(), c);
        let w = PerfConfig {
            mma: MmaPath::Wgmma,
            ..c
        };
        let ws = w.to_string();
        assert!(ws.starts_with("v2:") && ws.ends_with(",mma=wg"), "{ws}");
        assert_eq!(ws.parse::<PerfConfig>().unwrap(), w);
        assert_eq!(w.warps(), 4 * c.warps());
        for m in MmaPath::ALL {
            let x = PerfConfig { mma: m, ..c };
            assert_eq!(x.to_string().parse::<PerfConfig>().unwrap(), x, "{m:?}");
            assert_eq!(MmaPath::from_name(m.name()), Some(m));
        }
        let v2sync = format!("v2:{},mma=sync", &s[3..]);
        assert_eq!(v2sync.parse::<PerfConfig>().unwrap(), c);
        assert!(ws.replace("mma=wg", "mma=x").parse::<PerfConfig>().is_err());
        assert!(format!("{s},mma=wg").parse::<PerfConfig>().is_err());
        assert!(matches!(
            "v3:bm=1".parse::<PerfConfig>(),
            Err(ConfigParseError::Version(_))
        ));
        let e = s
            .replace("bk=32", "bk=x")
            .parse::<PerfConfig>()
            .unwrap_err();
        assert_eq!(
            e,
            ConfigParseError::Value {
                text: s.replace("bk=32", "bk=x"),
                field: "bk",
                value: "x".into()
            }
        );
        let e = s.replace("wm=", "wx=").parse::<PerfConfig>().unwrap_err();
        assert!(matches!(
            e,
            ConfigParseError::Field {
                expected: "wm",
                pos: 4,
                ..
            }
        ));
        assert!(format!("{s},zz=1").parse::<PerfConfig>().is_err());
    }
}
