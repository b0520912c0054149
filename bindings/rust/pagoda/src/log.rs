//! The library's log: a Rust closure as its sink (through a trampoline that keeps panics out of
//! C), and the level below which lines are dropped.

use crate::cstr::text;
use crate::error::{check, Error, Result, Status};
use pagoda_sys as sys;
use std::cell::Cell;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, TryLockError};

c_enum!(
    /// A log line's severity; `Off` is only a threshold.
    LogLevel {
        Debug = sys::PAGODA_LOG_DEBUG,
        Info = sys::PAGODA_LOG_INFO,
        Warn = sys::PAGODA_LOG_WARN,
        Error = sys::PAGODA_LOG_ERROR,
        Off = sys::PAGODA_LOG_OFF,
    }
);

/// The installed sink. The Mutex makes an `FnMut` callable from the logging threads; log.h
/// promises calls never overlap, so it is never contended (a re-entrant call, which log.h also
/// rules out, would find it taken and drop its line rather than deadlock).
type Sink = Mutex<Box<dyn FnMut(LogLevel, &str) + Send>>;

/// The sink C holds a pointer to, kept alive here until C lets go of it.
static INSTALLED: Mutex<Option<Box<Sink>>> = Mutex::new(None);

thread_local! {
    /// Set while this thread runs the sink: log.h forbids setting the callback from inside it.
    static IN_SINK: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C" fn trampoline(user: *mut c_void, level: sys::pagoda_log_level_t, message: *const c_char) {
    // SAFETY: `user` is the Box<Sink> installed with this trampoline, alive until a later
    // pagoda_log_set_callback has returned, after which C calls it no more.
    let sink = &*(user as *const Sink);
    let text = text(message);
    let _ = IN_SINK.try_with(|flag| flag.set(true));
    // A panic must not unwind into C (undefined behaviour): it is caught, reported by the panic
    // hook as usual, and costs only this line. A poisoned sink is used again: it is the host's
    // closure, and dropping every later line would hide more than it protects.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut f = match sink.try_lock() {
            Ok(f) => f,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        (*f)(LogLevel::from_raw(level), &text);
    }));
    let _ = IN_SINK.try_with(|flag| flag.set(false));
}

fn install(sink: Option<Box<Sink>>) -> Result<()> {
    if IN_SINK.with(|flag| flag.get()) {
        return Err(Error::new(
            Status::InvalidArgument,
            "the log callback cannot be changed from inside a log callback",
        ));
    }
    let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
    match &sink {
        // SAFETY: the Box's address is stable while it is held in INSTALLED.
        Some(s) => unsafe {
            sys::pagoda_log_set_callback(Some(trampoline), &**s as *const Sink as *mut c_void)
        },
        // SAFETY: NULL sends lines back to standard error.
        None => unsafe { sys::pagoda_log_set_callback(None, std::ptr::null_mut()) },
    }
    // log.h: when pagoda_log_set_callback returns, the previous callback is not running and will
    // not be called again, so the previous sink can go.
    let previous = std::mem::replace(&mut *installed, sink);
    drop(installed);
    drop(previous);
    Ok(())
}

/// Sends the library's log lines (those at or above [`log_level`]) to `sink` instead of
/// standard error. `sink` runs on whichever thread logs, one line at a time, so it must be
/// `Send` but need not be `Sync`. It may call pagoda functions (lines they log are dropped),
/// but not this one: that returns an error. A panic in `sink` is caught and loses that line.
pub fn set_log_callback<F>(sink: F) -> Result<()>
where
    F: FnMut(LogLevel, &str) + Send + 'static,
{
    install(Some(Box::new(Mutex::new(Box::new(sink)))))
}

/// Sends log lines back to standard error and drops the sink set before.
pub fn clear_log_callback() -> Result<()> {
    install(None)
}

/// Sets the least severe level that is logged (`Off` for silence).
pub fn set_log_level(level: LogLevel) -> Result<()> {
    // SAFETY: any value is accepted; out-of-range ones fail with a status.
    check(unsafe { sys::pagoda_log_set_level(level.raw()) })
}

/// The least severe level that is logged now.
pub fn log_level() -> LogLevel {
    // SAFETY: no arguments, no failure.
    LogLevel::from_raw(unsafe { sys::pagoda_log_get_level() })
}
