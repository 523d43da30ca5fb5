//! `codemode-codegen`: TypeScript declarations from tool schemas.
//!
//! The input is plain data — each tool's name, description and JSON Schemas — so this crate
//! depends on nothing of the `codemode` runtime. The output is one deterministic `.d.ts`
//! (same tools, same bytes) with a `@generated` header:
//!
//! ```ts
//! interface ToolArgsMap { "read_file": { /** File path */ path: string; limit?: number } }
//! interface ToolOutputMap { "read_file": string }
//! declare const tools: { /** Read a file. */ read_file(args: ToolArgsMap["read_file"]): Promise<ToolOutputMap["read_file"]> };
//! declare class ToolCallError extends Error { readonly name: "ToolCallError"; readonly toolName: string }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod notes;
mod rust;
mod ts;

pub use rust::rust_types;
pub use ts::{
    Annotations, DeclarationError, HEADER, Layout, PropertyHint, SANDBOX_GLOBALS, ToolDecl,
    declarations, declarations_with, property_hint,
};

/// Whether a name is an ASCII JavaScript identifier. Shared with the `codemode` crate (which
/// writes JSON paths as `args.key` or `args["key"]` by the same rule); not part of this
/// crate's API.
#[doc(hidden)]
pub use ts::is_identifier;
