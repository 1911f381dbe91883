//! `wgmma` MN-major (transposed) operand tiles of 16 and 32 rows: the 32- and 64-byte swizzle
//! atoms that `fit::wgmma_mn_swizzle` chooses when a tile's rows are not whole 64-row blocks
//! (issue 14, item 4). Run on the CPU emulator, which decodes the descriptors' layout type,
//! leading and stride byte offsets and the TMA swizzle modes from the PTX ISA independently of
//! the kernel side, and compared bit-exactly with the f64 direct convolution: a wrong mode, a
//! wrong offset or a store pattern that disagrees with the descriptor reads the wrong elements.

use convtune::abi::MapSwizzle;
use convtune::arch::{fit, Arch};
use convtune::config::PerfConfig;
use convtune::legality;
use convtune::lowering::lower;
use convtune::lowering::tma::tma_operands;
use convtune::problem::{ConvProblem, DType};
mod common;

use common::{cfg, emulate_where_legal, problem};

/// A config of `bm × bn` with warpgroup tile `wm × wn` on load path `ld`.
fn config(bm: u32, bn: u32, wm: u32, wn: u32, st: u32, ld: &str, mma: &str) -> PerfConfig {
    cfg(&format!(
        "v4:bm={bm},bn={bn},bk=64,wm={wm},wn={wn},st={st},va=8,vb=8,vc=1,lds=swz,sk=1,\
         rs=1,mma={mma},red=atomic,ld={ld},pk=0,xf=none"
    ))
}

/// The tiles of the tests: N = 16, 32, 48 (three 16-row atoms), 96 (three 32-row atoms), two
/// warpgroups along N of 16 and of 96, and a 128-row warpgroup tile on 16 columns; `cp.async`,
/// TMA and the warp-specialised TMA pipeline; one and in-flight groups.
fn small_tiles() -> Vec<PerfConfig> {
    vec![
        config(64, 16, 64, 16, 2, "cp", "wg"),
        config(64, 32, 64, 32, 3, "cp", "wg1"),
        config(64, 48, 64, 48, 2, "cp", "wg"),
        config(64, 96, 64, 96, 2, "tma", "wg"),
        config(64, 32, 64, 16, 3, "tma", "wg"),
        config(64, 192, 64, 96, 2, "tma", "wg"),
        config(128, 16, 128, 16, 2, "ws", "wg"),
        config(64, 48, 64, 48, 4, "ws", "wg1"),
    ]
}

/// Emulates every config on `p`, demanding that legality accept it and the result be exact.
fn run_all(p: &ConvProblem, configs: &[PerfConfig]) {
    for c in configs {
        let legal = legality::check(&lower(p), c, &Arch::SM_90);
        assert!(legal.is_ok(), "{p} {c}: {legal:?}");
        assert!(
            emulate_where_legal(p, c, Arch::SM_90, 5).is_some(),
            "{p} {c}: codegen refused"
        );
    }
}

/// Backward weight, NHWC (A = dy and B = x both MN-major): 3×3 padded (B through im2col under
/// TMA), 1×1 (B a tiled map), few output channels, groups, f16 and bf16.
#[test]
fn bwd_weight_nhwc_small_mn_major_tiles_bit_exact() {
    let shapes = [
        "convbfp16 -n 2 -c 96 -H 5 -W 6 -k 64 -y 3 -x 3 -p 1 -q 1",
        "convfp16 -n 2 -c 96 -H 5 -W 7 -k 64 -y 1 -x 1",
        "convbfp16 -n 3 -c 96 -H 6 -W 6 -k 32 -y 3 -x 3 -p 1 -q 1",
        "convbfp16 -n 2 -c 192 -H 4 -W 5 -k 128 -y 1 -x 1 -g 2",
    ];
    let configs = small_tiles();
    for (i, s) in shapes.iter().enumerate() {
        let p = problem(&format!("{s} -F 4 --layout NHWC"));
        // Every shape runs half the tiles (all of them over the four shapes, twice).
        let picked: Vec<_> = configs
            .iter()
            .enumerate()
            .filter(|(j, _)| (i + j) % 2 == 0)
            .map(|(_, c)| *c)
            .collect();
        run_all(&p, &picked);
    }
}

/// Backward data, NHWC: the filter (A) is M-major, which a warpgroup tile of 64 or 128 rows
/// reads in 64-row atoms, next to a K-major B of 16 to 96 columns; with a 1×1 filter the data
/// gradient of a stride-1 problem is one GEMM and B a tiled TMA map.
#[test]
fn bwd_data_nhwc_m_major_filter_with_small_tiles_bit_exact() {
    for s in [
        "convbfp16 -n 2 -c 64 -H 5 -W 6 -k 64 -y 3 -x 3 -p 1 -q 1",
        "convbfp16 -n 2 -c 128 -H 4 -W 6 -k 64 -y 1 -x 1",
    ] {
        let p = problem(&format!("{s} -F 2 --layout NHWC"));
        run_all(&p, &small_tiles()[..5]);
    }
}

/// NCHW forward without the layout transform: a 1×1 stride-1 convolution's pixels are
/// contiguous along N, so B is N-major, and with 32 or 48 columns its tile is 32- or 16-row
/// atoms (no TMA: NCHW pixels nest into one stride only within an image).
#[test]
fn nchw_forward_without_transform_where_legal() {
    let p = problem("convbfp16 -n 2 -c 64 -H 4 -W 8 -k 64 -y 1 -x 1 -F 1 --layout NCHW");
    let l = lower(&p);
    let mut ran = 0;
    for (bn, wn) in [(32, 32), (48, 48), (64, 32), (96, 96)] {
        let c = config(64, bn, 64, wn, 2, "cp", "wg");
        assert!(legality::check(&l, &c, &Arch::SM_90).is_ok(), "{c}");
        ran += usize::from(emulate_where_legal(&p, &c, Arch::SM_90, 7).is_some());
    }
    assert_eq!(ran, 4);
}

/// The swizzle choice: the widest atom that divides the block tile's and the warpgroup tile's
/// rows; none for what no atom divides, and the reason names the atom.
#[test]
fn swizzle_follows_the_tile_size_and_refusals_name_the_atom() {
    let bf = DType::BF16;
    let cases = [
        ((64, 64), Some(MapSwizzle::Swizzle128B)),
        ((192, 64), Some(MapSwizzle::Swizzle128B)),
        ((96, 96), Some(MapSwizzle::Swizzle64B)),
        ((128, 32), Some(MapSwizzle::Swizzle64B)),
        ((48, 48), Some(MapSwizzle::Swizzle32B)),
        ((32, 16), Some(MapSwizzle::Swizzle32B)),
        ((24, 24), None),
        ((40, 40), None),
    ];
    for ((rows, extent), want) in cases {
        assert_eq!(
            fit::wgmma_mn_swizzle(bf, rows, extent),
            want,
            "{rows} {extent}"
        );
    }
    let p = problem("convbfp16 -n 2 -c 96 -H 5 -W 7 -k 64 -y 1 -x 1 -F 4 --layout NHWC");
    let e = legality::check(
        &lower(&p),
        &config(64, 24, 64, 24, 2, "cp", "wg"),
        &Arch::SM_90,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("multiples of 16"), "{e}");
}

/// TMA boxes and tensor maps of MN-major tiles follow the same choice: one `{atom, bk}` box per
/// block of the atom's rows, landing with the atom's swizzle; K-major tiles keep 128 bytes.
#[test]
fn tma_boxes_and_maps_carry_the_atom_swizzle() {
    let p = problem("convbfp16 -n 2 -c 96 -H 5 -W 7 -k 64 -y 1 -x 1 -F 4 --layout NHWC");
    let l = lower(&p);
    let g = &l.gemms[0];
    for (bn, wn, sw, atom) in [
        (96, 96, MapSwizzle::Swizzle64B, 32),
        (32, 16, MapSwizzle::Swizzle32B, 16),
        (128, 64, MapSwizzle::Swizzle128B, 64),
    ] {
        let c = config(64, bn, 64, wn, 2, "tma", "wg");
        let [a, b] = tma_operands(&p, g, &c, [true, true]).unwrap();
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(!a.kmajor && !b.kmajor);
        assert_eq!(a.map.swizzle, MapSwizzle::Swizzle128B);
        assert_eq!(
            (b.map.swizzle, b.map.boxes[..2].to_vec()),
            (sw, vec![atom, 64])
        );
        assert_eq!(b.copies, bn / atom);
        assert_eq!(b.stage_bytes(), bn * 64 * 2);
        let e = b.map.encode_args();
        assert_eq!(e.swizzle, sw);
    }
    // A K-major operand (bwd-data's output gradient) keeps the 128-byte lines of K.
    let d = problem("convbfp16 -n 2 -c 128 -H 4 -W 6 -k 64 -y 1 -x 1 -F 2 --layout NHWC");
    let l = lower(&d);
    let c = config(64, 16, 64, 16, 2, "tma", "wg");
    let [_, b] = tma_operands(&d, &l.gemms[0], &c, [true, true]).unwrap();
    let b = b.unwrap();
    assert!(b.kmajor);
    assert_eq!(b.map.swizzle, MapSwizzle::Swizzle128B);
}
