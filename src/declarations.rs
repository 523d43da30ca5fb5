//! The TypeScript declarations of the tools a program sees: `ToolArgsMap`, `ToolOutputMap`,
//! `tools` and `ToolCallError`, deterministic (the same tools give the same bytes). The
//! declarations are what `run_code`'s description shows the model, and what developers
//! type-check their programs against (`codemode types`). The generator itself is the
//! `codemode-codegen` crate, which takes plain data ([`ToolDecl`]).

pub use codemode_codegen::{Annotations, DeclarationError, Layout, SANDBOX_GLOBALS, ToolDecl};

use crate::dispatch::{Registry, tool_alias};

/// The tools a program in `registry` sees, as the code generator takes them: name, alias
/// (when the name is not an identifier), description, and both schemas as JSON Schema.
pub fn tool_decls(registry: &Registry) -> Vec<ToolDecl> {
    registry.sandbox_tools().iter().map(tool_decl_of).collect()
}

/// One tool as the code generator takes it (see [`tool_decls`]).
pub fn tool_decl_of(t: &crate::Tool) -> ToolDecl {
    tool_decl(
        t.name(),
        t.description(),
        t.annotations(),
        t.parameters().to_json_schema(),
        t.output().to_json_schema(),
    )
}

/// The tools of an MCP `tools/list` result (`{"tools": [{name, description, inputSchema,
/// outputSchema?}]}`) as the code generator takes them; an absent `outputSchema` is any
/// JSON (`true`), entries without a string `name` are skipped.
pub fn mcp_tool_decls(list: &serde_json::Value) -> Vec<ToolDecl> {
    let Some(tools) = list.get("tools").and_then(serde_json::Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| {
            Some(tool_decl(
                t.get("name")?.as_str()?,
                t.get("description")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or(""),
                &t.get("annotations")
                    .map(crate::ToolAnnotations::from_mcp)
                    .unwrap_or_default(),
                t.get("inputSchema")
                    .cloned()
                    .unwrap_or(serde_json::Value::Bool(true)),
                t.get("outputSchema")
                    .cloned()
                    .unwrap_or(serde_json::Value::Bool(true)),
            ))
        })
        .collect()
}

/// The tool for the generator.
fn tool_decl(
    name: &str,
    description: &str,
    annotations: &crate::ToolAnnotations,
    input_schema: serde_json::Value,
    output_schema: serde_json::Value,
) -> ToolDecl {
    let alias = tool_alias(name);
    ToolDecl {
        name: name.to_owned(),
        alias: (alias != name).then_some(alias),
        description: description.to_owned(),
        annotations: Annotations {
            read_only: annotations.read_only_hint,
            destructive: annotations.destructive_hint,
            open_world: annotations.open_world_hint,
        },
        input_schema,
        output_schema,
    }
}

/// The TypeScript declarations of the tools a program in `registry` sees:
/// `ToolArgsMap`, `ToolOutputMap`, `tools` and `ToolCallError`, in `layout`
/// ([`Layout::Pretty`] for files, [`Layout::Compact`] for the model).
///
/// # Errors
/// When two tools would share a member of `tools` (registration normally prevents it).
pub fn declarations(registry: &Registry, layout: Layout) -> Result<String, DeclarationError> {
    codemode_codegen::declarations_with(&tool_decls(registry), layout)
}
