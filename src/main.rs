//! The `convtune` command line: a thin layer over the library.

mod cli;

fn main() {
    let code = cli::run();
    // A search cut off by `--time` leaves the candidates' compiles that were running on the
    // compile pool to finish in the background (LLVM cannot be interrupted). Leaving through
    // libc's `exit` would run LLVM's static destructors under them: on the H200 (session 11) a
    // finished run, its database and report written, then died of SIGSEGV. Everything the run
    // writes is written and closed by now, so flush the standard streams and leave without
    // the C++ exit handlers.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once; no Rust state is used after it.
    unsafe { libc::_exit(code) }
}
