//! Code objects for gfx908, gfx90a and gfx942, checked without a GPU: for a sample of legal
//! configs of every kernel kind (the three directions, each dtype), the metadata each kernel's
//! code object declares must agree with the launch ABI and the hardware (kernarg layout, wave64,
//! LDS within 64 KiB, no scratch in the reference kernel), and legality's register estimate
//! must bound what the linker reports, or the candidate is rejected for spilling, with a reason.

use convtune::abi::CONV_ARGS;
use convtune::arch::Arch;
use convtune::codegen::{compile_conv, compile_reference, Compiled, Target};
use convtune::legality;
use convtune::lowering::lower;
use convtune::problem::ConvProblem;
use convtune::space::{sample_legal, SearchSpace};

const PROBLEMS: [&str; 4] = [
    "convfp16 -n 2 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC",
    "convbfp16 -n 4 -c 256 -H 1 -W 64 -k 256 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC",
    "conv -n 2 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 4",
    "convfp16 -n 2 -c 32 -H 9 -W 9 -k 48 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2",
];
const PER_PROBLEM: usize = 5;

/// `EF_AMDGPU_MACH` of each target (LLVM AMDGPUUsage, "AMDGPU ELF Header").
fn mach(arch: &str) -> u32 {
    match arch {
        "gfx908" => 0x030,
        "gfx90a" => 0x03f,
        "gfx942" => 0x04c,
        other => panic!("no EF_AMDGPU_MACH for {other}"),
    }
}

/// The ELF header HIP's loader checks: an AMDGPU HSA object for this target, built for xnack
/// "any" and sramecc "any" (`EF_AMDGPU_FEATURE_*_ANY_V4`), so it loads whatever mode
/// `gcnArchName` reports (`gfx90a:sramecc+:xnack-` and the others alike).
fn check_elf_header(elf: &[u8], arch: &str, what: &str) {
    assert_eq!(&elf[..4], b"\x7fELF", "{what}");
    assert_eq!(elf[4], 2, "{what}: ELF64");
    assert_eq!(elf[7], 64, "{what}: ELFOSABI_AMDGPU_HSA");
    assert_eq!(
        u16::from_le_bytes([elf[0x12], elf[0x13]]),
        224,
        "{what}: EM_AMDGPU"
    );
    let flags = u32::from_le_bytes(elf[0x30..0x34].try_into().unwrap());
    assert_eq!(flags & 0xff, mach(arch), "{what}: e_flags {flags:#x}");
    assert_eq!(
        flags & 0x300,
        0x100,
        "{what}: xnack any, e_flags {flags:#x}"
    );
    assert_eq!(
        flags & 0xc00,
        0x400,
        "{what}: sramecc any, e_flags {flags:#x}"
    );
}

/// The checks every AMD code object must pass; returns the kernels' register counts.
fn check_code_object(c: &Compiled, what: &str) -> Vec<u32> {
    let elf = c.module.code_object().expect("a code object");
    check_elf_header(elf, c.target.arch().name, what);
    let meta = c
        .resources
        .as_ref()
        .expect("AMD code objects carry metadata");
    let mut regs = Vec::new();
    for k in &c.kernels {
        let m = meta
            .kernel(&k.name)
            .unwrap_or_else(|| panic!("{what}: {} not in the metadata", k.name));
        assert_eq!(m.wavefront_size, 64, "{what}: {} is not wave64", k.name);
        m.check_args(&k.args)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(k.args, CONV_ARGS, "{what}: the conv ABI");
        assert!(m.kernarg_segment_size >= 32, "{what}: {m:?}");
        let lds = m.group_segment_fixed_size + k.shared_bytes;
        assert!(
            lds <= 64 << 10,
            "{what}: {} uses {lds} bytes of LDS",
            k.name
        );
        let threads: u32 = k.block.iter().product();
        assert!(threads <= m.max_flat_workgroup_size, "{what}: {m:?}");
        assert!(m.vgpr_count + m.agpr_count <= 512, "{what}: {m:?}");
        regs.push(m.vgpr_count + m.agpr_count);
    }
    regs
}

#[test]
fn code_objects_match_the_abi_and_estimates_bound_the_linker() {
    let mut report = Vec::new();
    for arch in [Arch::GFX908, Arch::GFX90A, Arch::GFX942] {
        let space = SearchSpace::default_for(&arch);
        let target = Target::of(arch);
        for line in PROBLEMS {
            let p: ConvProblem = line.parse().unwrap();
            let what = format!("{} {line}", arch.name);
            let r = compile_reference(&p, target).unwrap_or_else(|e| panic!("{what}: {e}"));
            check_code_object(&r, &what);
            let meta = r.resources.as_ref().unwrap();
            assert!(
                !meta.spills(),
                "{what}: the reference kernel uses scratch: {meta:?}"
            );

            let l = lower(&p);
            let cfgs = sample_legal(&p, &arch, &space, PER_PROBLEM, 3);
            assert!(!cfgs.is_empty(), "{what}: no legal config");
            for cfg in cfgs {
                let what = format!("{what} {cfg}");
                let estimate = legality::check(&l, &cfg, &arch)
                    .unwrap_or_else(|e| panic!("{what}: legal but {e}"))
                    .registers;
                let c = compile_conv(&l, &cfg, target).unwrap_or_else(|e| panic!("{what}: {e}"));
                let regs = check_code_object(&c, &what);
                let used = regs.iter().copied().max().unwrap_or(0);
                let spills = c.resources.as_ref().unwrap().spill_report();
                report.push(format!(
                    "{what}: estimate {estimate}, linker {used}{}",
                    if spills.is_some() { " (spills)" } else { "" }
                ));
                match spills {
                    // Rejected by the tuner before anything is timed, with the linker's counts.
                    Some(why) => {
                        let e = convtune::tune::compile_plan(&l, &cfg, &arch, false).unwrap_err();
                        assert_eq!(e.to_string(), why);
                    }
                    None => assert!(
                        used <= estimate,
                        "{what}: legality estimated {estimate} registers, the linker used {used}"
                    ),
                }
            }
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// The case: the heuristic config of seed 003 on gfx90a. Either it fits the register
/// estimate, or the tuner rejects it for spilling (never timed as if it were fine).
#[test]
fn seed_003_heuristic_on_gfx90a_is_bounded_or_rejected() {
    let p: ConvProblem = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 \
                          -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC"
        .parse()
        .unwrap();
    let arch = Arch::GFX90A;
    let cfg = convtune::lookup::heuristic(&p, &arch).expect("a heuristic config");
    let l = lower(&p);
    let estimate = legality::check(&l, &cfg, &arch).unwrap().registers;
    let c = compile_conv(&l, &cfg, Target::of(arch)).unwrap();
    let regs = check_code_object(&c, "seed 003");
    let used = regs.into_iter().max().unwrap();
    eprintln!("seed 003 {cfg}: estimate {estimate}, linker {used}");
    match c.resources.as_ref().unwrap().spill_report() {
        Some(why) => {
            let e = convtune::tune::compile_plan(&l, &cfg, &arch, false).unwrap_err();
            assert!(e.to_string().contains("spills"), "{e} / {why}");
        }
        None => assert!(used <= estimate, "estimate {estimate} < linker {used}"),
    }
}
