//! The C API of convtune's lookup (`include/convtune.h`): the config a compiler should build a
//! convolution's kernels with, and where it came from.
//!
//! This crate links convtune without its `llvm` feature, so the library a C or C++ compiler
//! embeds carries the tuned database, legality and the cost model but no code generator. Every
//! exported function answers through [`guard`], which turns a panic into
//! [`Status::Internal`] instead of unwinding into C (undefined behaviour). The types here mirror
//! the header one for one; the C test compares their sizes through [`convtune_abi_sizes`].
#![deny(missing_docs)]

mod config;
mod problem;
mod second;
mod tensor_map;

use convtune::arch::Arch;
use convtune::db::{Fingerprint, Source};
use convtune::lookup::{
    find_candidates_with_user_db, find_config_with_user_db, Found, LookupError, MAX_CANDIDATES,
};
use convtune::problem::ConvProblem;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

pub use config::convtune_config_format;
pub use problem::ProblemC;
pub use second::convtune_second_round_str;
pub use tensor_map::{convtune_manifest_tensor_maps, convtune_tensor_map_size, TensorMapC};

/// `CONVTUNE_ABI_VERSION` of the header this crate implements.
pub const ABI_VERSION: c_int = 3;
/// `CONVTUNE_CONFIG_LEN`.
pub const CONFIG_LEN: usize = 128;
/// `CONVTUNE_KEY_LEN`.
pub const KEY_LEN: usize = 512;
/// `CONVTUNE_REASON_LEN`.
pub const REASON_LEN: usize = 2048;

/// `convtune_status`: what a call returns.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// `CONVTUNE_OK`.
    Ok = 0,
    /// `CONVTUNE_ERR_NULL`: a required pointer was NULL.
    Null = 1,
    /// `CONVTUNE_ERR_UTF8`: a string is not UTF-8.
    Utf8 = 2,
    /// `CONVTUNE_ERR_PROBLEM`: the problem does not parse or is invalid.
    Problem = 3,
    /// `CONVTUNE_ERR_ARCH`: unknown arch.
    Arch = 4,
    /// `CONVTUNE_ERR_DATABASE`: a database that cannot be read or parsed.
    Database = 5,
    /// `CONVTUNE_ERR_NO_CONFIG`: no legal config at all.
    NoConfig = 6,
    /// `CONVTUNE_ERR_INTERNAL`: a caught panic.
    Internal = 7,
    /// `CONVTUNE_ERR_CONFIG`: fields that are no config.
    Config = 8,
    /// `CONVTUNE_ERR_MANIFEST`: not a launch manifest, or no such kernel.
    Manifest = 9,
    /// `CONVTUNE_ERR_BUFFER`: an output buffer too small.
    Buffer = 10,
}

/// `convtune_config`: the answer of a lookup, the tuning fields as in `PerfConfig` (one member
/// per field, named as the field: see `config::set_field`, whose exhaustive match makes a new
/// field a compile error here until it has a member).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ConfigC {
    /// Block tile M.
    pub block_m: u32,
    /// Block tile N.
    pub block_n: u32,
    /// Block tile K.
    pub block_k: u32,
    /// Warp tile M.
    pub warp_m: u32,
    /// Warp tile N.
    pub warp_n: u32,
    /// Pipeline stages.
    pub stages: u32,
    /// Vector width of A loads.
    pub vec_a: u32,
    /// Vector width of B loads.
    pub vec_b: u32,
    /// Vector width of C stores.
    pub vec_c: u32,
    /// `convtune_lds`.
    pub lds: i32,
    /// Split-K factor.
    pub split_k: u32,
    /// Rasterisation group.
    pub raster: u32,
    /// `convtune_mma`.
    pub mma: i32,
    /// `convtune_red`.
    pub red: i32,
    /// `convtune_ld`.
    pub ld: i32,
    /// `convtune_persistent`.
    pub persistent: i32,
    /// `convtune_xf`.
    pub xf: i32,
    /// `convtune_cluster`.
    pub cluster: i32,
    /// `convtune_epilogue`.
    pub epilogue: i32,
    /// `convtune_cut`.
    pub cut: i32,
    /// `convtune_source`.
    pub source: i32,
    /// Distance to the tuned problem for a nearest hit.
    pub nearest_distance: f64,
    /// The config string.
    pub config: [c_char; CONFIG_LEN],
    /// The canonical problem key.
    pub problem_key: [c_char; KEY_LEN],
    /// The nearest tuned problem's key.
    pub nearest_key: [c_char; KEY_LEN],
    /// Why this config.
    pub reason: [c_char; REASON_LEN],
}

/// A failed call: the status to return and the message for `convtune_last_error`.
#[derive(Debug)]
pub struct Failure {
    /// The status code.
    pub status: Status,
    /// The message.
    pub message: String,
}

impl Failure {
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
        }
    }
}

impl From<LookupError> for Failure {
    fn from(e: LookupError) -> Self {
        let status = match e {
            LookupError::Db(_) => Status::Database,
            LookupError::NoLegalConfig { .. } => Status::NoConfig,
        };
        Failure::new(status, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// Runs `f`, records its failure (or a panic) as the thread's last error, returns the status.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> c_int {
    let failure = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return Status::Ok as c_int,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Failure::new(Status::Internal, format!("internal error (a bug): {what}"))
        }
    };
    set_last_error(&failure.message);
    failure.status as c_int
}

/// A required C string argument as `&str`.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives the call.
pub(crate) unsafe fn required_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::new(Status::Null, format!("{what} is NULL")));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    unsafe { optional_str(p, what) }.map(|s| s.unwrap_or_default())
}

/// An optional C string argument (NULL is `None`).
///
/// # Safety
/// As [`required_str`].
pub(crate) unsafe fn optional_str<'a>(
    p: *const c_char,
    what: &str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller promises a NUL-terminated string that outlives the call.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(Some)
        .map_err(|_| Failure::new(Status::Utf8, format!("{what} is not valid UTF-8")))
}

/// Copies `s` into a fixed C buffer, cut at a character boundary, always NUL-terminated.
pub(crate) fn fill(buf: &mut [c_char], s: &str) {
    let mut end = s.len().min(buf.len() - 1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    for (dst, &b) in buf.iter_mut().zip(&s.as_bytes()[..end]) {
        *dst = b as c_char;
    }
    buf[end] = 0;
}

/// The lookup every entry point shares: arch, user database, then the library's lookup.
/// With `deterministic`, only configs without floating-point atomics
/// (`convtune lookup --deterministic`).
pub fn lookup(
    problem: &ConvProblem,
    arch: &str,
    user_db: Option<&str>,
    deterministic: bool,
) -> Result<Found, Failure> {
    let arch = arch_named(arch)?;
    let db = user_db.map(Path::new);
    Ok(find_config_with_user_db(
        problem,
        &arch,
        db,
        true,
        deterministic,
        None,
    )?)
}

/// Writes a lookup's answer into the C struct.
fn write_config(problem: &ConvProblem, found: &Found, out: &mut ConfigC) {
    config::write_fields(&found.config, out);
    let (source, distance, nearest) = match &found.source {
        Source::Exact => (0, 0.0, ""),
        Source::Nearest { key, distance } => (1, *distance, key.as_str()),
        Source::QuickList => (2, 0.0, ""),
        // `None` never comes out of a successful lookup (it falls through to the heuristic).
        Source::Heuristic | Source::None => (3, 0.0, ""),
    };
    out.source = source;
    out.nearest_distance = distance;
    fill(&mut out.config, &found.config.to_string());
    fill(&mut out.problem_key, &problem.key());
    fill(&mut out.nearest_key, nearest);
    fill(&mut out.reason, &found.reason);
}

/// Shared tail of both lookups: resolve, then fill `out`.
///
/// # Safety
/// `arch`, `user_db` and `out` as in the header.
unsafe fn lookup_into(
    problem: &ConvProblem,
    arch: *const c_char,
    user_db: *const c_char,
    out: *mut ConfigC,
    deterministic: bool,
) -> Result<(), Failure> {
    // SAFETY: the header's contract for these arguments.
    let (arch, user_db) = unsafe {
        (
            required_str(arch, "arch")?,
            optional_str(user_db, "user_db")?,
        )
    };
    if out.is_null() {
        return Err(Failure::new(Status::Null, "out is NULL"));
    }
    let found = lookup(problem, arch, user_db, deterministic)?;
    // SAFETY: `out` is non-null and the caller gives a writable convtune_config.
    write_config(problem, &found, unsafe { &mut *out });
    Ok(())
}

/// `convtune_lookup`: the config for a problem given as a struct.
///
/// # Safety
/// `problem` and `out` point to valid structs (or are NULL, which is an error); the strings are
/// NUL-terminated or NULL where the header allows it.
#[no_mangle]
pub unsafe extern "C" fn convtune_lookup(
    problem: *const ProblemC,
    arch: *const c_char,
    user_db: *const c_char,
    out: *mut ConfigC,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { read_problem(problem)? };
        // SAFETY: forwarded caller contract.
        unsafe { lookup_into(&p, arch, user_db, out, false) }
    })
}

/// `convtune_lookup_str`: the config for a problem given as a MIOpenDriver or rocMLIR line.
///
/// # Safety
/// As [`convtune_lookup`]; `problem` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn convtune_lookup_str(
    problem: *const c_char,
    arch: *const c_char,
    user_db: *const c_char,
    out: *mut ConfigC,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { lookup_line(problem, arch, user_db, out, false) }
}

/// `convtune_lookup_str_deterministic`: [`convtune_lookup_str`] answering only configs whose
/// results are the same bits on every run (no floating-point atomics).
///
/// # Safety
/// As [`convtune_lookup_str`].
#[no_mangle]
pub unsafe extern "C" fn convtune_lookup_str_deterministic(
    problem: *const c_char,
    arch: *const c_char,
    user_db: *const c_char,
    out: *mut ConfigC,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { lookup_line(problem, arch, user_db, out, true) }
}

/// The lookup of a problem given as a line, for the `convtune_lookup_str*` entry points.
///
/// # Safety
/// As [`convtune_lookup_str`].
unsafe fn lookup_line(
    problem: *const c_char,
    arch: *const c_char,
    user_db: *const c_char,
    out: *mut ConfigC,
    deterministic: bool,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { parse_line(problem)? };
        // SAFETY: forwarded caller contract.
        unsafe { lookup_into(&p, arch, user_db, out, deterministic) }
    })
}

/// The shared tail of the candidate lookups: the lookup's answer, then up to `capacity - 1`
/// more of the fallback's configs, best first, written to `out[..*count]`.
///
/// # Safety
/// `arch`, `user_db` as in the header; `out` points to `capacity` writable structs and `count`
/// to a writable `size_t` (NULL is an error).
#[allow(clippy::too_many_arguments)] // the C entry points' arguments, passed through
unsafe fn candidates_into(
    problem: &ConvProblem,
    arch: *const c_char,
    user_db: *const c_char,
    deterministic: c_int,
    gpu: Option<&Fingerprint>,
    out: *mut ConfigC,
    capacity: usize,
    count: *mut usize,
) -> Result<(), Failure> {
    // SAFETY: the header's contract for these arguments.
    let (arch, user_db) = unsafe {
        (
            required_str(arch, "arch")?,
            optional_str(user_db, "user_db")?,
        )
    };
    check_list(out, capacity, count)?;
    let arch = arch_named(arch)?;
    let found = find_candidates_with_user_db(
        problem,
        &arch,
        user_db.map(Path::new),
        true,
        capacity,
        deterministic != 0,
        gpu,
    )?;
    // SAFETY: non-null, and the caller gives `capacity` writable structs.
    let slots = unsafe { std::slice::from_raw_parts_mut(out, capacity) };
    let mut written = 0;
    for (slot, f) in slots.iter_mut().zip(&found) {
        write_config(problem, f, slot);
        written += 1;
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { *count = written };
    Ok(())
}

/// A list output's arguments: `out` and `count` not NULL, `capacity` in
/// 1..=`CONVTUNE_MAX_CANDIDATES`.
pub(crate) fn check_list(
    out: *mut ConfigC,
    capacity: usize,
    count: *mut usize,
) -> Result<(), Failure> {
    if out.is_null() || count.is_null() {
        return Err(Failure::new(Status::Null, "out or count is NULL"));
    }
    if !(1..=MAX_CANDIDATES).contains(&capacity) {
        return Err(Failure::new(
            Status::Buffer,
            format!("capacity {capacity} is not in 1..={MAX_CANDIDATES}"),
        ));
    }
    Ok(())
}

/// `convtune_lookup_candidates`: [`convtune_lookup`]'s answer, then up to `capacity - 1` more
/// of the fallback's configs, best first (`convtune lookup --candidates`), for a caller that
/// can time kernels at first use and keep the fastest, as `convtune.torch` does: on the shipped
/// database with each entry held out, the lookup's first config ran at 0.845 of the tuned
/// winner's speed, the fastest of the first four at 0.948 and of the first eight at 0.964
/// (geomean, timed on the H200: BENCHMARKS.md, session 32); of sixteen 0.986 against eight's
/// 0.960 in one H100 run (session 37).
///
/// # Safety
/// As [`convtune_lookup`]; `out` points to `capacity` writable structs and `count` to a
/// writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn convtune_lookup_candidates(
    problem: *const ProblemC,
    arch: *const c_char,
    user_db: *const c_char,
    deterministic: c_int,
    out: *mut ConfigC,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { read_problem(problem)? };
        // SAFETY: forwarded caller contract.
        unsafe { candidates_into(&p, arch, user_db, deterministic, None, out, capacity, count) }
    })
}

/// `convtune_lookup_candidates_str`: [`convtune_lookup_candidates`] for a problem written as a
/// line.
///
/// # Safety
/// As [`convtune_lookup_candidates`]; `problem` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn convtune_lookup_candidates_str(
    problem: *const c_char,
    arch: *const c_char,
    user_db: *const c_char,
    deterministic: c_int,
    out: *mut ConfigC,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    // SAFETY: forwarded caller contract (a NULL `gpu` is the plain lookup).
    unsafe {
        convtune_lookup_candidates_gpu_str(
            problem,
            arch,
            user_db,
            deterministic,
            std::ptr::null(),
            0,
            out,
            capacity,
            count,
        )
    }
}

/// `convtune_lookup_candidates_gpu_str`: [`convtune_lookup_candidates_str`] for the GPU the
/// kernels will run on, named as the driver names it (`cuDeviceGetName`) with its SM count
/// (`convtune lookup --gpu --compute-units`): exact entries are that GPU's, and a problem tuned
/// only on another GPU of the arch comes first as a distance-0 neighbour naming that GPU. NULL
/// `gpu` is the plain lookup (where a problem was tuned on several GPUs: the entry of the GPU
/// most of the database was tuned on).
///
/// # Safety
/// As [`convtune_lookup_candidates_str`]; `gpu` is a NUL-terminated string or NULL.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // one C call, as its siblings plus the device
pub unsafe extern "C" fn convtune_lookup_candidates_gpu_str(
    problem: *const c_char,
    arch: *const c_char,
    user_db: *const c_char,
    deterministic: c_int,
    gpu: *const c_char,
    compute_units: u32,
    out: *mut ConfigC,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { parse_line(problem)? };
        // SAFETY: the caller's contract.
        let gpu = match unsafe { optional_str(gpu, "gpu")? } {
            None => None,
            Some(name) if !name.is_empty() && compute_units > 0 => Some(Fingerprint {
                gpu: name.to_string(),
                compute_units,
                ..Default::default()
            }),
            Some(name) => {
                return Err(Failure::new(
                    Status::Arch,
                    format!(
                        "gpu {name:?} with compute_units {compute_units}: a GPU name and its \
                         SM count (> 0) go together"
                    ),
                ))
            }
        };
        // SAFETY: forwarded caller contract.
        unsafe {
            candidates_into(
                &p,
                arch,
                user_db,
                deterministic,
                gpu.as_ref(),
                out,
                capacity,
                count,
            )
        }
    })
}

/// The arch a lookup names (`CONVTUNE_ERR_ARCH` when there is none of that name).
fn arch_named(name: &str) -> Result<Arch, Failure> {
    Arch::from_name(name).map_err(|e| Failure::new(Status::Arch, e.to_string()))
}

/// A problem given as a `convtune_problem` struct.
///
/// # Safety
/// `problem` is NULL (an error) or points to a valid `convtune_problem`.
unsafe fn read_problem(problem: *const ProblemC) -> Result<ConvProblem, Failure> {
    if problem.is_null() {
        return Err(Failure::new(Status::Null, "problem is NULL"));
    }
    // SAFETY: non-null, and the caller promises a valid convtune_problem.
    unsafe { (*problem).to_problem() }
}

/// A problem given as a MIOpenDriver or rocMLIR line.
///
/// # Safety
/// `problem` is NULL (an error) or a NUL-terminated string that outlives the call.
unsafe fn parse_line(problem: *const c_char) -> Result<ConvProblem, Failure> {
    // SAFETY: the caller's contract.
    let text = unsafe { required_str(problem, "problem")? };
    text.parse()
        .map_err(|e| Failure::new(Status::Problem, format!("problem '{text}': {e}")))
}

/// `convtune_last_error`: the thread's last failure message.
#[no_mangle]
pub extern "C" fn convtune_last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// `convtune_version`: the crate version as a static C string.
#[no_mangle]
pub extern "C" fn convtune_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// `convtune_abi_sizes`: the struct sizes this library was built with.
///
/// # Safety
/// Each pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn convtune_abi_sizes(
    problem_size: *mut usize,
    config_size: *mut usize,
) -> c_int {
    // SAFETY: the caller passes NULL or writable pointers.
    unsafe {
        if let Some(p) = problem_size.as_mut() {
            *p = std::mem::size_of::<ProblemC>();
        }
        if let Some(c) = config_size.as_mut() {
            *c = std::mem::size_of::<ConfigC>();
        }
    }
    ABI_VERSION
}

#[cfg(test)]
mod tests;
