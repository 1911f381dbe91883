//! Tests that need a CUDA GPU; each returns early where there is no driver.
//!
//! They use hand-written PTX for a problem simple enough to write by hand (a 1×1 convolution of
//! one channel: `out[i] = in[i] · w[0]`), so they test the runtime alone, independent of the code
//! generator: every outcome (right, unwritten, wrong, bad module, refused launch, large shared
//! memory, fault, hang) is produced on purpose.

use super::*;
use crate::abi::{Module, CONV_ARGS};
use crate::problem::{ConvProblem, Tensor};
use std::time::{Duration, Instant};

/// Elements of the input and output of [`problem`].
const N: u32 = 64 * 64;

fn problem() -> ConvProblem {
    "conv -F 1 -n 1 -c 1 -H 64 -W 64 -k 1 -y 1 -x 1"
        .parse()
        .unwrap()
}

fn have_driver() -> bool {
    // SAFETY: dlopen probe only.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    if !present {
        eprintln!("skipped: no CUDA driver");
    }
    present
}

/// One entry: threads handle elements `first + global id` below `end`, and finish with `tail`
/// (which has the product in %f3 and the output address in %rd9).
fn entry(name: &str, first: u32, end: u32, tail: &str) -> String {
    format!(
        r#"
.visible .entry {name}(.param .u64 p_in, .param .u64 p_fil, .param .u64 p_out, .param .u64 p_ws)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_fil];
    ld.param.u64 %rd3, [p_out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    add.s32 %r4, %r4, {first};
    setp.ge.u32 %p1, %r4, {end};
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r4, 4;
    add.s64 %rd8, %rd4, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd5];
    mul.f32 %f3, %f1, %f2;
    add.s64 %rd9, %rd6, %rd7;
    {tail}
DONE:
    ret;
}}
"#
    )
}

const STORE: &str = "st.global.f32 [%rd9], %f3;";

fn module() -> String {
    module_for(N)
}

/// The module for tensors of `n` elements.
fn module_for(n: u32) -> String {
    let half = n / 2;
    [
        ".version 7.8\n.target sm_80\n.address_size 64\n".to_string(),
        entry("scale", 0, n, STORE),
        entry("lo", 0, half, STORE),
        entry("hi", half, n, STORE),
        entry("twice", 0, n, &format!("add.f32 %f3, %f3, %f3;\n    {STORE}")),
        entry("fault", 0, n, "mov.u64 %rd9, 64;\n    st.global.f32 [%rd9], %f3;"),
        // Right, but its first 8 threads leave a word of all-ones each in the workspace.
        entry(
            "dirty",
            0,
            n,
            &format!(
                "{STORE}\n    setp.ge.u32 %p2, %r4, 8;\n    @%p2 bra DONE;\n    \
                 ld.param.u64 %rd1, [p_ws];\n    cvta.to.global.u64 %rd1, %rd1;\n    \
                 add.s64 %rd1, %rd1, %rd7;\n    mov.u32 %r5, -1;\n    st.global.u32 [%rd1], %r5;"
            ),
        ),
        // Spins while the input is not NaN, which it never is.
        entry(
            "hang",
            0,
            n,
            "SPIN:\n    ld.volatile.global.f32 %f1, [%rd8];\n    setp.eq.f32 %p2, %f1, %f1;\n    @%p2 bra SPIN;",
        ),
    ]
    .concat()
}

fn launch(name: &str, block: u32, shared_bytes: u32) -> Launch {
    Launch {
        name: name.into(),
        grid: [N.div_ceil(block), 1, 1],
        block: [block, 1, 1],
        shared_bytes,
        args: CONV_ARGS.to_vec(),
    }
}

fn plan(launches: Vec<Launch>) -> LaunchPlan {
    LaunchPlan {
        module: Module::Ptx(module()),
        launches,
        workspace_bytes: 0,
        kept_zero: 0,
    }
}

fn simple(name: &str) -> LaunchPlan {
    plan(vec![launch(name, 256, 0)])
}

#[test]
fn gpu_device_facts() {
    if !have_driver() {
        return;
    }
    let devices = cuda_devices().unwrap();
    assert!(!devices.is_empty());
    for d in &devices {
        println!("{d:?}\n{}", d.fingerprint());
        assert!(
            d.max_threads_per_block >= 1024 && d.total_memory_bytes > 1 << 30,
            "{d:?}"
        );
    }
}

#[test]
fn gpu_measurer_outcomes() {
    if !have_driver() {
        return;
    }
    let p = problem();
    let mut m = Measurer::new(0).unwrap();
    let reference_us = m.set_problem(&p, &simple("scale"), 1).unwrap();
    assert!(reference_us > 0.0);
    // The outcomes below (wrong, unwritten, non-finite) go through the GPU output check.
    assert!(
        m.checks_on_gpu(),
        "the GPU output check failed its known answers"
    );
    // The reference agrees with the CPU oracle (set_problem checked it too).
    let err = m.reference_cpu_error().unwrap();
    assert!(err < 1e-6, "reference vs CPU: {err}");
    assert_eq!(m.host_tensor(Tensor::Output).unwrap().len(), N as usize);

    let ok = |o: Outcome| match o {
        Outcome::Ok(t) => t,
        other => panic!("expected ok, got {other}"),
    };
    let t = ok(m.measure(&simple("scale")).unwrap());
    println!("scale: {}", Outcome::Ok(t.clone()));
    assert!((5..=200).contains(&t.runs) && t.min_us > 0.0 && t.min_us <= t.median_us);
    assert!(t.tflops > 0.0 && t.rel_err == 0.0);
    assert_eq!(t.resources.len(), 1);
    assert!(t.resources[0].registers > 0 && t.resources[0].local_bytes == 0);

    // Two kernels, each writing half, in one plan.
    let two = ok(m
        .measure(&plan(vec![launch("lo", 128, 0), launch("hi", 128, 0)]))
        .unwrap());
    assert_eq!(two.resources.len(), 2);
    // Large dynamic shared memory needs the opt-in; a workspace is allocated and passed.
    ok(m.measure(&plan(vec![launch("scale", 256, 100 * 1024)]))
        .unwrap());
    ok(m.measure(&LaunchPlan {
        workspace_bytes: 1 << 20,
        kept_zero: 0,
        ..simple("scale")
    })
    .unwrap());
    // The kept-zero region: a plan that leaves it dirty is refused (8 words of all-ones); the
    // same kernel asking for nothing may scribble; the next kept plan's check finds it clear.
    let kept = |name: &str, kept_zero: u64| LaunchPlan {
        workspace_bytes: 1 << 20,
        kept_zero,
        ..simple(name)
    };
    assert_eq!(
        m.measure(&kept("dirty", crate::abi::KEPT_ZERO_BYTES))
            .unwrap(),
        Outcome::DirtyWorkspace { nonzero: 32 }
    );
    ok(m.measure(&kept("dirty", 0)).unwrap());
    ok(m.measure(&kept("scale", crate::abi::KEPT_ZERO_BYTES))
        .unwrap());

    match m.measure(&simple("lo")).unwrap() {
        Outcome::WrongResult {
            unwritten,
            non_finite,
            ..
        } => {
            assert_eq!((unwritten, non_finite), (N as u64 / 2, 0))
        }
        other => panic!("expected unwritten elements, got {other}"),
    }
    match m.measure(&simple("twice")).unwrap() {
        Outcome::WrongResult {
            rel_err,
            unwritten: 0,
            ..
        } => assert!((rel_err - 1.0).abs() < 1e-6),
        other => panic!("expected a wrong result, got {other}"),
    }
    let bad = LaunchPlan {
        module: Module::Ptx(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }".into(),
        ),
        ..simple("k")
    };
    match m.measure(&bad).unwrap() {
        Outcome::LoadFailed(log) => {
            println!("load failure: {log}");
            assert!(
                log.contains("cuModuleLoadDataEx") && log.lines().count() > 1,
                "{log}"
            );
        }
        other => panic!("expected a load failure, got {other}"),
    }
    assert!(
        matches!(m.measure(&simple("nope")).unwrap(), Outcome::LoadFailed(e) if e.contains("not found"))
    );
    assert!(matches!(
        m.measure(&plan(vec![launch("scale", 2048, 0)])).unwrap(),
        Outcome::LaunchFailed(_)
    ));
    let too_much = m.device().max_shared_per_block_optin + 1;
    assert!(matches!(
        m.measure(&plan(vec![launch("scale", 256, too_much)])).unwrap(),
        Outcome::LaunchFailed(e) if e.contains("shared memory")
    ));
    assert_eq!(m.resources(&simple("hi")).unwrap()[0].name, "hi");

    // A reference that leaves elements unwritten is refused.
    let e = m.set_problem(&p, &simple("lo"), 1).unwrap_err();
    assert!(e.to_string().contains("unwritten"), "{e}");
    m.set_problem(&p, &simple("scale"), 2).unwrap();

    // A fault is reported once; the measurer then refuses work (a worker would restart).
    match m.measure(&simple("fault")).unwrap() {
        Outcome::Fault(e) => {
            println!("fault: {e}");
            assert!(e.contains("CUDA_ERROR_"), "{e}")
        }
        other => panic!("expected a fault, got {other}"),
    }
    assert!(matches!(
        m.measure(&simple("scale")),
        Err(RuntimeError::ContextLost(_))
    ));
}

/// Event timing measures what it should: a copy-like kernel over 2 × 64 MiB runs at a plausible
/// fraction of the H200's memory bandwidth (a unit or flush mistake would be far off). Measured in
/// a worker, because a fault in another test poisons this process's primary context for good.
#[test]
fn gpu_timing_is_plausible_for_a_bandwidth_bound_kernel() {
    if !have_driver() {
        return;
    }
    let p: ConvProblem = "conv -F 1 -n 1 -c 1 -H 4096 -W 4096 -k 1 -y 1 -x 1"
        .parse()
        .unwrap();
    let n = 4096 * 4096;
    let big = LaunchPlan {
        module: Module::Ptx(module_for(n)),
        launches: vec![Launch {
            name: "scale".into(),
            grid: [n / 256, 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
            args: CONV_ARGS.to_vec(),
        }],
        workspace_bytes: 0,
        kept_zero: 0,
    };
    let mut w = test_worker(WorkerOptions::default());
    w.set_problem(&p, &big, 9).unwrap();
    let t = w.measure(&big).unwrap();
    let t = t.timing().unwrap_or_else(|| panic!("{t}"));
    let tb_per_s = p.min_bytes() / (t.median_us * 1e-6) / 1e12;
    println!("16M-element scale: {t:?}; {tb_per_s:.2} TB/s");
    assert!((0.5..6.0).contains(&tb_per_s), "{tb_per_s} TB/s");
    assert!(t.runs >= 5 && t.runs as f64 * t.median_us >= 900.0, "{t:?}");
}

/// A worker that is this test binary running [`worker_process`].
fn test_worker(options: WorkerOptions) -> Worker {
    let exe = std::env::current_exe().unwrap();
    let args = [
        "--exact",
        WORKER_MARK,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]
    .map(String::from)
    .to_vec();
    Worker::spawn_with(exe, args, options).unwrap()
}

/// Not a test: the body of the worker process that [`gpu_worker_survives_faults_and_hangs`]
/// starts by running this test binary with exactly these arguments.
#[test]
#[ignore = "runs only as the child process of gpu_worker_survives_faults_and_hangs"]
fn worker_process() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == WORKER_MARK) {
        std::process::exit(worker_main(0));
    }
}

const WORKER_MARK: &str = "runtime::gpu_tests::worker_process";

#[test]
fn gpu_worker_survives_faults_and_hangs() {
    if !have_driver() {
        return;
    }
    let mut w = test_worker(WorkerOptions {
        measure_timeout: Duration::from_secs(5),
        ..WorkerOptions::default()
    });
    w.set_problem(&problem(), &simple("scale"), 3).unwrap();
    assert!(w.measure(&simple("scale")).unwrap().timing().is_some());
    assert!(matches!(
        w.measure(&simple("fault")).unwrap(),
        Outcome::Fault(_)
    ));
    assert!(w.measure(&simple("scale")).unwrap().timing().is_some());
    assert_eq!(w.restarts(), 1);
    let t = Instant::now();
    assert_eq!(w.measure(&simple("hang")).unwrap(), Outcome::Timeout);
    println!("hang detected after {:?}", t.elapsed());
    assert!(w.measure(&simple("scale")).unwrap().timing().is_some());
    assert_eq!(w.restarts(), 2);
    assert_eq!(w.resources(&simple("lo")).unwrap()[0].name, "lo");
}
