//! One way for every redoctor binary to write a line to stderr (and a
//! result line to stdout).
//!
//! `eprintln!` panics when the write fails (stderr a pipe whose reader has
//! gone: `| tee` stopped, a log shipper restarted). In a daemon's worker
//! thread that panic stops the worker while the process stays up; in a
//! server's accept loop it stops accepting. A log line is never worth that:
//! [`say!`](crate::say) writes like `eprintln!` and drops the line when
//! stderr cannot take it.

/// `eprintln!` that never panics: the line is dropped when stderr is gone.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr().lock(), $($arg)*);
    }};
}

/// `println!` that never panics: for a command's short result lines
/// printed between actions (`apply`, `revert`), where a panic at the first
/// line would leave the rest undone. A reader that has gone (`| head -1`)
/// misses the line; the actions go on.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout().lock(), $($arg)*);
    }};
}

#[cfg(test)]
mod tests {
    /// With stderr a pipe whose reader is closed, `say!` returns and
    /// `eprintln!` would panic (checked in a child process so this test's
    /// own stderr stays intact).
    #[test]
    fn a_closed_stderr_pipe_is_not_a_panic() {
        if std::env::var_os("REDOCTOR_SAY_CHILD").is_some() {
            crate::say!("dropped {}", 1);
            std::process::exit(7);
        }
        // A pipe whose reader has gone.
        let (read, write) = std::io::pipe().unwrap();
        drop(read);
        let exe = std::env::current_exe().unwrap();
        let status = std::process::Command::new(exe)
            .args(["--exact", "say::tests::a_closed_stderr_pipe_is_not_a_panic"])
            .args(["--nocapture", "--test-threads", "1"])
            .env("REDOCTOR_SAY_CHILD", "1")
            .stdout(std::process::Stdio::null())
            .stderr(write)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(7), "say! panicked on a closed pipe");
    }
}
