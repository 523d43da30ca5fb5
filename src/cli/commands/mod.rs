//! One file per subcommand, each with a `*Command` that has `execute()`.

pub(crate) mod check;
pub(crate) mod mcp;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod tools;
pub(crate) mod types;
