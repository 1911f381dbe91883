//! The arguments of the driver call that encodes a [`TensorMapSpec`]: the one place that turns
//! a map description into `cuTensorMapEncodeTiled` / `cuTensorMapEncodeIm2col` arguments
//! (which function, data type, dims, strides, box, element strides, swizzle, interleave, L2
//! promotion, OOB fill, im2col corners). The Rust runtime calls the driver with exactly these
//! values; the launch manifest and the Python module carry them as JSON, the C API as a
//! struct, so that a launcher in another language passes them on with the live buffer address
//! and restates no rule.
//!
//! ```
//! use convtune::abi::{EncodeFunction, MapSwizzle, TensorMapSpec};
//! use convtune::problem::DType;
//! let spec = TensorMapSpec {
//!     dtype: DType::BF16, rank: 2, dims: [64, 32, 1, 1, 1], strides: [128, 0, 0, 0],
//!     offset: 0, boxes: [64, 16, 1, 1, 1], swizzle: MapSwizzle::Swizzle128B, im2col: None,
//! };
//! let e = spec.encode_args();
//! assert_eq!(e.function, EncodeFunction::Tiled);
//! assert_eq!((e.swizzle, e.swizzle as u32), (MapSwizzle::Swizzle128B, 3));
//! assert_eq!(e.box_dim, [64, 16, 1, 1, 1]);
//! ```

use super::{TensorMapSpec, TENSOR_MAP_RANK};
use crate::problem::DType;
use serde::{Deserialize, Serialize};

/// Declares an enum whose discriminants are the CUDA driver's values of the enum it mirrors
/// (only the values convtune uses), written to JSON as those numbers.
macro_rules! cuda_enum {
    ($(#[$meta:meta])* $name:ident mirrors $cuda:literal { $($(#[$vmeta:meta])* $variant:ident = $value:literal,)+ }) => {
        $(#[$meta])*
        #[doc = concat!("\n\nDiscriminants are `", $cuda, "` values; JSON holds the number.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(into = "u32", try_from = "u32")]
        #[repr(u32)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)+
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v as u32
            }
        }

        impl TryFrom<u32> for $name {
            type Error = String;
            fn try_from(v: u32) -> Result<Self, String> {
                match v {
                    $($value => Ok($name::$variant),)+
                    _ => Err(format!("{} value {v} is not one convtune encodes", $cuda)),
                }
            }
        }
    };
}

cuda_enum! {
    /// `tensorDataType`.
    MapDataType mirrors "CUtensorMapDataType" {
        /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT16`.
        Float16 = 6,
        /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32`.
        Float32 = 7,
        /// `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`.
        Bfloat16 = 9,
    }
}

cuda_enum! {
    /// `interleave`.
    MapInterleave mirrors "CUtensorMapInterleave" {
        /// `CU_TENSOR_MAP_INTERLEAVE_NONE`.
        None = 0,
    }
}

cuda_enum! {
    /// `swizzle`: how the box lands in shared memory.
    MapSwizzle mirrors "CUtensorMapSwizzle" {
        /// `CU_TENSOR_MAP_SWIZZLE_NONE`: row by row.
        None = 0,
        /// `CU_TENSOR_MAP_SWIZZLE_32B`: 16-byte chunk c of 32-byte line r at c ^ (r/4)%2.
        Swizzle32B = 1,
        /// `CU_TENSOR_MAP_SWIZZLE_64B`: 16-byte chunk c of 64-byte line r at c ^ (r/2)%4.
        Swizzle64B = 2,
        /// `CU_TENSOR_MAP_SWIZZLE_128B`: 16-byte chunk c of 128-byte line r at c ^ r%8.
        Swizzle128B = 3,
    }
}

impl MapSwizzle {
    /// The swizzle modes, widest first.
    pub const SWIZZLED: [MapSwizzle; 3] = [
        MapSwizzle::Swizzle128B,
        MapSwizzle::Swizzle64B,
        MapSwizzle::Swizzle32B,
    ];

    /// Bytes of one swizzled line (the span whose 16-byte chunks the XOR permutes), 0 when
    /// unswizzled. Every mode XORs address bits 4.. with bits 7.. (as many bits as the span
    /// has chunks' bits), so its pattern repeats every 8 lines: 8 × span bytes.
    pub fn span_bytes(self) -> u32 {
        match self {
            MapSwizzle::None => 0,
            MapSwizzle::Swizzle32B => 32,
            MapSwizzle::Swizzle64B => 64,
            MapSwizzle::Swizzle128B => 128,
        }
    }
}

cuda_enum! {
    /// `l2Promotion`.
    MapL2Promotion mirrors "CUtensorMapL2promotion" {
        /// `CU_TENSOR_MAP_L2_PROMOTION_L2_256B`.
        Sector256B = 3,
    }
}

cuda_enum! {
    /// `oobFill`: what lies outside `globalDim` reads as.
    MapOobFill mirrors "CUtensorMapFloatOOBfill" {
        /// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`: zeros.
        None = 0,
    }
}

/// Which driver function encodes the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EncodeFunction {
    /// `cuTensorMapEncodeTiled`.
    #[serde(rename = "cuTensorMapEncodeTiled")]
    Tiled,
    /// `cuTensorMapEncodeIm2col`.
    #[serde(rename = "cuTensorMapEncodeIm2col")]
    Im2col,
}

impl EncodeFunction {
    /// The driver function's name.
    pub fn name(self) -> &'static str {
        match self {
            EncodeFunction::Tiled => "cuTensorMapEncodeTiled",
            EncodeFunction::Im2col => "cuTensorMapEncodeIm2col",
        }
    }
}

/// The arguments of one encode call, in the driver's names, except `globalAddress`: that is
/// the tensor argument's device pointer plus [`TensorMapEncode::address_offset`]. Arrays are
/// full length; the driver reads the first `rank` entries (`rank − 1` of `global_strides`,
/// `rank − 2` of the corners). The fields of the other function are zero:
/// `box_dim` for im2col, the corners, `channels_per_pixel` and `pixels_per_column` for tiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorMapEncode {
    /// The function to call.
    pub function: EncodeFunction,
    /// `tensorDataType`.
    pub data_type: MapDataType,
    /// `tensorRank`.
    pub rank: u32,
    /// Bytes added to the tensor's device pointer to give `globalAddress`.
    pub address_offset: u64,
    /// `globalDim`, innermost first.
    pub global_dim: [u64; TENSOR_MAP_RANK],
    /// `globalStrides`, bytes, of dimensions 1..
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
    /// `interleave`.
    pub interleave: MapInterleave,
    /// `swizzle`.
    pub swizzle: MapSwizzle,
    /// `l2Promotion`.
    pub l2_promotion: MapL2Promotion,
    /// `oobFill`.
    pub oob_fill: MapOobFill,
}

impl TensorMapSpec {
    /// The encode call of this map: every rule of how convtune encodes tensor maps.
    pub fn encode_args(&self) -> TensorMapEncode {
        let mut e = TensorMapEncode {
            function: EncodeFunction::Tiled,
            data_type: match self.dtype {
                DType::F16 => MapDataType::Float16,
                DType::BF16 => MapDataType::Bfloat16,
                DType::F32 => MapDataType::Float32,
            },
            // A rank the driver cannot take is refused before launch (the runtime checks
            // every map when it loads a plan); clamped so the arrays always cover it.
            rank: self.rank.clamp(1, TENSOR_MAP_RANK as u32),
            address_offset: self.offset,
            global_dim: self.dims,
            global_strides: self.strides,
            box_dim: self.boxes,
            pixel_box_lower_corner: [0; TENSOR_MAP_RANK - 2],
            pixel_box_upper_corner: [0; TENSOR_MAP_RANK - 2],
            channels_per_pixel: 0,
            pixels_per_column: 0,
            element_strides: self.element_strides(),
            interleave: MapInterleave::None,
            swizzle: self.swizzle,
            // Tiles are re-read by neighbouring blocks: promote in the largest sectors.
            l2_promotion: MapL2Promotion::Sector256B,
            oob_fill: MapOobFill::None,
        };
        if let Some(im) = self.im2col {
            e.function = EncodeFunction::Im2col;
            e.box_dim = [0; TENSOR_MAP_RANK];
            e.pixel_box_lower_corner = im.lower;
            e.pixel_box_upper_corner = im.upper;
            e.channels_per_pixel = self.boxes[0];
            e.pixels_per_column = self.boxes[1];
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Im2colMap;

    #[test]
    fn im2col_maps_take_corners_and_the_pixel_box() {
        let spec = TensorMapSpec {
            dtype: DType::F16,
            rank: 4,
            dims: [64, 9, 9, 2, 1],
            strides: [128, 1152, 10368, 0],
            offset: 32,
            boxes: [64, 128, 1, 1, 1],
            swizzle: MapSwizzle::Swizzle128B,
            im2col: Some(Im2colMap {
                lower: [-1, -1, 0],
                upper: [-1, -1, 0],
                element_strides: [1, 2, 2, 1, 1],
            }),
        };
        let e = spec.encode_args();
        assert_eq!(e.function, EncodeFunction::Im2col);
        assert_eq!((e.channels_per_pixel, e.pixels_per_column), (64, 128));
        assert_eq!(e.box_dim, [0; 5]);
        assert_eq!(e.element_strides, [1, 2, 2, 1, 1]);
        assert_eq!(e.pixel_box_lower_corner, [-1, -1, 0]);
        assert_eq!((e.data_type as u32, e.address_offset), (6, 32));
        let json = serde_json::to_value(e).unwrap();
        assert_eq!(json["function"], "cuTensorMapEncodeIm2col");
        assert_eq!(json["swizzle"], 3);
        assert_eq!(json["l2_promotion"], 3);
        assert_eq!(serde_json::from_value::<TensorMapEncode>(json).unwrap(), e);
        let mut bad = serde_json::to_value(e).unwrap();
        bad["swizzle"] = 4.into();
        let err = serde_json::from_value::<TensorMapEncode>(bad).unwrap_err();
        assert!(
            err.to_string().contains("CUtensorMapSwizzle value 4"),
            "{err}"
        );
    }
}
