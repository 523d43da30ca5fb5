//! Build script: compiles the sandbox prelude (`js-prelude/`) to QuickJS bytecode once, so
//! that no process pays for parsing it (a whole `codemode run` of `return 1` would spend
//! about half its time there). The bytecode is written to `OUT_DIR` and embedded by
//! `src/sandbox/prelude.rs`; when the build runs for another target than its host (the
//! bytecode's layout follows the machine) or the compile fails, empty files are written
//! and the crate compiles the prelude at run time instead.

use std::path::PathBuf;

include!("sandbox/prelude_source.rs");

fn main() {
    println!("cargo:rerun-if-changed=js-prelude");
    println!("cargo:rerun-if-changed=src/sandbox/prelude_source.rs");
    println!("cargo:rerun-if-changed=src/build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    // Every module in one file (see `pack`); empty when compiled at run time.
    let blob = if native {
        compile_prelude().map(|modules| pack(&modules)).unwrap_or_else(|e| {
            println!("cargo:warning=the prelude could not be compiled at build time ({e}); it will be compiled at run time");
            Vec::new()
        })
    } else {
        Vec::new()
    };
    std::fs::write(out.join("prelude.bc"), blob).expect("writing prelude.bc");
}

/// `modules` as one blob: for each, its length in bytes (4 bytes, little-endian), then its
/// bytes (read back by `unpack` in `src/sandbox/prelude.rs`).
fn pack(modules: &[Vec<u8>]) -> Vec<u8> {
    let mut blob = Vec::new();
    for module in modules {
        let length = u32::try_from(module.len()).expect("a module's bytecode is under 4 GiB");
        blob.extend_from_slice(&length.to_le_bytes());
        blob.extend_from_slice(module);
    }
    blob
}
