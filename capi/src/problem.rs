//! `convtune_problem`: a problem given field by field, validated by the same constructor and
//! layout parsers the command line uses, so `NHWC` and `NHWGC` name one database entry.

use crate::{optional_str, Failure, Status};
use convtune::problem::{ConvProblem, ConvSizes, DType, Direction, Layout};
use std::ffi::c_char;

/// `convtune_problem`, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProblemC {
    /// `convtune_direction` (MIOpen's `-F`: 1, 2, 4).
    pub direction: i32,
    /// `convtune_dtype`.
    pub dtype: i32,
    /// Batch.
    pub n: u32,
    /// Input channels (all groups).
    pub c: u32,
    /// Input height.
    pub h: u32,
    /// Input width.
    pub w: u32,
    /// Output channels (all groups).
    pub k: u32,
    /// Filter height.
    pub y: u32,
    /// Filter width.
    pub x: u32,
    /// Padding along H.
    pub pad_h: u32,
    /// Padding along W.
    pub pad_w: u32,
    /// Stride along H.
    pub stride_h: u32,
    /// Stride along W.
    pub stride_w: u32,
    /// Dilation along H.
    pub dilation_h: u32,
    /// Dilation along W.
    pub dilation_w: u32,
    /// Groups.
    pub groups: u32,
    /// All three layouts (NULL: NCHW).
    pub layout: *const c_char,
    /// Input layout override.
    pub in_layout: *const c_char,
    /// Filter layout override.
    pub fil_layout: *const c_char,
    /// Output layout override.
    pub out_layout: *const c_char,
}

fn bad(message: String) -> Failure {
    Failure {
        status: Status::Problem,
        message,
    }
}

impl ProblemC {
    /// The validated problem.
    ///
    /// # Safety
    /// The layout pointers are NULL or NUL-terminated strings.
    pub unsafe fn to_problem(&self) -> Result<ConvProblem, Failure> {
        let direction = match self.direction {
            1 => Direction::Fwd,
            2 => Direction::BwdData,
            4 => Direction::BwdWeight,
            d => {
                return Err(bad(format!(
                    "direction {d}: expected 1 (fwd), 2 (bwd data) or 4 (bwd weight)"
                )))
            }
        };
        let dtype = match self.dtype {
            0 => DType::F32,
            1 => DType::F16,
            2 => DType::BF16,
            t => {
                return Err(bad(format!(
                    "dtype {t}: expected 0 (f32), 1 (f16) or 2 (bf16)"
                )))
            }
        };
        // SAFETY: the caller's contract on the layout pointers.
        let (all, input, filter, output) = unsafe {
            (
                optional_str(self.layout, "layout")?,
                optional_str(self.in_layout, "in_layout")?,
                optional_str(self.fil_layout, "fil_layout")?,
                optional_str(self.out_layout, "out_layout")?,
            )
        };
        let act = |given: Option<&str>, what: &str| match given.or(all) {
            // rocMLIR spells output channels K (`ngkhw`); activation layouts call every channel C.
            Some(text) => Layout::parse_activation(&text.replace(['k', 'K'], "C"))
                .map_err(|e| bad(format!("{what}: {e}"))),
            None => Ok(Layout::NGCHW),
        };
        let in_layout = act(input, "in_layout")?;
        let out_layout = act(output, "out_layout")?;
        // `layout` names the activations' order; the filter parser reads activation letters
        // as the matching filter order (NHWGC = GKYXC).
        let fil_text = filter.or(all);
        let fil_layout = match fil_text {
            Some(text) => {
                Layout::parse_filter(text).map_err(|e| bad(format!("fil_layout: {e}")))?
            }
            None => Layout::GKCYX,
        };
        let sizes = ConvSizes {
            n: self.n,
            c: self.c,
            h: self.h,
            w: self.w,
            k: self.k,
            y: self.y,
            x: self.x,
            pad: [self.pad_h, self.pad_w],
            stride: [self.stride_h, self.stride_w],
            dilation: [self.dilation_h, self.dilation_w],
            groups: self.groups,
        };
        ConvProblem::new(sizes, direction, dtype, in_layout, fil_layout, out_layout)
            .map_err(|e| bad(e.to_string()))
    }
}
