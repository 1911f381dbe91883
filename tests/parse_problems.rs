//! Problem-line parsing through the public API: both accepted forms, the canonical key, problem
//! files, error messages, and no panics on arbitrary input.

use convtune::problem::parse::parse_problem;
use convtune::problem::{
    parse_problem_file, ConvProblem, ConvSizes, DType, Direction, Layout, ParseError, ProblemError,
};
use proptest::prelude::*;

/// The six rocMLIR lines of seed 000's last comment, verbatim.
const SEED_000: [&str; 6] = [
    "./bin/mlir-miopen-driver -p=false -fil_layout=gkcyx -in_layout=ngchw -out_layout=ngkhw -batchsize=32 -in_channels=32 -out_channels=32 -in_h=14 -in_w=14 -fil_h=1 -fil_w=1 --dilation_h=1 --dilation_w=1 --padding_h=1 --padding_w=1 --conv_stride_h=1 --conv_stride_w=1 --groupsize=1 -pv --operation=conv2d_bwd_data -c -rand 1| ./bin/mlir-rocm-runner --shared-libs=./lib/librocm-runtime-wrappers.so,./lib/libmlir_runner_utils.so --entry-point-result=void",
    "./bin/mlir-miopen-driver -p=false -fil_layout=gkcyx -in_layout=ngchw -out_layout=ngkhw -batchsize=32 -in_channels=32 -out_channels=32 -in_h=14 -in_w=14 -fil_h=3 -fil_w=3 --dilation_h=1 --dilation_w=1 --padding_h=1 --padding_w=1 --conv_stride_h=1 --conv_stride_w=1 --groupsize=1 -pv --operation=conv2d_bwd_data -c -rand 1| ./bin/mlir-rocm-runner --shared-libs=./lib/librocm-runtime-wrappers.so,./lib/libmlir_runner_utils.so --entry-point-result=void",
    "./bin/mlir-miopen-driver -p=false -fil_layout=gkcyx -in_layout=ngchw -out_layout=ngkhw -batchsize=32 -in_channels=32 -out_channels=32 -in_h=15 -in_w=15 -fil_h=1 -fil_w=1 --dilation_h=1 --dilation_w=1 --padding_h=1 --padding_w=1 --conv_stride_h=1 --conv_stride_w=1 --groupsize=1 -pv --operation=conv2d_bwd_data -c -rand 1| ./bin/mlir-rocm-runner --shared-libs=./lib/librocm-runtime-wrappers.so,./lib/libmlir_runner_utils.so --entry-point-result=void",
    "./bin/mlir-miopen-driver -p=false -fil_layout=gkcyx -in_layout=ngchw -out_layout=ngkhw -batchsize=32 -in_channels=32 -out_channels=32 -in_h=16 -in_w=16 -fil_h=1 -fil_w=1 --dilation_h=1 --dilation_w=1 --padding_h=1 --padding_w=1 --conv_stride_h=1 --conv_stride_w=1 --groupsize=1 -pv --operation=conv2d_bwd_data -c | ./bin/mlir-rocm-runner --shared-libs=./lib/librocm-runtime-wrappers.so,./lib/libmlir_runner_utils.so --entry-point-result=void",
    "./bin/mlir-miopen-driver -p=false -fil_layout=gkcyx -in_layout=ngchw -out_layout=ngkhw -batchsize=32 -in_channels=32 -out_channels=32 -in_h=18 -in_w=18 -fil_h=1 -fil_w=1 --dilation_h=1 --dilation_w=1 --padding_h=1 --padding_w=1 --conv_stride_h=1 --conv_stride_w=1 --groupsize=1 -pv --operation=conv2d_bwd_data -c -rand 1| ./bin/mlir-rocm-runner --shared-libs=./lib/librocm-runtime-wrappers.so,./lib/libmlir_runner_utils.so --entry-point-result=void",
    "./bin/mlir-miopen-driver -p=false -fil_layout=gkcyx -in_layout=ngchw -out_layout=ngkhw -batchsize=32 -in_channels=32 -out_channels=32 -in_h=20 -in_w=20 -fil_h=1 -fil_w=1 --dilation_h=1 --dilation_w=1 --padding_h=1 --padding_w=1 --conv_stride_h=1 --conv_stride_w=1 --groupsize=1 -pv --operation=conv2d_bwd_data -c -rand 1| ./bin/mlir-rocm-runner --shared-libs=./lib/librocm-runtime-wrappers.so,./lib/libmlir_runner_utils.so --entry-point-result=void",
];

const SEED_003: &str = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC";

fn err(line: &str) -> String {
    match parse_problem(line) {
        Ok(p) => panic!("'{line}' parsed as {p}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn seed_000_rocmlir_lines_parse_as_f32_nchw_bwd_data() {
    let hw = [(14, 1), (14, 3), (15, 1), (16, 1), (18, 1), (20, 1)];
    for (line, (h, f)) in SEED_000.iter().zip(hw) {
        let p = parse_problem(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(p.direction(), Direction::BwdData);
        assert_eq!(p.dtype(), DType::F32);
        assert_eq!(p.layout(convtune::problem::Tensor::Input), Layout::NGCHW);
        assert_eq!(p.layout(convtune::problem::Tensor::Filter), Layout::GKCYX);
        assert_eq!(p.layout(convtune::problem::Tensor::Output), Layout::NGCHW);
        let s = p.sizes();
        assert_eq!(
            (s.n, s.c, s.k, s.h, s.w, s.y, s.x),
            (32, 32, 32, h, h, f, f)
        );
        assert_eq!(
            (s.pad, s.stride, s.dilation, s.groups),
            ([1, 1], [1, 1], [1, 1], 1)
        );
        let miopen = format!(
            "conv -n 32 -c 32 -H {h} -W {h} -k 32 -y {f} -x {f} -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -F 2"
        );
        let q = parse_problem(&miopen).unwrap();
        assert_eq!(p, q);
        assert_eq!(p.key(), q.key());
    }
}

#[test]
fn seed_003_line_parses() {
    let p = parse_problem(SEED_003).unwrap();
    let s = p.sizes();
    assert_eq!(
        (s.n, s.c, s.h, s.w, s.k, s.y, s.x),
        (16, 2048, 1, 512, 2048, 1, 2)
    );
    assert_eq!((s.stride, s.pad), ([1, 2], [0, 0]));
    assert_eq!(
        (p.direction(), p.dtype()),
        (Direction::BwdData, DType::BF16)
    );
    assert_eq!(p.layout(convtune::problem::Tensor::Input), Layout::NHWGC);
    assert_eq!(p.layout(convtune::problem::Tensor::Filter), Layout::GKYXC);
    assert_eq!(p.layout(convtune::problem::Tensor::Output), Layout::NHWGC);
    assert_eq!(p.out_size(), [1, 256]);
    // The same problem with long flags, a program path, harmless driver flags and per-tensor
    // layouts in another order.
    let long = "./bin/MIOpenDriver convbfp16 --forw 2 --batchsize 16 --in_channels 2048 --in_h 1 \
                --in_w 512 --out_channels 2048 --fil_h 1 --fil_w 2 --conv_stride_w 2 -t 1 -V 0 \
                -i 10 -m conv -s 0 -b 0 -I NHWC -O NHWC -f NHWC";
    assert_eq!(parse_problem(long).unwrap(), p);
}

#[test]
fn error_messages_name_flag_and_value() {
    let base = "conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3";
    assert_eq!(
        err(&format!("{base} -F 3")),
        "-F '3': expected 1 (fwd), 2 (bwd-data) or 4 (bwd-weight); one problem a line"
    );
    assert_eq!(
        err("conv -n -4 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1"),
        "-n '-4': must not be negative"
    );
    assert_eq!(
        err(&format!("{base} -F 1 -z 1")),
        "unknown flag '-z' in a MIOpenDriver line"
    );
    assert_eq!(
        err("conv -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1 -n"),
        "-n needs a value"
    );
    assert_eq!(err("conv -n -c 4 -F 1"), "-n needs a value");
    assert_eq!(
        err("conv -n 1 -c 3 -g 2 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1"),
        "invalid problem: -c = 3 is not divisible by groups (-g) = 2"
    );
    assert_eq!(
        err(base),
        "missing -F (direction: 1 fwd, 2 bwd-data, 4 bwd-weight)"
    );
    assert_eq!(
        err("conv -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1"),
        "missing -n (batch size)"
    );
    assert_eq!(
        err(&format!("{} -F 1 -n x7", &base[..5])),
        "-n 'x7': is not a non-negative integer"
    );
    assert_eq!(
        err(&format!("{base} -F 1 -p 99999999999")),
        "-p '99999999999': is too large"
    );
    assert_eq!(
        err(&format!("{base} -F 1 --batchsize 2")),
        "--batchsize '2' contradicts the earlier -n '1'"
    );
    assert_eq!(
        err(&format!("{base} -F 1 -m trans")),
        "-m 'trans': only convolution mode 'conv' is supported"
    );
    assert!(
        err(&format!("{base} -F 1 -I NCHX")).starts_with("-I: invalid activation layout 'NCHX'")
    );
    assert_eq!(
        err(&format!("{base} -F 1 junk")),
        "unexpected 'junk': expected a flag"
    );
    assert_eq!(err(""), "empty problem line");
    assert_eq!(err("  | conv -n 1"), "empty problem line");
    assert!(err("hello world").starts_with("'hello' starts no problem"));
    assert_eq!(
        err(&base.replace("conv ", "convint8 ")),
        "unsupported MIOpenDriver command 'convint8': expected conv, convfp16 or convbfp16"
    );
    assert!(matches!(
        parse_problem("conv -n 1 -c 3 -g 2 -H 8 -W 8 -k 4 -y 3 -x 3 -F 1"),
        Err(ParseError::Invalid(ProblemError::Groups {
            field: "-c",
            ..
        }))
    ));
    // Sizes whose element counts overflow are an error, not a panic.
    let huge = "conv -n 4294967295 -c 4294967295 -H 4294967295 -W 4294967295 -k 4294967295 \
                -y 1 -x 1 -p 2147483647 -q 2147483647 -F 1";
    assert!(err(huge).starts_with("-p '2147483647'"));
    let huge = "conv -n 65536 -c 65536 -H 65536 -W 65536 -k 65536 -y 1 -x 1 -F 1";
    assert!(err(huge).starts_with("invalid problem: input has 18446744073709551615 elements"));
}

#[test]
fn rocmlir_errors() {
    let base = "--operation=conv2d -batchsize=2 -in_channels=4 -out_channels=4 -in_h=8 -in_w=8 -fil_h=3 -fil_w=3";
    assert!(parse_problem(base).is_ok());
    assert_eq!(
        err(&format!("{base} --padding_h_l=1 --padding_h_r=2")),
        "--padding_h_l '1 left, 2 right': asymmetric padding is not supported"
    );
    let sym = parse_problem(&format!("{base} --padding_h_l=1 --padding_h_r 1")).unwrap();
    assert_eq!(sym.sizes().pad, [1, 0]);
    assert_eq!(
        err(&format!(
            "{base} --padding_w=1 --padding_w_l=2 --padding_w_r=2"
        )),
        "--padding_w_l '2' contradicts the earlier --padding_w '1'"
    );
    assert_eq!(
        err(&format!("{base} -t i8")),
        "-t 'i8': expected f32, f16 or bf16"
    );
    assert_eq!(
        err("--operation=conv3d -batchsize=2"),
        "--operation 'conv3d': expected conv2d, conv2d_bwd_data or conv2d_bwd_weight"
    );
    assert_eq!(err(&format!("{base} --rand")), "--rand needs a value");
    assert_eq!(
        err(&format!("{base} -foo=1")),
        "unknown flag '-foo' in a rocMLIR line"
    );
    assert_eq!(
        err(&base.replace("-in_w=8 ", "")),
        "missing -in_w (input width)"
    );
    // Driver-only flags, a program path and two-dash/space spellings are accepted.
    let p = parse_problem(&format!(
        "rocmlir-gen {base} -p -pv -c -x2 --arch gfx90a --num_cu=104 -rand_type float -t bf16 \
         -fil_layout gkyxc -in_layout=nhwgc --out_layout=nhwgk --groupsize 2"
    ))
    .unwrap();
    assert_eq!(p.dtype(), DType::BF16);
    assert_eq!(p.sizes().groups, 2);
    assert_eq!(p.layout(convtune::problem::Tensor::Output), Layout::NHWGC);
    assert_eq!(p.layout(convtune::problem::Tensor::Filter), Layout::GKYXC);
}

#[test]
fn problem_files_skip_comments_and_number_errors() {
    let text = format!(
        "# tuning list\n\n{SEED_003}  # seed 003\n   \n{}\n# end\n",
        SEED_000[1]
    );
    let ps = parse_problem_file(&text).unwrap();
    assert_eq!(ps.len(), 2);
    assert_eq!(ps[0], parse_problem(SEED_003).unwrap());
    assert_eq!(ps[1], parse_problem(SEED_000[1]).unwrap());
    let bad = format!("{SEED_003}\n# fine\n\nconv -n 1 -F 3\n");
    let e = parse_problem_file(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 4: -F '3': expected 1 (fwd), 2 (bwd-data) or 4 (bwd-weight); one problem a line"
    );
    assert!(matches!(e, ParseError::Line { line: 4, .. }));
    assert_eq!(parse_problem_file("\n# only comments\n").unwrap(), vec![]);
}

fn problem() -> impl Strategy<Value = ConvProblem> {
    let dims = (
        1u32..40,
        1u32..5,
        1u32..40,
        1u32..40,
        1u32..300,
        1u32..300,
        1u32..8,
        1u32..8,
    );
    let conv = ([0u32..6, 0u32..6], [1u32..5, 1u32..5], [1u32..4, 1u32..4]);
    let kinds = (0usize..3, 0usize..3, 0usize..2, 0usize..2, 0usize..2);
    (dims, conv, kinds).prop_filter_map(
        "invalid sizes",
        |((n, g, cg, kg, h, w, y, x), (pad, stride, dilation), (d, t, il, fl, ol))| {
            let act = [Layout::NGCHW, Layout::NHWGC];
            let fil = [Layout::GKCYX, Layout::GKYXC];
            let sizes = ConvSizes {
                n,
                c: cg * g,
                h,
                w,
                k: kg * g,
                y,
                x,
                pad,
                stride,
                dilation,
                groups: g,
            };
            let dir = [Direction::Fwd, Direction::BwdData, Direction::BwdWeight][d];
            let dtype = [DType::F32, DType::F16, DType::BF16][t];
            ConvProblem::new(sizes, dir, dtype, act[il], fil[fl], act[ol]).ok()
        },
    )
}

/// The rocMLIR spelling of a problem, one token a flag.
fn rocmlir_tokens(p: &ConvProblem) -> Vec<String> {
    use convtune::problem::Tensor;
    let s = p.sizes();
    let op = ["conv2d", "conv2d_bwd_data", "conv2d_bwd_weight"][p.direction() as usize];
    let lower = |t: Tensor| p.layout(t).to_string().to_lowercase();
    vec![
        format!("--operation={op}"),
        format!("-t {}", p.dtype().name()),
        format!("-batchsize={}", s.n),
        format!("-in_channels={}", s.c),
        format!("-out_channels={}", s.k),
        format!("-in_h={}", s.h),
        format!("-in_w={}", s.w),
        format!("-fil_h={}", s.y),
        format!("-fil_w={}", s.x),
        format!("--padding_h={}", s.pad[0]),
        format!("--padding_w_l={} --padding_w_r={}", s.pad[1], s.pad[1]),
        format!("--conv_stride_h {}", s.stride[0]),
        format!("--conv_stride_w={}", s.stride[1]),
        format!("--dilation_h={}", s.dilation[0]),
        format!("--dilation_w={}", s.dilation[1]),
        format!("--groupsize={}", s.groups),
        format!("-in_layout={}", lower(Tensor::Input)),
        format!("-fil_layout={}", lower(Tensor::Filter)),
        format!("-out_layout={}", lower(Tensor::Output).replace('c', "k")),
        "-p=false".into(),
        "-pv".into(),
        "-rand 1".into(),
    ]
}

/// The MIOpenDriver spelling with long flag names, one token a flag.
fn miopen_long_tokens(p: &ConvProblem) -> Vec<String> {
    use convtune::problem::Tensor;
    let s = p.sizes();
    vec![
        format!("--forw {}", p.direction().miopen_flag()),
        format!("--batchsize {}", s.n),
        format!("--in_channels {}", s.c),
        format!("--in_h {}", s.h),
        format!("--in_w {}", s.w),
        format!("--out_channels {}", s.k),
        format!("--fil_h {}", s.y),
        format!("--fil_w {}", s.x),
        format!("--pad_h {}", s.pad[0]),
        format!("--pad_w {}", s.pad[1]),
        format!("--conv_stride_h {}", s.stride[0]),
        format!("--conv_stride_w {}", s.stride[1]),
        format!("--dilation_h {}", s.dilation[0]),
        format!("--dilation_w {}", s.dilation[1]),
        format!("--group_count {}", s.groups),
        format!("--in_layout {}", p.layout(Tensor::Input)),
        format!("--fil_layout {}", p.layout(Tensor::Filter)),
        format!("--out_layout {}", p.layout(Tensor::Output)),
        "-t 1".into(),
        "-V 0".into(),
    ]
}

const SOUP: &[&str] = &[
    "conv",
    "convfp16",
    "convbfp16",
    "./bin/MIOpenDriver",
    "-n",
    "-c",
    "-H",
    "-W",
    "-k",
    "-y",
    "-x",
    "-p",
    "-q",
    "-u",
    "-v",
    "-l",
    "-j",
    "-g",
    "-F",
    "-I",
    "-f",
    "-O",
    "--layout",
    "-m",
    "-t",
    "--forw",
    "--batchsize=",
    "--operation=conv2d",
    "--operation",
    "conv2d_bwd_weight",
    "-batchsize=3",
    "-in_channels",
    "-out_channels=8",
    "-in_h=5",
    "-in_w",
    "-fil_h=1",
    "-fil_w=2",
    "--padding_h_l=1",
    "--padding_h_r",
    "-fil_layout=gkyxc",
    "-out_layout=ngkhw",
    "-rand",
    "-pv",
    "-p=false",
    "1",
    "2",
    "3",
    "4",
    "0",
    "-4",
    "-0",
    "99999999999",
    "4294967295",
    "2147483647",
    "NHWC",
    "NCHW",
    "nhwgk",
    "GKYXC",
    "=",
    "-",
    "--",
    "---n",
    "|",
    "#",
    "é",
    "-é=1",
    "bf16",
    "f16",
    "i8",
    "1.5",
    "+3",
    "",
];

proptest! {
    #[test]
    fn key_round_trips(p in problem()) {
        let q = parse_problem(&p.key());
        prop_assert_eq!(q, Ok(p));
    }

    #[test]
    fn both_forms_and_any_flag_order_agree(
        p in problem(),
        roc_order in Just((0..22).collect::<Vec<usize>>()).prop_shuffle(),
        mio_order in Just((0..20).collect::<Vec<usize>>()).prop_shuffle(),
    ) {
        let roc = rocmlir_tokens(&p);
        let roc: Vec<&str> = roc_order.iter().map(|&i| roc[i].as_str()).collect();
        let roc = format!("rocmlir-gen {} | mlir-rocm-runner", roc.join(" "));
        let mio = miopen_long_tokens(&p);
        let mio: Vec<&str> = mio_order.iter().map(|&i| mio[i].as_str()).collect();
        let mio = format!("MIOpenDriver {} {}", p.dtype().miopen_cmd(), mio.join(" "));
        let from_roc = parse_problem(&roc);
        let from_mio = parse_problem(&mio);
        prop_assert_eq!(&from_roc, &Ok(p), "{}", roc);
        prop_assert_eq!(&from_mio, &Ok(p), "{}", mio);
        prop_assert_eq!(from_roc.unwrap().key(), p.key());
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,80}") {
        let _ = parse_problem(&s);
        let _ = parse_problem_file(&s);
    }

    #[test]
    fn token_soups_never_panic(toks in prop::collection::vec(prop::sample::select(SOUP), 0..30)) {
        let line = toks.join(" ");
        let _ = parse_problem(&line);
        let _ = parse_problem(&format!("conv {line}"));
        let _ = parse_problem(&format!("conv -n 2 -c 4 -H 7 -W 7 -k 4 -y 3 -x 3 -F 1 {line}"));
        let _ = parse_problem(&format!("--operation=conv2d {line}"));
    }

    #[test]
    fn one_bad_value_is_named(p in problem(), which in 0usize..20, junk in prop::sample::select(&["-4", "x", "1.5", "99999999999"][..])) {
        let mut toks = miopen_long_tokens(&p);
        // Skip the layout and ignored flags; those take words, not numbers.
        let which = which % 15;
        let flag = toks[which].split(' ').next().unwrap().to_string();
        toks[which] = format!("{flag} {junk}");
        let line = format!("{} {}", p.dtype().miopen_cmd(), toks.join(" "));
        let e = parse_problem(&line).unwrap_err().to_string();
        prop_assert!(e.starts_with(&format!("{flag} '{junk}'")), "{}: {}", line, e);
    }
}
