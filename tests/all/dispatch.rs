//! The registry and the pipeline, called directly.

use codemode::schema::{Node, ParameterSchema, ValueSchema};
use codemode::{ErrorKind, RegisterError, Registry, Tool, ToolError};
use serde_json::json;

use crate::support::test_tool;

fn tool(name: &str) -> Tool {
    test_tool(name).returns(json!("ok"))
}

#[tokio::test]
async fn dropping_the_handle_unregisters_the_tool() {
    let registry = Registry::new();
    let handle = registry.register(tool("t")).unwrap();
    assert_eq!(
        registry.call("t", json!({})).await.value(),
        Some(&json!("ok"))
    );
    drop(handle);
    let outcome = registry.call("t", json!({})).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
    assert!(registry.names().is_empty());
}

#[test]
fn colliding_and_reserved_names_are_refused() {
    let registry = Registry::new();
    let _a = registry.register(tool("a-b")).unwrap();
    assert_eq!(
        registry.register(tool("a_b")).unwrap_err(),
        RegisterError::AliasCollision {
            name: "a_b".into(),
            alias: "a_b".into(),
            other: "a-b".into()
        }
    );
    assert!(matches!(
        registry.register(tool("a-b")),
        Err(RegisterError::Duplicate(_))
    ));
    for name in ["then", "constructor", "__proto__", "toString", "", "a\nb"] {
        assert!(
            matches!(
                registry.register(tool(name)),
                Err(RegisterError::InvalidName { .. })
            ),
            "{name:?} must be refused"
        );
    }
}

#[test]
fn definition_errors_are_caught_when_the_tool_is_built() {
    let err = Tool::builder("t")
        .parameters(ParameterSchema::new([(
            "o",
            Node::object([("x", Node::string())]),
        )]))
        .execute(|_a, _e| async { Ok(json!(1)) })
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `t`: parameters.o: an object node must declare additionalProperties (true, false or a node)"
    );
    let err = Tool::builder("t")
        .output(ValueSchema::new(Node::string().pattern("(unclosed")))
        .execute(|_a, _e| async { Ok(json!(1)) })
        .build()
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "tool `t`: output.pattern: invalid ECMAScript regular expression /(unclosed/"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn errors_panics_and_bad_outputs_become_error_outcomes() {
    let registry = Registry::new();
    let _f = registry
        .register(test_tool("fails").execute(|_a, _e| async { Err(ToolError::new("nope")) }))
        .unwrap();
    let _p = registry
        .register(test_tool("panics").execute(
            |_a, _e| -> std::future::Ready<Result<serde_json::Value, ToolError>> {
                panic!("sync panic")
            },
        ))
        .unwrap();
    let _o = registry
        .register(
            test_tool("bad_output")
                .output(ValueSchema::new(Node::integer()))
                .returns(json!(1.5)),
        )
        .unwrap();
    let o = registry.call("fails", json!({})).await;
    assert_eq!(
        (o.error_kind(), o.text()),
        (Some(ErrorKind::Failed), "nope".to_owned())
    );
    let o = registry.call("panics", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::Panicked));
    assert_eq!(o.text(), "tool panics failed unexpectedly: sync panic");
    let o = registry.call("bad_output", json!({})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::InvalidOutput));
    assert_eq!(
        o.text(),
        "tool bad_output returned output that does not match its schema:\noutput: expected integer, got 1.5"
    );
}

#[tokio::test]
async fn a_direct_call_validates_and_renders() {
    let registry = Registry::new();
    let _t = registry
        .register(
            test_tool("greet")
                .parameters(ParameterSchema::new([(
                    "name",
                    Node::string().min_length(1).required(),
                )]))
                .output(ValueSchema::new(Node::string()))
                .execute(|args, _e| async move {
                    Ok(json!(format!("hi {}", args["name"].as_str().unwrap_or(""))))
                }),
        )
        .unwrap();
    let o = registry.call("greet", json!({"name": "ada"})).await;
    assert_eq!(o.text(), "hi ada");
    let o = registry.call("greet", json!({"name": ""})).await;
    assert_eq!(o.error_kind(), Some(ErrorKind::InvalidArguments));
    assert_eq!(
        o.text(),
        "invalid arguments for greet:\nargs.name: expected at least 1 characters, got 0 — name: string /* @minLength 1 */"
    );
    let o = registry.call("greet", json!([1])).await;
    assert_eq!(
        o.text(),
        "invalid arguments for greet:\nargs: expected an object of named arguments, got array"
    );
}
