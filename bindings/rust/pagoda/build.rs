//! Gives this crate's own tests and examples an rpath to the folder `pagoda-sys` linked
//! libpagoda from (`DEP_PAGODA_LIB_DIR`), so `cargo test` runs against a library installed in
//! any prefix without LD_LIBRARY_PATH. A host program of its own sets its rpath (or installs
//! libpagoda in a system folder): a build script cannot set one for the crates that use it.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_PAGODA_LIB_DIR");
    if let Some(dir) = std::env::var_os("DEP_PAGODA_LIB_DIR") {
        let dir = dir.into_string().unwrap_or_else(|d| panic!("DEP_PAGODA_LIB_DIR is not UTF-8: {:?}", d));
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", dir);
        println!("cargo:rustc-link-arg-examples=-Wl,-rpath,{}", dir);
    }
}
