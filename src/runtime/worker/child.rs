//! The child process of a [`Worker`](super::Worker): starting it, its pipes, and one
//! request/response exchange with a time limit. Reading runs on threads so that a child that
//! stops talking costs a timeout, not a blocked parent; its stderr is kept (the last few lines)
//! to explain a death.

use super::WorkerOptions;
use crate::runtime::device::DeviceInfo;
use crate::runtime::error::RuntimeError;
use crate::runtime::protocol::{decode_response, Response};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Lines of the child's stderr (and stray stdout) kept to explain a death.
const DIAGNOSTIC_LINES: usize = 20;

/// How an exchange with the child ended.
pub(super) enum Reply {
    Response(Response),
    TimedOut,
    /// The child died or spoke nonsense; the text says how.
    Broken(String),
}

/// A running child process and its pipes.
pub(super) struct Child {
    process: std::process::Child,
    pub(super) stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    diagnostics: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<JoinHandle<()>>,
}

fn remember(diagnostics: &Mutex<VecDeque<String>>, line: String) {
    if let Ok(mut d) = diagnostics.lock() {
        if d.len() == DIAGNOSTIC_LINES {
            d.pop_front();
        }
        d.push_back(line.chars().take(500).collect());
    }
}

/// Reads `r` line by line (lossy UTF-8) on a thread, handing each line to `each`.
fn pump(
    r: impl Read + Send + 'static,
    mut each: impl FnMut(String) -> bool + Send + 'static,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                    if !each(line) {
                        break;
                    }
                }
            }
        }
    })
}

impl Child {
    fn start(
        exe: &PathBuf,
        args: &[String],
        env: &[(String, OsString)],
    ) -> Result<Child, RuntimeError> {
        let mut process = Command::new(exe)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RuntimeError::Worker(format!("cannot start {}: {e}", exe.display())))?;
        let diagnostics = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, lines) = mpsc::channel();
        if let Some(out) = process.stdout.take() {
            pump(out, move |l| tx.send(l).is_ok());
        }
        let stderr_thread = process.stderr.take().map(|err| {
            let d = diagnostics.clone();
            pump(err, move |l| {
                remember(&d, l);
                true
            })
        });
        Ok(Child {
            stdin: process.stdin.take(),
            process,
            lines,
            diagnostics,
            stderr_thread,
        })
    }

    /// Sends one request and waits up to `timeout` for its response.
    pub(super) fn exchange(&mut self, request: &str, timeout: Duration) -> Reply {
        let sent = match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{request}").and_then(|()| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        if let Err(e) = sent {
            return Reply::Broken(format!("cannot send a request ({e})"));
        }
        self.receive(timeout)
    }

    /// Waits up to `timeout` for the next response line; other lines become diagnostics.
    fn receive(&mut self, timeout: Duration) -> Reply {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match decode_response(&line) {
                    None => remember(&self.diagnostics, line),
                    Some(Ok(r)) => return Reply::Response(r),
                    Some(Err(e)) => return Reply::Broken(e),
                },
                Err(RecvTimeoutError::Timeout) => return Reply::TimedOut,
                Err(RecvTimeoutError::Disconnected) => {
                    return Reply::Broken("the worker closed its output".into())
                }
            }
        }
    }

    /// Kills the child without waiting for it: a thread reaps it (returned, so that the next
    /// child can wait for the GPU to be free, within its own limit).
    pub(super) fn abandon(mut self) -> JoinHandle<()> {
        drop(self.stdin.take());
        let _ = self.process.kill();
        thread::spawn(move || {
            let _ = self.process.wait();
        })
    }

    /// Ends the child: closes its input, waits up to `grace` for it to exit, then kills it; says
    /// how it ended, with its last stderr lines.
    pub(super) fn end(mut self, grace: Duration) -> String {
        drop(self.stdin.take()); // end of input: a healthy worker exits on its own
        let deadline = Instant::now() + grace;
        let status = loop {
            match self.process.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.process.kill();
                    break self.process.wait().ok();
                }
            }
        };
        // Let the stderr reader drain what the child wrote before it ended.
        if let Some(t) = self.stderr_thread.take() {
            let until = Instant::now() + Duration::from_millis(500);
            while !t.is_finished() && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
        }
        let mut text = match status {
            Some(s) => format!("worker {s}"),
            None => "worker status unknown".to_string(),
        };
        if let Ok(d) = self.diagnostics.lock() {
            if !d.is_empty() {
                let tail: Vec<&str> = d.iter().map(String::as_str).collect();
                text.push_str(&format!("; its last output: {}", tail.join(" | ")));
            }
        }
        text
    }
}

/// Starts a child and waits for it to report its device.
pub(super) fn start(
    exe: &PathBuf,
    args: &[String],
    options: &WorkerOptions,
) -> Result<(Child, DeviceInfo), RuntimeError> {
    let mut child = Child::start(exe, args, &options.env)?;
    match child.receive(options.start_timeout) {
        Reply::Response(Response::Ready { device }) => Ok((child, device)),
        Reply::Response(Response::Error { message, .. }) => {
            child.end(Duration::from_secs(2));
            // Keep "no driver" recognisable: the CLI maps it to "no usable GPU".
            Err(if message == RuntimeError::NoDriver.to_string() {
                RuntimeError::NoDriver
            } else if message.starts_with("HIP runtime not found") {
                RuntimeError::NoHipRuntime(message)
            } else if message.starts_with("the HIP runtime (") {
                RuntimeError::NoGpu(message)
            } else {
                RuntimeError::Worker(message)
            })
        }
        Reply::Response(other) => {
            child.end(Duration::ZERO);
            Err(RuntimeError::Worker(format!(
                "unexpected first response {other:?}"
            )))
        }
        Reply::TimedOut => {
            let how = child.end(Duration::ZERO);
            Err(RuntimeError::Worker(format!(
                "not ready within {:?}: {how}",
                options.start_timeout
            )))
        }
        Reply::Broken(why) => {
            let how = child.end(Duration::from_secs(2));
            Err(RuntimeError::Worker(format!(
                "exited before it was ready ({why}): {how}"
            )))
        }
    }
}
