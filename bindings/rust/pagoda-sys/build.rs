//! Links libpagoda and nothing else: the declarations are written by hand in src/, so no header
//! is read and no C is compiled here.
//!
//! `PAGODA_LIB_DIR` names the folder holding libpagoda.so (CMake sets it to its build/lib);
//! without it the linker's default search path is used, as for an installed library.

fn main() {
    println!("cargo:rerun-if-env-changed=PAGODA_LIB_DIR");
    if let Some(dir) = std::env::var_os("PAGODA_LIB_DIR") {
        let dir = dir.to_str().expect("PAGODA_LIB_DIR is not UTF-8").to_owned();
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=pagoda");
}
