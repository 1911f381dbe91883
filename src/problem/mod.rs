//! Convolution problems: what the user asks to tune, validated once so every later stage can trust it.
//!
//! A [`ConvProblem`] is always valid: the only way to build one is [`ConvProblem::new`] (or the
//! parsers in [`parse`]), which reject zero sizes, empty outputs and channel counts that groups do
//! not divide. Every stage after this one (lowering, legality, codegen, the database) reads sizes
//! from here and never re-validates them.
//!
//! ```
//! use convtune::problem::ConvProblem;
//! let p: ConvProblem = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC"
//!     .parse()
//!     .unwrap();
//! assert_eq!(p.out_size(), [1, 256]);
//! ```

#[cfg(test)]
pub(crate) mod arbitrary;
mod file;
mod layout;
pub mod parse;
mod parse_error;

pub use file::{read_problem_file, ProblemFileError};
pub use layout::{ActDim, FilDim, Layout, LayoutError, LayoutKind};
pub use parse::{parse_problem_file, ParseError};

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which gradient the convolution computes; it decides which tensor is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Direction {
    /// y = conv(x, w)
    Fwd,
    /// dx = conv_bwd_data(dy, w)
    BwdData,
    /// dw = conv_bwd_weight(x, dy)
    BwdWeight,
}

impl Direction {
    /// MIOpenDriver's `-F` value.
    pub fn miopen_flag(self) -> u32 {
        match self {
            Direction::Fwd => 1,
            Direction::BwdData => 2,
            Direction::BwdWeight => 4,
        }
    }
    /// Short lowercase name used in reports and file names.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Fwd => "fwd",
            Direction::BwdData => "bwd-data",
            Direction::BwdWeight => "bwd-weight",
        }
    }
    /// Which tensor the kernels of this direction write.
    pub fn written(self) -> Tensor {
        match self {
            Direction::Fwd => Tensor::Output,
            Direction::BwdData => Tensor::Input,
            Direction::BwdWeight => Tensor::Filter,
        }
    }
}

/// Element type of all three tensors (accumulation is always f32 or wider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    /// IEEE single precision.
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
}

impl DType {
    /// Size of one element in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
    }
    /// The MIOpenDriver command word for this type.
    pub fn miopen_cmd(self) -> &'static str {
        match self {
            DType::F32 => "conv",
            DType::F16 => "convfp16",
            DType::BF16 => "convbfp16",
        }
    }
    /// Short lowercase name (`f32`, `f16`, `bf16`), as rocMLIR's `-t` takes it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }
    /// Relative-error threshold ‖out − ref‖ / ‖ref‖ that a kernel of this type must meet on a
    /// short reduction ([`ConvProblem::tolerance`] raises it for long ones).
    pub fn tolerance(self) -> f64 {
        match self {
            DType::F32 => 1e-5,
            DType::F16 | DType::BF16 => 1e-2,
        }
    }
}

/// Relative rounding error per √(term) allowed a sum accumulated in f32: twice f32's unit
/// roundoff (2⁻²⁴), about three times what recursive summation of random terms makes.
pub const SUM_ERROR: f64 = 2.0 / (1u64 << 24) as f64;

/// The three tensors of a convolution, named by their forward role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tensor {
    /// x (or dx): N × G·C × H × W.
    Input,
    /// w (or dw): G·K × C × Y × X.
    Filter,
    /// y (or dy): N × G·K × Ho × Wo.
    Output,
}

impl Tensor {
    /// All three, in argument order of every generated kernel.
    pub const ALL: [Tensor; 3] = [Tensor::Input, Tensor::Filter, Tensor::Output];
    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Tensor::Input => "input",
            Tensor::Filter => "filter",
            Tensor::Output => "output",
        }
    }
}

/// Why a problem is not a convolution that can be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProblemError {
    /// A size that must be positive is zero.
    #[error("{field} must be at least 1")]
    Zero {
        /// The offending field, named as the flag that sets it.
        field: &'static str,
    },
    /// Padding, stride and dilation leave no output pixel.
    #[error("empty output along {dim}: input {input} + 2*pad {pad} is smaller than the dilated filter {dilated}")]
    EmptyOutput {
        /// `H` or `W`.
        dim: &'static str,
        /// Input extent.
        input: u32,
        /// Padding on each side.
        pad: u32,
        /// (filter − 1)·dilation + 1.
        dilated: u32,
    },
    /// Groups must divide both channel counts.
    #[error("{field} = {value} is not divisible by groups (-g) = {groups}")]
    Groups {
        /// `-c` or `-k`.
        field: &'static str,
        /// The channel count.
        value: u32,
        /// The group count.
        groups: u32,
    },
    /// Stride and filter would split backward data into more sub-GEMMs than any kernel set
    /// should hold (one per stride residue class with filter taps, in each dimension).
    #[error("strides {stride:?} with filter {filter:?} split the convolution into {classes} residue classes; at most {max} are supported")]
    TooManyClasses {
        /// `[-u, -v]`.
        stride: [u32; 2],
        /// `[-y, -x]`.
        filter: [u32; 2],
        /// The product of the class counts.
        classes: u64,
        /// [`MAX_RESIDUE_CLASSES`].
        max: u64,
    },
    /// A size too large for 32-bit index arithmetic in the kernels.
    #[error("{what} has {elems} elements; at most 2^31 − 1 are supported")]
    TooLarge {
        /// Which tensor.
        what: &'static str,
        /// Its element count.
        elems: u64,
    },
}

/// The most (H classes × W classes) a problem may have: backward data lowers to one sub-GEMM per
/// pair of stride residue classes with filter taps, and every later stage (legality, codegen,
/// tuning) loops over them. 2^16 admits a 256×256 patch embedding with stride 256.
pub const MAX_RESIDUE_CLASSES: u64 = 1 << 16;

/// Greatest common divisor (Euclid).
pub(crate) fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The raw sizes of a 2-D convolution; `ConvProblem::new` validates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConvSizes {
    /// Batch.
    pub n: u32,
    /// Input channels, all groups together (MIOpen's `-c`).
    pub c: u32,
    /// Input height.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Output channels, all groups together (MIOpen's `-k`).
    pub k: u32,
    /// Filter height.
    pub y: u32,
    /// Filter width.
    pub x: u32,
    /// Padding [h, w], applied on both sides.
    pub pad: [u32; 2],
    /// Stride [h, w].
    pub stride: [u32; 2],
    /// Dilation [h, w].
    pub dilation: [u32; 2],
    /// Group count.
    pub groups: u32,
}

impl Default for ConvSizes {
    fn default() -> Self {
        ConvSizes {
            n: 1,
            c: 1,
            h: 1,
            w: 1,
            k: 1,
            y: 1,
            x: 1,
            pad: [0, 0],
            stride: [1, 1],
            dilation: [1, 1],
            groups: 1,
        }
    }
}

/// A validated convolution problem: sizes, direction, element type and the three layouts.
///
/// Deserialising goes through [`ConvProblem::new`] too (serde `try_from`), so a problem that
/// crosses a trust boundary (the worker protocol, a report) is as valid as a parsed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ProblemRepr")]
pub struct ConvProblem {
    sizes: ConvSizes,
    direction: Direction,
    dtype: DType,
    in_layout: Layout,
    fil_layout: Layout,
    out_layout: Layout,
}

/// [`ConvProblem`] as it is serialised, before validation.
#[derive(Deserialize)]
struct ProblemRepr {
    sizes: ConvSizes,
    direction: Direction,
    dtype: DType,
    in_layout: Layout,
    fil_layout: Layout,
    out_layout: Layout,
}

impl TryFrom<ProblemRepr> for ConvProblem {
    type Error = String;
    fn try_from(r: ProblemRepr) -> Result<ConvProblem, String> {
        use layout::LayoutKind::{Activation, Filter};
        for (what, l, kind) in [
            ("in_layout", r.in_layout, Activation),
            ("fil_layout", r.fil_layout, Filter),
            ("out_layout", r.out_layout, Activation),
        ] {
            if l.kind() != kind {
                return Err(format!(
                    "{what} is a {:?} layout, expected {kind:?}",
                    l.kind()
                ));
            }
        }
        ConvProblem::new(
            r.sizes,
            r.direction,
            r.dtype,
            r.in_layout,
            r.fil_layout,
            r.out_layout,
        )
        .map_err(|e| format!("invalid problem: {e}"))
    }
}

impl ConvProblem {
    /// Validates and builds a problem. Layouts must be activation layouts for input and output and
    /// a filter layout for the filter (see [`Layout`]).
    pub fn new(
        sizes: ConvSizes,
        direction: Direction,
        dtype: DType,
        in_layout: Layout,
        fil_layout: Layout,
        out_layout: Layout,
    ) -> Result<Self, ProblemError> {
        let s = &sizes;
        for (field, v) in [
            ("-n", s.n),
            ("-c", s.c),
            ("-H", s.h),
            ("-W", s.w),
            ("-k", s.k),
            ("-y", s.y),
            ("-x", s.x),
            ("-u", s.stride[0]),
            ("-v", s.stride[1]),
            ("-l", s.dilation[0]),
            ("-j", s.dilation[1]),
            ("-g", s.groups),
        ] {
            if v == 0 {
                return Err(ProblemError::Zero { field });
            }
        }
        for (field, v) in [("-c", s.c), ("-k", s.k)] {
            if v % s.groups != 0 {
                return Err(ProblemError::Groups {
                    field,
                    value: v,
                    groups: s.groups,
                });
            }
        }
        for (i, (dim, input, f)) in [("H", s.h, s.y), ("W", s.w, s.x)].into_iter().enumerate() {
            let dilated = (f - 1) as u64 * s.dilation[i] as u64 + 1;
            let padded = input as u64 + 2 * s.pad[i] as u64;
            if padded < dilated {
                return Err(ProblemError::EmptyOutput {
                    dim,
                    input,
                    pad: s.pad[i],
                    dilated: dilated.min(u32::MAX as u64) as u32,
                });
            }
        }
        let p = ConvProblem {
            sizes,
            direction,
            dtype,
            in_layout,
            fil_layout,
            out_layout,
        };
        // Checked before anything calls `out_size` or `tensor_elems`, whose arithmetic assumes
        // the sizes fit 32-bit extents and 64-bit element counts.
        for (dim, input, f) in [("H", s.h, s.y), ("W", s.w, s.x)] {
            let d = if dim == "H" { 0 } else { 1 };
            if input as u64 + 2 * s.pad[d] as u64 > i32::MAX as u64
                || f as u64 * s.dilation[d] as u64 > i32::MAX as u64
            {
                return Err(ProblemError::TooLarge {
                    what: "padded image or dilated filter",
                    elems: input as u64 + 2 * s.pad[d] as u64,
                });
            }
        }
        let [ch, cw] = p.residue_classes();
        if ch as u64 * cw as u64 > MAX_RESIDUE_CLASSES {
            return Err(ProblemError::TooManyClasses {
                stride: s.stride,
                filter: [s.y, s.x],
                classes: ch as u64 * cw as u64,
                max: MAX_RESIDUE_CLASSES,
            });
        }
        for t in Tensor::ALL {
            let elems = p
                .logical_dims(t)
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
                .unwrap_or(u64::MAX);
            if elems >= i32::MAX as u64 {
                return Err(ProblemError::TooLarge {
                    what: t.name(),
                    elems,
                });
            }
        }
        Ok(p)
    }

    /// The raw sizes.
    pub fn sizes(&self) -> &ConvSizes {
        &self.sizes
    }
    /// Forward, backward data or backward weight.
    pub fn direction(&self) -> Direction {
        self.direction
    }
    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// Layout of one tensor.
    pub fn layout(&self, t: Tensor) -> Layout {
        match t {
            Tensor::Input => self.in_layout,
            Tensor::Filter => self.fil_layout,
            Tensor::Output => self.out_layout,
        }
    }
    /// Same problem, another direction (the sizes stay valid: they do not depend on it).
    pub fn with_direction(&self, direction: Direction) -> Self {
        ConvProblem { direction, ..*self }
    }
    /// Same problem, another element type.
    pub fn with_dtype(&self, dtype: DType) -> Self {
        ConvProblem { dtype, ..*self }
    }
    /// Same sizes, other layouts; the caller passes layouts of the right kinds.
    pub fn with_layouts(&self, input: Layout, filter: Layout, output: Layout) -> Self {
        ConvProblem {
            in_layout: input,
            fil_layout: filter,
            out_layout: output,
            ..*self
        }
    }

    /// Stride residue classes with filter taps along [H, W]: `min(stride / gcd(stride,
    /// dilation), filter)`. Backward data lowers to one sub-GEMM per pair of them; the same
    /// for every direction, so a problem stays valid when its direction changes.
    pub fn residue_classes(&self) -> [u32; 2] {
        let s = &self.sizes;
        let f = [s.y, s.x];
        std::array::from_fn(|d| (s.stride[d] / gcd(s.stride[d], s.dilation[d])).min(f[d]))
    }

    /// Channels per group of the input (C / G).
    pub fn c_per_group(&self) -> u32 {
        self.sizes.c / self.sizes.groups
    }
    /// Channels per group of the output (K / G).
    pub fn k_per_group(&self) -> u32 {
        self.sizes.k / self.sizes.groups
    }
    /// Output extent [Ho, Wo].
    pub fn out_size(&self) -> [u32; 2] {
        let s = &self.sizes;
        let f = [s.y, s.x];
        let i = [s.h, s.w];
        std::array::from_fn(|d| {
            (i[d] + 2 * s.pad[d] - (f[d] - 1) * s.dilation[d] - 1) / s.stride[d] + 1
        })
    }

    /// Logical extents of a tensor in its canonical dimension order:
    /// activations (n, g, c, h, w); filter (g, k, c, y, x), channels per group.
    pub fn logical_dims(&self, t: Tensor) -> [u32; 5] {
        let s = &self.sizes;
        let [ho, wo] = self.out_size();
        match t {
            Tensor::Input => [s.n, s.groups, self.c_per_group(), s.h, s.w],
            Tensor::Output => [s.n, s.groups, self.k_per_group(), ho, wo],
            Tensor::Filter => [s.groups, self.k_per_group(), self.c_per_group(), s.y, s.x],
        }
    }

    /// Element strides of a tensor for its logical dimensions (same order as [`Self::logical_dims`]).
    pub fn strides(&self, t: Tensor) -> [u64; 5] {
        self.layout(t).strides(self.logical_dims(t))
    }

    /// Number of elements of a tensor.
    pub fn tensor_elems(&self, t: Tensor) -> u64 {
        self.logical_dims(t).iter().map(|&d| d as u64).product()
    }

    /// Products summed into each element of the tensor the direction writes, on average: C/G·Y·X
    /// forward, about K/G·Y·X for the data gradient, N·Ho·Wo for the filter gradient.
    pub fn reduction_len(&self) -> f64 {
        self.flops() / (2.0 * self.tensor_elems(self.direction().written()) as f64)
    }

    /// Relative-error threshold ‖out − ref‖ / ‖ref‖ (against an f64 reference) that this
    /// problem's kernels must meet: the type's own ([`DType::tolerance`]), raised to
    /// [`SUM_ERROR`] × √(terms) for long reductions. Every kernel accumulates in f32, and the
    /// rounding error of a sum grows with the square root of its terms: a correct f32
    /// filter gradient over N·Ho·Wo = 401,408 terms measured 1.1e-5 (session 23, 164 of 165
    /// candidates refused at the flat 1e-5; recursive summation's expected error is about
    /// 0.7 × 2⁻²⁴ × √terms = 2.6e-5).
    pub fn tolerance(&self) -> f64 {
        self.dtype()
            .tolerance()
            .max(SUM_ERROR * self.reduction_len().sqrt())
    }

    /// Multiply-adds × 2 of the convolution (the same in all three directions).
    pub fn flops(&self) -> f64 {
        let s = &self.sizes;
        let [ho, wo] = self.out_size();
        2.0 * s.n as f64
            * s.k as f64
            * ho as f64
            * wo as f64
            * self.c_per_group() as f64
            * s.y as f64
            * s.x as f64
    }

    /// The fewest bytes a kernel must move: each tensor read or written once.
    pub fn min_bytes(&self) -> f64 {
        Tensor::ALL
            .iter()
            .map(|&t| self.tensor_elems(t) as f64)
            .sum::<f64>()
            * self.dtype.bytes() as f64
    }

    /// The canonical key: one MIOpenDriver line with every flag present in a fixed order, so
    /// that one problem written two ways finds one database entry.
    pub fn key(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ConvProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.sizes;
        write!(
            f,
            "{} -F {} -n {} -c {} -H {} -W {} -k {} -y {} -x {} -p {} -q {} -u {} -v {} -l {} -j {} -g {} -I {} -f {} -O {}",
            self.dtype.miopen_cmd(),
            self.direction.miopen_flag(),
            s.n, s.c, s.h, s.w, s.k, s.y, s.x,
            s.pad[0], s.pad[1], s.stride[0], s.stride[1], s.dilation[0], s.dilation[1], s.groups,
            self.in_layout, self.fil_layout, self.out_layout
        )
    }
}

impl std::str::FromStr for ConvProblem {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse::parse_problem(s)
    }
}

#[cfg(test)]
mod tests;
