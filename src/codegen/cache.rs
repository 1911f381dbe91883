//! A disk cache of compiled modules, keyed by the generated LLVM IR (issue 16: the dry run and
//! every re-tune spend almost all their CPU in LLVM's O3 pipeline, the AMDGPU/NVPTX back end and
//! `ld.lld`, on candidates compiled before).
//!
//! The key is a 128-bit hash (two independent 64-bit hashes) over everything that decides the
//! output: the module as generated (before optimisation, its bitcode: writing it costs a tenth
//! of printing the IR as text, 15–77 ms a Hopper candidate), the target triple, CPU and
//! features, the pass pipeline, the LLVM version, the linker's version line, and the source of
//! `machine.rs` (how the module is optimised, emitted and linked), so editing any of them
//! misses the cache rather than returning stale code. What is stored is exactly the bytes a
//! fresh compile produced (PTX text or the linked code object); the launch list and the AMD
//! resource report are derived from the candidate and those bytes as before, so a hit gives
//! the same [`Compiled`](super::Compiled) as a miss.
//!
//! On by default in the tuner and the dry run, in `$XDG_CACHE_HOME/convtune/codegen` (else
//! `~/.cache/convtune/codegen`); `CONVTUNE_CODEGEN_CACHE=DIR` moves it, `=off` turns it off.
//! Entries are written atomically (a temporary file renamed), so concurrent tuners share one
//! directory; past [`MAX_BYTES`] the oldest entries are removed.

use super::machine;
use super::spec::TargetSpec;
use crate::abi::Module;
use crate::db::Fnv1a64;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The environment variable that moves (a directory) or disables (`off`, `0`) the cache.
pub const CACHE_ENV: &str = "CONVTUNE_CODEGEN_CACHE";

/// The cache is trimmed to this size, oldest entries first.
pub const MAX_BYTES: u64 = 4 << 30;

/// Entries written between two size checks.
const TRIM_EVERY: usize = 256;

/// Bump when the entry format or what the key hashes changes (2: the module's bitcode, was its
/// printed IR).
const FORMAT: &[u8] = b"convtune-codegen-cache-2";

/// What decides the output besides the IR and the target: how it is optimised, emitted and
/// linked (this file's neighbour, hashed as text).
const MACHINE_SOURCE: &str = include_str!("machine.rs");

/// A directory of compiled modules.
pub struct CodegenCache {
    dir: PathBuf,
    hits: AtomicU64,
    misses: AtomicU64,
    written: AtomicUsize,
}

/// A cache key: 32 hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey(String);

impl CodegenCache {
    /// A cache in `dir` (created when the first entry is written).
    pub fn at(dir: impl Into<PathBuf>) -> CodegenCache {
        CodegenCache {
            dir: dir.into(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            written: AtomicUsize::new(0),
        }
    }

    /// The process's cache as the environment asks for it (see the module docs); `None` when
    /// it is turned off or no directory can be found.
    pub fn from_env() -> Option<&'static CodegenCache> {
        static CACHE: OnceLock<Option<CodegenCache>> = OnceLock::new();
        CACHE
            .get_or_init(|| {
                cache_dir(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
                    .map(CodegenCache::at)
            })
            .as_ref()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Hits and misses so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// The key of a generated (not yet optimised) module, given as its bitcode, for a target.
    pub(crate) fn key(&self, bitcode: &[u8], spec: &dyn TargetSpec) -> CacheKey {
        let (major, minor, patch) = inkwell::support::get_llvm_version();
        let llvm = format!("{major}.{minor}.{patch}");
        let (triple, cpu, features) = (spec.triple(), spec.cpu(), spec.features());
        let parts: [&[u8]; 9] = [
            FORMAT,
            triple.as_bytes(),
            cpu.as_bytes(),
            features.as_bytes(),
            machine::PIPELINE.as_bytes(),
            llvm.as_bytes(),
            linker_version().as_bytes(),
            MACHINE_SOURCE.as_bytes(),
            bitcode,
        ];
        let mut fnv = Fnv1a64::new();
        let mut sip = std::collections::hash_map::DefaultHasher::new();
        for p in parts {
            fnv.write(p);
            fnv.write(&(p.len() as u64).to_le_bytes());
            p.hash(&mut sip);
        }
        CacheKey(format!("{:016x}{:016x}", fnv.finish(), sip.finish()))
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(&key.0[..2]).join(&key.0)
    }

    /// The module stored under `key`, if any (a damaged entry is a miss).
    pub(crate) fn get(&self, key: &CacheKey) -> Option<Module> {
        let found = std::fs::read(self.path(key)).ok().and_then(|b| decode(&b));
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if found.is_some() {
            // Mark it used, for trimming (best effort).
            let _ = std::fs::File::options()
                .append(true)
                .open(self.path(key))
                .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        }
        found
    }

    /// Stores a module under `key`. Best effort: a cache that cannot be written only costs
    /// the next run its time.
    pub(crate) fn put(&self, key: &CacheKey, module: &Module) {
        let path = self.path(key);
        let Some(parent) = path.parent() else { return };
        if std::fs::create_dir_all(parent).is_err() {
            return;
        }
        let Ok(mut tmp) = tempfile::NamedTempFile::new_in(parent) else {
            return;
        };
        if tmp.write_all(&encode(module)).is_err() || tmp.persist(&path).is_err() {
            return;
        }
        if self.written.fetch_add(1, Ordering::Relaxed) % TRIM_EVERY == TRIM_EVERY - 1 {
            trim(&self.dir, MAX_BYTES);
        }
    }
}

/// The cache directory for an environment (see the module docs).
fn cache_dir(get: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match get(CACHE_ENV).filter(|v| !v.is_empty()) {
        Some(v) if matches!(v.as_str(), "off" | "0" | "false" | "no") => None,
        Some(v) => Some(PathBuf::from(v)),
        None => get("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                get("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| Path::new(&h).join(".cache"))
            })
            .map(|base| base.join("convtune").join("codegen")),
    }
}

/// The linker's first `--version` line (part of the key: a new `ld.lld` links anew).
fn linker_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        machine::LINKERS
            .iter()
            .find_map(|l| std::process::Command::new(l).arg("--version").output().ok())
            .map(|o| {
                let text = String::from_utf8_lossy(&o.stdout);
                text.lines().next().unwrap_or("").to_string()
            })
            .unwrap_or_default()
    })
}

/// One byte for the kind (`P` PTX, `C` code object), then the bytes.
fn encode(m: &Module) -> Vec<u8> {
    let (kind, bytes) = match m {
        Module::Ptx(text) => (b'P', text.as_bytes()),
        Module::CodeObject(co) => (b'C', co.as_slice()),
    };
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.push(kind);
    out.extend_from_slice(bytes);
    out
}

fn decode(b: &[u8]) -> Option<Module> {
    let (&kind, rest) = b.split_first()?;
    match kind {
        b'P' => String::from_utf8(rest.to_vec()).ok().map(Module::Ptx),
        b'C' if !rest.is_empty() => Some(Module::CodeObject(rest.to_vec())),
        _ => None,
    }
}

/// Removes the least recently used entries until the directory holds at most `max` bytes.
fn trim(dir: &Path, max: u64) {
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|sub| {
            std::fs::read_dir(sub.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= max {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_moves_or_disables_the_cache() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(cache_dir(env(&[(CACHE_ENV, "off")])), None);
        assert_eq!(
            cache_dir(env(&[(CACHE_ENV, "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            cache_dir(env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/convtune/codegen"))
        );
        assert_eq!(
            cache_dir(env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")])),
            Some(PathBuf::from("/c/convtune/codegen"))
        );
        assert_eq!(cache_dir(env(&[])), None);
    }

    #[test]
    fn entries_round_trip_and_damaged_ones_are_misses_and_trimming_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CodegenCache::at(dir.path());
        let key = CacheKey("ab".repeat(16));
        assert!(cache.get(&key).is_none());
        cache.put(&key, &Module::CodeObject(vec![1, 2, 3]));
        assert_eq!(cache.get(&key), Some(Module::CodeObject(vec![1, 2, 3])));
        let ptx = CacheKey("cd".repeat(16));
        cache.put(&ptx, &Module::Ptx(".version 8.4".into()));
        assert_eq!(cache.get(&ptx), Some(Module::Ptx(".version 8.4".into())));
        assert_eq!(cache.counts(), (2, 1));
        std::fs::write(cache.path(&key), b"X").unwrap();
        assert!(cache.get(&key).is_none(), "a damaged entry is a miss");
        // Trimming to one entry's size keeps the most recently used one.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(cache.get(&ptx).is_some());
        trim(dir.path(), 13);
        assert!(!cache.path(&key).exists() && cache.path(&ptx).exists());
    }
}

#[cfg(test)]
mod same_bytes {
    use super::*;
    use crate::arch::Arch;
    use crate::codegen::{compile_conv, compile_conv_cached, Target};
    use crate::lowering::lower;

    #[test]
    fn a_hit_gives_exactly_what_a_fresh_compile_gives() {
        // The GPU path must get the same kernels with the cache as without (golden hashes).
        let dir = tempfile::tempdir().unwrap();
        let cache = CodegenCache::at(dir.path());
        for (line, arch) in [
            (
                "conv -n 2 -c 16 -H 8 -W 8 -k 32 -y 3 -x 3 -p 1 -q 1 -F 1",
                Arch::SM_90,
            ),
            (
                "convbfp16 -n 2 -c 64 -H 6 -W 6 -k 64 -y 1 -x 1 -F 1 --layout NHWC",
                Arch::GFX90A,
            ),
        ] {
            let p = line.parse().unwrap();
            let l = lower(&p);
            let cfg = crate::lookup::heuristic(&p, &arch).expect("a heuristic config");
            let target = Target::of(arch);
            let fresh = compile_conv(&l, &cfg, target).unwrap();
            let miss = compile_conv_cached(&l, &cfg, target, Some(&cache)).unwrap();
            let hit = compile_conv_cached(&l, &cfg, target, Some(&cache)).unwrap();
            assert_eq!(fresh.module, miss.module, "{line}");
            assert_eq!(fresh.module, hit.module, "{line}");
            assert_eq!(fresh.resources, hit.resources, "{line}");
            assert_eq!(fresh.kernels, hit.kernels, "{line}");
            // The steps say what ran: a miss optimised and ran the back end, a hit neither.
            let ran =
                |c: &crate::codegen::Compiled| (c.steps.optimise_s > 0.0, c.steps.backend_s > 0.0);
            assert_eq!(ran(&miss), (true, true), "{line}");
            assert_eq!(ran(&hit), (false, false), "{line}");
            assert!(hit.steps.ir_s > 0.0 && hit.steps.cache_s > 0.0, "{line}");
        }
        assert_eq!(cache.counts(), (2, 2));
    }
}
