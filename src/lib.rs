//! convtune: an auto-tuner for implicit-GEMM convolution kernels on NVIDIA and AMD GPUs.
//!
//! The pipeline, one module a step:
//! [`problem`] (what to tune) → [`lowering`] (the implicit GEMMs it becomes) → [`arch`] +
//! [`space`] (candidate tuning parameters) → [`legality`] (what may run) → [`codegen`] (LLVM
//! kernels) → [`runtime`] (GPU: verify and time) → [`search`] (what to try next) → [`db`] (the
//! tuned database that ships).
#![deny(missing_docs)]

pub mod abi;
pub mod arch;
pub mod codegen;
pub mod db;
pub mod legality;
pub mod lookup;
pub mod lowering;
pub mod problem;
pub mod reference;
pub mod runtime;
pub mod search;
pub mod selfcheck;
pub mod space;
pub mod tune;
