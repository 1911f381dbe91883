//! Where each kernel parameter sits in the kernel's parameter space: what a launcher needs to
//! hand `cuLaunchKernel` one pointer per parameter (each into a buffer laid out this way) or
//! the whole buffer at once (`CU_LAUNCH_PARAM_BUFFER_POINTER`). Offsets follow the PTX
//! `.param` declarations the code generator emits: each value at the next multiple of its
//! alignment (8 for a device pointer, 64 for a `__grid_constant__` tensor map).
//!
//! ```
//! use convtune::abi::{param_layout, CONV_ARGS};
//! let l = param_layout(CONV_ARGS);
//! assert_eq!(l.slots.iter().map(|s| s.offset).collect::<Vec<_>>(), [0, 8, 16, 24]);
//! assert_eq!(l.bytes, 32);
//! ```

use super::KernelArg;
use serde::{Deserialize, Serialize};

/// Alignment of a tensor-map parameter (`CUtensorMap` is declared `alignas(64)`).
pub const TENSOR_MAP_ALIGN: usize = 64;

/// One parameter's place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamSlot {
    /// Position in the parameter list.
    pub index: u32,
    /// The argument's role name (`x`, `w`, `y`, `workspace`): whose device pointer it is, or
    /// whose memory the tensor map describes.
    pub tensor: String,
    /// `device-pointer` (a u64) or `tensor-map` (128 bytes, see the kernel's `tensor_maps`).
    pub kind: String,
    /// Bytes from the start of the parameter buffer.
    pub offset: u32,
    /// Bytes of the value.
    pub bytes: u32,
    /// Alignment of the value (and so of the buffer's start, for the largest).
    pub align: u32,
}

/// The parameter buffer of one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamLayout {
    /// Every parameter, in order.
    pub slots: Vec<ParamSlot>,
    /// Bytes of the buffer (past the last value, rounded up to the largest alignment).
    pub bytes: u32,
    /// The buffer's alignment (the largest of its values').
    pub align: u32,
}

/// The layout of a kernel taking `args`.
pub fn param_layout(args: &[KernelArg]) -> ParamLayout {
    let mut end = 0usize;
    let mut align = 1usize;
    let slots = args
        .iter()
        .zip(0..)
        .map(|(a, index)| {
            let offset = end.next_multiple_of(a.kind.align());
            end = offset + a.kind.bytes();
            align = align.max(a.kind.align());
            ParamSlot {
                index,
                tensor: a.role.name().to_string(),
                kind: a.kind.name().to_string(),
                offset: offset as u32,
                bytes: a.kind.bytes() as u32,
                align: a.kind.align() as u32,
            }
        })
        .collect();
    ParamLayout {
        slots,
        bytes: end.next_multiple_of(align) as u32,
        align: align as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ArgKind, ArgRole, CONV_ARGS, EXAMPLE_TILED, TENSOR_MAP_BYTES};

    #[test]
    fn tensor_maps_sit_at_multiples_of_64_after_the_pointers() {
        let spec = EXAMPLE_TILED;
        let mut args = CONV_ARGS.to_vec();
        for role in [ArgRole::Input, ArgRole::Filter] {
            args.push(KernelArg {
                role,
                kind: ArgKind::TensorMap(spec),
            });
        }
        let l = param_layout(&args);
        let at: Vec<_> = l.slots.iter().map(|s| (s.offset, s.bytes)).collect();
        assert_eq!(
            at,
            [(0, 8), (8, 8), (16, 8), (24, 8), (64, 128), (192, 128)]
        );
        assert_eq!((l.bytes, l.align), (320, 64));
        assert_eq!(l.slots[4].kind, "tensor-map");
        assert_eq!(l.slots[5].tensor, "w");
        assert_eq!(TENSOR_MAP_BYTES % TENSOR_MAP_ALIGN, 0);
    }
}
