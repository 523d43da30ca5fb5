//! The generated types of every fixture, compiled. See `build.rs` and the tests below.

macro_rules! generated {
    ($($name:ident),*) => {$(
        #[allow(clippy::all, clippy::pedantic, missing_docs)]
        pub mod $name {
            include!(concat!(env!("OUT_DIR"), "/", stringify!($name), ".rs"));
        }
    )*};
}

generated!(
    builtin,
    server_everything,
    server_filesystem,
    server_memory,
    adversarial
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn valid_arguments_deserialize_into_the_generated_types() {
        let args: builtin::read_file::Args =
            serde_json::from_value(json!({"path": "src/lib.rs", "offset": 3, "limit": 10}))
                .unwrap();
        assert_eq!(args.path, "src/lib.rs");
        assert_eq!(args.offset.map(|n| n.get()), Some(3));

        let args: server_filesystem::read_text_file::Args =
            serde_json::from_value(json!({"path": "/tmp/x", "head": 5})).unwrap();
        assert_eq!(args.path, "/tmp/x");

        let args: server_memory::create_entities::Args = serde_json::from_value(json!({
            "entities": [{"name": "a", "entityType": "person", "observations": ["x"]}]
        }))
        .unwrap();
        assert_eq!(args.entities.len(), 1);

        let out: builtin::glob::Output =
            serde_json::from_value(json!({"matches": ["a.rs"], "total": 1, "truncated": false}))
                .unwrap();
        assert_eq!(out.total, 1);
    }

    #[test]
    fn invalid_arguments_are_refused() {
        // A missing required key, a wrong type, and an unknown key where the object is closed.
        assert!(serde_json::from_value::<builtin::read_file::Args>(json!({"offset": 1})).is_err());
        assert!(serde_json::from_value::<builtin::read_file::Args>(json!({"path": 7})).is_err());
        assert!(
            serde_json::from_value::<builtin::glob::Output>(
                json!({"matches": [], "total": 0, "truncated": false, "extra": 1})
            )
            .is_err()
        );
    }

    #[test]
    fn real_servers_and_the_builtin_tools_get_real_types() {
        for (name, code) in [
            (
                "builtin",
                include_str!(concat!(env!("OUT_DIR"), "/builtin.rs")),
            ),
            (
                "server_everything",
                include_str!(concat!(env!("OUT_DIR"), "/server_everything.rs")),
            ),
            (
                "server_filesystem",
                include_str!(concat!(env!("OUT_DIR"), "/server_filesystem.rs")),
            ),
            (
                "server_memory",
                include_str!(concat!(env!("OUT_DIR"), "/server_memory.rs")),
            ),
        ] {
            assert!(code.starts_with("// @generated"), "{name}");
            assert!(!code.contains("Not generated"), "{name} has a fallback");
        }
        // The adversarial schemas: what typify cannot express falls back to a JSON value,
        // with the reason, and everything still compiles.
        let adversarial = include_str!(concat!(env!("OUT_DIR"), "/adversarial.rs"));
        assert_eq!(adversarial.matches("/// Not generated (").count(), 6);
        assert!(
            adversarial
                .contains("Not generated (typify gives two items or fields the name `Node`)")
        );
    }
}
