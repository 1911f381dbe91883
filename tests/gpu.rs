//! GPU-only checks: every generated kernel of a sweep against the reference kernel (itself
//! checked against the CPU f64 convolution), and fault isolation. Skipped, with a message, where
//! no CUDA driver or GPU is present; `scripts/gpu-tests.sh` runs the same sweep through
//! `convtune selfcheck` on a GPU machine.

use convtune::arch::Arch;
use convtune::runtime::{cuda_devices, Worker, WorkerOptions};
use convtune::selfcheck;

#[test]
fn generated_kernels_match_the_reference_on_the_gpu() {
    let devices = match cuda_devices() {
        Ok(d) if !d.is_empty() => d,
        Ok(_) | Err(_) => {
            eprintln!("SKIPPED generated_kernels_match_the_reference_on_the_gpu: no CUDA GPU here");
            return;
        }
    };
    let arch = Arch::from_name(&devices[0].fingerprint().arch).expect("a known arch");
    // The worker is this crate's binary, as in a real tuning run.
    let mut worker = Worker::spawn_with(
        env!("CARGO_BIN_EXE_convtune"),
        vec!["worker".into(), "--device".into(), "0".into()],
        WorkerOptions::default(),
    )
    .expect("worker starts");
    let problems = selfcheck::sweep_problems();
    let mut summary =
        selfcheck::run(&mut worker, &arch, &problems, 1, 11, |l| eprintln!("{l}")).unwrap();
    summary.fault_isolated = Some(selfcheck::fault_isolation(&mut worker, &arch, 11).unwrap());
    eprintln!("{summary}");
    assert!(summary.ok(), "{summary}");
}
