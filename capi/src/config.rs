//! The tuning fields of `convtune_config`: one struct member per field of convtune's one field
//! declaration (`perf_config_fields!`), holding the field's code (the number, or the named
//! value's index, which is the header enum's value). The two exhaustive matches below are the
//! only place that pairs fields with members, so a field added to convtune does not compile
//! here until `ConfigC` has it; `tests.rs` checks the header against the same declaration.

use crate::{fill, guard, Failure, Status};
use convtune::config::{Domain, Field, PerField, PerfConfig};
use std::ffi::{c_char, c_int};

use super::ConfigC;

/// Sets the member of `f` to `code`.
fn set_field(out: &mut ConfigC, f: Field, code: u32) {
    let named = code as i32;
    match f {
        Field::BlockM => out.block_m = code,
        Field::BlockN => out.block_n = code,
        Field::BlockK => out.block_k = code,
        Field::WarpM => out.warp_m = code,
        Field::WarpN => out.warp_n = code,
        Field::Stages => out.stages = code,
        Field::VecA => out.vec_a = code,
        Field::VecB => out.vec_b = code,
        Field::VecC => out.vec_c = code,
        Field::Lds => out.lds = named,
        Field::SplitK => out.split_k = code,
        Field::Raster => out.raster = code,
        Field::Mma => out.mma = named,
        Field::Red => out.red = named,
        Field::Ld => out.ld = named,
        Field::Persistent => out.persistent = named,
        Field::Xf => out.xf = named,
        Field::Cluster => out.cluster = named,
        Field::Ep => out.epilogue = named,
        Field::Cut => out.cut = named,
    }
}

/// The member of `f`, as a code (`None` for a negative enum value).
fn field(c: &ConfigC, f: Field) -> Option<u32> {
    let named = |v: i32| u32::try_from(v).ok();
    match f {
        Field::BlockM => Some(c.block_m),
        Field::BlockN => Some(c.block_n),
        Field::BlockK => Some(c.block_k),
        Field::WarpM => Some(c.warp_m),
        Field::WarpN => Some(c.warp_n),
        Field::Stages => Some(c.stages),
        Field::VecA => Some(c.vec_a),
        Field::VecB => Some(c.vec_b),
        Field::VecC => Some(c.vec_c),
        Field::Lds => named(c.lds),
        Field::SplitK => Some(c.split_k),
        Field::Raster => Some(c.raster),
        Field::Mma => named(c.mma),
        Field::Red => named(c.red),
        Field::Ld => named(c.ld),
        Field::Persistent => named(c.persistent),
        Field::Xf => named(c.xf),
        Field::Cluster => named(c.cluster),
        Field::Ep => named(c.epilogue),
        Field::Cut => named(c.cut),
    }
}

/// Writes every tuning field of `cfg` into `out`.
pub(crate) fn write_fields(cfg: &PerfConfig, out: &mut ConfigC) {
    for f in Field::ALL {
        set_field(out, f, cfg.code(f));
    }
}

/// The config the tuning fields of `c` spell, or which field is not a value of its own.
pub(crate) fn read_fields(c: &ConfigC) -> Result<PerfConfig, Failure> {
    let mut codes = PerField::default();
    for f in Field::ALL {
        let code = field(c, f).filter(|&code| match f.domain() {
            Domain::Named(names) => (code as usize) < names.len(),
            Domain::Number | Domain::PowerOfTwo => code > 0,
        });
        codes[f] = code.ok_or_else(|| {
            Failure::new(
                Status::Config,
                format!(
                    "config field `{}` ({}): {} is not one of its values{}",
                    f.name(),
                    f.key(),
                    field(c, f).map_or("a negative number".to_string(), |v| v.to_string()),
                    match f.domain() {
                        Domain::Named(names) => format!(" (0..{} for {:?})", names.len(), names),
                        _ => String::new(),
                    }
                ),
            )
        })?;
    }
    PerfConfig::from_codes(&codes)
        .ok_or_else(|| Failure::new(Status::Internal, "codes checked above do not make a config"))
}

/// `convtune_config_format`: the config string of a struct's tuning fields.
///
/// # Safety
/// `config` is NULL or a valid `convtune_config`; `out` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn convtune_config_format(
    config: *const ConfigC,
    out: *mut c_char,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes NULL or a valid struct.
        let c = unsafe { config.as_ref() }
            .ok_or_else(|| Failure::new(Status::Null, "config is NULL"))?;
        if out.is_null() {
            return Err(Failure::new(Status::Null, "out is NULL"));
        }
        let text = read_fields(c)?.to_string();
        if text.len() >= len {
            return Err(Failure::new(
                Status::Buffer,
                format!(
                    "the config string needs {} bytes, the buffer has {len}",
                    text.len() + 1
                ),
            ));
        }
        // SAFETY: `out` is writable for `len` bytes, more than the text and its NUL.
        let buf = unsafe { std::slice::from_raw_parts_mut(out, len) };
        fill(buf, &text);
        Ok(())
    })
}
