//! (a) JSON Schema import: any JSON document as a parameters schema and as a value
//! schema. Invariants: no panic; a schema that imports exports to JSON Schema that imports
//! again, to the same export.
#![no_main]

use codemode::schema::{ParameterSchema, ValueSchema};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok((imported, _)) = ValueSchema::from_json_schema(&schema) {
        let exported = imported.to_json_schema();
        let (again, _) = ValueSchema::from_json_schema(&exported)
            .unwrap_or_else(|e| panic!("an export does not import: {e}\n{exported}"));
        assert_eq!(again.to_json_schema(), exported);
    }
    if let Ok((imported, _)) = ParameterSchema::from_json_schema(&schema) {
        let exported = imported.to_json_schema();
        ParameterSchema::from_json_schema(&exported)
            .unwrap_or_else(|e| panic!("an export does not import: {e}\n{exported}"));
    }
});
