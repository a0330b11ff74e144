//! Lines on standard error that never panic: `eprintln!` panics when standard error cannot be
//! written (`2>/dev/full`), so every progress line and message milo writes there goes through
//! [`say!`] instead. A line standard error cannot take is dropped; the work and the exit code
//! stand.

/// Writes one line on standard error like `eprintln!`, dropping it when standard error cannot
/// take it (see [`line`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::line(format_args!($($arg)*))
    };
}

use std::io::Write;

/// Writes `args` and a newline on standard error in one write, ignoring a failure (a full, closed
/// or broken standard error): the body of [`say!`].
pub fn line(args: std::fmt::Arguments) {
    let mut text = args.to_string();
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
