//! Differential test of our validator against the `jsonschema` crate (JSON Schema 2020-12,
//! formats asserted, exact big numbers): generated schema/instance pairs plus hand-written
//! edge cases. Agreement must be total on the keywords we support; the deliberate
//! differences are listed, with their reasons, in `deliberate_differences_from_json_schema`.

use codemode::schema::{Node, ParameterSchema, ValueSchema};
use serde_json::{Value, json};

/// xorshift64*: a small deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    fn word(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len() as u64) as usize]
    }
}

const PATTERNS: &[&str] = &[
    "^[a-z]+$",
    "\\d{2}",
    "^a|b$",
    "^.{2,4}$",
    "x",
    "^[A-Z][a-z]*$",
];
const FORMATS: &[(&str, &[&str], &[&str])] = &[
    (
        "date",
        &["2024-02-29", "1999-12-31"],
        &["2023-02-29", "2024-1-01", "24-01-01"],
    ),
    (
        "date-time",
        &["2024-02-29T10:20:30Z", "2024-01-01T00:00:00.5+02:00"],
        &["2024-01-01 10:00:00", "2024-01-01T25:00:00Z"],
    ),
    (
        "uuid",
        &["123e4567-e89b-12d3-a456-426614174000"],
        &["123e4567e89b12d3a456426614174000", "not-a-uuid"],
    ),
    (
        "email",
        &["a@example.com", "first.last@sub.example.org"],
        &["no-at-sign", "a@@b.com"],
    ),
    (
        "uri",
        &["https://example.com/a?b=c#d", "urn:isbn:0451450523"],
        &["no scheme here", "example.com/path"],
    ),
];
const WORDS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "abcd",
    "Zed",
    "x1",
    "12",
    "a b",
    "é",
    "𝄞𝄞",
    "__proto__",
    "constructor",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "10",
    "1.5",
    "-0.5",
    "1.0",
    "100",
    "9007199254740993",
    "18446744073709551617",
    "1e2",
    "0.1",
];

fn number(text: &str) -> Value {
    Value::Number(serde_json::from_str(text).unwrap())
}

fn gen_node(rng: &mut Rng, depth: u32) -> Node {
    let leaf = depth >= 3;
    match rng.below(if leaf { 7 } else { 13 }) {
        0 => {
            let mut n = Node::string();
            if rng.chance(40) {
                n = n.min_length(rng.below(3));
            }
            if rng.chance(40) {
                n = n.max_length(1 + rng.below(4));
            }
            if rng.chance(25) {
                n = n.pattern(*rng.pick(PATTERNS));
            }
            if rng.chance(20) {
                n = n.format(rng.pick(FORMATS).0);
            }
            if rng.chance(15) {
                n = n.string_enum(["a", "ab", "Zed"]);
            }
            n
        }
        1 | 2 => {
            let mut n = if rng.chance(50) {
                Node::integer()
            } else {
                Node::number()
            };
            if rng.chance(40) {
                n = n.minimum(
                    serde_json::from_str::<serde_json::Number>(rng.word(&[
                        "-1",
                        "0",
                        "1.5",
                        "9007199254740992",
                    ]))
                    .unwrap(),
                );
            }
            if rng.chance(40) {
                n = n.maximum(
                    serde_json::from_str::<serde_json::Number>(rng.word(&[
                        "2",
                        "10",
                        "1e2",
                        "18446744073709551616",
                    ]))
                    .unwrap(),
                );
            }
            if rng.chance(20) {
                n = n.exclusive_minimum(0);
            }
            if rng.chance(20) {
                n = n.exclusive_maximum(3);
            }
            if rng.chance(20) {
                let m = rng.word(&["2", "0.5", "3"]);
                n = n.multiple_of(serde_json::from_str::<serde_json::Number>(m).unwrap());
            }
            n
        }
        3 => Node::boolean(),
        4 => Node::null(),
        5 => Node::any(),
        6 => Node::literal(
            rng.pick(&[
                json!("a"),
                json!(1),
                json!(null),
                json!([1, "x"]),
                json!({"k": true}),
            ])
            .clone(),
        ),
        7 => {
            let mut n = Node::array(gen_node(rng, depth + 1));
            if rng.chance(40) {
                n = n.min_items(rng.below(3));
            }
            if rng.chance(40) {
                n = n.max_items(1 + rng.below(3));
            }
            n
        }
        8 => {
            let len = 1 + rng.below(3);
            let mut n = Node::tuple((0..len).map(|_| gen_node(rng, depth + 1)));
            if rng.chance(30) {
                n = n.min_items(rng.below(len + 1));
            }
            n
        }
        9 | 10 => {
            let count = rng.below(4);
            let names = ["a", "b", "__proto__", "toString"];
            let props: Vec<(String, Node)> = (0..count)
                .map(|i| {
                    let mut p = gen_node(rng, depth + 1);
                    if rng.chance(40) {
                        p = p.required();
                    }
                    (names[i as usize].to_owned(), p)
                })
                .collect();
            let n = Node::object(props);
            match rng.below(3) {
                0 => n.additional_properties(true),
                1 => n.additional_properties(false),
                _ => n.additional_schema(gen_node(rng, depth + 1)),
            }
        }
        11 => Node::union((0..1 + rng.below(3)).map(|_| gen_node(rng, depth + 1))),
        _ => {
            if rng.chance(50) {
                Node::any_of((0..1 + rng.below(3)).map(|_| gen_node(rng, depth + 1)))
            } else {
                Node::all_of((0..1 + rng.below(2)).map(|_| gen_node(rng, depth + 1)))
            }
        }
    }
}

fn gen_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth >= 3 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => number(rng.word(NUMBERS)),
        3 => {
            if rng.chance(30) {
                let (_, good, bad) = rng.pick(FORMATS);
                let list = if rng.chance(50) { good } else { bad };
                Value::String((*rng.pick(list)).to_owned())
            } else {
                Value::String((*rng.pick(WORDS)).to_owned())
            }
        }
        4 => Value::String((*rng.pick(WORDS)).to_owned()),
        5 | 6 => {
            let len = rng.below(4);
            Value::Array((0..len).map(|_| gen_value(rng, depth + 1)).collect())
        }
        _ => {
            let keys = ["a", "b", "c", "__proto__", "toString", "constructor"];
            let mut m = serde_json::Map::new();
            for _ in 0..rng.below(4) {
                m.insert((*rng.pick(&keys)).to_owned(), gen_value(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// A value shaped after `node` (often valid, sometimes not: constraints are not solved).
fn sample(rng: &mut Rng, node: &Node, depth: u32) -> Value {
    use codemode::schema::{Additional, NodeKind};
    if depth > 4 || rng.chance(10) {
        return gen_value(rng, depth);
    }
    match node.kind() {
        NodeKind::String(s) => {
            if let Some(values) = &s.enum_values {
                return json!(rng.pick(values));
            }
            if let Some(f) = &s.format
                && let Some((_, good, bad)) = FORMATS.iter().find(|(n, _, _)| n == f)
            {
                let list = if rng.chance(80) { good } else { bad };
                return json!(rng.pick(list));
            }
            json!(rng.pick(WORDS))
        }
        NodeKind::Number(_) | NodeKind::Integer(_) => number(rng.word(NUMBERS)),
        NodeKind::Boolean => json!(rng.chance(50)),
        NodeKind::Null => Value::Null,
        NodeKind::Literal(v) => v.clone(),
        NodeKind::Array(a) => {
            let n = rng.below(4);
            Value::Array((0..n).map(|_| sample(rng, &a.items, depth + 1)).collect())
        }
        NodeKind::Tuple(t) => {
            let n = rng.below(t.prefix.len() as u64 + 2) as usize;
            Value::Array(
                (0..n)
                    .map(|i| match t.prefix.get(i) {
                        Some(p) => sample(rng, p, depth + 1),
                        None => gen_value(rng, depth + 1),
                    })
                    .collect(),
            )
        }
        NodeKind::Object(o) => {
            let mut m = serde_json::Map::new();
            for (k, p) in &o.properties {
                if p.is_required() || rng.chance(50) {
                    m.insert(k.clone(), sample(rng, p, depth + 1));
                }
            }
            if rng.chance(30) {
                let extra = match &o.additional {
                    Some(Additional::Schema(n)) => sample(rng, n, depth + 1),
                    _ => gen_value(rng, depth + 1),
                };
                m.insert("extra".into(), extra);
            }
            Value::Object(m)
        }
        NodeKind::Union(b) | NodeKind::AnyOf(b) | NodeKind::AllOf(b) => {
            let i = rng.below(b.len() as u64) as usize;
            sample(rng, &b[i], depth + 1)
        }
        _ => gen_value(rng, depth),
    }
}

fn oracle(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("oracle refused {schema}: {e}"))
}

fn agree(schema: &ValueSchema, instance: &Value) -> Result<(), String> {
    let exported = schema.to_json_schema();
    let theirs = oracle(&exported).is_valid(instance);
    let ours = schema.validate(instance);
    if ours.is_ok() == theirs {
        Ok(())
    } else {
        Err(format!(
            "disagreement\nschema:   {exported}\ninstance: {instance}\nours:     {ours:?}\njsonschema: {theirs}"
        ))
    }
}

#[test]
fn generated_pairs_agree_with_jsonschema() {
    // CODEMODE_ORACLE_SEED runs another seed (to search for disagreements locally).
    let seed = std::env::var("CODEMODE_ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x00c0_de00_de5e_ed01);
    let mut rng = Rng(seed.max(1));
    let mut pairs = 0;
    let mut valid = 0;
    let mut failures = Vec::new();
    for _ in 0..120 {
        let node = gen_node(&mut rng, 0);
        let schema = ValueSchema::new(node);
        if schema.check().is_err() {
            continue;
        }
        for k in 0..8 {
            let instance = if k % 2 == 0 {
                sample(&mut rng, schema.root(), 0)
            } else {
                gen_value(&mut rng, 0)
            };
            if schema.validate(&instance).is_ok() {
                valid += 1;
            }
            if let Err(e) = agree(&schema, &instance) {
                failures.push(e);
            }
            pairs += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {pairs} pairs disagree:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n\n")
    );
    eprintln!("{pairs} pairs, {valid} valid");
    assert!(pairs >= 900, "only {pairs} pairs");
    assert!(
        valid >= 300,
        "too few valid instances ({valid}) for the test to mean much"
    );
}

#[test]
fn hand_written_edge_cases_agree_with_jsonschema() {
    let obj = |props: Vec<(&str, Node)>| {
        ValueSchema::new(Node::object(props).additional_properties(true))
    };
    let cases: Vec<(ValueSchema, Vec<Value>)> =
        vec![
            // keys that are prototype names in JavaScript are ordinary data keys
            (
                obj(vec![
                    ("__proto__", Node::integer().required()),
                    ("constructor", Node::string()),
                ]),
                vec![
                    json!({"__proto__": 1}),
                    json!({"__proto__": "x"}),
                    json!({"constructor": "c"}),
                    json!({"__proto__": 1, "constructor": 2}),
                ],
            ),
            // `required: ["toString"]` is not satisfied by the prototype
            (
                obj(vec![("toString", Node::any().required())]),
                vec![json!({}), json!({"toString": null})],
            ),
            // integers beyond 2^53 and beyond u64, compared exactly
            (
                ValueSchema::new(Node::integer().maximum(
                    serde_json::from_str::<serde_json::Number>("9007199254740992").unwrap(),
                )),
                vec![
                    number("9007199254740992"),
                    number("9007199254740993"),
                    number("18446744073709551617"),
                    number("-18446744073709551617"),
                ],
            ),
            (
                ValueSchema::new(Node::integer().minimum(
                    serde_json::from_str::<serde_json::Number>("18446744073709551616").unwrap(),
                )),
                vec![
                    number("18446744073709551615"),
                    number("18446744073709551616"),
                    number("18446744073709551617"),
                    number("1e30"),
                ],
            ),
            // 1.0 is an integer; 1.5 is not
            (
                ValueSchema::new(Node::integer()),
                vec![
                    number("1"),
                    number("1.0"),
                    number("1.5"),
                    number("-0"),
                    number("1e2"),
                ],
            ),
            // lengths count code points: two astral characters are two
            (
                ValueSchema::new(Node::string().max_length(2)),
                vec![json!("𝄞𝄞"), json!("𝄞𝄞𝄞"), json!("éé"), json!("ab")],
            ),
            (
                ValueSchema::new(Node::string().min_length(2)),
                vec![json!("𝄞"), json!("𝄞a")],
            ),
            // exact-one unions with 0, 1 and 2 matching branches
            (
                ValueSchema::new(Node::union([Node::string(), Node::integer()])),
                vec![json!(1.5), json!("s"), json!(1)],
            ),
            (
                ValueSchema::new(Node::union([Node::number(), Node::integer()])),
                vec![json!(1), json!(1.5), json!("x")],
            ),
            (
                ValueSchema::new(Node::union([
                    Node::string().max_length(3),
                    Node::string().min_length(2),
                ])),
                vec![json!("a"), json!("ab"), json!("abcd")],
            ),
            // multipleOf with decimals
            (
                ValueSchema::new(
                    Node::number()
                        .multiple_of(serde_json::from_str::<serde_json::Number>("0.1").unwrap()),
                ),
                vec![
                    number("0.3"),
                    number("0.35"),
                    number("1.0000000001"),
                    number("10"),
                ],
            ),
            // uniqueItems compares numbers by value
            (
                ValueSchema::new(Node::array(Node::any()).unique_items()),
                vec![
                    json!([1, 1.0]),
                    json!([1, 2]),
                    json!([{"a": 1}, {"a": 1}]),
                    json!([[1], [1]]),
                ],
            ),
            // formats
            (
                ValueSchema::new(Node::string().format("date-time")),
                vec![
                    json!("2024-02-29T23:59:60Z"),
                    json!("2024-02-29T23:59:59z"),
                    json!("2024-02-30T00:00:00Z"),
                ],
            ),
            // literal objects compare regardless of key order
            (
                ValueSchema::new(Node::literal(json!({"a": 1, "b": [1, 2]}))),
                vec![
                    json!({"b": [1, 2], "a": 1}),
                    json!({"a": 1.0, "b": [1, 2.0]}),
                    json!({"a": 1}),
                ],
            ),
            // never
            (
                ValueSchema::new(Node::never()),
                vec![json!(null), json!({})],
            ),
        ];
    let mut failures = Vec::new();
    let mut count = 0;
    for (schema, instances) in &cases {
        schema.check().unwrap();
        for i in instances {
            count += 1;
            if let Err(e) = agree(schema, i) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(count >= 45, "{count}");
}

#[test]
fn lone_surrogates_cannot_reach_validation() {
    // serde_json refuses JSON text with a lone surrogate, so no `Value` holds one; values
    // from programs are refused at the JS boundary (tests/all/values.rs).
    assert!(serde_json::from_str::<Value>(r#""\ud800""#).is_err());
    assert!(serde_json::from_str::<Value>(r#""\udc00x""#).is_err());
    assert_eq!(
        serde_json::from_str::<Value>(r#""\ud834\udd1e""#).unwrap(),
        json!("𝄞")
    );
}

/// Where we differ from JSON Schema on purpose. Each case states JSON Schema's verdict and
/// ours.
#[test]
fn deliberate_differences_from_json_schema() {
    // 1. (No longer a difference: keywords imply no type when validating, JSON Schema
    //    2020-12 §7.6.1; `{"properties": …}` accepts a string, as the oracle does.)
    let schema = json!({"properties": {"a": {"type": "string"}}});
    assert!(oracle(&schema).is_valid(&json!("a string")));
    let (ours, _) = ValueSchema::from_json_schema(&schema).unwrap();
    assert!(ours.validate(&json!("a string")).is_ok());

    // 2. `nullable: true` (OpenAPI 3.0, which MCP and model APIs emit) allows null; JSON
    //    Schema ignores the keyword.
    let schema = json!({"type": "string", "nullable": true});
    assert!(!oracle(&schema).is_valid(&Value::Null));
    let (ours, _) = ValueSchema::from_json_schema(&schema).unwrap();
    assert!(ours.validate(&Value::Null).is_ok());

    // 3. The root of a tool's arguments is an object that stays open: the node
    //    language's parameters accept unknown root keys; import keeps an explicit
    //    `additionalProperties: false`.
    let p = ParameterSchema::new([("a", Node::string())]);
    assert!(p.validate(&json!({"a": "x", "other": 1})).is_ok());
    let (closed, _) = ParameterSchema::from_json_schema(
        &json!({"type": "object", "properties": {}, "additionalProperties": false}),
    )
    .unwrap();
    assert!(closed.validate(&json!({"other": 1})).is_err());
}
