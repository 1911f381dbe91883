//! A search space that holds one config: how a script times exactly the config a database entry
//! names (`convtune space --problem … --pin CONFIG`, used by `scripts/db-vs-cudnn.sh`) without
//! knowing the config's fields, so a new field reaches those scripts with no edit.

use crate::arch::Vendor;
use crate::config::{Domain, Field, PerfConfig};
use std::fmt::Write;

/// The space-file text (TOML) whose only candidate is `cfg`, for `vendor`'s kernels. Its
/// constraints are the widest a space may have, so legality alone decides whether the config
/// runs.
pub fn pinned_space(cfg: &PerfConfig, vendor: Vendor) -> String {
    let mut text = format!(
        "# Exactly one config: {cfg}\nname = \"pinned\"\nvendor = \"{}\"\n\n[params]\n",
        vendor.name()
    );
    for f in Field::ALL {
        let code = cfg.code(f);
        let value = match f.domain() {
            Domain::Named(names) => format!("\"{}\"", names[code as usize]),
            Domain::Number | Domain::PowerOfTwo => code.to_string(),
        };
        let _ = writeln!(text, "{} = [{value}]", f.name());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::SearchSpace;

    #[test]
    fn the_pinned_space_holds_the_config_and_nothing_else() {
        for s in [
            "v1:bm=32,bn=64,bk=32,wm=16,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1",
            "v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=4,lds=swz,sk=4,rs=8,mma=wg1",
        ] {
            let cfg: PerfConfig = s.parse().unwrap();
            let space =
                SearchSpace::from_toml(&pinned_space(&cfg, Vendor::Nvidia), "pinned").unwrap();
            assert_eq!(space.raw_size(), 1, "{s}");
            assert!(space.contains(&cfg), "{s}");
            assert_eq!(space.iter_raw().next(), Some(cfg), "{s}");
        }
    }
}
