//! Argument errors that teach: the expected shape of the property a violation is about, in
//! TypeScript as the compact declarations show it (`args.limit: expected number, got
//! string — limit?: number /* @minimum 1 @maximum 1000 */`).

use serde_json::Value;

use super::validate::ValidationReport;

/// Longest hint, in characters; a longer type is cut with `…`.
const MAX_HINT: usize = 240;

/// One step of a violation's path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of a path as violations write it (`args.a["b c"][2]`), after its root name.
fn steps(path: &str) -> Option<Vec<Step>> {
    let start = path.find(['.', '[']).unwrap_or(path.len());
    let mut rest = &path[start..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(Step::Key(r[..end].to_owned()));
            rest = &r[end..];
        } else if rest.starts_with("[\"") {
            // A JSON string: read it with serde_json from its opening quote.
            let mut stream = serde_json::Deserializer::from_str(&rest[1..]).into_iter::<String>();
            let key = stream.next()?.ok()?;
            let used = 1 + stream.byte_offset();
            rest = rest[used..].strip_prefix(']')?;
            out.push(Step::Key(key));
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            out.push(Step::Index(r[..end].parse().ok()?));
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// `schema` with a local `$ref` (`#/…`) followed, a few times at most.
fn follow<'v>(root: &'v Value, mut schema: &'v Value) -> &'v Value {
    for _ in 0..8 {
        let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
        else {
            break;
        };
        schema = target;
    }
    schema
}

/// Most schemas the hint looks into through `anyOf` / `oneOf` / `allOf` branches (a
/// reference may lead back to where it started, and branches may fan out).
const MAX_VISITS: usize = 256;

/// The schema of `step` below `schema`: a property, or an item; looked for in the
/// branches of `anyOf`, `oneOf` and `allOf` when `schema` itself does not say.
fn below<'v>(
    root: &'v Value,
    schema: &'v Value,
    step: &Step,
    visits: &mut usize,
) -> Option<&'v Value> {
    let own = match step {
        Step::Key(k) => schema.get("properties").and_then(|p| p.get(k)),
        Step::Index(i) => schema
            .get("prefixItems")
            .and_then(|p| p.get(*i))
            .or_else(|| schema.get("items")),
    };
    *visits += 1;
    if own.is_some() || *visits > MAX_VISITS {
        return own;
    }
    branches(schema).find_map(|b| below(root, follow(root, b), step, visits))
}

/// The object schema that declares property `name`: `schema`, or one of its branches.
fn declaring<'v>(
    root: &'v Value,
    schema: &'v Value,
    name: &str,
    visits: &mut usize,
) -> Option<&'v Value> {
    if schema.get("properties").and_then(|p| p.get(name)).is_some() {
        return Some(schema);
    }
    *visits += 1;
    if *visits > MAX_VISITS {
        return None;
    }
    branches(schema).find_map(|b| declaring(root, follow(root, b), name, visits))
}

/// The branches of `anyOf`, `oneOf` and `allOf`.
fn branches(schema: &Value) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .filter_map(|k| schema.get(k).and_then(Value::as_array))
        .flatten()
}

/// The hint for the property at `path` in arguments of the JSON Schema `root`; `None` when
/// the path does not end at a declared property.
pub(crate) fn property_hint(root: &Value, path: &str) -> Option<String> {
    let steps = steps(path)?;
    let (last, parents) = steps.split_last()?;
    let Step::Key(name) = last else {
        return None;
    };
    let mut schema = follow(root, root);
    for step in parents {
        schema = follow(root, below(root, schema, step, &mut 0)?);
    }
    let parent = declaring(root, schema, name, &mut 0)?;
    let mut hint = codemode_codegen::property_hint(root, parent, name)?;
    let full = hint.to_string();
    if full.chars().count() <= MAX_HINT {
        return Some(full);
    }
    // Too long: the doc gives way first (so the types it names stay defined), then the
    // end is cut.
    let doc_chars = hint.doc.chars().count();
    let over = full.chars().count() - MAX_HINT;
    hint.doc = if doc_chars > over + 10 {
        let kept: String = hint.doc.chars().take(doc_chars - over - 1).collect();
        format!("{kept}…")
    } else {
        String::new()
    };
    let text = hint.to_string();
    if text.chars().count() <= MAX_HINT {
        return Some(text);
    }
    let cut: String = text.chars().take(MAX_HINT).collect();
    // A comment cut open is closed again.
    let close = if cut.rfind("/*") > cut.rfind("*/") {
        " */"
    } else {
        ""
    };
    Some(format!("{cut}…{close}"))
}

/// `report`, one violation per line, each followed by the hint for its property when there
/// is one (see [`property_hint`]); `root` is the arguments' JSON Schema.
pub(crate) fn report_with_hints(report: &ValidationReport, root: &Value) -> String {
    let mut out = String::new();
    for (i, v) in report.violations.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&v.to_string());
        // A line that introduces the next ones (a union's closest branch) gets no hint.
        if v.message.ends_with(':') {
            continue;
        }
        if let Some(hint) = property_hint(root, &v.path) {
            out.push_str(" — ");
            out.push_str(&hint);
        }
    }
    if report.omitted > 0 {
        out.push_str(&format!("\n… and {} more", report.omitted));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_read_as_violations_write_them() {
        assert_eq!(
            steps(r#"args.a["b c\"]"][2].d"#).unwrap(),
            vec![
                Step::Key("a".into()),
                Step::Key("b c\"]".into()),
                Step::Index(2),
                Step::Key("d".into())
            ]
        );
        assert_eq!(steps("args").unwrap(), vec![]);
        assert!(steps("args[x]").is_none());
    }

    #[test]
    fn a_long_doc_gives_way_to_the_types_the_hint_names() {
        let long = "word ".repeat(80);
        let root = json!({"type": "object", "properties": {
            "b": {"$ref": "#/$defs/Big", "description": long}
        }, "$defs": {"Big": {"type": "object", "properties": {"x": {"type": "number"}}}}});
        let hint = property_hint(&root, "args.b").unwrap();
        assert!(hint.chars().count() <= MAX_HINT + 1, "{hint}");
        assert!(hint.starts_with("b?: ArgBig /* word word"), "{hint}");
        assert!(
            hint.ends_with("… */; type ArgBig = { x?: number }"),
            "{hint}"
        );
    }

    #[test]
    fn hints_follow_nested_objects_arrays_and_references() {
        let root = json!({"type": "object", "properties": {
            "limit": {"type": "number", "minimum": 1, "maximum": 1000},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
        }, "required": ["items"], "$defs": {"Item": {"type": "object", "properties": {
            "name": {"type": "string", "description": "The item's name."}
        }, "required": ["name"]}}});
        assert_eq!(
            property_hint(&root, "args.limit").unwrap(),
            "limit?: number /* @minimum 1 @maximum 1000 */"
        );
        assert_eq!(
            property_hint(&root, "args.items[3].name").unwrap(),
            "name: string /* The item's name. */"
        );
        assert!(property_hint(&root, "args.nope").is_none());
        // A union that leads back to itself is looked into a bounded number of times.
        let cyclic = json!({"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "object"}]}},
            "type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}});
        assert!(property_hint(&cyclic, "args.a.x").is_none());
        assert!(property_hint(&root, "args.items[0]").is_none());
    }
}
