//! The worker process's side: open the device, then answer requests until told to stop.
//!
//! The loop is written against [`Backend`] rather than [`Measurer`] directly so the protocol is
//! tested here without a GPU. After a fault the context is dead, so the worker answers and then
//! exits; the parent starts a fresh one for the next candidate.

use super::device::DeviceInfo;
use super::error::RuntimeError;
use super::hip::{open_runtime, HipLib, HipMeasurer};
use super::measure::Measurer;
use super::outcome::{MeasureStages, Outcome};
use super::plan::{KernelResources, LaunchPlan};
use super::protocol::{encode_response, read_request, Request, Response, MAX_REQUEST_BYTES};
use crate::abi::Module;
use crate::problem::ConvProblem;
use std::io::{BufRead, Write};

/// Exit status after `Shutdown` or when the parent closes stdin.
pub(crate) const EXIT_OK: i32 = 0;
/// Exit status when the device could not be opened (the reason was sent as an `Error`).
pub(crate) const EXIT_START_FAILED: i32 = 3;
/// Exit status after a kernel fault killed the CUDA context.
pub(crate) const EXIT_CONTEXT_LOST: i32 = 4;

/// What the serving loop needs from a device: the measurer in production, a fake in tests.
pub(crate) trait Backend {
    fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError>;
    fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError>;
    /// `measure` with a screen for adaptive timing, and where the time went.
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        _screen_us: Option<f64>,
    ) -> Result<(Outcome, Option<MeasureStages>), RuntimeError> {
        self.measure(plan).map(|o| (o, None))
    }
    fn resources(&mut self, plan: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError>;
    /// Starts loading the modules measured next; how many loads were queued. By default
    /// none: each module is loaded when its candidate is measured.
    fn preload(&mut self, _modules: &[Module]) -> usize {
        0
    }
    /// Whether the device context is dead and the process must exit.
    fn lost(&self) -> bool;
}

impl Backend for Measurer {
    fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        Measurer::set_problem(self, problem, reference, seed)
    }
    fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        Measurer::measure(self, plan)
    }
    fn measure_with(
        &mut self,
        plan: &LaunchPlan,
        screen_us: Option<f64>,
    ) -> Result<(Outcome, Option<MeasureStages>), RuntimeError> {
        Measurer::measure_with(self, plan, screen_us).map(|(o, s)| (o, Some(s)))
    }
    fn resources(&mut self, plan: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError> {
        Measurer::resources(self, plan)
    }
    fn preload(&mut self, modules: &[Module]) -> usize {
        Measurer::preload(self, modules)
    }
    fn lost(&self) -> bool {
        Measurer::lost(self).is_some()
    }
}

/// Entry point of the hidden `convtune worker --device N` subcommand: serves requests on
/// stdin/stdout for device `device` and returns the process exit status.
pub fn worker_main(device: usize) -> i32 {
    let backend = Measurer::new(device).map(|m| (m.device().clone(), m));
    serve(backend, std::io::stdin().lock(), std::io::stdout().lock())
}

impl Backend for HipMeasurer<HipLib> {
    fn set_problem(
        &mut self,
        problem: &ConvProblem,
        reference: &LaunchPlan,
        seed: u64,
    ) -> Result<f64, RuntimeError> {
        HipMeasurer::set_problem(self, problem, reference, seed)
    }
    fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
        HipMeasurer::measure(self, plan)
    }
    fn resources(&mut self, plan: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError> {
        HipMeasurer::resources(self, plan)
    }
    fn lost(&self) -> bool {
        HipMeasurer::lost(self).is_some()
    }
}

/// Entry point of `convtune worker --device N --runtime hip`: the same protocol on an AMD
/// device through the HIP runtime.
pub fn hip_worker_main(device: usize) -> i32 {
    let backend = open_runtime()
        .and_then(|api| HipMeasurer::new(api, device))
        .map(|m| (m.device().info(), m));
    serve(backend, std::io::stdin().lock(), std::io::stdout().lock())
}

fn send(out: &mut impl Write, r: &Response) -> std::io::Result<()> {
    writeln!(out, "{}", encode_response(r))?;
    out.flush()
}

/// Answers requests until `Shutdown`, end of input, or a lost context.
pub(crate) fn serve<B: Backend>(
    backend: Result<(DeviceInfo, B), RuntimeError>,
    mut input: impl BufRead,
    mut out: impl Write,
) -> i32 {
    let mut backend = match backend {
        Ok((device, b)) => {
            if send(&mut out, &Response::Ready { device }).is_err() {
                return EXIT_OK; // the parent is gone
            }
            b
        }
        Err(e) => {
            let message = e.to_string();
            let _ = send(
                &mut out,
                &Response::Error {
                    message,
                    fatal: true,
                },
            );
            return EXIT_START_FAILED;
        }
    };
    // Requests cross a process boundary: each line is bounded, and a problem is validated as
    // it is deserialised (`ConvProblem`'s serde goes through `ConvProblem::new`).
    while let Some(line) = read_request(&mut input, MAX_REQUEST_BYTES) {
        let line = match line {
            Ok(line) => line,
            Err(message) => {
                let r = Response::Error {
                    message,
                    fatal: false,
                };
                if send(&mut out, &r).is_err() {
                    return EXIT_OK;
                }
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let error = |e: RuntimeError, b: &B| Response::Error {
            message: e.to_string(),
            fatal: b.lost(),
        };
        let response = match serde_json::from_str::<Request>(&line) {
            Err(e) => Response::Error {
                message: format!("malformed request: {e}"),
                fatal: false,
            },
            Ok(Request::Shutdown) => return EXIT_OK,
            Ok(Request::SetProblem {
                problem,
                reference,
                seed,
            }) => match backend.set_problem(&problem, &reference, seed) {
                Ok(reference_us) => Response::ProblemSet { reference_us },
                Err(e) => error(e, &backend),
            },
            Ok(Request::Measure { plan, screen_us }) => {
                match backend.measure_with(&plan, screen_us) {
                    Ok((outcome, stages)) => Response::Measured { outcome, stages },
                    Err(e) => error(e, &backend),
                }
            }
            Ok(Request::Resources { plan }) => match backend.resources(&plan) {
                Ok(kernels) => Response::Resources { kernels },
                Err(e) => error(e, &backend),
            },
            Ok(Request::Preload { modules }) => Response::Preloading {
                queued: backend.preload(&modules),
            },
        };
        if send(&mut out, &response).is_err() {
            return EXIT_OK;
        }
        if backend.lost() {
            return EXIT_CONTEXT_LOST;
        }
    }
    EXIT_OK
}

#[cfg(test)]
mod tests {
    use super::super::protocol::decode_response;
    use super::*;
    use crate::abi::{Module, CONV_ARGS};

    /// Answers by the first kernel's name: "fault" faults (and loses the context), "wrong"
    /// computes garbage, anything else passes.
    #[derive(Default)]
    struct Fake {
        problem_set: bool,
        lost: bool,
    }

    impl Backend for Fake {
        fn set_problem(
            &mut self,
            _: &ConvProblem,
            _: &LaunchPlan,
            _: u64,
        ) -> Result<f64, RuntimeError> {
            self.problem_set = true;
            Ok(12.5)
        }
        fn measure(&mut self, plan: &LaunchPlan) -> Result<Outcome, RuntimeError> {
            if !self.problem_set {
                return Err(RuntimeError::NoProblem);
            }
            Ok(match plan.launches[0].name.as_str() {
                "fault" => {
                    self.lost = true;
                    Outcome::Fault("CUDA_ERROR_ILLEGAL_ADDRESS".into())
                }
                "wrong" => Outcome::WrongResult {
                    rel_err: 0.9,
                    unwritten: 4,
                    non_finite: 0,
                },
                _ => Outcome::Timeout,
            })
        }
        fn resources(&mut self, _: &LaunchPlan) -> Result<Vec<KernelResources>, RuntimeError> {
            Ok(vec![])
        }
        fn lost(&self) -> bool {
            self.lost
        }
    }

    fn device() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "Fake GPU".into(),
            compute_capability: (9, 0),
            arch: "sm_90".into(),
            multiprocessors: 132,
            driver: "13.0".into(),
            clock_mhz: None,
            memory_clock_mhz: None,
            l2_bytes: 50 << 20,
            total_memory_bytes: 80 << 30,
            max_shared_per_block_optin: 227 << 10,
            max_threads_per_block: 1024,
        }
    }

    fn plan(name: &str) -> LaunchPlan {
        LaunchPlan {
            module: Module::Ptx(String::new()),
            launches: vec![super::super::plan::Launch {
                name: name.into(),
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_bytes: 0,
                args: CONV_ARGS.to_vec(),
            }],
            workspace_bytes: 0,
            kept_zero: 0,
        }
    }

    fn requests(rs: &[Request]) -> Vec<u8> {
        rs.iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect::<String>()
            .into_bytes()
    }

    fn run(
        backend: Result<(DeviceInfo, Fake), RuntimeError>,
        input: &[u8],
    ) -> (i32, Vec<Response>) {
        let mut out = Vec::new();
        let code = serve(backend, input, &mut out);
        let text = String::from_utf8(out).unwrap();
        let responses = text
            .lines()
            .map(|l| decode_response(l).expect("tagged").expect("well-formed"))
            .collect();
        (code, responses)
    }

    #[test]
    fn set_problem_with_an_invalid_problem_is_refused() {
        // Issue 18 item 13: `SetProblem` deserialised `groups = 0` unchecked (a division by
        // zero in the worker).
        let p: ConvProblem = "conv -F 1 -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3"
            .parse()
            .unwrap();
        let line = serde_json::to_string(&Request::SetProblem {
            problem: p,
            reference: plan("ref"),
            seed: 1,
        })
        .unwrap()
        .replace("\"groups\":1", "\"groups\":0");
        let input = format!(
            "{line}\n{}",
            String::from_utf8(requests(&[Request::Measure {
                plan: plan("ok"),
                screen_us: None,
            }]))
            .unwrap()
        );
        let (code, r) = run(Ok((device(), Fake::default())), input.as_bytes());
        assert_eq!(code, EXIT_OK);
        match &r[..] {
            [Response::Ready { .. }, Response::Error {
                message,
                fatal: false,
            }, Response::Error { .. }] => {
                assert!(message.contains("-g must be at least 1"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn start_failure_is_reported_as_a_fatal_error_line() {
        let (code, r) = run(Err(RuntimeError::NoDriver), b"");
        assert_eq!(code, EXIT_START_FAILED);
        match &r[..] {
            [Response::Error {
                message,
                fatal: true,
            }] => {
                assert_eq!(message, "no CUDA driver (libcuda.so.1 not found)")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn real_worker_without_a_driver_reports_it_cleanly() {
        // SAFETY: dlopen probe only.
        if unsafe { cudarc::driver::sys::is_culib_present() } {
            return;
        }
        let backend = Measurer::new(0).map(|m| (m.device().clone(), m));
        let mut out = Vec::new();
        assert_eq!(serve(backend, &b""[..], &mut out), EXIT_START_FAILED);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("no CUDA driver (libcuda.so.1 not found)"),
            "{text}"
        );
    }

    #[test]
    fn requests_are_answered_in_order_until_shutdown() {
        let p: ConvProblem = "conv -F 1 -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3"
            .parse()
            .unwrap();
        let input = requests(&[
            Request::Measure {
                plan: plan("ok"),
                screen_us: None,
            },
            Request::SetProblem {
                problem: p,
                reference: plan("ref"),
                seed: 1,
            },
            Request::Measure {
                plan: plan("wrong"),
                screen_us: None,
            },
            Request::Preload {
                modules: vec![Module::Ptx("next".into())],
            },
            Request::Shutdown,
            Request::Measure {
                plan: plan("never"),
                screen_us: None,
            },
        ]);
        let (code, r) = run(Ok((device(), Fake::default())), &input);
        assert_eq!(code, EXIT_OK);
        assert_eq!(r.len(), 5, "{r:?}");
        assert!(matches!(&r[0], Response::Ready { device } if device.arch == "sm_90"));
        assert!(
            matches!(&r[1], Response::Error { fatal: false, message } if message.contains("set_problem"))
        );
        assert!(matches!(r[2], Response::ProblemSet { reference_us } if reference_us == 12.5));
        assert!(matches!(
            &r[3],
            Response::Measured {
                outcome: Outcome::WrongResult { unwritten: 4, .. },
                ..
            }
        ));
        // A backend that loads each module when measured queues nothing, and says so.
        assert!(matches!(r[4], Response::Preloading { queued: 0 }));
    }

    #[test]
    fn a_fault_is_answered_then_the_worker_exits() {
        let p: ConvProblem = "conv -F 1 -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3"
            .parse()
            .unwrap();
        let mut input = requests(&[
            Request::SetProblem {
                problem: p,
                reference: plan("ref"),
                seed: 1,
            },
            Request::Measure {
                plan: plan("fault"),
                screen_us: None,
            },
            Request::Measure {
                plan: plan("ok"),
                screen_us: None,
            },
        ]);
        input.extend_from_slice(b"not json\n");
        let (code, r) = run(Ok((device(), Fake::default())), &input);
        assert_eq!(code, EXIT_CONTEXT_LOST);
        assert_eq!(r.len(), 3);
        assert!(matches!(
            &r[2],
            Response::Measured {
                outcome: Outcome::Fault(_),
                ..
            }
        ));
    }

    #[test]
    fn malformed_requests_get_an_error_and_the_loop_goes_on() {
        let mut input = b"{\"Bogus\":1}\n\n".to_vec();
        input.extend(requests(&[Request::Shutdown]));
        let (code, r) = run(Ok((device(), Fake::default())), &input);
        assert_eq!(code, EXIT_OK);
        assert!(
            matches!(&r[1], Response::Error { fatal: false, message } if message.starts_with("malformed request"))
        );
        assert_eq!(r.len(), 2);
    }
}
