//! What a program receives from an upstream tool: an MCP `CallToolResult` as one value.
//!
//! | the result | the value |
//! | --- | --- |
//! | `isError: true` | the call fails: `ToolCallError` with the text of its content |
//! | the tool has an `outputSchema` | its `structuredContent` (validated against the schema) |
//! | exactly one `text` item | that text, a string |
//! | no content, only `structuredContent` | the `structuredContent` |
//! | no content at all | `null` |
//! | anything else | the list of items: `{type: "text", text}`, `{type: "image" \| "audio", mimeType, size}` (`size` in decoded bytes; `data` too when the server's `include_binary` is set), `{type: "resource", resource: {uri, mimeType?, text? \| size}}`, `{type: "resource_link", uri, name, …}` |

use serde_json::{Map, Value};

/// The value of a successful result, or the message of a failed one.
pub(crate) fn result_value(
    result: &Value,
    has_output_schema: bool,
    include_binary: bool,
) -> Result<Value, String> {
    let content: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let structured = result.get("structuredContent");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = texts(content);
        return Err(if !text.is_empty() {
            text
        } else if let Some(s) = structured {
            s.to_string()
        } else {
            "the tool reported an error without a message".to_owned()
        });
    }
    if has_output_schema {
        return structured.cloned().ok_or_else(|| {
            "the tool declares an outputSchema but its result has no structuredContent".to_owned()
        });
    }
    match content {
        [] => Ok(structured.cloned().unwrap_or(Value::Null)),
        [item] if item.get("type").and_then(Value::as_str) == Some("text") => Ok(item
            .get("text")
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()))),
        items => Ok(Value::Array(
            items.iter().map(|i| item(i, include_binary)).collect(),
        )),
    }
}

/// The text items of `content`, joined by line breaks.
fn texts(content: &[Value]) -> String {
    content
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|i| i.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One content item as the program sees it: annotations dropped, base64 replaced by its
/// size unless `include_binary`.
fn item(item: &Value, include_binary: bool) -> Value {
    let Some(fields) = item.as_object() else {
        return item.clone();
    };
    let mut out = Map::new();
    let mut size = None;
    for (k, v) in fields {
        match k.as_str() {
            "annotations" | "_meta" => {}
            "data" | "blob" if !include_binary => size = Some(base64_len(v)),
            "resource" => {
                out.insert(k.clone(), self::item(v, include_binary));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(size) = size {
        out.insert("size".into(), Value::from(size));
    }
    Value::Object(out)
}

/// The number of bytes that base64 text decodes to.
fn base64_len(v: &Value) -> u64 {
    let s = v.as_str().unwrap_or("").trim_end();
    let padding = s.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    let digits = s.bytes().filter(|b| !b.is_ascii_whitespace()).count() - padding;
    (digits as u64 * 6) / 8
}

#[cfg(test)]
mod tests {
    use super::result_value;
    use serde_json::json;

    #[test]
    fn each_shape_of_result_becomes_its_value() {
        let text = json!({"content": [{"type": "text", "text": "Echo: hi"}]});
        assert_eq!(result_value(&text, false, false), Ok(json!("Echo: hi")));

        let structured = json!({"content": [{"type": "text", "text": "{\"sum\":3}"}],
                                 "structuredContent": {"sum": 3}});
        assert_eq!(
            result_value(&structured, true, false),
            Ok(json!({"sum": 3}))
        );
        assert_eq!(
            result_value(&json!({"content": []}), true, false),
            Err("the tool declares an outputSchema but its result has no structuredContent".into())
        );

        // 8 bytes of PNG: "iVBORw0KGgo=" decodes to 8 bytes.
        let mixed = json!({"content": [
            {"type": "text", "text": "a tiny image:", "annotations": {"priority": 1}},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "resource", "resource": {"uri": "file:///x", "mimeType": "application/octet-stream", "blob": "AAEC"}}
        ]});
        assert_eq!(
            result_value(&mixed, false, false),
            Ok(json!([
                {"type": "text", "text": "a tiny image:"},
                {"type": "image", "mimeType": "image/png", "size": 8},
                {"type": "resource", "resource": {"uri": "file:///x", "mimeType": "application/octet-stream", "size": 3}}
            ]))
        );
        assert_eq!(
            result_value(&mixed, false, true).unwrap()[1],
            json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
        );

        assert_eq!(
            result_value(&json!({"content": []}), false, false),
            Ok(json!(null))
        );
        assert_eq!(
            result_value(
                &json!({"content": [], "structuredContent": [1]}),
                false,
                false
            ),
            Ok(json!([1]))
        );
    }

    #[test]
    fn an_error_result_fails_with_its_text() {
        let e = json!({"isError": true, "content": [{"type": "text", "text": "no such file"},
                                                    {"type": "text", "text": "try another"}]});
        assert_eq!(
            result_value(&e, true, false),
            Err("no such file\ntry another".into())
        );
        assert_eq!(
            result_value(&json!({"isError": true}), false, false),
            Err("the tool reported an error without a message".into())
        );
    }
}
