//! Why a candidate could not be turned into kernels. Each variant names the kernel or the
//! config field at fault, so a failed candidate is a readable record, not a bare string.

/// A code-generation failure; the candidate is recorded as failed and the run goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodegenError {
    /// The config cannot be generated for this GEMM (legality should have rejected it).
    #[error("config {config} cannot be generated for GEMM {gemm}: {reason}")]
    Config {
        /// The perf config string.
        config: String,
        /// Which sub-GEMM.
        gemm: u32,
        /// What does not fit.
        reason: String,
    },
    /// The config needs an instruction family the target lacks (legality should have
    /// rejected it).
    #[error("config {config} cannot be generated for GEMM {gemm}: {needed_by} needs {capability}, which {target} lacks")]
    Missing {
        /// The perf config string.
        config: String,
        /// Which sub-GEMM.
        gemm: u32,
        /// The target.
        target: String,
        /// The family it lacks.
        capability: super::Capability,
        /// What in the config needs it (the field and value).
        needed_by: String,
    },
    /// The target cannot run what was asked (unknown gfx name, unsupported sm).
    #[error("target {target}: {reason}")]
    Target {
        /// The target, as written.
        target: String,
        /// Why.
        reason: String,
    },
    /// LLVM rejected the generated IR: a code-generator bug, with the verifier's message.
    #[error("LLVM verifier rejected kernel module '{module}': {message}")]
    Verify {
        /// Module name (names the candidate).
        module: String,
        /// The verifier output.
        message: String,
    },
    /// An LLVM step (passes, instruction selection, object emission) failed.
    #[error("LLVM {step} failed for '{module}': {message}")]
    Llvm {
        /// Which step.
        step: &'static str,
        /// Module name.
        module: String,
        /// LLVM's message.
        message: String,
    },
    /// Linking the AMDGPU object into a code object failed or no linker was found.
    #[error("linking AMDGPU code object: {0}")]
    Link(String),
    /// The code object's metadata note is missing or malformed.
    #[error("reading AMDGPU code-object metadata: {0}")]
    Metadata(String),
    /// A launch dimension exceeds what the hardware accepts.
    #[error("kernel '{kernel}': grid {grid:?} exceeds the launch limits")]
    Launch {
        /// The kernel.
        kernel: String,
        /// The grid asked for.
        grid: [u64; 3],
    },
    /// An internal invariant of the code generator broke (a bug); the message says where.
    #[error("internal code-generator error: {0}")]
    Internal(String),
}
