//! Where the tests find a program of an installation (`pagoda`, `pagoda-abi-layout`): the
//! environment variable CTest sets, else the folder pkg-config's pagoda.pc names. Shared by the
//! tests of both crates (`#[path]`).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// `env` when set; else `<pkg-config --variable=pc_variable pagoda>/relative` when that file
/// exists. Otherwise `None`, after printing why (the caller skips its check); under
/// `PAGODA_TEST_STRICT=1` (as CTest sets) a missing program fails the test instead.
pub fn installed_program(env: &str, pc_variable: &str, relative: &str, check: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let program = std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_owned());
    let why = match Command::new(&program).arg(format!("--variable={}", pc_variable)).arg("pagoda").output() {
        Err(e) => format!("cannot run {}: {}", program, e),
        Ok(out) => {
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if !out.status.success() || dir.is_empty() {
                format!(
                    "{} has no {} for pagoda: {}",
                    program,
                    pc_variable,
                    String::from_utf8_lossy(&out.stderr).trim()
                )
            } else {
                let path = PathBuf::from(dir).join(relative);
                if path.is_file() {
                    return Some(path);
                }
                format!("no {:?} (pkg-config's pagoda)", path)
            }
        }
    };
    assert!(std::env::var_os("PAGODA_TEST_STRICT").map_or(true, |v| v != "1"), "{}: {}", check, why);
    eprintln!("skipping {}: {} is not set and {}", check, env, why);
    None
}
