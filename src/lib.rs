//! convtune: an auto-tuner for implicit-GEMM convolution kernels on NVIDIA and AMD GPUs.
//!
//! The pipeline, one module a step:
//! [`problem`] (what to tune) → [`lowering`] (the implicit GEMMs it becomes) → [`arch`] +
//! [`config`] (the tuning parameters) + [`space`] (their candidate values) → [`legality`]
//! (what may run) → [`codegen`] (LLVM kernels) → [`runtime`] (GPU: verify and time) →
//! [`search`] (what to try next) → [`db`] (the tuned database that ships).
//!
//! Without the default `llvm` feature only the lookup part is built ([`problem`], [`arch`],
//! [`config`], [`space`], [`legality`], [`db`], [`lookup`] and the [`search`] cost model): that
//! is what the C API links, so a compiler embedding it does not carry LLVM.
#![deny(missing_docs)]

pub mod arch;
#[cfg(feature = "llvm")]
pub mod codegen;
pub mod config;
pub mod db;
pub mod input;
pub mod legality;
pub mod lookup;
pub mod lowering;
#[cfg(feature = "llvm")]
pub mod manifest;
pub mod problem;
pub mod reference;
#[cfg(feature = "llvm")]
pub mod runtime;
pub mod search;
#[cfg(feature = "llvm")]
pub mod selfcheck;
pub mod space;
#[cfg(feature = "llvm")]
pub mod tune;
