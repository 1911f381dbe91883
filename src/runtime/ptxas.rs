//! Assembling PTX to machine code with the CUDA toolkit's `ptxas`, in parallel, off the driver.
//!
//! The driver's own JIT (`cuModuleLoadDataEx` on PTX) was 90–96% of the measure stage of small
//! problems on the H200, and running it on several threads of the worker made tuning *slower*
//! (BENCHMARKS, session 6 final pass B): the JIT holds the context while it compiles, so the
//! timing thread waited behind it. `ptxas` is the same compiler as a separate process: the
//! worker's loader threads run one each on the modules of the candidates that come next, the
//! driver then loads finished machine code (a cubin) in about a millisecond, and the timing
//! thread never waits for a compile it did not need.
//!
//! Where no `ptxas` is found, or it refuses a module (an older toolkit than the PTX's ISA
//! version, say), the module goes to the driver's JIT as before: this is a speed-up, never a
//! requirement. [`PTXAS_ENV`] picks the binary or turns it off.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Environment variable: the `ptxas` to use (a path), or `off` to JIT every module in the
/// driver. Unset: `ptxas` on `PATH`, else under `$CUDA_HOME`, `$CUDA_PATH` or
/// `/usr/local/cuda`.
pub const PTXAS_ENV: &str = "CONVTUNE_PTXAS";

/// A `ptxas` binary that answered `--version`.
#[derive(Debug, Clone)]
pub struct Ptxas {
    path: PathBuf,
    /// The toolkit release it reports (`13.0`), for logs.
    release: String,
}

/// Machine code for one module, or the reason it is left to the driver's JIT.
#[derive(Debug)]
pub(crate) enum Image {
    /// A cubin `ptxas` wrote, with the assembler's warnings.
    Cubin(Assembled),
    /// No assembler, or it refused the module (its message): the driver JITs the PTX.
    Jit(Option<String>),
}

/// What `ptxas` made of a module.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// The ELF image.
    pub cubin: Vec<u8>,
    /// Its `-v` report and warnings (stderr/stdout, as printed).
    pub log: String,
}

/// The `ptxas` warnings that say the code is not what the generator meant, which the tuner
/// treats as a failed candidate (issue 13): `wgmma` serialised because of a call in the
/// pipeline, too few registers or non-`wgmma` writes to its accumulators (C7510, C7511, C7514,
/// C7515), and `setmaxnreg` ignored (C7508).
pub const FATAL_WARNINGS: [&str; 5] = ["C7508", "C7510", "C7511", "C7514", "C7515"];

impl Assembled {
    /// The log's warning lines.
    pub fn warnings(&self) -> impl Iterator<Item = &str> {
        self.log.lines().filter(|l| l.contains("warning"))
    }

    /// The first warning that makes the kernel a failure (see [`FATAL_WARNINGS`]).
    pub fn fatal_warning(&self) -> Option<&str> {
        self.warnings()
            .find(|w| FATAL_WARNINGS.iter().any(|c| w.contains(c)))
    }

    /// Spill stores plus spill loads (bytes) over every function of the report.
    pub fn spill_bytes(&self) -> u64 {
        let mut total = 0;
        for line in self.log.lines() {
            for key in ["bytes spill stores", "bytes spill loads"] {
                if let Some(at) = line.find(key) {
                    let num = line[..at].trim_end();
                    let digits = num.rsplit([' ', ',']).next().unwrap_or("");
                    total += digits.parse::<u64>().unwrap_or(0);
                }
            }
        }
        total
    }
}

impl Ptxas {
    /// The assembler the environment names or the first one found (see [`PTXAS_ENV`]); `None`
    /// when it is turned off or none answers.
    pub fn find() -> Option<Ptxas> {
        Self::find_from(|k| std::env::var_os(k))
    }

    /// [`Ptxas::find`] over any environment.
    pub fn find_from(get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<Ptxas> {
        if let Some(v) = get(PTXAS_ENV).filter(|v| !v.is_empty()) {
            let s = v.to_string_lossy();
            if matches!(s.trim(), "off" | "0" | "none" | "no") {
                return None;
            }
            return Ptxas::at(Path::new(&v));
        }
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(path) = get("PATH") {
            candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
        }
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(d) = get(var).filter(|v| !v.is_empty()) {
                candidates.push(PathBuf::from(d).join("bin").join("ptxas"));
            }
        }
        candidates.push(PathBuf::from("/usr/local/cuda/bin/ptxas"));
        candidates
            .iter()
            .filter(|p| p.is_file())
            .find_map(|p| Ptxas::at(p))
    }

    /// The assembler at `path`, if it runs and says it is `ptxas`.
    pub fn at(path: &Path) -> Option<Ptxas> {
        let out = Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || (!text.contains("ptxas") && !text.contains("Ptx")) {
            return None;
        }
        let release = text
            .split("release ")
            .nth(1)
            .and_then(|r| r.split([',', ' ', '\n']).next())
            .unwrap_or("?")
            .to_string();
        Some(Ptxas {
            path: path.to_path_buf(),
            release,
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The toolkit release it reports.
    pub fn release(&self) -> &str {
        &self.release
    }

    /// Assembles `ptx` for the target its `.target` line names (`sm_90a`, `sm_80`), with the
    /// resource report (`-v`).
    pub fn assemble(&self, ptx: &str) -> Result<Assembled, String> {
        self.assemble_for(ptx, None)
    }

    /// Assembles `ptx` for the GPU `device` (`sm_90`), which runs it: machine code is made for
    /// one architecture, so a module whose `.target` is an older one (`sm_80` PTX runs on an
    /// H200 through the JIT) is assembled for the device, not for its target, whose code the
    /// device refuses (`CUDA_ERROR_NO_BINARY_FOR_GPU`). An architecture-specific target
    /// (`sm_90a`) is kept as it is. `None`: the module's target.
    pub fn assemble_for(&self, ptx: &str, device: Option<&str>) -> Result<Assembled, String> {
        let named = ptx_target(ptx).ok_or("the PTX has no .target line")?;
        let target = match device {
            Some(d) if !named.ends_with('a') => d,
            _ => named,
        };
        let dir = tempfile::Builder::new()
            .prefix("convtune-ptxas")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        let input = dir.path().join("module.ptx");
        let output = dir.path().join("module.cubin");
        std::fs::write(&input, ptx).map_err(|e| format!("{}: {e}", input.display()))?;
        let out = Command::new(&self.path)
            .arg(format!("-arch={target}"))
            .arg("-v")
            .arg("-o")
            .arg(&output)
            .arg(&input)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            return Err(format!(
                "{} ({}) failed: {}",
                self.path.display(),
                out.status,
                log.trim()
            ));
        }
        let cubin = std::fs::read(&output).map_err(|e| format!("{}: {e}", output.display()))?;
        Ok(Assembled { cubin, log })
    }

    /// The module's machine code for `device`, or why the driver should JIT it instead.
    pub(crate) fn image(assembler: Option<&Ptxas>, ptx: &str, device: &str) -> Image {
        match assembler {
            None => Image::Jit(None),
            Some(a) => match a.assemble_for(ptx, Some(device)) {
                Ok(done) => Image::Cubin(done),
                Err(why) => Image::Jit(Some(why)),
            },
        }
    }
}

/// The `.target` of a PTX module (its first target name).
fn ptx_target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".target"))
        .and_then(|t| t.split([',', ' ', '\t']).find(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn the_report_gives_spills_and_fatal_warnings() {
        let a = Assembled {
            cubin: Vec::new(),
            log: "ptxas info    : Function properties for k\n    8 bytes stack frame, 12 bytes \
                  spill stores, 20 bytes spill loads\nptxas warning : (C7515) Potential \
                  Performance Loss: wgmma.mma_async instructions are serialized\n"
                .into(),
        };
        assert_eq!(a.spill_bytes(), 32);
        assert!(a.fatal_warning().unwrap().contains("C7515"));
        let ok = Assembled {
            cubin: Vec::new(),
            log: "ptxas warning : Unresolved extern function\n".into(),
        };
        assert_eq!(ok.warnings().count(), 1);
        assert!(ok.fatal_warning().is_none());
    }

    #[test]
    fn the_target_comes_from_the_ptx() {
        assert_eq!(
            ptx_target(".version 8.0\n.target sm_90a\n.address_size 64"),
            Some("sm_90a")
        );
        assert_eq!(ptx_target("  .target sm_80, debug\n"), Some("sm_80"));
        assert_eq!(ptx_target(".version 8.0\n"), None);
    }

    #[test]
    fn off_turns_it_off_and_a_missing_path_finds_nothing() {
        let env = |pairs: Vec<(&'static str, &'static str)>| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert!(Ptxas::find_from(env(vec![(PTXAS_ENV, "off"), ("PATH", "/usr/bin")])).is_none());
        assert!(Ptxas::find_from(env(vec![(PTXAS_ENV, "/nonexistent/ptxas")])).is_none());
        // A binary that is not ptxas is not taken for one.
        assert!(Ptxas::at(Path::new("/bin/true")).is_none());
    }

    /// With a real `ptxas` (CONVTUNE_PTXAS or PATH or /usr/local/cuda): a module assembles to an
    /// ELF image, and a broken one is refused with the assembler's message.
    #[test]
    fn a_real_ptxas_assembles_and_refuses() {
        let Some(p) = Ptxas::find() else {
            eprintln!("SKIP: no ptxas found (set {PTXAS_ENV} or put ptxas on PATH)");
            return;
        };
        let ptx = ".version 7.0\n.target sm_80\n.address_size 64\n\
                   .visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n\
                   ld.param.u64 %rd1, [p];\nret;\n}\n";
        let done = p.assemble(ptx).expect("assembles");
        assert_eq!(&done.cubin[..4], b"\x7fELF", "a cubin is an ELF image");
        assert!(done.log.contains("registers"), "{}", done.log);
        assert_eq!(done.spill_bytes(), 0);
        assert!(done.fatal_warning().is_none());
        let err = p.assemble(&ptx.replace("ret;", "bogus;")).unwrap_err();
        assert!(err.contains("bogus") || err.contains("error"), "{err}");
        assert!(matches!(
            Ptxas::image(Some(&p), ptx, "sm_90"),
            Image::Cubin(_)
        ));
        assert!(matches!(Ptxas::image(None, ptx, "sm_90"), Image::Jit(None)));
        // Made for the device, not the module's older target.
        let for_90 = p
            .assemble_for(ptx, Some("sm_90"))
            .expect("assembles for sm_90");
        assert_ne!(for_90.cubin, done.cubin);
    }
}
