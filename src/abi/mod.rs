//! The kernel ABI: what a compiled module is and which arguments its kernels take. Declared
//! once here and read everywhere a kernel meets the outside world: the code generator builds
//! each kernel's parameter list (and names the parameters) from [`KernelArg`]s, the launch plan
//! carries them per launch, the measurer maps each role to a buffer, and the runtimes pack the
//! values in this order. A tool that launches the kernels itself (a launch manifest) reads the
//! same list, so the signature is never restated.
//!
//! It sits below both `codegen` and `runtime` so that neither depends on the other for it.
//!
//! ```
//! use convtune::abi::{ArgKind, ArgRole, CONV_ARGS};
//! let names: Vec<&str> = CONV_ARGS.iter().map(|a| a.role.name()).collect();
//! assert_eq!(names, ["x", "w", "y", "workspace"]);
//! assert!(CONV_ARGS.iter().all(|a| a.kind == ArgKind::DevicePtr));
//! // TMA kernels append one tensor map per operand they load with TMA, after `CONV_ARGS`.
//! assert_eq!(ArgRole::Workspace.position(CONV_ARGS), Some(3));
//! ```

use crate::problem::{DType, Tensor};
use serde::{Deserialize, Serialize};
use std::fmt;

mod encode;
mod params;

pub use encode::{
    EncodeFunction, MapDataType, MapInterleave, MapL2Promotion, MapOobFill, MapSwizzle,
    TensorMapEncode,
};
pub use params::{param_layout, ParamLayout, ParamSlot, TENSOR_MAP_ALIGN};

/// A compiled module, in the form its vendor's driver loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Module {
    /// PTX text (NVIDIA), JIT-compiled by the CUDA driver.
    Ptx(String),
    /// A linked AMDGPU code object (ELF), loadable by `hipModuleLoadData`.
    CodeObject(Vec<u8>),
}

impl Module {
    /// The bytes as written to a file (PTX text or the ELF image).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Module::Ptx(s) => s.as_bytes(),
            Module::CodeObject(b) => b,
        }
    }

    /// The PTX text, if this is PTX.
    pub fn ptx(&self) -> Option<&str> {
        match self {
            Module::Ptx(s) => Some(s),
            Module::CodeObject(_) => None,
        }
    }

    /// The code object, if this is one.
    pub fn code_object(&self) -> Option<&[u8]> {
        match self {
            Module::Ptx(_) => None,
            Module::CodeObject(b) => Some(b),
        }
    }

    /// What kind of module this is, in words ("PTX", "code object").
    pub fn kind(&self) -> &'static str {
        match self {
            Module::Ptx(_) => "PTX",
            Module::CodeObject(_) => "code object",
        }
    }
}

/// The workspace's kept-zero region: its first bytes, where a plan that counts arrivals (the
/// split-K fix-up and stream-K, `red=fixup`/`red=stream`) keeps its counters. Such a plan needs
/// them zero when it starts and leaves them zero when it ends (the last arrival at each counter
/// resets it), and no plan writes anything else there; so a caller that keeps one workspace
/// for these plans clears the region once, when it allocates the buffer, instead of a launch
/// clearing the counters before every call (a kernel of its own, 1.5–2.5 µs on the H200 for a
/// few hundred bytes, on GEMMs of 10–20 µs). A plan whose counters do not fit still clears
/// its own with a first launch and asks for nothing.
pub const KEPT_ZERO_BYTES: u64 = 64 << 10;

/// What an argument is for. Tensors keep their own layouts; the workspace is scratch memory
/// of the plan's `workspace_bytes` (null when 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArgRole {
    /// The convolution's input tensor (x; dx for backward data).
    Input,
    /// The filter tensor (w; dw for backward weight).
    Filter,
    /// The output tensor (y; dy for the backward passes).
    Output,
    /// Scratch memory shared by the launches of one plan.
    Workspace,
}

impl ArgRole {
    /// The parameter's name in the generated code (`x`, `w`, `y`, `workspace`).
    pub fn name(self) -> &'static str {
        match self {
            ArgRole::Input => "x",
            ArgRole::Filter => "w",
            ArgRole::Output => "y",
            ArgRole::Workspace => "workspace",
        }
    }

    /// The role of a tensor.
    pub fn of(t: Tensor) -> ArgRole {
        match t {
            Tensor::Input => ArgRole::Input,
            Tensor::Filter => ArgRole::Filter,
            Tensor::Output => ArgRole::Output,
        }
    }

    /// The tensor of a role (`None` for the workspace).
    pub fn tensor(self) -> Option<Tensor> {
        match self {
            ArgRole::Input => Some(Tensor::Input),
            ArgRole::Filter => Some(Tensor::Filter),
            ArgRole::Output => Some(Tensor::Output),
            ArgRole::Workspace => None,
        }
    }

    /// Where this role sits in `args`.
    pub fn position(self, args: &[KernelArg]) -> Option<usize> {
        args.iter().position(|a| a.role == self)
    }
}

impl fmt::Display for ArgRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an argument is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArgKind {
    /// A device pointer, passed as a 64-bit value.
    DevicePtr,
    /// A 128-byte CUDA tensor map (`CUtensorMap`) passed by value as a `__grid_constant__`
    /// parameter, for TMA loads: the runtime encodes it from the argument role's device
    /// pointer and this description at launch.
    TensorMap(TensorMapSpec),
}

impl ArgKind {
    /// Bytes of the parameter value.
    pub fn bytes(self) -> usize {
        match self {
            ArgKind::DevicePtr => 8,
            ArgKind::TensorMap(_) => TENSOR_MAP_BYTES,
        }
    }

    /// Alignment of the parameter value, bytes: what the kernel's `.param` declaration asks
    /// (`.align 64` for a `__grid_constant__` tensor map, 8 for a `.u64`).
    pub fn align(self) -> usize {
        match self {
            ArgKind::DevicePtr => 8,
            ArgKind::TensorMap(_) => TENSOR_MAP_ALIGN,
        }
    }

    /// The kind's name in manifests (`device-pointer`, `tensor-map`).
    pub fn name(self) -> &'static str {
        match self {
            ArgKind::DevicePtr => "device-pointer",
            ArgKind::TensorMap(_) => "tensor-map",
        }
    }
}

impl fmt::Display for ArgKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArgKind::DevicePtr => "device pointer",
            ArgKind::TensorMap(_) => "tensor map",
        })
    }
}

/// Bytes of a `CUtensorMap` (and of the parameter that carries it).
pub const TENSOR_MAP_BYTES: usize = 128;

/// Most dimensions of a tiled tensor map.
pub const TENSOR_MAP_RANK: usize = 5;

/// A tensor map over the memory of one tensor argument: the view a TMA copy reads a box of,
/// zero-filling what lies outside `dims`. Dimension 0 is the contiguous one; dimensions at and
/// past `rank` are unused (1). Tiled (`cuTensorMapEncodeTiled`) unless `im2col` is set; the
/// mode is this one field, and the launch plan, the manifest, the runtimes and the emulator all
/// read it from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorMapSpec {
    /// Element type.
    pub dtype: DType,
    /// Dimensions used.
    pub rank: u32,
    /// Elements along each dimension, innermost first.
    pub dims: [u64; TENSOR_MAP_RANK],
    /// Bytes from one index to the next along dimensions 1.. (`globalStrides`).
    pub strides: [u64; TENSOR_MAP_RANK - 1],
    /// Bytes from the tensor's base address to element 0 (16-byte aligned).
    pub offset: u64,
    /// Elements one copy moves along each dimension (`boxDim`).
    pub boxes: [u32; TENSOR_MAP_RANK],
    /// How the box lands in shared memory: row by row or with a swizzle (see [`MapSwizzle`]).
    /// JSON holds the `CUtensorMapSwizzle` number; manifests written before the 32- and
    /// 64-byte modes said `"swizzle128": true|false`, which still reads.
    #[serde(alias = "swizzle128", deserialize_with = "swizzle_or_flag")]
    pub swizzle: MapSwizzle,
    /// The im2col mode (`cuTensorMapEncodeIm2col`), if this map is one: then `boxes[0]` is
    /// `channelsPerPixel` and `boxes[1]` `pixelsPerColumn` (the box lands as `boxes[1]` lines of
    /// `boxes[0]` channels, like a tiled `{boxes[0], boxes[1]}` box), the other boxes are 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub im2col: Option<Im2colMap>,
}

/// A [`TensorMapSpec::swizzle`]: its number, or the old `swizzle128` flag.
fn swizzle_or_flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<MapSwizzle, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Flag(bool),
        Mode(MapSwizzle),
    }
    Ok(match Either::deserialize(d)? {
        Either::Flag(true) => MapSwizzle::Swizzle128B,
        Either::Flag(false) => MapSwizzle::None,
        Either::Mode(m) => m,
    })
}

/// The im2col part of a tensor map: a channels-innermost activation (`dims` = channels, then
/// the spatial dimensions innermost first, then the images) whose copies gather
/// `pixelsPerColumn` pixels of `channelsPerPixel` channels each, walking the pixel bounding box
/// with the convolution's stride. Spatial dimension `i` of the arrays is map dimension `i + 1`;
/// entries past the map's `rank - 2` spatial dimensions are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Im2colMap {
    /// `pixelBoxLowerCorner`: the bounding box starts here along each spatial dimension
    /// (−pad for a forward convolution).
    pub lower: [i32; TENSOR_MAP_RANK - 2],
    /// `pixelBoxUpperCorner`: the box ends at `dim − 1 + upper` (pad − (R−1)·dilation).
    pub upper: [i32; TENSOR_MAP_RANK - 2],
    /// `elementStrides`, every map dimension: the convolution stride along the spatial ones, 1
    /// along channels and images.
    pub element_strides: [u32; TENSOR_MAP_RANK],
}

/// The most negative and the most positive im2col corner of a map of `rank` dimensions
/// (`cuTensorMapEncodeIm2col`: 16 bits shared by the `rank − 2` spatial dimensions).
pub fn im2col_corner_range(rank: u32) -> (i32, i32) {
    let bits = match rank {
        3 => 16,
        4 => 8,
        _ => 5,
    };
    (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
}

impl TensorMapSpec {
    /// Bytes one copy writes to shared memory (the whole box, zero-filled parts included):
    /// what the `mbarrier` transaction count expects.
    pub fn box_bytes(&self) -> u32 {
        self.boxes[..self.rank as usize].iter().product::<u32>() * self.dtype.bytes()
    }

    /// The mode's name (`tiled` or `im2col`), as the manifest and error messages say it.
    pub fn mode(&self) -> &'static str {
        if self.im2col.is_some() {
            "im2col"
        } else {
            "tiled"
        }
    }

    /// `elementStrides` of every dimension (1 for a tiled map).
    pub fn element_strides(&self) -> [u32; TENSOR_MAP_RANK] {
        self.im2col
            .map_or([1; TENSOR_MAP_RANK], |m| m.element_strides)
    }
}

/// One kernel parameter, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KernelArg {
    /// What it is for.
    pub role: ArgRole,
    /// How it is passed.
    pub kind: ArgKind,
}

/// The arguments of every convolution kernel today: the three tensors and the workspace, as
/// device pointers, in this order.
pub const CONV_ARGS: &[KernelArg] = &[
    KernelArg {
        role: ArgRole::Input,
        kind: ArgKind::DevicePtr,
    },
    KernelArg {
        role: ArgRole::Filter,
        kind: ArgKind::DevicePtr,
    },
    KernelArg {
        role: ArgRole::Output,
        kind: ArgKind::DevicePtr,
    },
    KernelArg {
        role: ArgRole::Workspace,
        kind: ArgKind::DevicePtr,
    },
];

/// An argument a runtime cannot supply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel argument `{role}` is a {kind}, which this runtime cannot pass yet")]
pub struct UnsupportedArg {
    /// The argument.
    pub role: ArgRole,
    /// Its kind (boxed: a tensor map's description is large, and errors stay small).
    pub kind: Box<ArgKind>,
}

/// The 64-bit values of `args` in order, each device pointer from `pointer(role)`: what a
/// runtime hands `cuLaunchKernel` (one pointer to each value). Tensor maps are refused until a
/// runtime builds them.
pub fn device_pointers(
    args: &[KernelArg],
    pointer: impl Fn(ArgRole) -> u64,
) -> Result<Vec<u64>, UnsupportedArg> {
    args.iter()
        .map(|a| match a.kind {
            ArgKind::DevicePtr => Ok(pointer(a.role)),
            kind => Err(UnsupportedArg {
                role: a.role,
                kind: Box::new(kind),
            }),
        })
        .collect()
}

/// A small tiled bf16 map (a 64 × 32 tensor, 64 × 16 boxes, 128-byte swizzle) for unit tests.
#[cfg(test)]
pub(crate) const EXAMPLE_TILED: TensorMapSpec = TensorMapSpec {
    dtype: DType::BF16,
    rank: 2,
    dims: [64, 32, 1, 1, 1],
    strides: [128, 0, 0, 0],
    offset: 0,
    boxes: [64, 16, 1, 1, 1],
    swizzle: MapSwizzle::Swizzle128B,
    im2col: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_map_swizzle_reads_its_number_and_the_old_flag() {
        let mut v = serde_json::to_value(EXAMPLE_TILED).unwrap();
        assert_eq!(v["swizzle"], 3);
        v["swizzle"] = 1.into();
        let s: TensorMapSpec = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            (s.swizzle, s.swizzle.span_bytes()),
            (MapSwizzle::Swizzle32B, 32)
        );
        // Manifests written before the 32- and 64-byte modes.
        let obj = v.as_object_mut().unwrap();
        obj.remove("swizzle");
        for (flag, want) in [(true, MapSwizzle::Swizzle128B), (false, MapSwizzle::None)] {
            obj.insert("swizzle128".into(), flag.into());
            let s: TensorMapSpec = serde_json::from_value(obj.clone().into()).unwrap();
            assert_eq!(s.swizzle, want);
        }
    }

    #[test]
    fn roles_and_tensors_agree() {
        for t in Tensor::ALL {
            assert_eq!(ArgRole::of(t).tensor(), Some(t));
            // The tensors' roles sit at their tensor index (what layouts and buffers use).
            assert_eq!(ArgRole::of(t).position(CONV_ARGS), Some(t as usize));
        }
        assert_eq!(ArgRole::Workspace.tensor(), None);
    }

    #[test]
    fn pointers_follow_the_declared_order() {
        let v = device_pointers(CONV_ARGS, |r| match r {
            ArgRole::Input => 10,
            ArgRole::Filter => 20,
            ArgRole::Output => 30,
            ArgRole::Workspace => 0,
        })
        .unwrap();
        assert_eq!(v, [10, 20, 30, 0]);
        let spec = EXAMPLE_TILED;
        assert_eq!(spec.box_bytes(), 64 * 16 * 2);
        assert_eq!(spec.mode(), "tiled");
        assert_eq!(im2col_corner_range(4), (-128, 127));
        assert_eq!(im2col_corner_range(3), (-32768, 32767));
        assert_eq!(im2col_corner_range(5), (-16, 15));
        let tma = [KernelArg {
            role: ArgRole::Filter,
            kind: ArgKind::TensorMap(spec),
        }];
        let e = device_pointers(&tma, |_| 0).unwrap_err();
        assert_eq!(e.role, ArgRole::Filter);
        assert!(e.to_string().contains("tensor map"));
    }

    #[test]
    fn module_bytes_and_kind() {
        let p = Module::Ptx(".version 8.0".into());
        assert_eq!(p.bytes(), b".version 8.0");
        assert_eq!(
            (p.ptx(), p.code_object(), p.kind()),
            (Some(".version 8.0"), None, "PTX")
        );
        let c = Module::CodeObject(b"\x7fELF".to_vec());
        assert_eq!(c.code_object(), Some(&b"\x7fELF"[..]));
        assert_eq!(c.kind(), "code object");
    }
}
