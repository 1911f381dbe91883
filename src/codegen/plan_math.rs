//! The warp tile's computation ([`Math`]): which instruction family multiplies (Hopper
//! `wgmma`, a warp matrix unit, or scalar FMA over a lane arrangement), chosen from the warp
//! tile, the element type and the families the target has. Kept apart from the rest of
//! [`super::plan::GemmPlan::new`] because it is the one decision that names instructions.

use super::smem::CHUNK;
use super::spec::Capability;
use super::target::MatrixUnit;
use super::CodegenError;
use crate::arch::{fit, Arch};
use crate::config::PerfConfig;
use crate::problem::DType;

/// How the warp tile is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Math {
    /// Scalar FMA: the warp's lanes form `lanes_m × lanes_n`, each owning a strided micro-tile.
    Fma {
        /// Lanes along M.
        lanes_m: u32,
        /// Lanes along N.
        lanes_n: u32,
        /// Elements of K read from shared memory per vector load.
        kvec: u32,
    },
    /// A matrix instruction.
    Matrix(MatrixUnit),
    /// Hopper `wgmma.mma_async` m64nNk16: the warp tile is a warpgroup's (4 warps) 64 × `n`
    /// tile, A and B read from K-major 128-byte-swizzled shared memory through descriptors.
    Wgmma {
        /// N of the instruction (= warp_n).
        n: u32,
        /// Whether one K tile's `wgmma` group stays in flight while the next is issued
        /// (`wait_group 1`, `mma = wg1`; three stages or more, so that the buffer the copies
        /// refill is two tiles old and every warpgroup has finished reading it).
        in_flight: bool,
    },
}

/// The warp tile's [`Math`] for `c` on `arch`, with `warp` lanes a warp: `fail` words a config
/// error, `require` refuses a family the target lacks (the plan's own closures, so the errors
/// are the ones [`super::plan::GemmPlan::new`] reports).
pub(super) fn plan_math(
    c: &PerfConfig,
    arch: &Arch,
    dt: DType,
    warp: u32,
    fail: &dyn Fn(String) -> CodegenError,
    require: &dyn Fn(Capability, String) -> Result<(), CodegenError>,
) -> Result<Math, CodegenError> {
    let bytes = dt.bytes();
    let math = if c.mma.is_wgmma() {
        let by = || format!("mma={}", c.mma.name());
        require(Capability::WarpgroupMma, by())?;
        require(Capability::Barriers, by())?;
        let in_flight = c.mma == crate::config::MmaPath::WgmmaInFlight;
        let shape = fit::wgmma_fit(
            arch,
            dt,
            (c.warp_m, c.warp_n, c.block_k),
            c.stages,
            in_flight,
        )
        .map_err(|r| fail(format!("mma={}: {r}", c.mma.name())))?;
        Math::Wgmma {
            n: shape.n,
            in_flight,
        }
    } else {
        let instr = fit::warp_instr(arch, dt, c.warp_m, c.warp_n, c.block_k).ok_or_else(|| {
            fail(format!(
                "the warp tile {}x{} and bk {} fit no instruction of {} ({})",
                c.warp_m,
                c.warp_n,
                c.block_k,
                arch.name,
                fit::warp_rule_text(arch, dt)
            ))
        })?;
        match MatrixUnit::of(&instr) {
            Some(unit) => {
                let family = match unit {
                    MatrixUnit::Mma16816 => Capability::WarpMma,
                    MatrixUnit::Mfma { .. } => Capability::Mfma,
                };
                require(family, format!("the {} matrix path", dt.name()))?;
                Math::Matrix(unit)
            }
            None => fma_math(c, warp, bytes).ok_or_else(|| {
                fail(format!(
                    "no lane arrangement of {warp} lanes divides the {}x{} warp tile",
                    c.warp_m, c.warp_n
                ))
            })?,
        }
    };
    Ok(math)
}

/// The FMA lane arrangement with the fewest shared-memory reads per k (tm + tn), ties broken
/// toward more lanes along N (coalesced C stores).
fn fma_math(c: &PerfConfig, warp: u32, bytes: u32) -> Option<Math> {
    let mut best: Option<(u32, u32, u32)> = None;
    let mut lanes_n = 1;
    while lanes_n <= warp {
        let lanes_m = warp / lanes_n;
        if c.warp_m.is_multiple_of(lanes_m) && c.warp_n.is_multiple_of(lanes_n) {
            let cost = c.warp_m / lanes_m + c.warp_n / lanes_n;
            if best.is_none_or(|(b, _, _)| cost <= b) {
                best = Some((cost, lanes_m, lanes_n));
            }
        }
        lanes_n *= 2;
    }
    let mut kvec = CHUNK / bytes;
    while !c.block_k.is_multiple_of(kvec) {
        kvec /= 2;
    }
    best.map(|(_, lanes_m, lanes_n)| Math::Fma {
        lanes_m,
        lanes_n,
        kvec,
    })
}
