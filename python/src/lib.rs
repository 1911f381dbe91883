//! `convtune._native`: the Rust half of the Python package. It answers in JSON text, which the
//! Python half (`python/convtune/__init__.py`) turns into dicts, so the data shapes are written
//! once, here, with serde_json, and the binding stays a few thin functions.
#![deny(missing_docs)]

use convtune::arch::Arch;
use convtune::codegen::{compile_conv, Compiled};
use convtune::config::{Domain, Field};
use convtune::db::{Fingerprint, Source};
use convtune::legality;
use convtune::lookup::{
    find_candidates_with_user_db, find_config_with_user_db, Found, LookupError, MAX_CANDIDATES,
};
use convtune::lowering::lower;
use convtune::problem::{ConvProblem, Tensor};
use convtune::space::PerfConfig;
use convtune::tune::target_for;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{json, Value};
use std::path::Path;

pyo3::create_exception!(
    _native,
    ConvtuneError,
    PyException,
    "A lookup or compile that failed for a reason other than bad arguments (a broken database, no legal config, a code generator error)."
);

fn bad(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn parse_problem(text: &str) -> PyResult<ConvProblem> {
    text.parse()
        .map_err(|e| bad(format!("problem '{text}': {e}")))
}

/// The device a caller names (`torch.cuda.get_device_name`, its SM count), as the database's
/// fingerprints name them; both or neither.
fn gpu_named(gpu: Option<&str>, compute_units: Option<u32>) -> PyResult<Option<Fingerprint>> {
    match (gpu, compute_units) {
        (None, None) => Ok(None),
        (Some(gpu), Some(compute_units)) if !gpu.is_empty() && compute_units > 0 => {
            Ok(Some(Fingerprint {
                gpu: gpu.to_string(),
                compute_units,
                ..Default::default()
            }))
        }
        _ => Err(bad(format!(
            "gpu and compute_units go together (a GPU name and its SM count): got {gpu:?}, \
             {compute_units:?}"
        ))),
    }
}

/// A count of configs to answer: 1 to [`MAX_CANDIDATES`].
fn check_candidates(candidates: usize) -> PyResult<()> {
    if !(1..=MAX_CANDIDATES).contains(&candidates) {
        return Err(bad(format!(
            "candidates: {candidates} is not in 1..={MAX_CANDIDATES}"
        )));
    }
    Ok(())
}

fn parse_arch(name: &str) -> PyResult<Arch> {
    Arch::from_name(name).map_err(bad)
}

fn lookup_error(e: LookupError) -> PyErr {
    ConvtuneError::new_err(e.to_string())
}

/// The provenance as the C API and the CLI name it.
fn source_json(source: &Source) -> (&'static str, Value) {
    match source {
        Source::Exact => ("exact", Value::Null),
        Source::Nearest { key, distance } => {
            ("nearest", json!({ "key": key, "distance": distance }))
        }
        Source::QuickList => ("quick", Value::Null),
        Source::Heuristic | Source::None => ("heuristic", Value::Null),
    }
}

/// Every field of the config under its space-file name: numbers as numbers, named values as
/// their names. Derived from the one field declaration, so a new field appears with no edit.
fn config_json(c: &PerfConfig) -> Value {
    let fields = Field::ALL.into_iter().map(|f| {
        let code = c.code(f);
        let value = match f.domain() {
            Domain::Named(names) => Value::from(names[code as usize]),
            Domain::Number | Domain::PowerOfTwo => Value::from(code),
        };
        (f.name().to_string(), value)
    });
    Value::Object(fields.collect())
}

fn found_json(p: &ConvProblem, arch: &Arch, found: &Found) -> Value {
    let (source, nearest) = source_json(&found.source);
    json!({
        "problem": p.key(),
        "arch": arch.name,
        "config": found.config.to_string(),
        "source": source,
        "nearest": nearest,
        "reason": found.reason,
        "fields": config_json(&found.config),
    })
}

/// Facts about a problem the Python side checks tensors against: the canonical key, sizes,
/// and per tensor (x, w, y in kernel argument order) its logical dims and element strides.
fn problem_json(p: &ConvProblem) -> Value {
    let s = p.sizes();
    let tensor = |t: Tensor| {
        json!({
            "layout": p.layout(t).to_string(),
            "dims": p.logical_dims(t),
            "strides": p.strides(t),
            "elements": p.tensor_elems(t),
            "written": p.direction().written() == t,
        })
    };
    json!({
        "key": p.key(),
        "direction": p.direction().name(),
        "dtype": p.dtype().name(),
        "tolerance": p.tolerance(),
        "sizes": {
            "n": s.n, "c": s.c, "h": s.h, "w": s.w, "k": s.k, "y": s.y, "x": s.x,
            "pad": s.pad, "stride": s.stride, "dilation": s.dilation, "groups": s.groups,
        },
        "out_size": p.out_size(),
        "tensors": { "x": tensor(Tensor::Input), "w": tensor(Tensor::Filter), "y": tensor(Tensor::Output) },
    })
}

/// The module's kind and bytes.
fn module_of(c: &Compiled) -> PyResult<(&'static str, Vec<u8>)> {
    Ok(match &c.module {
        convtune::abi::Module::Ptx(ptx) => ("ptx", ptx.as_bytes().to_vec()),
        convtune::abi::Module::CodeObject(co) => ("amdgpu-code-object", co.clone()),
    })
}

/// Parses a problem line and describes it (JSON).
#[pyfunction]
fn problem_info(problem: &str) -> PyResult<String> {
    Ok(problem_json(&parse_problem(problem)?).to_string())
}

/// The config for a problem on an arch (JSON), as `convtune lookup` finds it; with
/// `candidates` > 1 also `"candidates"`: that many of the fallback's configs at most, the
/// answer first (`convtune lookup --candidates`); with `deterministic`, only configs without
/// floating-point atomics (`convtune lookup --deterministic`).
#[pyfunction]
#[pyo3(signature = (problem, arch, db=None, system_db=true, candidates=1, deterministic=false, gpu=None, compute_units=None))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments, each with its default
fn lookup(
    py: Python<'_>,
    problem: &str,
    arch: &str,
    db: Option<&str>,
    system_db: bool,
    candidates: usize,
    deterministic: bool,
    gpu: Option<&str>,
    compute_units: Option<u32>,
) -> PyResult<String> {
    let p = parse_problem(problem)?;
    let a = parse_arch(arch)?;
    let gpu = gpu_named(gpu, compute_units)?;
    check_candidates(candidates)?;
    let found = py
        .detach(|| {
            let db = db.map(Path::new);
            find_candidates_with_user_db(
                &p,
                &a,
                db,
                system_db,
                candidates,
                deterministic,
                gpu.as_ref(),
            )
        })
        .map_err(lookup_error)?;
    let mut answer = found_json(&p, &a, &found[0]);
    if candidates > 1 {
        answer["candidates"] = found.iter().map(|f| found_json(&p, &a, f)).collect();
    }
    Ok(answer.to_string())
}

/// The configs to time after a first use's `measured` ones (`(config, µs)` pairs, `None` for
/// one that failed): the tuner's guided search's next picks from those times, at most
/// `candidates` (`convtune lookup --measured`); with `deterministic`, only configs without
/// floating-point atomics. A list of config strings, empty when nothing measured succeeded.
#[pyfunction]
#[pyo3(signature = (problem, arch, measured, candidates=convtune::lookup::SECOND_ROUND_CANDIDATES, deterministic=false))]
fn second_round(
    py: Python<'_>,
    problem: &str,
    arch: &str,
    measured: Vec<(String, Option<f64>)>,
    candidates: usize,
    deterministic: bool,
) -> PyResult<Vec<String>> {
    let p = parse_problem(problem)?;
    let a = parse_arch(arch)?;
    check_candidates(candidates)?;
    let measured = measured
        .into_iter()
        .map(|(c, t)| {
            let config: PerfConfig = c.parse().map_err(|e| bad(format!("config '{c}': {e}")))?;
            Ok((config, t))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let limits = convtune::lookup::Limits {
        space: None,
        deterministic,
    };
    let next = py.detach(|| convtune::lookup::second_round(&p, &a, limits, &measured, candidates));
    Ok(next.iter().map(ToString::to_string).collect())
}

/// Compiles a problem's kernels: (manifest JSON, module bytes). `config` overrides the lookup
/// (which, with `deterministic`, answers only configs without floating-point atomics).
#[pyfunction]
#[pyo3(signature = (problem, arch, config=None, db=None, system_db=true, deterministic=false, gpu=None, compute_units=None))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments, each with its default
fn compile<'py>(
    py: Python<'py>,
    problem: &str,
    arch: &str,
    config: Option<&str>,
    db: Option<&str>,
    system_db: bool,
    deterministic: bool,
    gpu: Option<&str>,
    compute_units: Option<u32>,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let p = parse_problem(problem)?;
    let a = parse_arch(arch)?;
    let gpu = gpu_named(gpu, compute_units)?;
    let found = match config {
        Some(text) => Found {
            config: text.parse().map_err(bad)?,
            source: Source::Exact,
            reason: "given by the caller".into(),
        },
        None => py
            .detach(|| {
                let db = db.map(Path::new);
                find_config_with_user_db(&p, &a, db, system_db, deterministic, gpu.as_ref())
            })
            .map_err(lookup_error)?,
    };
    let l = lower(&p);
    legality::check(&l, &found.config, &a).map_err(|e| {
        bad(format!(
            "{} is illegal for this problem on {}: {e}",
            found.config, a.name
        ))
    })?;
    let compiled = py
        .detach(|| compile_conv(&l, &found.config, target_for(&a)))
        .map_err(|e| ConvtuneError::new_err(e.to_string()))?;
    let (kind, bytes) = module_of(&compiled)?;
    let mut lookup = found_json(&p, &a, &found);
    if config.is_some() {
        lookup["source"] = json!("given");
    }
    lookup["deterministic"] = json!(!found.config.adds_by_atomics(p.direction()));
    let manifest = json!({
        "format": "convtune-python-draft-1",
        "problem": problem_json(&p),
        "lookup": lookup,
        "module": { "kind": kind, "bytes": bytes.len() },
        "args": ["x", "w", "y", "workspace"],
        // `tensor_maps`: the TMA maps an `ld=tma`/`ld=ws` kernel takes after the four pointers,
        // each with the driver call that encodes it (`encode`: function and arguments, from
        // `TensorMapSpec::encode_args`); `params`: where every parameter sits in the kernel's
        // parameter buffer (`abi::param_layout`). convtune/_cuda.py launches from these alone.
        "kernels": compiled.kernels.iter().map(|k| json!({
            "name": k.name, "grid": k.grid, "block": k.block, "shared_bytes": k.shared_bytes,
            "tensor_maps": convtune::manifest::tensor_map_args(&k.args),
            "params": convtune::abi::param_layout(&k.args).slots,
        })).collect::<Vec<_>>(),
        "workspace_bytes": compiled.workspace_bytes,
        // Bytes at the workspace's start that must be zero when the plan starts and that it
        // leaves zero (`abi::KEPT_ZERO_BYTES`): keep one buffer, cleared once.
        "workspace_kept_zero": compiled.kept_zero,
    });
    Ok((manifest.to_string(), PyBytes::new(py, &bytes)))
}

/// The convtune version the extension was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConvtuneError", m.py().get_type::<ConvtuneError>())?;
    m.add(
        "FIRST_USE_CANDIDATES",
        convtune::lookup::FIRST_USE_CANDIDATES,
    )?;
    m.add("MAX_CANDIDATES", MAX_CANDIDATES)?;
    m.add(
        "SECOND_ROUND_CANDIDATES",
        convtune::lookup::SECOND_ROUND_CANDIDATES,
    )?;
    m.add_function(wrap_pyfunction!(problem_info, m)?)?;
    m.add_function(wrap_pyfunction!(lookup, m)?)?;
    m.add_function(wrap_pyfunction!(second_round, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
