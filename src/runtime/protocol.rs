//! The worker's wire format: one JSON object a line, requests on stdin, responses on stdout.
//!
//! Responses carry a fixed tag so the parent can tell them from anything else a library in the
//! worker prints to stdout (a driver warning must not break the protocol); untagged lines are
//! kept as diagnostics.

use super::device::DeviceInfo;
use super::outcome::Outcome;
use super::plan::{KernelResources, LaunchPlan};
use crate::problem::ConvProblem;
use serde::{Deserialize, Serialize};

/// Prefix of every response line.
pub(crate) const TAG: &str = "@convtune-worker ";

/// Parent → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Request {
    /// Allocate and fill the problem's tensors and compute the reference output.
    SetProblem {
        problem: ConvProblem,
        reference: LaunchPlan,
        seed: u64,
    },
    /// Check and time one candidate.
    Measure { plan: LaunchPlan },
    /// Load a plan and report its kernels' resources.
    Resources { plan: LaunchPlan },
    /// Exit cleanly.
    Shutdown,
}

/// Worker → parent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Response {
    /// Sent once at start-up: the device is open and requests may follow.
    Ready { device: DeviceInfo },
    /// Answer to `SetProblem`: the reference plan's median time.
    ProblemSet { reference_us: f64 },
    /// Answer to `Measure`.
    Measured { outcome: Outcome },
    /// Answer to `Resources`.
    Resources { kernels: Vec<KernelResources> },
    /// The request (or start-up) failed in the machinery; `fatal` means the worker exits next.
    Error { message: String, fatal: bool },
}

/// One response line, prefix included, newline excluded.
pub(crate) fn encode_response(r: &Response) -> String {
    // Serialising these types cannot fail: no maps with non-string keys, no non-finite floats
    // (the measurer only produces finite numbers; serde_json writes non-finite ones as null).
    let json = serde_json::to_string(r).unwrap_or_else(|e| {
        format!(r#"{{"Error":{{"message":"unserialisable response: {e}","fatal":false}}}}"#)
    });
    format!("{TAG}{json}")
}

/// A response from a stdout line; `None` for a line that is not one (noise from a library). The
/// prefix may come mid-line, after output that some library left without a newline.
pub(crate) fn decode_response(line: &str) -> Option<Result<Response, String>> {
    let at = line.find(TAG)?;
    let json = line[at + TAG.len()..].trim_end();
    Some(serde_json::from_str(json).map_err(|e| format!("malformed response from worker: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_round_trip_and_noise_is_not_a_response() {
        let r = Response::Measured {
            outcome: Outcome::LaunchFailed("too many threads".into()),
        };
        let line = encode_response(&r);
        assert!(line.starts_with(TAG) && !line.contains('\n'));
        match decode_response(&line) {
            Some(Ok(Response::Measured { outcome })) => {
                assert_eq!(outcome, Outcome::LaunchFailed("too many threads".into()))
            }
            other => panic!("{other:?}"),
        }
        assert!(decode_response("NVIDIA: some driver notice").is_none());
        // A response glued to unterminated output still counts.
        let glued = format!("test worker_process ... {line}");
        assert!(matches!(
            decode_response(&glued),
            Some(Ok(Response::Measured { .. }))
        ));
        assert!(matches!(
            decode_response(&format!("{TAG}{{oops")),
            Some(Err(_))
        ));
    }
}
