//! The versioned string form of a [`PerfConfig`] that databases and recordings store, so old
//! databases still parse after fields are added: `vN:` then `key=value` for every field that
//! version N has, in declaration order (see [`Field::since`]). Printing writes every one;
//! parsing lets a field with a default (one added after v1) be left out.

use super::fields::{Domain, Field, PerField, PerfConfig};
use std::fmt;

/// A perf-config string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigParseError {
    /// Missing or unknown `vN:` prefix.
    #[error("perf config '{0}': expected a version prefix 'v1:' to 'v{latest}:'", latest = latest())]
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

/// The newest version of the string form: the last version that added a field.
fn latest() -> u32 {
    Field::ALL.into_iter().map(Field::since).max().unwrap_or(1)
}

impl fmt::Display for PerfConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let codes = self.codes();
        // The lowest version that can say this config: fields added later are left out when
        // they hold the value older strings stand for.
        let version = Field::ALL
            .into_iter()
            .filter(|&g| Some(codes[g]) != g.default_code())
            .map(Field::since)
            .max()
            .unwrap_or(1);
        write!(f, "v{version}:")?;
        let fields = Field::ALL.into_iter().filter(|g| g.since() <= version);
        for (i, g) in fields.enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}={}", g.key(), g.value_text(codes[g]))?;
        }
        Ok(())
    }
}

impl Field {
    /// The value with code `code` as the string form writes it: the number, or the name.
    pub fn value_text(self, code: u32) -> String {
        match self.domain() {
            Domain::Named(names) => names
                .get(code as usize)
                .map_or_else(|| format!("?{code}"), |n| n.to_string()),
            Domain::Number | Domain::PowerOfTwo => code.to_string(),
        }
    }
}

/// The code of a field's value as the string form writes it: a positive integer, or a name.
fn parse_value(domain: Domain, text: &str) -> Option<u32> {
    match domain {
        Domain::Number | Domain::PowerOfTwo => text.parse::<u32>().ok().filter(|&v| v > 0),
        Domain::Named(names) => names.iter().position(|&n| n == text).map(|i| i as u32),
    }
}

impl std::str::FromStr for PerfConfig {
    type Err = ConfigParseError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (version, body) = (1..=latest())
            .find_map(|v| text.strip_prefix(&format!("v{v}:")).map(|body| (v, body)))
            .ok_or_else(|| ConfigParseError::Version(text.to_string()))?;
        let mut parts = body.split(',').peekable();
        let mut values: PerField<Option<&str>> = PerField::default();
        for (pos, g) in Field::ALL.into_iter().enumerate() {
            if g.since() > version {
                continue;
            }
            let field_err = || ConfigParseError::Field {
                text: text.to_string(),
                expected: g.key(),
                pos: pos + 1,
            };
            let next = parts.peek().map(|part| part.split_once('='));
            match next {
                Some(Some((k, v))) if k == g.key() => {
                    values[g] = Some(v);
                    parts.next();
                }
                // A field with a default (added after v1) may be left out, in its place, by a
                // string of its version: `v4:…,ld=ws,pk=1` is `xf=none`, and a string written
                // before a sibling field of the same version still reads.
                _ if g.default_code().is_some() => {}
                _ => return Err(field_err()),
            }
        }
        if parts.next().is_some() {
            return Err(ConfigParseError::Trailing(text.to_string()));
        }
        let mut codes = PerField::default();
        for (g, value) in values.iter() {
            codes[g] = match value {
                // Left out by an older version: the value it stands for.
                None => g.default_code().unwrap_or_default(),
                Some(v) => parse_value(g.domain(), v).ok_or_else(|| ConfigParseError::Value {
                    text: text.to_string(),
                    field: g.key(),
                    value: v.to_string(),
                })?,
            };
        }
        // Every code was read from its field's domain, so this always succeeds.
        PerfConfig::from_codes(&codes).ok_or_else(|| ConfigParseError::Version(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LdsLayout, LoadPath, MmaPath, Reduction};

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
            red: Reduction::Atomic,
            ld: LoadPath::Cp,
            persistent: crate::config::Grid::PerTile,
            xf: crate::config::Transform::None,
            cluster: crate::config::ClusterShape::One,
            epilogue: crate::config::Epilogue::Reg,
            cut: crate::config::Cut::Tile,
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
        let t = PerfConfig {
            ld: LoadPath::Tma,
            ..w
        };
        let ts = t.to_string();
        assert!(
            ts.starts_with("v3:") && ts.ends_with(",mma=wg,red=atomic,ld=tma"),
            "{ts}"
        );
        assert_eq!(ts.parse::<PerfConfig>().unwrap(), t);
        assert_eq!(
            format!("v3:{},red=atomic,ld=cp", &ws[3..])
                .parse::<PerfConfig>()
                .unwrap(),
            w
        );
        assert!(matches!(
            "v8:bm=1".parse::<PerfConfig>(),
            Err(ConfigParseError::Version(_))
        ));
        // v4 appends xf; a config without a transform keeps printing as before.
        let x = PerfConfig {
            xf: crate::config::Transform::NhwcOut,
            ..t
        };
        let xs = x.to_string();
        assert!(
            xs.starts_with("v4:") && xs.ends_with(",ld=tma,pk=0,xf=nhwc_out"),
            "{xs}"
        );
        assert_eq!(xs.parse::<PerfConfig>().unwrap(), x);
        // A field with a default may be left out in its place (strings written before a
        // sibling field of the same version), but not moved, and v1's fields never.
        assert_eq!(xs.replace(",pk=0", "").parse::<PerfConfig>().unwrap(), x);
        let p = PerfConfig {
            persistent: crate::config::Grid::Persistent,
            ..t
        };
        let ps = format!("v4:{},pk=1", &ts[3..]);
        assert_eq!(ps.parse::<PerfConfig>().unwrap(), p);
        // v5 appends cl; the v4 string of a config without a cluster still parses to it.
        let q = PerfConfig {
            cluster: crate::config::ClusterShape::PairM,
            ..p
        };
        let qs = q.to_string();
        assert!(
            qs.starts_with("v5:") && qs.ends_with(",pk=1,xf=none,cl=2m"),
            "{qs}"
        );
        assert_eq!(qs.parse::<PerfConfig>().unwrap(), q);
        assert_eq!(
            format!("v5:{},pk=1", &ts[3..])
                .parse::<PerfConfig>()
                .unwrap(),
            p
        );
        assert!(qs.replace("cl=2m", "cl=3").parse::<PerfConfig>().is_err());
        // v7 appends cut; every older string is cut=tile.
        let k = PerfConfig {
            cut: crate::config::Cut::Aligned,
            ..p
        };
        let ks = k.to_string();
        assert!(
            ks.starts_with("v7:") && ks.ends_with(",ep=reg,cut=aligned"),
            "{ks}"
        );
        assert_eq!(ks.parse::<PerfConfig>().unwrap(), k);
        assert_eq!(
            qs.parse::<PerfConfig>().unwrap().cut,
            crate::config::Cut::Tile
        );
        assert!(ks
            .replace("cut=aligned", "cut=diagonal")
            .parse::<PerfConfig>()
            .is_err());
        // v6 appends ep; every older string is ep=reg.
        let e = PerfConfig {
            epilogue: crate::config::Epilogue::Tma,
            ..p
        };
        let es = e.to_string();
        assert!(
            es.starts_with("v6:") && es.ends_with(",pk=1,xf=none,cl=1,ep=tma"),
            "{es}"
        );
        assert_eq!(es.parse::<PerfConfig>().unwrap(), e);
        assert_eq!(
            qs.parse::<PerfConfig>().unwrap().epilogue,
            crate::config::Epilogue::Reg
        );
        assert!(!qs.contains("ep="), "{qs}");
        assert!(es
            .replace("ep=tma", "ep=smem")
            .parse::<PerfConfig>()
            .is_err());
        assert!(xs
            .replace(",pk=0,xf=nhwc_out", ",xf=nhwc_out,pk=0")
            .parse::<PerfConfig>()
            .is_err());
        assert!(s.replace("sk=1,", "").parse::<PerfConfig>().is_err());
        assert!(t.to_string().starts_with("v3:"));
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

    #[test]
    fn reduction_prints_as_v3_only_when_not_atomic() {
        let c: PerfConfig =
            "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=2,va=8,vb=8,vc=1,lds=pad,sk=4,rs=1"
                .parse()
                .unwrap();
        assert_eq!(c.red, Reduction::Atomic);
        assert!(c.to_string().starts_with("v1:"));
        let f = PerfConfig {
            red: Reduction::Fixup,
            ..c
        };
        let s = f.to_string();
        assert!(
            s.starts_with("v3:") && s.ends_with(",mma=sync,red=fixup,ld=cp"),
            "{s}"
        );
        assert_eq!(s.parse::<PerfConfig>().unwrap(), f);
        let v3atomic = s.replace("red=fixup", "red=atomic");
        assert_eq!(v3atomic.parse::<PerfConfig>().unwrap(), c);
        assert!(s
            .replace("red=fixup", "red=x")
            .parse::<PerfConfig>()
            .is_err());
    }
}
