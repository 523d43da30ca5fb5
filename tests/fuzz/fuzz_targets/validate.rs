//! (b) Validation of arbitrary JSON against arbitrary valid schemas: the input is a
//! schema and an instance, two JSON documents separated by a NUL byte. Invariants: no
//! panic; a failure names at least one reason.
#![no_main]

use codemode::schema::ValueSchema;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |b| *b == 0);
    let (Some(schema), Some(instance)) = (parts.next(), parts.next()) else {
        return;
    };
    let (Ok(schema), Ok(instance)) = (
        serde_json::from_slice::<serde_json::Value>(schema),
        serde_json::from_slice::<serde_json::Value>(instance),
    ) else {
        return;
    };
    let Ok((schema, _)) = ValueSchema::from_json_schema(&schema) else {
        return;
    };
    if let Err(report) = schema.validate(&instance) {
        assert!(!report.to_string().is_empty());
    }
});
