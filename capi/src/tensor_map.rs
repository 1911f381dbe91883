//! `convtune_tensor_map`: the TMA tensor maps a kernel of a launch manifest takes, with the
//! driver call that encodes each. The encode rules are convtune's
//! ([`TensorMapSpec::encode_args`]) and the parameter offsets its ABI's ([`param_layout`]);
//! this file only reads the manifest's `map` descriptions and copies the results into C.

use crate::{guard, required_str, Failure, Status};
use convtune::abi::{
    param_layout, ArgKind, EncodeFunction, KernelArg, TensorMapSpec, CONV_ARGS, TENSOR_MAP_RANK,
};
use serde_json::Value;
use std::ffi::{c_char, c_int};

/// `convtune_tensor_map`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TensorMapC {
    /// Kernel parameter index.
    pub param_index: u32,
    /// Offset in the kernel's parameter buffer.
    pub param_offset: u32,
    /// The pointer argument whose memory it describes (0 x, 1 w, 2 y).
    pub tensor: u32,
    /// `convtune_encode_function`.
    pub function: i32,
    /// `CUtensorMapDataType` value.
    pub data_type: u32,
    /// `tensorRank`.
    pub rank: u32,
    /// Bytes added to the tensor's pointer.
    pub address_offset: u64,
    /// `globalDim`.
    pub global_dim: [u64; TENSOR_MAP_RANK],
    /// `globalStrides`.
    pub global_strides: [u64; TENSOR_MAP_RANK - 1],
    /// `boxDim` (tiled).
    pub box_dim: [u32; TENSOR_MAP_RANK],
    /// `pixelBoxLowerCorner` (im2col).
    pub pixel_box_lower_corner: [i32; TENSOR_MAP_RANK - 2],
    /// `pixelBoxUpperCorner` (im2col).
    pub pixel_box_upper_corner: [i32; TENSOR_MAP_RANK - 2],
    /// `channelsPerPixel` (im2col).
    pub channels_per_pixel: u32,
    /// `pixelsPerColumn` (im2col).
    pub pixels_per_column: u32,
    /// `elementStrides`.
    pub element_strides: [u32; TENSOR_MAP_RANK],
    /// `CUtensorMapInterleave` value.
    pub interleave: u32,
    /// `CUtensorMapSwizzle` value.
    pub swizzle: u32,
    /// `CUtensorMapL2promotion` value.
    pub l2_promotion: u32,
    /// `CUtensorMapFloatOOBfill` value.
    pub oob_fill: u32,
}

fn bad(what: impl std::fmt::Display) -> Failure {
    Failure::new(Status::Manifest, format!("launch manifest: {what}"))
}

/// The tensor maps of kernel `kernel` of the manifest `text`, in parameter order.
pub fn manifest_tensor_maps(text: &str, kernel: u32) -> Result<Vec<TensorMapC>, Failure> {
    let m: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if m.get("manifest_version").and_then(Value::as_u64) != Some(1) {
        return Err(bad(format!(
            "manifest_version {} (this library reads 1)",
            m.get("manifest_version").unwrap_or(&Value::Null)
        )));
    }
    let kernels = m
        .get("kernels")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `kernels` list"))?;
    let k = kernels.get(kernel as usize).ok_or_else(|| {
        bad(format!(
            "kernel {kernel} asked for; the manifest has {}",
            kernels.len()
        ))
    })?;
    let maps = match k.get("tensor_maps") {
        None => return Ok(Vec::new()),
        Some(v) => v
            .as_array()
            .ok_or_else(|| bad(format!("kernel {kernel}: `tensor_maps` is not a list")))?,
    };
    // The kernel's parameters as the ABI declares them: the pointers, then the maps in order.
    let mut args = CONV_ARGS.to_vec();
    let mut tensors = Vec::new();
    for (i, t) in maps.iter().enumerate() {
        let what = |e: &dyn std::fmt::Display| bad(format!("kernel {kernel}, tensor map {i}: {e}"));
        let spec: TensorMapSpec = serde_json::from_value(t.get("map").cloned().unwrap_or_default())
            .map_err(|e| what(&e))?;
        let name = t.get("tensor").and_then(Value::as_str).unwrap_or_default();
        let tensor = CONV_ARGS
            .iter()
            .position(|a| a.role.tensor().is_some() && a.role.name() == name)
            .ok_or_else(|| what(&format!("tensor `{name}` is not x, w or y")))?;
        let index = t.get("index").and_then(Value::as_u64);
        if index != Some(args.len() as u64) {
            return Err(what(&format!(
                "parameter index {index:?}, the ABI puts it at {}",
                args.len()
            )));
        }
        args.push(KernelArg {
            role: CONV_ARGS[tensor].role,
            kind: ArgKind::TensorMap(spec),
        });
        tensors.push(tensor as u32);
    }
    let layout = param_layout(&args);
    Ok(args
        .iter()
        .zip(&layout.slots)
        .skip(CONV_ARGS.len())
        .zip(tensors)
        .map(|((a, slot), tensor)| {
            let ArgKind::TensorMap(spec) = a.kind else {
                unreachable!("only maps follow the pointers")
            };
            let e = spec.encode_args();
            TensorMapC {
                param_index: slot.index,
                param_offset: slot.offset,
                tensor,
                function: match e.function {
                    EncodeFunction::Tiled => 0,
                    EncodeFunction::Im2col => 1,
                },
                data_type: e.data_type.into(),
                rank: e.rank,
                address_offset: e.address_offset,
                global_dim: e.global_dim,
                global_strides: e.global_strides,
                box_dim: e.box_dim,
                pixel_box_lower_corner: e.pixel_box_lower_corner,
                pixel_box_upper_corner: e.pixel_box_upper_corner,
                channels_per_pixel: e.channels_per_pixel,
                pixels_per_column: e.pixels_per_column,
                element_strides: e.element_strides,
                interleave: e.interleave.into(),
                swizzle: e.swizzle.into(),
                l2_promotion: e.l2_promotion.into(),
                oob_fill: e.oob_fill.into(),
            }
        })
        .collect())
}

/// `convtune_manifest_tensor_maps`.
///
/// # Safety
/// `manifest_json` is a NUL-terminated string; `out` is writable for `capacity` entries (or
/// NULL with capacity 0); `count` is writable.
#[no_mangle]
pub unsafe extern "C" fn convtune_manifest_tensor_maps(
    manifest_json: *const c_char,
    kernel: u32,
    out: *mut TensorMapC,
    capacity: usize,
    count: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let text = unsafe { required_str(manifest_json, "manifest_json")? };
        if count.is_null() {
            return Err(Failure::new(Status::Null, "count is NULL"));
        }
        if out.is_null() && capacity > 0 {
            return Err(Failure::new(Status::Null, "out is NULL with a capacity"));
        }
        let maps = manifest_tensor_maps(text, kernel)?;
        // SAFETY: non-null and writable (the caller's contract).
        unsafe { *count = maps.len() };
        if maps.len() > capacity {
            return Err(Failure::new(
                Status::Buffer,
                format!(
                    "kernel {kernel} takes {} tensor maps, room for {capacity}",
                    maps.len()
                ),
            ));
        }
        if !maps.is_empty() {
            // SAFETY: `out` is writable for `capacity` ≥ maps.len() entries.
            unsafe { std::ptr::copy_nonoverlapping(maps.as_ptr(), out, maps.len()) };
        }
        Ok(())
    })
}

/// `convtune_tensor_map_size`: `sizeof(convtune_tensor_map)` of this library.
#[no_mangle]
pub extern "C" fn convtune_tensor_map_size() -> usize {
    std::mem::size_of::<TensorMapC>()
}
