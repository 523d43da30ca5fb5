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
    let [prelude, inspect, array_checks, discovery, journal_clock] = if native {
        compile_prelude().unwrap_or_else(|e| {
            println!("cargo:warning=the prelude could not be compiled at build time ({e}); it will be compiled at run time");
            Default::default()
        })
    } else {
        Default::default()
    };
    std::fs::write(out.join("prelude.bc"), prelude).expect("writing prelude.bc");
    std::fs::write(out.join("inspect.bc"), inspect).expect("writing inspect.bc");
    std::fs::write(out.join("array_checks.bc"), array_checks).expect("writing array_checks.bc");
    std::fs::write(out.join("discovery.bc"), discovery).expect("writing discovery.bc");
    std::fs::write(out.join("journal_clock.bc"), journal_clock).expect("writing journal_clock.bc");
}
