//! The log callback: lines reach a Rust closure; a panic in it stays on the Rust side. The
//! callback is process-wide, so this file holds one test that runs its steps in order.

use pagoda::{LogLevel, Status};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Makes the library log a warning: discovery in a folder holding a file that is not a plugin
/// (a new file each time, since discovery skips a file it has already skipped).
fn provoke_a_warning(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pagoda-rust-log-{}-{}", std::process::id(), name));
    std::fs::create_dir_all(&dir).unwrap();
    let bogus = dir.join(format!("libpagoda-backend-{}.so", name));
    std::fs::write(&bogus, b"not a shared object").unwrap();
    pagoda::backend::discover(Some(dir.to_str().unwrap())).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bogus
}

#[test]
fn log_lines_reach_the_closure_and_panics_do_not_cross() {
    let lines: Arc<Mutex<Vec<(LogLevel, String)>>> = Arc::default();
    let sink = lines.clone();
    pagoda::set_log_callback(move |level, line| sink.lock().unwrap().push((level, line.to_owned()))).unwrap();
    let previous = pagoda::log_level();
    pagoda::set_log_level(LogLevel::Warn).unwrap();
    assert_eq!(pagoda::log_level(), LogLevel::Warn);

    let bogus = provoke_a_warning("bogus1");
    let got = std::mem::take(&mut *lines.lock().unwrap());
    assert!(
        got.iter().any(|(level, line)| *level == LogLevel::Warn && line.contains("bogus1")),
        "no warning about {:?} reached the callback: {:?}",
        bogus,
        got
    );
    let skipped = pagoda::backend::skipped().unwrap();
    let entry = skipped
        .iter()
        .find(|s| s.path.ends_with("libpagoda-backend-bogus1.so"))
        .expect("recorded as skipped");
    assert_eq!(entry.error.status(), Status::NotAPlugin);

    // Below the level, nothing arrives.
    pagoda::set_log_level(LogLevel::Error).unwrap();
    provoke_a_warning("bogus2");
    assert!(lines.lock().unwrap().is_empty());
    pagoda::set_log_level(LogLevel::Warn).unwrap();

    // A closure that panics: the panic is caught in the trampoline and the library goes on.
    let calls = Arc::new(Mutex::new(0));
    let counted = calls.clone();
    pagoda::set_log_callback(move |_, _| {
        *counted.lock().unwrap() += 1;
        panic!("a log sink that panics");
    })
    .unwrap();
    provoke_a_warning("bogus3");
    provoke_a_warning("bogus4");
    assert_eq!(*calls.lock().unwrap(), 2, "the sink is called again after a panic");

    // Setting the callback from inside the callback is refused (log.h forbids it).
    let refusals: Arc<Mutex<Vec<Status>>> = Arc::default();
    let seen = refusals.clone();
    pagoda::set_log_callback(move |_, _| {
        if let Err(e) = pagoda::clear_log_callback() {
            seen.lock().unwrap().push(e.status());
        }
    })
    .unwrap();
    provoke_a_warning("bogus5");
    assert_eq!(*refusals.lock().unwrap(), vec![Status::InvalidArgument]);

    pagoda::clear_log_callback().unwrap();
    // The old sink was dropped: only this Arc holds its state now.
    assert_eq!(Arc::strong_count(&refusals), 1);
    assert_eq!(pagoda::set_log_level(LogLevel::Other(42)).unwrap_err().status(), Status::InvalidArgument);
    pagoda::set_log_level(previous).unwrap();
}
