//! JSON Schema (draft 2020-12 as the runtime exports it, and the draft-07 shapes MCP servers
//! send) to TypeScript declarations.
//!
//! Rules, for every schema:
//! - `const` and `enum` become literal types and unions of them; `type` lists become unions;
//!   `nullable: true` adds `| null`; `integer` is the alias `integer` (= `number`).
//! - `oneOf` and `anyOf` become unions (TypeScript has no "exactly one"); `allOf`
//!   intersections; beside `properties`, the object and the union are intersected so the
//!   properties are kept. `not: {}` (a schema nothing matches) is `never`.
//! - Arrays are `T[]`; `prefixItems` (or draft-07 `items: [...]`) are tuples, elements past
//!   `minItems` optional, `items` after them a rest element.
//! - Objects list their properties (optional unless `required`). An object that is open
//!   (no `additionalProperties: false`) gets an index signature, whose type also admits the
//!   declared properties' types so that TypeScript accepts it. A closed object with no
//!   properties is `Record<string, never>`.
//! - `$ref` (`#`, `#/$defs/…`, `#/definitions/…` or any JSON pointer into the same schema)
//!   becomes a named type alias, emitted once, so recursive schemas stay recursive. A
//!   reference that would make an alias circular in TypeScript's eyes (`type A = A | string`)
//!   is `unknown` there. A remote reference is `unknown`.
//! - Descriptions and titles become JSDoc, with the constraints as tags (`@minimum`,
//!   `@maxLength`, `@pattern`, `@format`, `@default`, `@example`, `@deprecated`, …, and
//!   what TypeScript cannot say as compact JSON: `@not`, `@contains`, `@propertyNames`,
//!   `@patternProperties`, `@dependentRequired`, `@dependentSchemas`, `@if`/`@then`/`@else`,
//!   issue 15 item 3); where a
//!   schema is not a property (an array's items, a union branch) the comment precedes its
//!   type. `*/` in any text is written `*\/`.
//! - Property keys and tool names that are not identifiers are quoted (JSON string syntax,
//!   with U+2028 and U+2029 escaped).
//!
//! Type alias names are made unique by construction: each is derived from the tool name
//! and the definition name, and a number is appended when the name is already taken (by
//! another alias or a name the declarations use).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::notes::Notes;

/// One tool as the declarations need it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDecl {
    /// The registered name (`read_file`, `my-tool`, `github.search`).
    pub name: String,
    /// The identifier programs may also use when the name is not one (`my_tool`).
    pub alias: Option<String>,
    /// What the model reads about the tool.
    pub description: String,
    /// What its MCP annotations say of its effects, shown as a tag before the description.
    pub annotations: Annotations,
    /// Arguments, as JSON Schema.
    pub input_schema: Value,
    /// Canonical output, as JSON Schema (`true` or `{}` when unknown).
    pub output_schema: Value,
}

/// The MCP tool annotations the declarations show (`readOnlyHint`, `destructiveHint`,
/// `openWorldHint` of the MCP specification's `ToolAnnotations`; `None` when the hint is
/// absent), as a tag before the tool's description: `[read-only]`, `[destructive]`,
/// `[open-world]`, joined with `, `.
///
/// In [`Layout::Compact`], when most tools are read-only, that is said once in a comment
/// (`// Tools are read-only unless tagged [writes] or [destructive].`) and every other tool is
/// tagged instead: `[writes]` when its `destructiveHint` is false, `[destructive]`
/// otherwise (the specification's defaults: a tool without hints is assumed to write and
/// to destroy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// `readOnlyHint`: the tool does not change its environment.
    pub read_only: Option<bool>,
    /// `destructiveHint`: its changes may destroy.
    pub destructive: Option<bool>,
    /// `openWorldHint`: it reaches an open world (the network).
    pub open_world: Option<bool>,
}

impl Annotations {
    /// The tag's words (`read-only`, `destructive, open-world`); empty when none applies.
    /// `writes_tagged` is the compact layout's choice for a mostly read-only tool set.
    fn tag(&self, writes_tagged: bool) -> String {
        let read_only = self.read_only == Some(true);
        let effect = if read_only {
            (!writes_tagged).then_some("read-only")
        } else if writes_tagged {
            // Untagged means read-only here: a tool that does not say it only reads is
            // tagged, as MCP's defaults have it (`destructiveHint` true unless false).
            Some(if self.destructive == Some(false) {
                "writes"
            } else {
                "destructive"
            })
        } else {
            (self.destructive == Some(true)).then_some("destructive")
        };
        let world = (self.open_world == Some(true)).then_some("open-world");
        let words: Vec<&str> = effect.into_iter().chain(world).collect();
        words.join(", ")
    }
}

/// Said once in compact declarations whose tools are mostly read-only (see
/// [`Annotations`]), on the first line with [`OPEN_OBJECTS_NOTE`].
const READ_ONLY_NOTE: &str = "Tools are read-only unless tagged [writes] or [destructive].";

/// A tool's description led by its tag (`[read-only] Read a text file…`).
fn tagged(description: &str, tag: &str) -> String {
    if tag.is_empty() {
        description.to_owned()
    } else if description.is_empty() {
        format!("[{tag}]")
    } else {
        format!("[{tag}] {description}")
    }
}

impl ToolDecl {
    /// The description led by the annotations' tag, as [`Layout::Pretty`] shows it
    /// (`[read-only] Read a text file…`; the description alone when no tag applies).
    pub fn tagged_description(&self) -> String {
        tagged(self.description.trim(), &self.annotations.tag(false))
    }
}

/// How the declarations are laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Layout {
    /// One member per line, indented: for files developers read and type-check against.
    #[default]
    Pretty,
    /// For a tool description the model reads: each tool of `ToolArgsMap` on one line
    /// below its description as `//` comments, everything else on one line per
    /// declaration, no indentation, no `;` after an object's last member. What repeats
    /// is said once: object types written out twice or more are named,
    /// tools with the same output share one entry, sentences that recur across
    /// descriptions become numbered notes (`// ¹ …`, each description ending with its
    /// marks), and a mostly read-only tool set tags its other tools instead (see
    /// [`Annotations`]). Nothing is left out.
    Compact,
}

/// Why declarations could not be produced.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclarationError {
    /// Two tools would have the same member in `tools`.
    #[error("tools `{first}` and `{second}` would both be `tools.{member}`")]
    Collision {
        /// The first tool.
        first: String,
        /// The second tool.
        second: String,
        /// The member of `tools` they share.
        member: String,
    },
    /// A tool's alias is not an identifier.
    #[error("the alias `{alias}` of tool `{tool}` is not an identifier")]
    BadAlias {
        /// The tool.
        tool: String,
        /// Its alias.
        alias: String,
    },
}

/// The first line of every declarations file.
pub const HEADER: &str =
    "// @generated by codemode-codegen from the tools' JSON Schemas; do not edit.\n";

/// Declarations of the sandbox's globals besides `tools` (`console`, the timers,
/// `performance`, `queueMicrotask`, `atob` and `btoa`), for type-checking programs in a
/// project whose `lib` has no DOM.
pub const SANDBOX_GLOBALS: &str = "\
// @generated by codemode-codegen: the globals of a codemode sandbox besides `tools`.
declare const console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  debug(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  dir(item?: unknown): void;
};
declare function setTimeout(handler: (...args: any[]) => void, ms?: number, ...args: any[]): number;
declare function clearTimeout(id?: number): void;
declare function setInterval(handler: (...args: any[]) => void, ms?: number, ...args: any[]): number;
declare function clearInterval(id?: number): void;
declare function queueMicrotask(callback: () => void): void;
declare function atob(data: string): string;
declare function btoa(data: string): string;
declare const performance: {
  now(): number;
  readonly timeOrigin: number;
};
";

/// Members every object inherits from `Object.prototype`: an optional property with one
/// of these names must admit the inherited member's type.
const OBJECT_MEMBERS: &[&str] = &[
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
];

/// The generic method type of [`Layout::Compact`] when some tool has a listed alias:
/// `get_sum: ToolMethod<"get-sum">` (otherwise `tools`' mapped type says it inline).
const METHOD: &str = "ToolMethod";

/// Names the declarations use themselves, and global names of TypeScript's standard
/// library that a derived alias name could hit.
const TAKEN: &[&str] = &[
    "ToolArgsMap",
    "ToolOutputMap",
    "ToolCallError",
    "ToolMethod",
    "tools",
    "integer",
    "Array",
    "Boolean",
    "Date",
    "Error",
    "Function",
    "JSON",
    "Map",
    "Math",
    "Number",
    "Object",
    "Partial",
    "Pick",
    "Promise",
    "Record",
    "RegExp",
    "Set",
    "String",
    "Symbol",
    "Alias",
    // TypeScript's utility and library types.
    "Awaited",
    "Capitalize",
    "ConstructorParameters",
    "Exclude",
    "Extract",
    "InstanceType",
    "Lowercase",
    "NoInfer",
    "NonNullable",
    "Omit",
    "OmitThisParameter",
    "Parameters",
    "Readonly",
    "ReadonlyArray",
    "Required",
    "ReturnType",
    "ThisParameterType",
    "ThisType",
    "Uncapitalize",
    "Uppercase",
    "ArrayLike",
    "AsyncGenerator",
    "AsyncIterable",
    "AsyncIterableIterator",
    "AsyncIterator",
    "BigInt",
    "Generator",
    "Iterable",
    "IterableIterator",
    "Iterator",
    "PromiseLike",
    "PropertyDescriptor",
    "PropertyKey",
    "TemplateStringsArray",
    "WeakMap",
    "WeakRef",
    "WeakSet",
    // Globals of the DOM library, which projects type-checking tool scripts often have.
    "Blob",
    "Document",
    "Element",
    "Event",
    "File",
    "FormData",
    "Headers",
    "Node",
    "Request",
    "Response",
    "URL",
    "Window",
];

/// A method's name in an object type: quoted where [`key`] quotes it, and `new`, which
/// would make a construct signature.
fn method_key(name: &str) -> std::borrow::Cow<'_, str> {
    if name == "new" {
        quote(name).into()
    } else {
        key(name)
    }
}

/// Whether `name` is an ASCII JavaScript identifier (not checked against reserved words:
/// they are valid property names and method names).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The group of a tool named `GROUP.tool` (as an MCP server's tools are named), if any.
fn group(name: &str) -> Option<&str> {
    name.split_once('.')
        .map(|(g, _)| g)
        .filter(|g| !g.is_empty())
}

/// A property key: bare when it is an identifier, else a quoted string.
fn key(name: &str) -> std::borrow::Cow<'_, str> {
    if is_identifier(name) {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(quote(name))
    }
}

/// A TypeScript string literal: JSON string syntax, with U+2028 and U+2029 escaped.
fn quote(s: &str) -> String {
    let q = serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    if q.contains(['\u{2028}', '\u{2029}']) {
        q.replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029")
    } else {
        q
    }
}

/// Produces the declarations of `tools` ([`Layout::Pretty`]). Tools are sorted by name, those
/// named `GROUP.tool` (an MCP server's tools) after the others, each group under a `// GROUP.*`
/// comment; so the same tools give the same bytes in any order.
///
/// # Errors
/// [`DeclarationError::Collision`] when two tools would share a member of `tools`;
/// [`DeclarationError::BadAlias`] when an alias is not an identifier.
pub fn declarations(tools: &[ToolDecl]) -> Result<String, DeclarationError> {
    declarations_with(tools, Layout::Pretty)
}

/// Produces the declarations of `tools` in `layout`; see [`declarations`].
///
/// # Errors
/// As [`declarations`].
pub fn declarations_with(tools: &[ToolDecl], layout: Layout) -> Result<String, DeclarationError> {
    let mut sorted: Vec<&ToolDecl> = tools.iter().collect();
    // Tools named `GROUP.tool` (an MCP server's tools) stay together, after the others.
    sorted.sort_by(|a, b| (group(&a.name), &a.name).cmp(&(group(&b.name), &b.name)));
    check_members(&sorted)?;
    if layout == Layout::Pretty {
        return Ok(render(&sorted, None));
    }
    // Compact: an object type written out twice or more is named once. Each pass names the
    // shapes an earlier pass saw repeated; a shape that holds a named one reads differently
    // once that one is named, so passes go on (at most SHAPE_PASSES) until no new repeat
    // appears.
    let read_only = sorted
        .iter()
        .filter(|t| t.annotations.read_only == Some(true))
        .count();
    // The tags the other tools would carry: `[writes]` about 3 tokens, `[destructive]` 4.
    let others: usize = sorted
        .iter()
        .filter(|t| t.annotations.read_only != Some(true))
        .map(|t| {
            if t.annotations.destructive == Some(false) {
                3
            } else {
                4
            }
        })
        .sum();
    let mut shapes = Shapes {
        notes: Notes::of(sorted.iter().map(|t| t.description.trim())),
        // A `[read-only]` tag is about 4 tokens, and the note 14.
        writes_tagged: 4 * read_only > others + 14,
        ..Shapes::default()
    };
    let mut out = render(&sorted, Some(&mut shapes));
    for _ in 1..SHAPE_PASSES {
        let before = shapes.repeated.len();
        let seen = std::mem::take(&mut shapes.seen);
        shapes
            .repeated
            .extend(seen.into_iter().filter(|(_, n)| *n >= 2).map(|(t, _)| t));
        if shapes.repeated.len() == before {
            break;
        }
        shapes.named.clear();
        shapes.defs.clear();
        out = render(&sorted, Some(&mut shapes));
    }
    Ok(out)
}

/// Most passes [`declarations_with`] makes to name repeated shapes (nesting deeper than
/// this keeps its outer repeats written out).
const SHAPE_PASSES: usize = 5;

/// Shortest object type (in bytes) that is named when it repeats: a shorter one costs a
/// model fewer tokens written out than as a name and its definition.
const MIN_SHAPE: usize = 40;

/// The object types of one compact rendering, to name those that repeat.
#[derive(Default)]
struct Shapes {
    /// How often each object type's text (of at least [`MIN_SHAPE`] bytes) appeared in
    /// this pass.
    seen: std::collections::HashMap<String, usize>,
    /// Texts an earlier pass saw at least twice: named in this pass.
    repeated: HashSet<String>,
    /// Text → the name this pass gave it.
    named: std::collections::HashMap<String, String>,
    /// `type Name = …;` of each name given, in order.
    defs: String,
    /// The sentences that recur across the tools' descriptions, written once.
    notes: Notes,
    /// Whether read-only goes unsaid and the other tools are tagged (see [`Annotations`]).
    writes_tagged: bool,
}

/// One rendering of the declarations; `shapes` for the compact layout.
fn render(sorted: &[&ToolDecl], mut shapes: Option<&mut Shapes>) -> String {
    let layout = if shapes.is_some() {
        Layout::Compact
    } else {
        Layout::Pretty
    };
    let mut names = Names::default();
    let mut aliases = String::new();
    let mut args = String::new();
    let mut outputs = String::new();
    let mut methods = String::new();
    let pretty = layout == Layout::Pretty;
    let mut uses_integer = false;
    let mut open_objects = false;
    // Compact: (output type, its doc) → the tools that have it, in order.
    let mut shared_outputs: indexmap::IndexMap<(String, String), Vec<&str>> =
        indexmap::IndexMap::new();
    let mut current_group = None;
    for t in sorted {
        if pretty && group(&t.name) != current_group {
            current_group = group(&t.name);
            if let Some(g) = current_group {
                // Quoted, also where it names the prefix: a line break in a name (a
                // manifest's) would end the comment.
                let q = quote(g);
                let bare = &q[1..q.len() - 1];
                let heading = format!("  // {bare}.*: the tools of server {q}\n");
                for part in [&mut args, &mut outputs, &mut methods] {
                    part.push_str(&heading);
                }
            }
        }
        let prefix = type_prefix(&t.name);
        let q = quote(&t.name);
        let mut types = [String::new(), String::new()];
        let mut docs = [String::new(), String::new()];
        for (i, (schema, suffix)) in [(&t.input_schema, "Args"), (&t.output_schema, "Output")]
            .into_iter()
            .enumerate()
        {
            let mut e = Emitter {
                root: schema,
                base: format!("{prefix}{suffix}"),
                names: &mut names,
                aliases: &mut aliases,
                refs: BTreeMap::new(),
                unguarded: Vec::new(),
                pretty,
                uses_integer: false,
                open_objects: false,
                shapes: shapes.as_deref_mut(),
                hint: None,
                ref_depth: 0,
            };
            // The entry carries the documentation: the type is bare.
            (types[i], docs[i]) = e.ty_and_doc(schema, 1, true);
            // A schema that refers to itself (`#`) got an alias: the entry names it.
            if let Some(root_alias) = e.refs.get("") {
                types[i] = root_alias.clone();
            }
            uses_integer |= e.uses_integer;
            open_objects |= e.open_objects;
        }
        let [arg_ty, out_ty] = types;
        let [arg_doc, out_doc] = docs;
        if pretty {
            push_member(&mut args, &arg_doc, &format!("{q}: {arg_ty};"), true);
            push_member(&mut outputs, &out_doc, &format!("{q}: {out_ty};"), true);
            // A call without arguments is a call with `{}`.
            let opt = if args_optional(&t.input_schema) {
                "?"
            } else {
                ""
            };
            let signature = format!("(args{opt}: ToolArgsMap[{q}]): Promise<ToolOutputMap[{q}]>;");
            push_member(
                &mut methods,
                &t.tagged_description(),
                &format!("{}{signature}", method_key(&t.name)),
                true,
            );
            if let Some(alias) = t.alias.as_deref().filter(|a| *a != t.name) {
                let doc = format!("Same as tools[{q}].");
                let alias = method_key(alias);
                push_member(&mut methods, &doc, &format!("{alias}{signature}"), true);
            }
        } else {
            // Compact: the tool's description goes with its arguments; `tools` is a mapped
            // type over ToolArgsMap (which carries the descriptions over) plus the aliases;
            // outputs that are `unknown` are left to ToolOutputMap's index signature.
            let (description, writes_tagged) = match &shapes {
                Some(s) => (s.notes.apply(t.description.trim()), s.writes_tagged),
                None => (t.description.trim().into(), false),
            };
            let description = tagged(&description, &t.annotations.tag(writes_tagged));
            let doc = [description.as_str(), arg_doc.as_str()]
                .iter()
                .filter(|d| !d.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            // One tool per line, its description in line comments above it: `//` and a
            // line break cost fewer tokens than `/** */`, and need no escape.
            line_comment(&mut args, &doc);
            for piece in [key(&t.name).as_ref(), ": ", &arg_ty, ";\n"] {
                args.push_str(piece);
            }
            if out_ty != "unknown" || !out_doc.is_empty() {
                shared_outputs
                    .entry((out_ty, out_doc))
                    .or_default()
                    .push(&t.name);
            }
            if let Some(alias) = t
                .alias
                .as_deref()
                .filter(|a| *a != t.name && *a != dashes_and_dots(&t.name))
            {
                push_member(&mut methods, "", &format!("{alias}: {METHOD}<{q}>;"), false);
            }
        }
    }
    let mut out = String::new();
    if pretty {
        out.push_str(HEADER);
    }
    if uses_integer {
        out.push_str("type integer = number;\n");
    }
    if let Some(shapes) = &shapes {
        // What holds for every tool, on one line.
        let conventions: Vec<&str> = [
            (shapes.writes_tagged, READ_ONLY_NOTE),
            (open_objects, OPEN_OBJECTS_NOTE),
        ]
        .into_iter()
        .filter_map(|(said, note)| said.then_some(note))
        .collect();
        if !conventions.is_empty() {
            for piece in ["// ", &conventions.join(" "), "\n"] {
                out.push_str(piece);
            }
        }
        out.push_str(&shapes.notes.lines());
        out.push_str(&shapes.defs);
    }
    out.push_str(&aliases);
    if pretty {
        out.push_str("interface ToolArgsMap {\n");
        out.push_str(&args);
        out.push_str("}\ninterface ToolOutputMap {\n");
        out.push_str(&outputs);
        out.push_str("}\ndeclare const tools: {\n");
        out.push_str(&methods);
        out.push_str(DISCOVERY_METHODS);
        out.push_str("};\n");
        out.push_str("declare class ToolCallError extends Error {\n  readonly name: \"ToolCallError\";\n  readonly toolName: string;\n}\n");
    } else {
        let _ = writeln!(out, "interface ToolArgsMap {{\n{args}}}");
        // Tools with the same output (and no doc on it) share one entry, which names the
        // tools that do not have it when they are fewer (`Exclude<keyof ToolArgsMap, …>`).
        let mut extends = Vec::new();
        for ((ty, doc), tools) in &shared_outputs {
            if tools.len() > 1 && doc.is_empty() {
                let keys = if 2 * tools.len() > sorted.len() {
                    let sharing: HashSet<&str> = tools.iter().copied().collect();
                    let others: Vec<String> = sorted
                        .iter()
                        .filter(|t| !sharing.contains(t.name.as_str()))
                        .map(|t| quote(&t.name))
                        .collect();
                    if others.is_empty() {
                        "keyof ToolArgsMap".to_owned()
                    } else {
                        format!("Exclude<keyof ToolArgsMap, {}>", others.join(" | "))
                    }
                } else {
                    let names: Vec<String> = tools.iter().map(|n| quote(n)).collect();
                    names.join(" | ")
                };
                extends.push(format!("Record<{keys}, {ty}>"));
            } else {
                for name in tools {
                    push_member(&mut outputs, doc, &format!("{}: {ty};", key(name)), false);
                }
            }
        }
        let extends = if extends.is_empty() {
            String::new()
        } else {
            format!("extends {} ", extends.join(", "))
        };
        // The index signature stands for the tools whose output is `unknown`.
        let with_output: usize = shared_outputs.values().map(Vec::len).sum();
        let mut members = if with_output < sorted.len() {
            "[tool: string]: unknown; ".to_owned()
        } else {
            String::new()
        };
        members.push_str(&outputs);
        let members = last_member_open(members);
        let _ = writeln!(out, "interface ToolOutputMap {extends}{{ {members}}}");
        // Names with `-` or `.` are also reachable with `_` in their place (the alias rule
        // for them); other aliases are listed.
        let aliased = sorted.iter().any(|t| {
            t.alias
                .as_deref()
                .is_some_and(|a| a != t.name && a == dashes_and_dots(&t.name))
        });
        let keys = if aliased {
            // The rule is applied to every name: it is written for the separators names
            // have (`-`, `.` or both).
            let dash = sorted.iter().any(|t| t.name.contains('-'));
            let dot = sorted.iter().any(|t| t.name.contains('.'));
            out.push_str(match (dash, dot) {
                (true, false) => ALIAS_TYPE_DASH,
                (false, true) => ALIAS_TYPE_DOT,
                _ => ALIAS_TYPE,
            });
            // Names with `-` or `.` whose alias is not the rule's (a leading digit, other
            // characters: theirs are listed) get no alias from the rule.
            let others: Vec<String> = sorted
                .iter()
                .filter(|t| {
                    t.name.contains(['-', '.'])
                        && t.alias.as_deref() != Some(dashes_and_dots(&t.name).as_str())
                })
                .map(|t| quote(&t.name))
                .collect();
            if others.is_empty() {
                "K in keyof ToolArgsMap as K | Alias<K>".to_owned()
            } else {
                format!(
                    "K in keyof ToolArgsMap as K extends {} ? K : K | Alias<K>",
                    others.join(" | ")
                )
            }
        } else {
            "K in keyof ToolArgsMap".to_owned()
        };
        // A tool whose arguments are all optional may be called without them, as in the
        // pretty layout: the tools whose type `{}` satisfies but whose schema does not
        // take `{}` for certain (`minProperties`, `anyOf`, …) are named.
        let strict: Vec<String> = sorted
            .iter()
            .filter(|t| {
                !args_optional(&t.input_schema)
                    && t.input_schema
                        .get("required")
                        .and_then(Value::as_array)
                        .is_none_or(|r| r.is_empty())
            })
            .map(|t| quote(&t.name))
            .collect();
        let strict = if strict.is_empty() {
            String::new()
        } else {
            format!("K extends {} ? [A] : ", strict.join(" | "))
        };
        if methods.is_empty() {
            let strict = strict.replace("[A]", "[ToolArgsMap[K]]");
            let _ = writeln!(
                out,
                "declare const tools: {{ [{keys}]: (...args: {strict}{{}} extends ToolArgsMap[K] ? [ToolArgsMap[K]?] : [ToolArgsMap[K]]) => Promise<ToolOutputMap[K]> }};"
            );
        } else {
            let _ = writeln!(
                out,
                "type {METHOD}<K extends keyof ToolArgsMap, A = ToolArgsMap[K]> = (...args: {strict}{{}} extends A ? [A?] : [A]) => Promise<ToolOutputMap[K]>;"
            );
            let methods = last_member_open(methods);
            let _ = writeln!(
                out,
                "declare const tools: {{ [{keys}]: {METHOD}<K> }} & {{ {methods}}};"
            );
        }
        out.push_str("declare class ToolCallError extends Error { readonly name: \"ToolCallError\"; readonly toolName: string }\n");
    }
    out
}

/// The discovery functions every program has (see the `codemode` crate's `discovery`
/// module), in the pretty layout that programs are type-checked against; the compact
/// layout leaves them to the index that introduces them.
const DISCOVERY_METHODS: &str = "  /** The tools that best match the words of `query` (BM25 over names, descriptions and parameter names), best first; `limit` defaults to 5, at most 50. */
  $search(query: string, limit?: number): Promise<{ name: string; description: string }[]>;
  /** The TypeScript declarations (compact) of the named tools. */
  $describe(names: string | string[]): Promise<string>;
";

/// Said once in compact declarations that leave out open objects' index signatures, on
/// the first line with [`READ_ONLY_NOTE`].
const OPEN_OBJECTS_NOTE: &str = "Extra object keys are ignored.";

/// The alias rule for names whose only characters outside an identifier's are `-` and `.`
/// (see [`dashes_and_dots`]), as a type.
///
/// One separator at a time: matching `-` and `.` in one pattern made TypeScript infer a
/// union for a name with both, and `everything.get-sum` gained keys no tool has
/// (`everything_sum`, `everything_get_get_sum`).
const ALIAS_TYPE: &str = "type Alias<S> = S extends `${infer A}-${infer B}` ? Alias<`${A}_${B}`> : S extends `${infer A}.${infer B}` ? Alias<`${A}_${B}`> : S; // tools[\"a-b.c\"] is also tools.a_b_c\n";

/// [`ALIAS_TYPE`] for names with `-` and no `.`.
const ALIAS_TYPE_DASH: &str = "type Alias<S> = S extends `${infer A}-${infer B}` ? Alias<`${A}_${B}`> : S; // tools[\"a-b\"] is also tools.a_b\n";

/// [`ALIAS_TYPE`] for names with `.` and no `-`.
const ALIAS_TYPE_DOT: &str = "type Alias<S> = S extends `${infer A}.${infer B}` ? Alias<`${A}_${B}`> : S; // tools[\"a.b\"] is also tools.a_b\n";

/// `name` with `-` and `.` replaced by `_`: the alias [`ALIAS_TYPE`] gives it.
fn dashes_and_dots(name: &str) -> String {
    name.replace(['-', '.'], "_")
}

/// How the compact declarations show one property (see [`property_hint`]); `Display`
/// writes `key?: type /* doc */; type Name = …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyHint {
    /// `key?: type` (`?` when the object does not require it).
    pub declaration: String,
    /// Its description and constraints as the JSDoc shows them (empty when none).
    pub doc: String,
    /// `type Name = …` for each type the declaration names through a reference.
    pub types: Vec<String>,
}

impl std::fmt::Display for PropertyHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.declaration)?;
        if !self.doc.is_empty() {
            write!(f, " /* {} */", comment_safe(&self.doc))?;
        }
        for t in &self.types {
            write!(f, "; {t}")?;
        }
        Ok(())
    }
}

/// How the compact declarations show property `name` of the object schema `parent`.
/// `root` is the schema `parent` is inside, for `$ref`s. `None` when `parent` declares no
/// such property.
///
/// ```
/// let parent = serde_json::json!({"type": "object", "properties": {
///     "limit": {"type": "number", "minimum": 1, "maximum": 1000}}});
/// assert_eq!(
///     codemode_codegen::property_hint(&parent, &parent, "limit").unwrap().to_string(),
///     "limit?: number /* @minimum 1 @maximum 1000 */"
/// );
/// ```
pub fn property_hint(root: &Value, parent: &Value, name: &str) -> Option<PropertyHint> {
    let prop = parent.get("properties")?.get(name)?;
    let required = parent
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v == name));
    let mut names = Names::default();
    let mut aliases = String::new();
    let mut e = Emitter {
        root,
        base: "Arg".to_owned(),
        names: &mut names,
        aliases: &mut aliases,
        refs: BTreeMap::new(),
        unguarded: Vec::new(),
        pretty: false,
        uses_integer: false,
        open_objects: false,
        shapes: None,
        hint: None,
        ref_depth: 0,
    };
    let (t, doc) = e.ty_and_doc(prop, 0, true);
    Some(PropertyHint {
        declaration: format!("{}{}{t}", key(name), if required { ": " } else { "?: " }),
        doc,
        types: aliases
            .lines()
            .map(|l| l.trim_end_matches(';').to_owned())
            .collect(),
    })
}

/// Whether arguments of `schema` may be left out (a call without arguments is a call with
/// `{}`): an object schema with no required keys and nothing else that could refuse `{}`.
fn args_optional(schema: &Value) -> bool {
    let s = match schema {
        Value::Bool(b) => return *b,
        Value::Object(s) => s,
        _ => return false,
    };
    let refusing = [
        "$ref",
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "const",
        "enum",
        "minProperties",
    ];
    if refusing.iter().any(|k| s.contains_key(*k)) {
        return false;
    }
    let object_type = match s.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    object_type
        && s.get("required")
            .and_then(Value::as_array)
            .is_none_or(|r| r.is_empty())
}

/// Refuses tools that would share a member of `tools`, and aliases that are not identifiers.
fn check_members(tools: &[&ToolDecl]) -> Result<(), DeclarationError> {
    let mut members: BTreeMap<&str, &str> = BTreeMap::new();
    for t in tools {
        let mut own = vec![t.name.as_str()];
        if let Some(a) = t.alias.as_deref().filter(|a| *a != t.name) {
            if !is_identifier(a) {
                return Err(DeclarationError::BadAlias {
                    tool: t.name.clone(),
                    alias: a.to_owned(),
                });
            }
            own.push(a);
        }
        for m in own {
            if let Some(first) = members.insert(m, &t.name)
                && first != t.name
            {
                return Err(DeclarationError::Collision {
                    first: first.to_owned(),
                    second: t.name.clone(),
                    member: m.to_owned(),
                });
            }
        }
    }
    Ok(())
}

/// Appends a member (`text` ends with `;`) with its JSDoc.
fn push_member(out: &mut String, doc: &str, text: &str, pretty: bool) {
    if pretty {
        jsdoc_block(out, doc, "  ");
        out.push_str("  ");
        out.push_str(text);
        out.push('\n');
    } else {
        jsdoc_inline(out, doc);
        out.push_str(text);
        out.push(' ');
    }
}

/// Compact members (`a: T; b: U; `) without the last one's `;`, which is optional and a
/// token: `{ a: T; b: U }`.
fn last_member_open(mut members: String) -> String {
    if members.ends_with("; ") {
        members.truncate(members.len() - 2);
        members.push(' ');
    }
    members
}

/// Makes text safe inside a block comment: no `*/`, and no TypeScript directive (see
/// [`directive_safe`]).
fn comment_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let text = directive_safe(text);
    if text.contains("*/") {
        std::borrow::Cow::Owned(text.replace("*/", "*\\/"))
    } else {
        text
    }
}

/// `@ts-expect-error`, `@ts-ignore` and the other `@ts-` directives escaped as JSDoc
/// escapes a tag (`\@ts-ignore`): at the start of a comment's line TypeScript would obey
/// them (an unused `@ts-expect-error` is itself an error).
fn directive_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains("@ts-") {
        std::borrow::Cow::Owned(text.replace("@ts-", "\\@ts-"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// A JSDoc comment on its own line(s) at `indent`.
fn jsdoc_block(out: &mut String, text: &str, indent: &str) {
    if text.is_empty() {
        return;
    }
    let safe = comment_safe(text);
    // Written piece by piece: formatting machinery showed in profiles.
    if !safe.contains('\n') {
        for piece in [indent, "/** ", &safe, " */\n"] {
            out.push_str(piece);
        }
        return;
    }
    out.push_str(indent);
    out.push_str("/**\n");
    for l in safe.lines() {
        let l = l.trim_end();
        out.push_str(indent);
        if l.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(" * ");
            out.push_str(l);
            out.push('\n');
        }
    }
    out.push_str(indent);
    out.push_str(" */\n");
}

/// A JSDoc comment followed by a space, on as few lines as the text has.
fn jsdoc_inline(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    out.push_str("/** ");
    out.push_str(&comment_safe(text));
    out.push_str(" */ ");
}

/// `text` as `//` comments, a line each (TypeScript's line terminators end a line, empty
/// lines are left out).
fn line_comment(out: &mut String, text: &str) {
    let text = directive_safe(text);
    for line in text.split(['\n', '\r', '\u{2028}', '\u{2029}']) {
        let line = line.trim_end();
        if !line.is_empty() {
            for piece in ["// ", line, "\n"] {
                out.push_str(piece);
            }
        }
    }
}

/// The keywords of one schema object, found in one pass over its members (looking each
/// up by name would hash every keyword of every schema many times).
#[derive(Default)]
struct Keys<'a> {
    ref_: Option<&'a Value>,
    const_: Option<&'a Value>,
    enum_: Option<&'a Value>,
    not: Option<&'a Value>,
    one_of: Option<&'a Value>,
    any_of: Option<&'a Value>,
    all_of: Option<&'a Value>,
    type_: Option<&'a Value>,
    properties: Option<&'a Value>,
    additional_properties: Option<&'a Value>,
    pattern_properties: Option<&'a Value>,
    items: Option<&'a Value>,
    prefix_items: Option<&'a Value>,
    additional_items: Option<&'a Value>,
    nullable: Option<&'a Value>,
    required: Option<&'a Value>,
    title: Option<&'a Value>,
    description: Option<&'a Value>,
    default: Option<&'a Value>,
    examples: Option<&'a Value>,
    deprecated: Option<&'a Value>,
    unique_items: Option<&'a Value>,
    /// Constraints TypeScript cannot express, shown as JSDoc tags in this order:
    /// `not`, `contains`, `propertyNames`, `patternProperties`, `dependentRequired`,
    /// `dependentSchemas`, `dependencies`, `if`, `then`, `else`.
    applicators: [Option<&'a Value>; APPLICATORS.len()],
    pattern: Option<&'a Value>,
    format: Option<&'a Value>,
    min_items: Option<&'a Value>,
    /// `minimum` … `maxProperties`, in [`NUMERIC`] order.
    numeric: [Option<&'a Value>; NUMERIC.len()],
}

/// The constraints TypeScript cannot express that are written as JSDoc tags with their
/// schema as compact JSON (`@not {"type":"string"}`), in this order; `not` is written only
/// when it is not `{}` (which is `never`).
const APPLICATORS: [&str; 10] = [
    "not",
    "contains",
    "propertyNames",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "if",
    "then",
    "else",
];

/// The numeric constraints written as JSDoc tags, in this order.
const NUMERIC: [&str; 13] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];

impl<'a> Keys<'a> {
    // Inlined so the 36-slot result is built in the caller's frame, not copied out.
    #[inline(always)]
    fn of(s: &'a Map<String, Value>) -> Keys<'a> {
        let mut k = Keys::default();
        for (name, v) in s {
            // Dispatch on the first byte, then compare: a chain of 30 comparisons per
            // member showed in profiles.
            let n = name.as_str();
            let slot = match (n.as_bytes().first(), n) {
                (Some(b'$'), "$ref") => &mut k.ref_,
                (Some(b'a'), "anyOf") => &mut k.any_of,
                (Some(b'a'), "allOf") => &mut k.all_of,
                (Some(b'a'), "additionalProperties") => &mut k.additional_properties,
                (Some(b'a'), "additionalItems") => &mut k.additional_items,
                (Some(b'c'), "const") => &mut k.const_,
                (Some(b'd'), "description") => &mut k.description,
                (Some(b'd'), "default") => &mut k.default,
                (Some(b'd'), "deprecated") => &mut k.deprecated,
                (Some(b'e'), "enum") => &mut k.enum_,
                (Some(b'e'), "examples") => &mut k.examples,
                (Some(b'f'), "format") => &mut k.format,
                (Some(b'i'), "items") => &mut k.items,
                (Some(b'n'), "not") => &mut k.not,
                (Some(b'n'), "nullable") => &mut k.nullable,
                (Some(b'o'), "oneOf") => &mut k.one_of,
                (Some(b'p'), "properties") => &mut k.properties,
                (Some(b'p'), "patternProperties") => &mut k.pattern_properties,
                (Some(b'p'), "prefixItems") => &mut k.prefix_items,
                (Some(b'p'), "pattern") => &mut k.pattern,
                (Some(b'r'), "required") => &mut k.required,
                (Some(b't'), "type") => &mut k.type_,
                (Some(b't'), "title") => &mut k.title,
                (Some(b'u'), "uniqueItems") => &mut k.unique_items,
                (Some(b'c' | b'p' | b'd' | b'i' | b't' | b'e'), other)
                    if APPLICATORS.contains(&other) =>
                {
                    if let Some(i) = APPLICATORS.iter().position(|n| *n == other) {
                        k.applicators[i] = Some(v);
                    }
                    continue;
                }
                (Some(b'e' | b'm'), other) => {
                    if other == "minItems" {
                        k.min_items = Some(v);
                    }
                    if let Some(i) = NUMERIC.iter().position(|n| *n == other) {
                        k.numeric[i] = Some(v);
                    }
                    continue;
                }
                _ => continue,
            };
            *slot = Some(v);
        }
        k.applicators[0] = k.not;
        k.applicators[3] = k.pattern_properties;
        k
    }
}

/// The JSDoc text of a schema: its title and description, then its constraints as tags.
fn doc_of(schema: &Value) -> String {
    let Value::Object(s) = schema else {
        return String::new();
    };
    doc_of_keys(&Keys::of(s))
}

/// [`doc_of`] from the keywords.
fn doc_of_keys(k: &Keys<'_>) -> String {
    let mut text = String::new();
    let title = k.title.and_then(Value::as_str).map(str::trim);
    let description = k.description.and_then(Value::as_str).map(str::trim);
    if let Some(t) = title.filter(|t| !t.is_empty()) {
        text.push_str(t);
        if description.is_some_and(|d| !d.is_empty()) {
            text.push_str(": ");
        }
    }
    if let Some(d) = description.filter(|d| !d.is_empty()) {
        text.push_str(d);
    }
    let mut tag = |name: &str, value: Option<String>| {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push('@');
        text.push_str(name);
        if let Some(v) = value {
            text.push(' ');
            text.push_str(&v);
        }
    };
    for (name, v) in NUMERIC.iter().zip(k.numeric) {
        if let Some(v) = v.filter(|v| v.is_number()) {
            tag(name, Some(v.to_string()));
        }
    }
    if k.unique_items == Some(&Value::Bool(true)) {
        tag("uniqueItems", None);
    }
    for (name, v) in APPLICATORS.iter().zip(k.applicators) {
        let trivial = *name == "not"
            && (v == Some(&Value::Bool(true))
                || v.is_some_and(|v| v.as_object().is_some_and(Map::is_empty)));
        if let Some(v) = v.filter(|_| !trivial) {
            tag(name, Some(v.to_string()));
        }
    }
    if let Some(p) = k.pattern.and_then(Value::as_str) {
        tag("pattern", Some(p.to_owned()));
    }
    if let Some(f) = k.format.and_then(Value::as_str) {
        tag("format", Some(f.to_owned()));
    }
    if let Some(d) = k.default {
        tag("default", Some(d.to_string()));
    }
    if let Some(Value::Array(examples)) = k.examples {
        for e in examples {
            tag("example", Some(e.to_string()));
        }
    }
    if k.deprecated == Some(&Value::Bool(true)) {
        tag("deprecated", None);
    }
    text
}

/// `read_file` → `ReadFile`, `my-tool` → `MyTool`, `9x` → `T9x`, `日本` → `Tool`.
fn type_prefix(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if out.is_empty() && c.is_ascii_digit() {
                out.push('T');
            }
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() {
        out.push_str("Tool");
    }
    out
}

/// The singular of a property name, for the type of one of its items: `entities` →
/// `entity`, `matches` → `match`, `files` → `file`; other names are kept.
fn singular(name: &str) -> String {
    if let Some(stem) = name.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = name
        .strip_suffix("ches")
        .or_else(|| name.strip_suffix("shes"))
        .or_else(|| name.strip_suffix("sses"))
        .or_else(|| name.strip_suffix("xes"))
    {
        format!("{stem}{}", &name[stem.len()..name.len() - 2])
    } else if let Some(stem) = name.strip_suffix('s').filter(|s| !s.ends_with('s')) {
        stem.to_owned()
    } else {
        format!("{name}Item")
    }
}

/// Alias names given out so far.
#[derive(Default)]
struct Names {
    used: HashSet<String>,
}

impl Names {
    /// `base`, or `base2`, `base3`, … when taken.
    fn unique(&mut self, base: &str) -> String {
        let taken = |n: &str, used: &HashSet<String>| used.contains(n) || TAKEN.contains(&n);
        let mut name = base.to_owned();
        let mut i = 2;
        while taken(&name, &self.used) {
            name = format!("{base}{i}");
            i += 1;
        }
        self.used.insert(name.clone());
        name
    }
}

/// Renders the types of one schema (a tool's arguments or output).
struct Emitter<'a> {
    root: &'a Value,
    /// `ReadFileArgs`: the prefix of this schema's alias names.
    base: String,
    names: &'a mut Names,
    aliases: &'a mut String,
    /// JSON pointer → alias name, for references seen.
    refs: BTreeMap<String, String>,
    /// Aliases being emitted whose body, up to here, is not inside an object or array: a
    /// reference to one of them here would be circular for TypeScript.
    unguarded: Vec<String>,
    pretty: bool,
    uses_integer: bool,
    /// Whether an open object's index signature was left out (compact).
    open_objects: bool,
    /// Repeated object types to name (compact).
    shapes: Option<&'a mut Shapes>,
    /// What the object type being rendered is called where it appears: the property that
    /// holds it (singular for an array's items).
    hint: Option<String>,
    /// Alias bodies being rendered, one inside another (see [`MAX_REF_NESTING`]).
    ref_depth: usize,
}

/// Alias bodies rendered one inside another at most: a reference first met deeper is
/// `unknown`. A chain of `$ref`s needs no nesting in the JSON text, so without a bound a
/// schema could make the rendering recurse without end (and overflow a small thread's
/// stack); real schemas stay far below it.
pub(crate) const MAX_REF_NESTING: usize = 32;

impl Emitter<'_> {
    /// The alias of `reference`, emitting it the first time; `unknown` when it cannot be
    /// resolved or would be circular.
    fn reference(&mut self, reference: &str) -> String {
        let Some(pointer) = reference.strip_prefix('#') else {
            return "unknown".to_owned();
        };
        if let Some(name) = self.refs.get(pointer) {
            if self.unguarded.contains(name) {
                return "unknown".to_owned();
            }
            return name.clone();
        }
        let Some(target) = resolve(self.root, pointer) else {
            return "unknown".to_owned();
        };
        if self.ref_depth >= MAX_REF_NESTING {
            return "unknown".to_owned();
        }
        let last = pointer
            .rsplit('/')
            .next()
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .unwrap_or_default();
        let base = if pointer.is_empty() {
            self.base.clone()
        } else {
            format!("{}{}", self.base, type_prefix(&last))
        };
        let name = self.names.unique(&base);
        self.refs.insert(pointer.to_owned(), name.clone());
        let saved = std::mem::take(&mut self.unguarded);
        self.unguarded.push(name.clone());
        // The body of an alias starts a fresh chain (the alias name guards it from where it
        // is referenced), but references back to aliases still unguarded above stay circular.
        self.unguarded.extend(saved.iter().cloned());
        self.ref_depth += 1;
        let body = self.ty(target, 0, true);
        self.ref_depth -= 1;
        self.unguarded = saved;
        let mut text = String::new();
        let doc = doc_of(target);
        if self.pretty {
            jsdoc_block(&mut text, &doc, "");
        } else {
            jsdoc_inline(&mut text, &doc);
        }
        let _ = writeln!(text, "type {name} = {body};");
        self.aliases.push_str(&text);
        name
    }

    /// Runs `f` with no alias unguarded (inside an object or array).
    fn guarded<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::take(&mut self.unguarded);
        let out = f(self);
        self.unguarded = saved;
        out
    }

    /// The type of `schema`; `documented` when its JSDoc is written by the caller (a
    /// property), otherwise a comment precedes the type when the schema has one.
    fn ty(&mut self, schema: &Value, indent: usize, documented: bool) -> String {
        let (t, doc) = self.ty_and_doc(schema, indent, !documented);
        // A reference's alias carries its documentation.
        if doc.is_empty() || schema.get("$ref").is_some() {
            t
        } else {
            format!("/** {} */ {t}", comment_safe(&doc))
        }
    }

    /// The type of `schema` and, when `want_doc`, its JSDoc text.
    fn ty_and_doc(&mut self, schema: &Value, indent: usize, want_doc: bool) -> (String, String) {
        let s = match schema {
            Value::Bool(true) => return ("unknown".to_owned(), String::new()),
            Value::Bool(false) => return ("never".to_owned(), String::new()),
            Value::Object(s) => s,
            _ => return ("unknown".to_owned(), String::new()),
        };
        let k = Keys::of(s);
        let t = self.bare(s, &k, indent);
        let doc = if want_doc {
            doc_of_keys(&k)
        } else {
            String::new()
        };
        (t, doc)
    }

    fn bare(&mut self, s: &Map<String, Value>, k: &Keys<'_>, indent: usize) -> String {
        if let Some(r) = k.ref_.and_then(Value::as_str) {
            let referenced = self.reference(r);
            // Draft 2020-12 lets siblings constrain a reference further; they are kept.
            let rest = self.without(s, &["$ref", "$defs", "definitions", "description", "title"]);
            return match rest {
                Some(rest) => {
                    let rest = self.ty_and_doc(&rest, indent, false).0;
                    intersection(vec![referenced, rest])
                }
                None => referenced,
            };
        }
        if let Some(c) = k.const_ {
            return literal(c);
        }
        if let Some(Value::Array(values)) = k.enum_ {
            return self.nullable(k, union(values.iter().map(literal).collect()));
        }
        if k.not
            .is_some_and(|n| n == &Value::Object(Map::new()) || n == &Value::Bool(true))
        {
            return "never".to_owned();
        }
        let mut parts: Vec<String> = Vec::new();
        for branches in [k.one_of, k.any_of] {
            if let Some(Value::Array(branches)) = branches {
                let branches: Vec<String> =
                    branches.iter().map(|b| self.ty(b, indent, false)).collect();
                parts.push(union(branches));
            }
        }
        if let Some(Value::Array(all)) = k.all_of {
            for b in all {
                parts.push(self.ty(b, indent, false));
            }
        }
        let structural = k.type_.is_some()
            || k.properties.is_some()
            || k.additional_properties.is_some()
            || k.pattern_properties.is_some()
            || k.items.is_some()
            || k.prefix_items.is_some();
        if structural || parts.is_empty() {
            let own = self.typed(k, indent);
            if own != "unknown" || parts.is_empty() {
                parts.insert(0, own);
            }
        }
        let t = intersection(parts);
        self.nullable(k, t)
    }

    /// `schema` without `keys`, or `None` when nothing else is left.
    fn without(&self, s: &Map<String, Value>, keys: &[&str]) -> Option<Value> {
        let rest: Map<String, Value> = s
            .iter()
            .filter(|(k, _)| !keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let constraining = rest.keys().any(|k| {
            matches!(
                k.as_str(),
                "type"
                    | "properties"
                    | "items"
                    | "prefixItems"
                    | "enum"
                    | "const"
                    | "oneOf"
                    | "anyOf"
                    | "allOf"
                    | "additionalProperties"
            )
        });
        constraining.then_some(Value::Object(rest))
    }

    fn nullable(&self, k: &Keys<'_>, t: String) -> String {
        if k.nullable != Some(&Value::Bool(true)) {
            return t;
        }
        let (pipe, amp) = top_level_ops(&t);
        if pipe && !amp && !t.starts_with("/*") {
            if t.split(" | ").any(|p| p == "null") {
                return t;
            }
            return format!("{t} | null");
        }
        union(vec![t, "null".to_owned()])
    }

    /// The type from `type` (or the structural keywords when `type` is absent).
    fn typed(&mut self, k: &Keys<'_>, indent: usize) -> String {
        match k.type_ {
            Some(Value::String(t)) => self.of_type(t, k, indent),
            Some(Value::Array(types)) => union(
                types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.of_type(t, k, indent))
                    .collect(),
            ),
            _ => {
                if k.properties.is_some()
                    || k.additional_properties.is_some()
                    || k.pattern_properties.is_some()
                {
                    self.object(k, indent)
                } else if k.items.is_some() || k.prefix_items.is_some() {
                    self.array(k, indent)
                } else {
                    "unknown".to_owned()
                }
            }
        }
    }

    fn of_type(&mut self, t: &str, k: &Keys<'_>, indent: usize) -> String {
        match t {
            "string" => "string".to_owned(),
            "number" => "number".to_owned(),
            "integer" => {
                self.uses_integer = true;
                "integer".to_owned()
            }
            "boolean" => "boolean".to_owned(),
            "null" => "null".to_owned(),
            "array" => self.array(k, indent),
            "object" => self.object(k, indent),
            _ => "unknown".to_owned(),
        }
    }

    fn array(&mut self, k: &Keys<'_>, indent: usize) -> String {
        self.guarded(|e| {
            let prefix = match (k.prefix_items, k.items) {
                (Some(Value::Array(p)), _) => Some((p, k.items)),
                (None, Some(Value::Array(p))) => Some((p, k.additional_items)),
                _ => None,
            };
            if let Some((prefix, rest)) = prefix {
                let min = k.min_items.and_then(Value::as_u64).unwrap_or(0) as usize;
                let mut parts: Vec<String> = prefix
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let t = e.ty(p, indent, false);
                        if i >= min { wrapped_with(&t, "?") } else { t }
                    })
                    .collect();
                match rest {
                    Some(Value::Bool(false)) => {}
                    None | Some(Value::Bool(true)) => parts.push("...unknown[]".to_owned()),
                    Some(r) => {
                        let r = e.ty(r, indent, false);
                        parts.push(format!("...{}", wrapped_with(&r, "[]")));
                    }
                }
                return format!("[{}]", parts.join(", "));
            }
            match k.items {
                Some(items) => {
                    let singular = e.hint.as_deref().map(singular);
                    let saved = std::mem::replace(&mut e.hint, singular);
                    let inner = e.ty(items, indent, false);
                    e.hint = saved;
                    wrapped_with(&inner, "[]")
                }
                None => "unknown[]".to_owned(),
            }
        })
    }

    fn object(&mut self, k: &Keys<'_>, indent: usize) -> String {
        self.guarded(|e| e.object_body(k, indent))
    }

    fn object_body(&mut self, k: &Keys<'_>, indent: usize) -> String {
        let required: Vec<&str> = k
            .required
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Indentation without an allocation per object (deeper than 32 levels allocates).
        const SPACES: &str = "                                                                ";
        let pad: std::borrow::Cow<'_, str> = if !self.pretty {
            "".into()
        } else if 2 * (indent + 1) <= SPACES.len() {
            SPACES[..2 * (indent + 1)].into()
        } else {
            "  ".repeat(indent + 1).into()
        };
        let mut body = String::with_capacity(128);
        body.push_str(if self.pretty { "{\n" } else { "{ " });
        let mut count = 0usize;
        // The declared properties' types are needed only when an index signature has a
        // type of its own.
        let typed_index = matches!(k.additional_properties, Some(Value::Object(_)))
            || k.pattern_properties.is_some();
        let mut prop_types: Vec<String> = Vec::new();
        let mut any_optional = false;
        let props = k.properties.and_then(Value::as_object);
        if let Some(props) = props {
            for (name, prop) in props {
                let saved = self.hint.replace(name.clone());
                let (mut t, doc) = self.ty_and_doc(prop, indent + 1, true);
                self.hint = saved;
                let optional = !required.contains(&name.as_str());
                if optional && OBJECT_MEMBERS.contains(&name.as_str()) {
                    // An object literal without this key still has the inherited member,
                    // which TypeScript checks against the property's type.
                    t = format!("{} | Object[{}]", wrap(&t), quote(name));
                }
                any_optional |= optional;
                let q = if optional { "?: " } else { ": " };
                self.member(&mut body, &pad, &doc, &[&key(name), q, &t, ";"]);
                count += 1;
                if typed_index {
                    prop_types.push(t);
                }
            }
        }
        // Required keys that have no property schema are still required.
        for r in &required {
            if !props.is_some_and(|p| p.contains_key(*r)) {
                self.member(&mut body, &pad, "", &[&key(r), ": unknown;"]);
                count += 1;
            }
        }
        let mut extra: Vec<String> = Vec::new();
        // The index signature says which keys it is for: TypeScript cannot.
        let mut index_doc = String::new();
        if let Some(Value::Object(patterns)) = k.pattern_properties {
            for (pattern, p) in patterns {
                let t = self.ty(p, indent + 1, false);
                index_doc.push_str(if index_doc.is_empty() {
                    "Keys matching /"
                } else {
                    "; keys matching /"
                });
                index_doc.push_str(pattern);
                index_doc.push_str("/: ");
                index_doc.push_str(&t);
                extra.push(t);
            }
        }
        let closed = match k.additional_properties {
            Some(Value::Bool(false)) => true,
            None | Some(Value::Bool(true)) => {
                if self.pretty {
                    extra.push("unknown".to_owned());
                } else {
                    // Compact: said once for all (OPEN_OBJECTS_NOTE).
                    self.open_objects = true;
                }
                false
            }
            Some(schema) => {
                extra.push(self.ty(schema, indent + 1, false));
                false
            }
        };
        if !extra.is_empty() {
            let index = if extra.iter().any(|t| t == "unknown") {
                "unknown".to_owned()
            } else {
                extra.extend(prop_types);
                if any_optional {
                    extra.push("undefined".to_owned());
                }
                union(extra)
            };
            let name = if self.pretty {
                "[key: string]: "
            } else {
                "[k: string]: "
            };
            if !index_doc.is_empty() {
                index_doc.push_str(if closed { "; no other keys." } else { "." });
            }
            self.member(&mut body, &pad, &index_doc, &[name, &index, ";"]);
            count += 1;
        }
        if count == 0 {
            return if closed {
                "Record<string, never>".to_owned()
            } else {
                "{}".to_owned()
            };
        }
        if self.pretty {
            for _ in 0..indent {
                body.push_str("  ");
            }
        } else {
            body = last_member_open(body);
        }
        body.push('}');
        self.shape(body)
    }

    /// `body`, an object type, or the name it has when it repeats (compact).
    fn shape(&mut self, body: String) -> String {
        let Some(shapes) = self.shapes.as_deref_mut() else {
            return body;
        };
        if body.len() < MIN_SHAPE {
            return body;
        }
        *shapes.seen.entry(body.clone()).or_default() += 1;
        if !shapes.repeated.contains(&body) {
            return body;
        }
        if let Some(name) = shapes.named.get(&body) {
            return name.clone();
        }
        let base = match self.hint.as_deref() {
            Some(h) => type_prefix(h),
            None => self.base.clone(),
        };
        let name = self.names.unique(&base);
        let _ = writeln!(shapes.defs, "type {name} = {body};");
        shapes.named.insert(body, name.clone());
        name
    }

    /// Writes one member of an object type: its JSDoc, then `parts`.
    fn member(&self, body: &mut String, pad: &str, doc: &str, parts: &[&str]) {
        if self.pretty {
            jsdoc_block(body, doc, pad);
            body.push_str(pad);
            for p in parts {
                body.push_str(p);
            }
            body.push('\n');
        } else {
            jsdoc_inline(body, doc);
            for p in parts {
                body.push_str(p);
            }
            body.push(' ');
        }
    }
}

/// The schema at `pointer` (RFC 6901, without the leading `#`) inside `root`.
fn resolve<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let mut at = root;
    for raw in pointer.strip_prefix('/')?.split('/') {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(m) => m.get(&seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Number(_) | Value::Bool(_) | Value::Null => v.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(literal).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => {
            if map.is_empty() {
                return "Record<string, never>".to_owned();
            }
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", key(k), literal(v)))
                .collect();
            format!("{{ {} }}", parts.join("; "))
        }
    }
}

fn union(parts: Vec<String>) -> String {
    combine(parts, "unknown", "never", " | ")
}

/// `parts` combined by `sep` (` | ` or ` & `): `absorbing` if any part is it, `neutral`
/// parts and repeats left out, `neutral` when nothing is left.
fn combine(parts: Vec<String>, absorbing: &str, neutral: &str, sep: &str) -> String {
    let mut unique: Vec<String> = Vec::new();
    for p in parts {
        if p == absorbing {
            return p;
        }
        if p != neutral && !unique.contains(&p) {
            unique.push(p);
        }
    }
    match unique.len() {
        0 => neutral.to_owned(),
        1 => unique.remove(0),
        _ => joined(&unique, sep),
    }
}

/// `parts`, each [`wrap`]ped, joined by `sep`, written in one buffer.
fn joined(parts: &[String], sep: &str) -> String {
    let len = parts.iter().map(|p| p.len() + 2 + sep.len()).sum();
    let mut out = String::with_capacity(len);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        wrap_into(&mut out, p);
    }
    out
}

fn intersection(parts: Vec<String>) -> String {
    combine(parts, "never", "unknown", " & ")
}

/// Parenthesises a type with a top-level `|`, `&` or leading comment where it would bind
/// wrongly (`(a | b)[]`).
fn wrap(t: &str) -> String {
    let mut out = String::with_capacity(t.len() + 2);
    wrap_into(&mut out, t);
    out
}

/// Appends `t` to `out` as [`wrap`] gives it, without a copy of its own.
fn wrap_into(out: &mut String, t: &str) {
    let (pipe, amp) = top_level_ops(t);
    if t.starts_with("/*") || pipe || amp {
        out.push('(');
        out.push_str(t);
        out.push(')');
    } else {
        out.push_str(t);
    }
}

/// `t` with `suffix` after it, [`wrap`]ped: `(a | b)[]`.
fn wrapped_with(t: &str, suffix: &str) -> String {
    let mut out = String::with_capacity(t.len() + 2 + suffix.len());
    wrap_into(&mut out, t);
    out.push_str(suffix);
    out
}

/// Whether `t` has `|` and whether it has `&` outside brackets, strings and comments, in
/// one pass.
fn top_level_ops(t: &str) -> (bool, bool) {
    let (mut pipe, mut amp) = (false, false);
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    let mut in_comment = false;
    let bytes = t.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        if in_comment {
            if c == b'/' && i > 0 && bytes[i - 1] == b'*' {
                in_comment = false;
            }
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'/' if bytes.get(i + 1) == Some(&b'*') => in_comment = true,
            b'{' | b'[' | b'(' | b'<' => depth += 1,
            b'}' | b']' | b')' | b'>' => depth -= 1,
            b'|' if depth == 0 => pipe = true,
            b'&' if depth == 0 => amp = true,
            _ => {}
        }
        if pipe && amp {
            break;
        }
    }
    (pipe, amp)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn one(input: Value) -> String {
        declarations(&[ToolDecl {
            name: "t".into(),
            alias: None,
            description: String::new(),
            annotations: Annotations::default(),
            input_schema: input,
            output_schema: json!({}),
        }])
        .unwrap()
    }

    /// A chain of `$ref`s (no nesting in the JSON text) renders within a bounded depth:
    /// aliases down to [`MAX_REF_NESTING`], then `unknown`, within the 512 KiB the sandbox
    /// keeps below an engine's limit for the host (a debug build's frames included).
    #[test]
    fn a_long_chain_of_references_renders_to_a_bounded_depth() {
        let mut defs = serde_json::Map::new();
        for i in 0..3000 {
            defs.insert(
                format!("a{i}"),
                json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/a{}", i + 1)}}}),
            );
        }
        defs.insert("a3000".into(), json!({"type": "string"}));
        let schema =
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/a0"}}, "$defs": defs});
        let (d, hint) = std::thread::Builder::new()
            .stack_size(512 << 10)
            .spawn(move || {
                let hint = property_hint(&schema, &schema, "x").unwrap().to_string();
                (one(schema), hint)
            })
            .unwrap()
            .join()
            .unwrap();
        // One alias per level, down to the bound; the next level is `unknown`.
        assert_eq!(
            d.matches("next?: TArgsA").count(),
            MAX_REF_NESTING - 1,
            "{d}"
        );
        assert_eq!(d.matches("next?: unknown").count(), 1, "{d}");
        assert!(hint.starts_with("x?: ArgA0"), "{hint}");
    }

    #[test]
    fn declares_args_outputs_and_methods() {
        let d = declarations(&[ToolDecl {
            name: "my-tool".into(),
            alias: Some("my_tool".into()),
            description: "Does */ things.".into(),
            annotations: Annotations::default(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string", "description": "A path"}, "n": {"type": ["integer", "null"]}}, "required": ["path"], "additionalProperties": false}),
            output_schema: json!({"type": "array", "items": {"enum": ["a", "b"]}}),
        }])
        .unwrap();
        assert!(d.starts_with("// @generated"));
        assert!(
            d.contains("\"my-tool\": {\n    /** A path */\n    path: string;\n    n?: integer | null;\n  };"),
            "{d}"
        );
        assert!(d.contains("\"my-tool\": (\"a\" | \"b\")[];"), "{d}");
        assert!(d.contains("my_tool(args: ToolArgsMap[\"my-tool\"])"), "{d}");
        assert!(d.contains("/** Does *\\/ things. */"), "{d}");
        assert!(d.contains("type integer = number;"), "{d}");
    }

    #[test]
    fn a_circular_alias_falls_back_to_unknown() {
        let d = one(
            json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}}, "$ref": "#/$defs/a"}),
        );
        assert!(
            d.contains("type TArgsA = string;") || d.contains("type TArgsA = unknown;"),
            "{d}"
        );
        let d = one(
            json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}, "additionalProperties": false}}, "$ref": "#/$defs/node"}),
        );
        assert!(d.contains("next?: TArgsNode;"), "{d}");
    }

    #[test]
    fn constraints_typescript_cannot_express_are_kept_as_tags() {
        let d = one(json!({"type": "object", "properties": {
            "a": {"type": "string", "not": {"const": ""}},
            "b": {"type": "array", "contains": {"type": "integer"}, "minContains": 2},
            "c": {"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
                  "propertyNames": {"maxLength": 8}, "dependentRequired": {"p": ["q"]},
                  "additionalProperties": false},
            "d": {"if": {"type": "string"}, "then": {"minLength": 1}, "else": {"type": "null"}},
            "e": {"type": "string", "not": {}}
        }}));
        for tag in [
            "@not {\"const\":\"\"}",
            "@minContains 2 @contains {\"type\":\"integer\"}",
            "@propertyNames {\"maxLength\":8} @patternProperties {\"^x-\":{\"type\":\"integer\"}} @dependentRequired {\"p\":[\"q\"]}",
            "@if {\"type\":\"string\"} @then {\"minLength\":1} @else {\"type\":\"null\"}",
        ] {
            assert!(d.contains(tag), "{tag} in {d}");
        }
        assert!(d.contains("e?: never;"), "{d}");
        assert!(!d.contains("@not {}"), "{d}");
    }

    /// A tool for the compact layout's set-wide choices: `read_only` as its hint.
    fn hinted(name: &str, read_only: Option<bool>, destructive: Option<bool>) -> ToolDecl {
        ToolDecl {
            name: name.into(),
            alias: None,
            description: format!("Does {name}."),
            annotations: Annotations {
                read_only,
                destructive,
                open_world: None,
            },
            input_schema: json!({"type": "object", "additionalProperties": false}),
            output_schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}),
        }
    }

    #[test]
    fn a_mostly_read_only_set_tags_the_others_and_says_so_once() {
        let mut tools: Vec<ToolDecl> = (0..6)
            .map(|i| hinted(&format!("r{i}"), Some(true), None))
            .collect();
        tools.push(hinted("w", Some(false), Some(false)));
        tools.push(hinted("d", Some(false), Some(true)));
        tools.push(hinted("u", None, None));
        let mut world = hinted("net", Some(true), None);
        world.annotations.open_world = Some(true);
        tools.push(world);
        let d = declarations_with(&tools, Layout::Compact).unwrap();
        assert!(d.starts_with(&format!("// {READ_ONLY_NOTE}\n")), "{d}");
        for doc in [
            "// Does r0.\nr0:",
            "// [writes] Does w.\nw:",
            "// [destructive] Does d.\nd:",
            // No hint: MCP's defaults assume the worst.
            "// [destructive] Does u.\nu:",
            "// [open-world] Does net.\nnet:",
        ] {
            assert!(d.contains(doc), "{doc} in {d}");
        }
        // The pretty layout tags each tool by what it says.
        let p = declarations_with(&tools, Layout::Pretty).unwrap();
        assert!(!p.contains(READ_ONLY_NOTE), "{p}");
        for doc in [
            "/** [read-only] Does r0. */",
            "/** Does w. */",
            "/** [destructive] Does d. */",
            "/** Does u. */",
            "/** [read-only, open-world] Does net. */",
        ] {
            assert!(p.contains(doc), "{doc} in {p}");
        }
        // Too few read-only tools: they are the ones tagged.
        tools.truncate(2);
        tools.push(hinted("w", Some(false), Some(false)));
        let d = declarations_with(&tools, Layout::Compact).unwrap();
        assert!(!d.contains(READ_ONLY_NOTE), "{d}");
        assert!(d.contains("// [read-only] Does r0.\nr0:"), "{d}");
        assert!(d.contains("// Does w.\nw:"), "{d}");
    }

    #[test]
    fn a_compact_description_is_line_comments_that_no_line_terminator_escapes() {
        let tool = ToolDecl {
            description: "First */ line\r\nsecond line\u{2028}third\u{2029}\n\nfourth".into(),
            ..hinted("t", Some(true), None)
        };
        let d = declarations_with(&[tool], Layout::Compact).unwrap();
        assert!(
            d.contains("interface ToolArgsMap {\n// [read-only] First */ line\n// second line\n// third\n// fourth\nt: Record<string, never>;\n}"),
            "{d}"
        );
    }

    #[test]
    fn a_shared_output_names_the_fewer_side_and_aliases_the_separators_names_have() {
        let tools: Vec<ToolDecl> = ["a-x", "b-x", "c"]
            .into_iter()
            .map(|n| ToolDecl {
                alias: (n != "c").then(|| n.replace('-', "_")),
                ..hinted(n, None, None)
            })
            .chain([ToolDecl {
                output_schema: json!({"type": "string"}),
                ..hinted("d", None, None)
            }])
            .collect();
        let d = declarations_with(&tools, Layout::Compact).unwrap();
        assert!(
            d.contains("interface ToolOutputMap extends Record<Exclude<keyof ToolArgsMap, \"d\">, { ok: boolean }> { d: string }"),
            "{d}"
        );
        assert!(d.contains(ALIAS_TYPE_DASH), "{d}");
        // Half or fewer: the tools that share it are named.
        let mut four = tools[1..].to_vec();
        four.push(ToolDecl {
            output_schema: json!({"type": "string"}),
            ..hinted("e", None, None)
        });
        let two = declarations_with(&four, Layout::Compact).unwrap();
        assert!(
            two.contains("extends Record<\"b-x\" | \"c\", { ok: boolean }>"),
            "{two}"
        );
        // All of them: every key.
        let all = declarations_with(&tools[..3], Layout::Compact).unwrap();
        assert!(
            all.contains(
                "interface ToolOutputMap extends Record<keyof ToolArgsMap, { ok: boolean }> { }"
            ),
            "{all}"
        );
        // A tool whose output is unknown is left to the index signature.
        let unknown = ToolDecl {
            output_schema: json!(true),
            ..hinted("z", None, None)
        };
        let some = declarations_with(&[tools[0].clone(), unknown], Layout::Compact).unwrap();
        assert!(
            some.contains(
                "interface ToolOutputMap { [tool: string]: unknown; \"a-x\": { ok: boolean } }"
            ),
            "{some}"
        );
        let dotted = |name: &str| ToolDecl {
            alias: Some(name.replace(['-', '.'], "_")),
            ..hinted(name, None, None)
        };
        let d = declarations_with(&[dotted("s.t")], Layout::Compact).unwrap();
        assert!(d.contains(ALIAS_TYPE_DOT), "{d}");
        let d = declarations_with(&[dotted("s.t"), dotted("u-v")], Layout::Compact).unwrap();
        assert!(d.contains(ALIAS_TYPE), "{d}");
    }

    #[test]
    fn a_line_break_in_a_server_s_name_stays_inside_its_heading() {
        let d = declarations(&[hinted(
            "g\u{2028}declare const pwned: number; //.tool",
            None,
            None,
        )])
        .unwrap();
        // Only the JSDoc block comments keep it (where a line break is harmless).
        let outside: String = d
            .split("/**")
            .map(|p| p.split_once("*/").map_or(p, |(_, rest)| rest))
            .collect();
        assert!(!outside.contains('\u{2028}'), "{d}");
        assert!(
            d.contains("  // g\\u2028declare const pwned: number; //.*: the tools of server \"g\\u2028declare const pwned: number; //\"\n"),
            "{d}"
        );
    }

    #[test]
    fn colliding_members_are_refused() {
        let t = |name: &str, alias: Option<&str>| ToolDecl {
            name: name.into(),
            alias: alias.map(Into::into),
            description: String::new(),
            annotations: Annotations::default(),
            input_schema: json!({}),
            output_schema: json!({}),
        };
        let e = declarations(&[t("a-b", Some("a_b")), t("a_b", None)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tools `a-b` and `a_b` would both be `tools.a_b`"
        );
        let e = declarations(&[t("x", Some("not ok"))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the alias `not ok` of tool `x` is not an identifier"
        );
    }
}
