//! Links libpagoda and nothing else: the declarations are written by hand in src/, so no header
//! is read and no C is compiled here. The library's folder is found the way a C host finds it:
//!
//! 1. `PAGODA_LIB_DIR`, when set (CMake sets it to its build folder);
//! 2. else the `pkg-config` program (or the one `PKG_CONFIG` names) asked for `pagoda`, which
//!    `cmake --install` and the libpagoda-dev package provide (`PKG_CONFIG_PATH` reaches a
//!    scratch prefix);
//! 3. else the linker's default search path, as for a library in /usr/lib.
//!
//! The folder is also handed to crates depending on this one as `DEP_PAGODA_LIB_DIR` (the
//! `pagoda` crate gives its own tests and examples an rpath to it).

use std::process::Command;

fn main() {
    for var in
        ["PAGODA_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR"]
    {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    let dir = match std::env::var_os("PAGODA_LIB_DIR") {
        Some(dir) => {
            Some(dir.into_string().unwrap_or_else(|d| panic!("PAGODA_LIB_DIR is not UTF-8: {:?}", d)))
        }
        None => match pkg_config_libdir() {
            Ok(dir) => dir,
            Err(why) => {
                println!("cargo:warning=linking libpagoda from the linker's default folders: {}", why);
                None
            }
        },
    };
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:lib_dir={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=pagoda");
}

/// The folder of `-L` that `pkg-config --libs-only-L pagoda` prints (none for a library in a
/// system folder, which pkg-config leaves out), or why pkg-config cannot say.
fn pkg_config_libdir() -> Result<Option<String>, String> {
    let program = std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_owned());
    let out = Command::new(&program)
        .args(["--libs-only-L", "pagoda"])
        .output()
        .map_err(|e| format!("cannot run {}: {}", program, e))?;
    if !out.status.success() {
        return Err(format!(
            "{} --libs-only-L pagoda failed: {}",
            program,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8(out.stdout).map_err(|_| format!("{} printed no UTF-8", program))?;
    Ok(text.split_whitespace().find_map(|flag| flag.strip_prefix("-L")).map(str::to_owned))
}
