//! The worker's wire format: one JSON object a line, requests on stdin, responses on stdout.
//!
//! Responses carry a fixed tag so the parent can tell them from anything else a library in the
//! worker prints to stdout (a driver warning must not break the protocol); untagged lines are
//! kept as diagnostics.

use super::device::DeviceInfo;
use super::outcome::{MeasureStages, Outcome};
use super::plan::{KernelResources, LaunchPlan};
use crate::abi::Module;
use crate::problem::ConvProblem;
use serde::{Deserialize, Serialize};

/// Prefix of every response line.
pub(crate) const TAG: &str = "@convtune-worker ";

/// The longest request line the worker reads: a plan carries a kernel module's text (PTX of a
/// few hundred kB), so 64 MiB is generous, and a stream without newlines cannot grow the
/// worker's memory without bound.
pub(crate) const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Reads one request line of at most `limit` bytes (newline excluded). `None` at end of input
/// (or on a read error: the parent is gone); `Some(Err)` for a line too long (skipped to its
/// end, so the next request starts clean) or not UTF-8.
pub(crate) fn read_request(
    input: &mut impl std::io::BufRead,
    limit: usize,
) -> Option<Result<String, String>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        if buf.is_empty() {
            if line.is_empty() && !too_long {
                return None;
            }
            break;
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long && line.len() + chunk.len() <= limit {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line = Vec::new();
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Some(Err(format!(
            "request line longer than {limit} bytes; skipped"
        )));
    }
    Some(String::from_utf8(line).map_err(|_| "request line is not UTF-8".to_string()))
}

/// Parent → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Request {
    /// Allocate and fill the problem's tensors and compute the reference output.
    SetProblem {
        problem: ConvProblem,
        reference: LaunchPlan,
        seed: u64,
    },
    /// Check and time one candidate; one whose short first measurement is slower than
    /// `screen_us` is not timed in full (absent in requests of older tuners: always in full).
    Measure {
        plan: LaunchPlan,
        #[serde(default)]
        screen_us: Option<f64>,
    },
    /// Load a plan and report its kernels' resources.
    Resources { plan: LaunchPlan },
    /// Start loading the modules of the candidates measured next, in this order (answered at
    /// once with `Preloading`; each `Measure` still carries its plan).
    Preload { modules: Vec<Module> },
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
    /// Answer to `Measure`, with where the time went (absent from older workers).
    Measured {
        outcome: Outcome,
        #[serde(default)]
        stages: Option<MeasureStages>,
    },
    /// Answer to `Resources`.
    Resources { kernels: Vec<KernelResources> },
    /// Answer to `Preload`: how many new loads were queued (0 from a worker that loads each
    /// module when it is measured).
    Preloading { queued: usize },
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
    fn request_lines_are_bounded() {
        // Issue 18 item 13: request lines had no length limit.
        let input = format!("short\n{}\nnext\nlast", "x".repeat(100));
        let mut r = std::io::BufReader::with_capacity(7, input.as_bytes());
        assert_eq!(read_request(&mut r, 16), Some(Ok("short".into())));
        assert!(matches!(read_request(&mut r, 16), Some(Err(e)) if e.contains("longer than 16")));
        assert_eq!(read_request(&mut r, 16), Some(Ok("next".into())));
        assert_eq!(read_request(&mut r, 16), Some(Ok("last".into())));
        assert_eq!(read_request(&mut r, 16), None);
        let mut bad = &b"\xff\n"[..];
        assert!(matches!(read_request(&mut bad, 16), Some(Err(_))));
    }

    #[test]
    fn responses_round_trip_and_noise_is_not_a_response() {
        let r = Response::Measured {
            outcome: Outcome::LaunchFailed("too many threads".into()),
            stages: None,
        };
        let line = encode_response(&r);
        assert!(line.starts_with(TAG) && !line.contains('\n'));
        match decode_response(&line) {
            Some(Ok(Response::Measured { outcome, .. })) => {
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
