//! Unit tests of the problem type: validation, keys, sizes.

use super::*;

fn nchw(sizes: ConvSizes) -> Result<ConvProblem, ProblemError> {
    ConvProblem::new(
        sizes,
        Direction::Fwd,
        DType::F32,
        Layout::NGCHW,
        Layout::GKCYX,
        Layout::NGCHW,
    )
}

#[test]
fn out_size_with_stride_padding_dilation() {
    let p = nchw(ConvSizes {
        h: 14,
        w: 15,
        y: 3,
        x: 3,
        pad: [1, 0],
        stride: [2, 1],
        dilation: [1, 2],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(p.out_size(), [7, 11]);
}

#[test]
fn rejects_empty_output_and_bad_groups() {
    let e = nchw(ConvSizes {
        h: 2,
        y: 5,
        ..Default::default()
    })
    .unwrap_err();
    assert!(matches!(e, ProblemError::EmptyOutput { dim: "H", .. }));
    let e = nchw(ConvSizes {
        c: 6,
        k: 4,
        groups: 3,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.to_string(), "-k = 4 is not divisible by groups (-g) = 3");
    let e = nchw(ConvSizes {
        n: 0,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e, ProblemError::Zero { field: "-n" });
    // Sizes whose products overflow 64 bits are an error, not a panic.
    let huge = nchw(ConvSizes {
        n: u32::MAX,
        c: u32::MAX,
        h: u32::MAX / 4,
        w: u32::MAX / 4,
        pad: [u32::MAX / 4, 1],
        ..Default::default()
    });
    assert!(matches!(huge, Err(ProblemError::TooLarge { .. })));
}

#[test]
fn deserialising_validates_like_new() {
    // Issue 18 item 13: `SetProblem` deserialised `groups = 0` and divided by it.
    let p = nchw(ConvSizes::default()).unwrap();
    let json = serde_json::to_string(&p).unwrap();
    let back: ConvProblem = serde_json::from_str(&json).unwrap();
    assert_eq!(back, p);
    let zero_groups = json.replace("\"groups\":1", "\"groups\":0");
    let e = serde_json::from_str::<ConvProblem>(&zero_groups).unwrap_err();
    assert!(e.to_string().contains("-g must be at least 1"), "{e}");
    let bad_order = json.replacen("[0,1,2,3,4]", "[0,1,2,3,9]", 1);
    let e = serde_json::from_str::<ConvProblem>(&bad_order).unwrap_err();
    assert!(e.to_string().contains("not a permutation"), "{e}");
    let swapped = json.replacen("\"Activation\"", "\"Filter\"", 1);
    assert!(serde_json::from_str::<ConvProblem>(&swapped).is_err());
}

#[test]
fn residue_classes_are_capped() {
    // Issue 18 item 1: huge strides with big filters would need billions of sub-GEMMs.
    let e = nchw(ConvSizes {
        h: 1000,
        w: 1000,
        y: 1000,
        x: 1000,
        stride: [4096, 4096],
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        matches!(
            e,
            ProblemError::TooManyClasses {
                classes: 1_000_000,
                ..
            }
        ),
        "{e}"
    );
    // A 256×256 patch embedding with stride 256 is fine.
    let p = nchw(ConvSizes {
        h: 512,
        w: 512,
        y: 256,
        x: 256,
        stride: [256, 256],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(p.residue_classes(), [256, 256]);
}

/// The tolerance is the type's own for short reductions and grows with √(terms) for long ones:
/// an f32 filter gradient over 128·56·56 = 401,408 terms is allowed what a correct f32 sum of
/// that length makes (1.1e-5 measured on the H200), a 3×3 c64 forward conv is not.
#[test]
fn tolerance_grows_with_the_reduction_length() {
    let p = |line: &str| line.parse::<ConvProblem>().unwrap();
    let wgrad = p("conv -F 4 -n 128 -c 48 -H 56 -W 56 -k 32 -y 1 -x 1 -p 0 -q 0");
    assert_eq!(wgrad.reduction_len(), 128.0 * 56.0 * 56.0);
    assert!(
        wgrad.tolerance() > 5e-5 && wgrad.tolerance() < 1e-4,
        "{}",
        wgrad.tolerance()
    );
    let fwd = p("conv -F 1 -n 32 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1");
    assert_eq!(fwd.reduction_len(), 64.0 * 9.0);
    assert_eq!(fwd.tolerance(), DType::F32.tolerance());
    let bdata = p("conv -F 2 -n 32 -c 64 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1");
    assert_eq!(bdata.reduction_len(), 128.0 * 9.0);
    let half = p("convbfp16 -F 4 -n 128 -c 48 -H 56 -W 56 -k 32 -y 1 -x 1 -p 0 -q 0");
    assert_eq!(half.tolerance(), DType::BF16.tolerance());
}
