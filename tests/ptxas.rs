//! The shipped sm_90 kernels through the CUDA toolkit's `ptxas` (no GPU needed): every entry of
//! `tuned-db/sm_90.toml` must assemble for `sm_90a` with none of the warnings that mean the
//! kernel is not what was generated ([`FATAL_WARNINGS`]: serialised `wgmma`, ignored
//! `setmaxnreg`). Spills are printed, not failed: they cost speed, which the tuner measured. The tuner rejects such candidates on the GPU; this
//! keeps them out of what ships. Skipped, with a message, where no `ptxas` is found
//! (`scripts/setup.sh` installs one into the test venv; `scripts/test.sh` points
//! `CONVTUNE_PTXAS` at it).

use convtune::codegen::{compile_conv, Target};
use convtune::db::TunedDb;
use convtune::lowering::lower;
use convtune::runtime::{Ptxas, FATAL_WARNINGS};
use rayon::prelude::*;
use std::path::Path;

mod common;
use common::{cfg, problem};

#[test]
fn shipped_sm90_kernels_assemble_without_serialised_wgmma() {
    let Some(ptxas) = Ptxas::find() else {
        eprintln!(
            "SKIP: no ptxas (set {} or run scripts/setup.sh): shipped kernels not assembled",
            convtune::runtime::PTXAS_ENV
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut entries = Vec::new();
    for file in ["tuned-db/sm_90.toml"] {
        let db = TunedDb::load(&root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        for e in db.entries() {
            entries.push((file, e.problem.clone(), e.config.clone()));
        }
    }
    assert!(entries.len() > 10, "{} entries", entries.len());
    let target = Target::parse("sm_90").unwrap();
    let failures: Vec<String> = entries
        .par_iter()
        .filter_map(|(file, p, c)| {
            let compiled = compile_conv(&lower(&problem(p)), &cfg(c), target)
                .unwrap_or_else(|e| panic!("{file}: {p} {c}: {e}"));
            let ptx = compiled.module.ptx().expect("sm_90 makes PTX");
            let why = match ptxas.assemble(ptx) {
                Err(e) => Some(e),
                Ok(a) => {
                    if a.spill_bytes() > 0 {
                        eprintln!("note: {p} {c}: {} bytes of spills", a.spill_bytes());
                    }
                    a.fatal_warning().map(|w| w.trim().to_string())
                }
            };
            why.map(|w| format!("{file}: {p} {c}: {w}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "ptxas {} ({}), fatal warnings {FATAL_WARNINGS:?}:\n{}",
        ptxas.release(),
        ptxas.path().display(),
        failures.join("\n")
    );
}
