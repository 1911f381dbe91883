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

/// The ping-pong kernels (`ld=wspp`) the H200 A/B runs, on the three problems it was built
/// for (short K, where the cooperative kernel's epilogue idles the tensor cores), assemble for
/// `sm_90a` without serialised `wgmma` or an ignored `setmaxnreg`, with both consumers' main
/// loops in one kernel.
#[test]
fn ping_pong_kernels_assemble_without_serialised_wgmma() {
    let Some(ptxas) = Ptxas::find() else {
        eprintln!(
            "SKIP: no ptxas (set {}): ping-pong kernels not assembled",
            convtune::runtime::PTXAS_ENV
        );
        return;
    };
    let problems = [
        "convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC",
        "convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC",
        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
        "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC",
    ];
    let configs = [
        "v4:bm=64,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg1,red=atomic,ld=wspp,pk=1,xf=none",
        "v4:bm=64,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=wspp,pk=1,xf=none",
        "v4:bm=64,bn=128,bk=64,wm=64,wn=128,st=6,va=8,vb=8,vc=8,lds=swz,sk=1,rs=4,mma=wg1,red=atomic,ld=wspp,pk=1,xf=none",
        "v4:bm=64,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1,mma=wg,red=fixup,ld=wspp,pk=1,xf=none",
        // 128 × 128 a consumer (two m64 instructions a k step), and the cooperative 256 × 128.
        "v4:bm=128,bn=128,bk=64,wm=128,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=wspp,pk=1,xf=none",
        "v4:bm=128,bn=128,bk=64,wm=128,wn=128,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg1,red=atomic,ld=wspp,pk=1,xf=none",
        "v4:bm=256,bn=128,bk=64,wm=128,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg1,red=atomic,ld=ws,pk=1,xf=none",
    ];
    let target = Target::parse("sm_90").unwrap();
    let jobs: Vec<(&str, &str)> = problems
        .iter()
        .flat_map(|p| configs.iter().map(move |c| (*p, *c)))
        .collect();
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|&(p, c)| {
            let l = lower(&problem(p));
            let c = cfg(c);
            if convtune::legality::check(&l, &c, &convtune::arch::Arch::SM_90).is_err() {
                return None;
            }
            let compiled = compile_conv(&l, &c, target).unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            let ptx = compiled.module.ptx().expect("sm_90 makes PTX");
            assert!(ptx.contains("mbarrier.try_wait.parity"), "{p} {c}");
            let why = match ptxas.assemble(ptx) {
                Err(e) => Some(e),
                Ok(a) => {
                    eprintln!("{p} {c}: {} bytes of spills", a.spill_bytes());
                    a.fatal_warning().map(|w| w.trim().to_string())
                }
            };
            why.map(|w| format!("{p} {c}: {w}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The kernels ptxas 13.0 miscompiled (`selfcheck::MISCOMPILED`, session 24): at -O3 it fused a
/// quotient added to each load slot's coordinate into `IMAD.HI`s with 64-bit addends and merged
/// two of them across slots. The code generator no longer adds a quotient to a slot's
/// coordinate, so these kernels' SASS must have no `IMAD.HI` with a register addend at all.
/// Needs `nvdisasm` beside `ptxas` (`scripts/setup.sh` installs both); skipped, with a message,
/// without them.
#[test]
fn miscompiled_kernels_give_ptxas_no_imad_hi_with_an_addend() {
    let Some(ptxas) = Ptxas::find() else {
        eprintln!(
            "SKIP: no ptxas (set {}): the miscompiled kernels' SASS not checked",
            convtune::runtime::PTXAS_ENV
        );
        return;
    };
    let nvdisasm = ptxas.path().with_file_name("nvdisasm");
    if !nvdisasm.exists() {
        eprintln!(
            "SKIP: no nvdisasm beside {}: the miscompiled kernels' SASS not checked",
            ptxas.path().display()
        );
        return;
    }
    let arch = convtune::arch::Arch::SM_90;
    let target = Target::parse("sm_90").unwrap();
    let jobs: Vec<_> = convtune::selfcheck::miscompiled(&arch)
        .into_iter()
        .flat_map(|(p, cfgs)| cfgs.into_iter().map(move |c| (p, c)))
        .collect();
    assert_eq!(jobs.len(), 8);
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|(p, c)| {
            let compiled = compile_conv(&lower(p), c, target).unwrap_or_else(|e| panic!("{e}"));
            let a = ptxas
                .assemble(compiled.module.ptx().expect("PTX"))
                .unwrap_or_else(|e| panic!("{p} {c}: {e}"));
            let dir = tempfile::tempdir().unwrap();
            let cubin = dir.path().join("k.cubin");
            std::fs::write(&cubin, &a.cubin).unwrap();
            let out = std::process::Command::new(&nvdisasm)
                .arg("-c")
                .arg(&cubin)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "nvdisasm: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let sass = String::from_utf8_lossy(&out.stdout);
            // `IMAD.HI.U32 Rd, Ra, b, Rc ;` with Rc a register (RZ: no addend).
            let fused: Vec<&str> = sass
                .lines()
                .filter(|l| l.contains("IMAD.HI"))
                .filter(|l| {
                    let args = l.split(';').next().unwrap_or("");
                    let last = args.rsplit(',').next().unwrap_or("").trim();
                    last.starts_with('R') && last != "RZ"
                })
                .map(str::trim)
                .collect();
            (!fused.is_empty()).then(|| format!("{p} {c}: {}", fused.join(" | ")))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
