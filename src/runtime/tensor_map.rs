//! Tensor maps for TMA kernels: the 128-byte `CUtensorMap` of a [`TensorMapSpec`] over one
//! device buffer, encoded by the CUDA driver (`cuTensorMapEncodeTiled`, or
//! `cuTensorMapEncodeIm2col` for an im2col map) on the host. The code
//! generator decided what the map describes (`crate::lowering::tma`); here it only meets the
//! buffer's address.

use super::error::describe;
use crate::abi::{TensorMapSpec, TENSOR_MAP_RANK};
use crate::problem::DType;
use cudarc::driver::{result::DriverError, sys};

/// Whether the driver accepts `spec` (encoded over a 256-byte aligned stand-in address, as
/// device allocations are): checked when a plan is loaded, so a bad map is a load failure
/// with the map's numbers rather than a launch failure.
pub(crate) fn check(spec: &TensorMapSpec) -> Result<(), String> {
    let rank = spec.rank as usize;
    if rank == 0 || rank > TENSOR_MAP_RANK {
        return Err(format!("tensor map of rank {rank}"));
    }
    encode(spec, 1 << 32).map(|_| ()).map_err(|e| {
        let corners = spec.im2col.map_or(String::new(), |m| {
            let ns = rank.saturating_sub(2);
            format!(
                ", corners {:?}..{:?}, element strides {:?}",
                &m.lower[..ns],
                &m.upper[..ns],
                &m.element_strides[..rank]
            )
        });
        format!(
            "cuTensorMapEncode {}(rank {rank}, dims {:?}, strides {:?}, box {:?}, offset {}{corners}): {}",
            spec.mode(),
            &spec.dims[..rank],
            &spec.strides[..rank - 1],
            &spec.boxes[..rank],
            spec.offset,
            describe(e)
        )
    })
}

/// The driver's encoding of `spec` over the buffer at device address `base`.
pub(crate) fn encode(spec: &TensorMapSpec, base: u64) -> Result<sys::CUtensorMap, DriverError> {
    use sys::CUtensorMapDataType as T;
    let rank = spec.rank.clamp(1, TENSOR_MAP_RANK as u32);
    let dtype = match spec.dtype {
        DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    let swizzle = if spec.swizzle128 {
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
    } else {
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE
    };
    let element_strides = spec.element_strides();
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    let address = base + spec.offset;
    let interleave = sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE;
    let l2 = sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    let oob = sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    if let Some(im) = spec.im2col {
        // SAFETY: as below; the corner arrays have `rank - 2` (≤ 3) elements.
        let r = unsafe {
            sys::cuTensorMapEncodeIm2col(
                &mut map,
                dtype,
                rank,
                address as *mut std::ffi::c_void,
                spec.dims.as_ptr(),
                spec.strides.as_ptr(),
                im.lower.as_ptr(),
                im.upper.as_ptr(),
                spec.boxes[0],
                spec.boxes[1],
                element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                oob,
            )
        };
        return r.result().map(|()| map);
    }
    // SAFETY: every array has at least `rank` (or `rank - 1` for the strides) elements and
    // outlives the call; `map` is a properly aligned CUtensorMap the driver writes.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            rank,
            address as *mut std::ffi::c_void,
            spec.dims.as_ptr(),
            spec.strides.as_ptr(),
            spec.boxes.as_ptr(),
            element_strides.as_ptr(),
            interleave,
            swizzle,
            l2,
            oob,
        )
    };
    r.result().map(|()| map)
}
