//! What the code generator hands the runtime: one module and the launches that run one convolution.
//!
//! The contract is deliberately narrow so that the runtime never needs to know how a kernel was
//! tiled: every launch lists its kernel's arguments ([`crate::abi`]: today four device pointers —
//! input, filter, output, each in its own layout, and a scratch workspace), and uses only
//! *dynamic* shared memory. A plan is
//! self-contained: running its launches in order on poisoned buffers must produce the whole
//! written tensor (zero-initialisation kernels, split-K reductions and so on are launches too),
//! because the runtime runs it repeatedly without resetting anything in between.

pub use crate::abi::Module;
use crate::abi::{KernelArg, CONV_ARGS};
use serde::{Deserialize, Serialize};

/// Bytes of dynamic shared memory a CUDA kernel may use without opting in first
/// (`cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`); launch manifests say which kernels
/// need the opt-in by this limit.
pub const SHARED_OPT_IN_ABOVE: u32 = 48 * 1024;

/// One kernel launch of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The kernel's symbol in the module.
    pub name: String,
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block; above 48 KiB the runtime opts the kernel in first.
    pub shared_bytes: u32,
    /// The kernel's parameters in order: what the runtime packs for each role.
    #[serde(default = "conv_args")]
    pub args: Vec<KernelArg>,
}

fn conv_args() -> Vec<KernelArg> {
    CONV_ARGS.to_vec()
}

impl Launch {
    /// Threads per block, as the hardware limit counts them.
    pub fn threads(&self) -> u64 {
        self.block.iter().map(|&b| b as u64).product()
    }
}

/// A compiled module and the launches that run one convolution, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchPlan {
    /// PTX (NVIDIA) or a code object (AMD); the CUDA runtime loads PTX only.
    pub module: Module,
    /// Launches in stream order.
    pub launches: Vec<Launch>,
    /// Scratch bytes the kernels share; the runtime poisons them before checking a candidate
    /// (all but the kept-zero region, which it clears, and checks clear again after the run).
    pub workspace_bytes: u64,
    /// Bytes at the workspace's start that must be zero when the plan starts and that it
    /// leaves zero ([`crate::abi::KEPT_ZERO_BYTES`] or 0).
    #[serde(default)]
    pub kept_zero: u64,
}

/// What the driver made of one kernel after loading: the facts a tuner reports or rejects on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// The kernel's symbol.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Local memory per thread in bytes: register spills and stack; > 0 usually means slow.
    pub local_bytes: u32,
    /// Static shared memory in bytes (the contract asks for dynamic only, so normally 0).
    pub static_shared_bytes: u32,
    /// The most threads a block of this kernel may have, given its register use.
    pub max_threads_per_block: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trips_through_json() {
        let plan = LaunchPlan {
            module: Module::Ptx(".version 8.5\n".into()),
            launches: vec![Launch {
                name: "k0".into(),
                grid: [4, 2, 1],
                block: [128, 2, 1],
                shared_bytes: 65536,
                args: CONV_ARGS.to_vec(),
            }],
            workspace_bytes: 1 << 20,
            kept_zero: 0,
        };
        let text = serde_json::to_string(&plan).unwrap();
        let back: LaunchPlan = serde_json::from_str(&text).unwrap();
        assert_eq!(back, plan);
        assert_eq!(plan.launches[0].threads(), 256);
    }
}
