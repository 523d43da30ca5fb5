//! The `codemode` command line (DESIGN §7).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
