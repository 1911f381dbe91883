//! Where the CUDA worker's driver keeps its JIT cache.
//!
//! The driver caches the machine code of every PTX module it JIT-compiles, keyed by the PTX
//! and the driver, in `CUDA_CACHE_PATH` (default `~/.nv/ComputeCache`) up to
//! `CUDA_CACHE_MAXSIZE` bytes (default 256 MiB, at most 4 GiB). A tuning run JIT-compiles
//! thousands of modules of up to a few MB each, so the default size evicts a run's modules
//! before a rerun or a resume could find them, and shares its room with every other CUDA
//! program of the user. The worker therefore gets a cache of its own, per user, at the
//! largest size the driver takes — unless the user set either variable, which wins. (Seen on
//! the H200: a second run of the same candidates loaded them much faster than the first.)

use std::ffi::OsString;
use std::path::PathBuf;

/// The driver's cache directory variable.
pub const CACHE_PATH: &str = "CUDA_CACHE_PATH";
/// The driver's cache size variable, in bytes.
pub const CACHE_MAXSIZE: &str = "CUDA_CACHE_MAXSIZE";
/// The largest `CUDA_CACHE_MAXSIZE` the driver accepts: 4 GiB.
pub const MAX_CACHE_BYTES: u64 = 4 << 30;

/// The variables to set on a CUDA worker for its JIT cache, from this process's environment.
pub fn jit_cache_env() -> Vec<(String, OsString)> {
    jit_cache_env_from(|k| std::env::var_os(k))
}

/// [`jit_cache_env`] over any environment: `$XDG_CACHE_HOME/convtune/cuda-jit`, else
/// `$HOME/.cache/convtune/cuda-jit`, and the largest size; a variable the user set is left as
/// it is (nothing is returned for it), and without either directory the driver's default
/// stays.
pub fn jit_cache_env_from(get: impl Fn(&str) -> Option<OsString>) -> Vec<(String, OsString)> {
    let set = |k: &str| get(k).is_some_and(|v| !v.is_empty());
    let mut env = Vec::new();
    if !set(CACHE_PATH) {
        let base = get("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                get("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache"))
            });
        if let Some(base) = base {
            let dir = base.join("convtune").join("cuda-jit");
            env.push((CACHE_PATH.to_string(), dir.into_os_string()));
        }
    }
    if !set(CACHE_MAXSIZE) {
        env.push((
            CACHE_MAXSIZE.to_string(),
            MAX_CACHE_BYTES.to_string().into(),
        ));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_worker_gets_its_own_cache_unless_the_user_chose_one() {
        let e = jit_cache_env_from(env(&[("HOME", "/home/u")]));
        assert_eq!(
            e,
            vec![
                (CACHE_PATH.into(), "/home/u/.cache/convtune/cuda-jit".into()),
                (CACHE_MAXSIZE.into(), "4294967296".into()),
            ]
        );
        let e = jit_cache_env_from(env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")]));
        assert_eq!(e[0].1, OsString::from("/c/convtune/cuda-jit"));
        // The user's choice wins, per variable.
        let e = jit_cache_env_from(env(&[("HOME", "/h"), (CACHE_PATH, "/mine")]));
        assert_eq!(e, vec![(CACHE_MAXSIZE.into(), "4294967296".into())]);
        let e = jit_cache_env_from(env(&[(CACHE_PATH, "/mine"), (CACHE_MAXSIZE, "1000")]));
        assert!(e.is_empty());
        // No home: the driver's default directory, but the larger size.
        let e = jit_cache_env_from(env(&[]));
        assert_eq!(e, vec![(CACHE_MAXSIZE.into(), "4294967296".into())]);
    }
}
