//! Errors of the GPU runtime: what failed, where, and the driver's own words.
//!
//! A [`RuntimeError`] means the *measuring machinery* is broken (no driver, no device, a dead
//! context, a worker that cannot start). A candidate kernel that fails is not an error: it is an
//! [`Outcome`](super::Outcome), recorded and skipped while the run goes on.

use cudarc::driver::{result::DriverError, sys::CUresult};

/// Why the runtime cannot measure at all.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// `libcuda.so.1` could not be opened; cudarc would panic on the first call, so we check first.
    #[error("no CUDA driver (libcuda.so.1 not found)")]
    NoDriver,
    /// A driver call failed; `context` names the kernel or buffer it was about.
    #[error("{call} failed{}: {error}", context_suffix(.context))]
    Driver {
        /// The driver entry point, e.g. `cuMemAllocAsync`.
        call: &'static str,
        /// What the call was about (kernel name, buffer, sizes), or empty.
        context: String,
        /// The driver's error name and description.
        error: String,
    },
    /// The requested ordinal is beyond the devices the driver reports.
    #[error("CUDA device {ordinal} does not exist ({count} device(s) found)")]
    NoSuchDevice {
        /// What was asked for.
        ordinal: usize,
        /// What the driver has.
        count: usize,
    },
    /// A plan's module could not be loaded (PTX JIT log included).
    #[error("loading the plan's module: {0}")]
    Module(String),
    /// `measure` was called before `set_problem`.
    #[error("no problem set: call set_problem before measuring")]
    NoProblem,
    /// The reference plan, which every candidate is checked against, did not run.
    #[error("reference plan for `{problem}` failed: {reason}")]
    Reference {
        /// The problem key.
        problem: String,
        /// The outcome of the reference run.
        reason: String,
    },
    /// An earlier kernel faulted; the CUDA context stays broken until the process exits.
    #[error("CUDA context lost after a fault ({0}); the measuring process must restart")]
    ContextLost(String),
    /// Starting or talking to the worker process failed.
    #[error("worker process: {0}")]
    Worker(String),
    /// `libamdhip64` could not be opened: the AMD counterpart of [`RuntimeError::NoDriver`].
    #[error("{0}")]
    NoHipRuntime(String),
    /// No backend found a GPU; the text lists what each looked for and found.
    #[error("{0}")]
    NoGpu(String),
    /// The run's deadline passed before the worker finished `what` (starting, setting up the
    /// problem): nothing is wrong with the device, the time is spent.
    #[error("the run's deadline passed while {what}")]
    OutOfTime {
        /// What the worker was doing.
        what: &'static str,
    },
    /// The HIP runtime failed.
    #[error("{call} failed: {error}")]
    Hip {
        /// The HIP entry point.
        call: &'static str,
        /// HIP's error description.
        error: String,
    },
}

fn context_suffix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" ({context})")
    }
}

impl RuntimeError {
    /// Wraps a driver error with the call and what it was about.
    pub(crate) fn driver(call: &'static str, context: impl Into<String>, e: DriverError) -> Self {
        RuntimeError::Driver {
            call,
            context: context.into(),
            error: describe(e),
        }
    }
}

/// `CUDA_ERROR_X (description)`, the form every message of this module uses.
pub(crate) fn describe(e: DriverError) -> String {
    match e.error_string() {
        Ok(s) => format!("{:?} ({})", e.0, s.to_string_lossy()),
        Err(_) => format!("{:?}", e.0),
    }
}

/// Errors after which the CUDA context is unusable ("sticky" errors in NVIDIA's docs): every
/// later call in the process returns the same error, so the worker must be restarted.
pub(crate) fn is_sticky(e: DriverError) -> bool {
    matches!(
        e.0,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_ASSERT
            | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
            | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
            | CUresult::CUDA_ERROR_UNKNOWN
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_errors_are_the_fault_kind() {
        assert!(is_sticky(DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)));
        assert!(is_sticky(DriverError(
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
        )));
        assert!(!is_sticky(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE)));
        assert!(!is_sticky(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)));
    }

    #[test]
    fn messages_carry_call_and_context() {
        let e = RuntimeError::Driver {
            call: "cuLaunchKernel",
            context: "kernel gemm0".into(),
            error: "CUDA_ERROR_INVALID_VALUE".into(),
        };
        assert_eq!(
            e.to_string(),
            "cuLaunchKernel failed (kernel gemm0): CUDA_ERROR_INVALID_VALUE"
        );
        let e = RuntimeError::Driver {
            call: "cuInit",
            context: String::new(),
            error: "X".into(),
        };
        assert_eq!(e.to_string(), "cuInit failed: X");
    }
}
