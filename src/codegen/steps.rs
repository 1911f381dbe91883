//! Where one compile's time goes (issue 16: a 9-phase candidate cost ~9× a one-GEMM one, and
//! the fix depends on which step pays): building the IR, hashing it for the codegen cache,
//! LLVM's O3 pipeline, and the back end (PTX emission, or the AMDGPU object and `ld.lld`).
//! Wall seconds on the compiling thread: on a machine that is not oversubscribed, its CPU.

use serde::Serialize;
use std::time::Instant;

/// Seconds per step of one compile; on a codegen-cache hit `optimise_s` and `backend_s` are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CompileSteps {
    /// Planning the launches and emitting the IR of every kernel into one module.
    pub ir_s: f64,
    /// Printing and hashing the IR for the codegen cache, and reading a stored entry.
    pub cache_s: f64,
    /// Verifying the module and running the O3 pipeline.
    pub optimise_s: f64,
    /// The back end: PTX text, or the AMDGPU object linked into a code object.
    pub backend_s: f64,
}

impl CompileSteps {
    /// Runs `f`, adding its wall time to the step `slot` picks.
    pub(crate) fn time<T>(&mut self, slot: fn(&mut Self) -> &mut f64, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        *slot(self) += t.elapsed().as_secs_f64();
        out
    }

    /// The sum of two compiles' steps (a problem's total).
    pub fn plus(self, o: CompileSteps) -> CompileSteps {
        CompileSteps {
            ir_s: self.ir_s + o.ir_s,
            cache_s: self.cache_s + o.cache_s,
            optimise_s: self.optimise_s + o.optimise_s,
            backend_s: self.backend_s + o.backend_s,
        }
    }
}

impl std::fmt::Display for CompileSteps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "IR {:.2} s, cache key {:.2} s, O3 {:.2} s, back end {:.2} s",
            self.ir_s, self.cache_s, self.optimise_s, self.backend_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_adds_to_the_chosen_step_only() {
        let mut s = CompileSteps::default();
        let v = s.time(
            |s| &mut s.backend_s,
            || {
                std::thread::sleep(std::time::Duration::from_millis(5));
                7
            },
        );
        assert_eq!(v, 7);
        assert!(s.backend_s >= 0.005);
        assert_eq!((s.ir_s, s.cache_s, s.optimise_s), (0.0, 0.0, 0.0));
        let t = s.plus(CompileSteps {
            ir_s: 1.0,
            ..Default::default()
        });
        assert_eq!((t.ir_s, t.backend_s), (1.0, s.backend_s));
    }
}
