//! `convtune_second_round_str`: a first use's second round from C, the configs the tuner's
//! guided search measures next from the first round's times ([`convtune::lookup::second_round`]).

use crate::{
    arch_named, check_list, guard, parse_line, required_str, write_config, ConfigC, Failure, Status,
};
use convtune::db::Source;
use convtune::lookup::{second_round, Found, Limits};
use std::ffi::{c_char, c_int};

/// `convtune_second_round_str`: up to `capacity` configs to time after the `measured` ones
/// (`configs[i]` timed `times_us[i]` µs; NaN, infinite or not above 0 for one that failed),
/// written to `out[0 .. *count)`, best guess first, none of the measured; `*count` 0 when
/// nothing measured succeeded. `deterministic` non-zero: only configs without floating-point
/// atomics.
///
/// # Safety
/// `problem` and `arch` are NUL-terminated strings; `configs` and `times_us` point to
/// `measured` entries (each config a NUL-terminated string; both may be NULL when `measured`
/// is 0); `out` to `capacity` writable structs; `count` to a writable `size_t`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // one C call: the problem, the times, the output buffer
pub unsafe extern "C" fn convtune_second_round_str(
    problem: *const c_char,
    arch: *const c_char,
    deterministic: c_int,
    configs: *const *const c_char,
    times_us: *const f64,
    measured: usize,
    out: *mut ConfigC,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let (p, arch) = unsafe { (parse_line(problem)?, required_str(arch, "arch")?) };
        check_list(out, capacity, count)?;
        if measured > 0 && (configs.is_null() || times_us.is_null()) {
            return Err(Failure::new(Status::Null, "configs or times_us is NULL"));
        }
        let arch = arch_named(arch)?;
        let mut times = Vec::with_capacity(measured);
        for i in 0..measured {
            // SAFETY: `measured` entries of each array, by the caller's contract.
            let (text, t) = unsafe {
                (
                    required_str(*configs.add(i), &format!("configs[{i}]"))?,
                    *times_us.add(i),
                )
            };
            let config = text
                .parse()
                .map_err(|e| Failure::new(Status::Config, format!("configs[{i}] '{text}': {e}")))?;
            times.push((config, Some(t))); // a failure's NaN: the library's to read
        }
        let limits = Limits {
            space: None,
            deterministic: deterministic != 0,
        };
        let next = second_round(&p, &arch, limits, &times, capacity);
        // SAFETY: non-null, and the caller gives `capacity` writable structs.
        let slots = unsafe { std::slice::from_raw_parts_mut(out, capacity) };
        for (slot, config) in slots.iter_mut().zip(&next) {
            let found = Found {
                config: *config,
                source: Source::Heuristic,
                reason: format!(
                    "second round: the guided search's next pick from {measured} measured configs"
                ),
            };
            write_config(&p, &found, slot);
        }
        // SAFETY: non-null and writable by the caller's contract.
        unsafe { *count = next.len() };
        Ok(())
    })
}
