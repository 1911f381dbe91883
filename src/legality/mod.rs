//! Which configs may run a problem on an arch, and why not: resources (threads, registers,
//! shared memory), matrix-instruction shapes, split-K, and vector-access legality per operand
//! per sub-GEMM, computed through the lowering's affine index maps.
//!
//! [`check`] is what a database lookup re-runs before serving a cached config; enumeration
//! ([`crate::space::enumerate_legal`]) runs the same rules, plus pruning rules of the search
//! space that cut configs not worth timing (never rejected at lookup).
//!
//! ```
//! use convtune::{arch::Arch, legality, lowering::lower, problem::ConvProblem};
//! let p: ConvProblem = "conv -n 2 -c 8 -H 16 -W 16 -k 8 -y 3 -x 3 -p 2 -q 2 -u 2 -v 2 -l 2 -j 2 -F 1"
//!     .parse()
//!     .unwrap();
//! let cfg = "v1:bm=32,bn=32,bk=16,wm=16,wn=16,st=2,va=1,vb=4,vc=1,lds=pad,sk=1,rs=1".parse().unwrap();
//! let e = legality::check(&lower(&p), &cfg, &Arch::SM_90).unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "vector width of B is 4 but at most 1 is legal: stride 2 on the contiguous dimension w of input (sub-GEMM 0)"
//! );
//! ```

pub mod bruteforce;
mod explain;
mod rejection;
mod rules;
mod width;

pub use rejection::{RejectReasonKind, Rejection};
pub use rules::{Checker, OperandVector, Pruning, Resources, Rule};
pub use width::{max_vector_width, vector_dim, VectorWidth};

use crate::arch::Arch;
use crate::config::PerfConfig;
use crate::lowering::Lowering;

/// Whether `cfg` can run every sub-GEMM of `lowering` on `arch`, and what it uses if so.
pub fn check(lowering: &Lowering, cfg: &PerfConfig, arch: &Arch) -> Result<Resources, Rejection> {
    Checker::new(lowering, arch).check(cfg)
}

/// Every rule checked for `cfg`, one line each with its verdict and numbers.
pub fn explain(lowering: &Lowering, cfg: &PerfConfig, arch: &Arch) -> Vec<String> {
    Checker::new(lowering, arch).explain(cfg)
}

#[cfg(test)]
mod tests;
