//! Tensor maps for TMA kernels: the 128-byte `CUtensorMap` of a [`TensorMapSpec`] over one
//! device buffer, encoded by the CUDA driver (`cuTensorMapEncodeTiled`, or
//! `cuTensorMapEncodeIm2col` for an im2col map) on the host. The code
//! generator decided what the map describes (`crate::lowering::tma`); here it only meets the
//! buffer's address.

use super::error::describe;
use crate::abi::{
    EncodeFunction, MapDataType, MapInterleave, MapL2Promotion, MapOobFill, MapSwizzle,
    TensorMapSpec, TENSOR_MAP_RANK,
};
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

/// The driver's encoding of `spec` over the buffer at device address `base`: the call and
/// its arguments exactly as [`TensorMapSpec::encode_args`] gives them (the rules live there,
/// shared with the manifest, the Python module and the C API).
pub(crate) fn encode(spec: &TensorMapSpec, base: u64) -> Result<sys::CUtensorMap, DriverError> {
    let e = spec.encode_args();
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    let address = (base + e.address_offset) as *mut std::ffi::c_void;
    let (dtype, interleave, swizzle, l2, oob) = (
        data_type(e.data_type),
        interleave(e.interleave),
        swizzle(e.swizzle),
        l2_promotion(e.l2_promotion),
        oob_fill(e.oob_fill),
    );
    // SAFETY: every array has TENSOR_MAP_RANK (or one or two fewer) elements, at least what
    // the driver reads for `e.rank` (≤ TENSOR_MAP_RANK), and outlives the call; `map` is a
    // properly aligned CUtensorMap the driver writes.
    let r = unsafe {
        match e.function {
            EncodeFunction::Im2col => sys::cuTensorMapEncodeIm2col(
                &mut map,
                dtype,
                e.rank,
                address,
                e.global_dim.as_ptr(),
                e.global_strides.as_ptr(),
                e.pixel_box_lower_corner.as_ptr(),
                e.pixel_box_upper_corner.as_ptr(),
                e.channels_per_pixel,
                e.pixels_per_column,
                e.element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                oob,
            ),
            EncodeFunction::Tiled => sys::cuTensorMapEncodeTiled(
                &mut map,
                dtype,
                e.rank,
                address,
                e.global_dim.as_ptr(),
                e.global_strides.as_ptr(),
                e.box_dim.as_ptr(),
                e.element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                oob,
            ),
        }
    };
    r.result().map(|()| map)
}

// The driver's enums of the values `encode_args` chose, variant for variant (their
// discriminants agree: see the test).

fn data_type(t: MapDataType) -> sys::CUtensorMapDataType {
    use sys::CUtensorMapDataType as T;
    match t {
        MapDataType::Float16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        MapDataType::Float32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        MapDataType::Bfloat16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    }
}

fn interleave(i: MapInterleave) -> sys::CUtensorMapInterleave {
    match i {
        MapInterleave::None => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
    }
}

fn swizzle(s: MapSwizzle) -> sys::CUtensorMapSwizzle {
    match s {
        MapSwizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        MapSwizzle::Swizzle32B => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        MapSwizzle::Swizzle64B => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        MapSwizzle::Swizzle128B => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    }
}

fn l2_promotion(l: MapL2Promotion) -> sys::CUtensorMapL2promotion {
    match l {
        MapL2Promotion::Sector256B => {
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B
        }
    }
}

fn oob_fill(o: MapOobFill) -> sys::CUtensorMapFloatOOBfill {
    match o {
        MapOobFill::None => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirrored_enums_carry_the_drivers_values() {
        for t in [
            MapDataType::Float16,
            MapDataType::Float32,
            MapDataType::Bfloat16,
        ] {
            assert_eq!(t as u32, data_type(t) as u32, "{t:?}");
        }
        for s in [
            MapSwizzle::None,
            MapSwizzle::Swizzle32B,
            MapSwizzle::Swizzle64B,
            MapSwizzle::Swizzle128B,
        ] {
            assert_eq!(s as u32, swizzle(s) as u32, "{s:?}");
        }
        let i = MapInterleave::None;
        assert_eq!(i as u32, interleave(i) as u32);
        let l = MapL2Promotion::Sector256B;
        assert_eq!(l as u32, l2_promotion(l) as u32);
        let o = MapOobFill::None;
        assert_eq!(o as u32, oob_fill(o) as u32);
    }
}
