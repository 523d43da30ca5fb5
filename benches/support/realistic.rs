//! The realistic tool arguments the validation bench uses (included by `benches/schema.rs`).

use codemode::schema::{Node, ParameterSchema};
use serde_json::json;

/// A realistic tool's arguments: 20 fields, nested arrays of objects.
pub fn realistic() -> (ParameterSchema, serde_json::Value) {
    let item = Node::object([
        (
            "sku",
            Node::string().pattern("^[A-Z]{3}-\\d{4}$").required(),
        ),
        (
            "quantity",
            Node::integer().minimum(1).maximum(1000).required(),
        ),
        ("price", Node::number().minimum(0).required()),
        (
            "tags",
            Node::array(Node::string().max_length(20)).max_items(10),
        ),
    ])
    .additional_properties(false);
    let params = ParameterSchema::new([
        ("order_id", Node::string().format("uuid").required()),
        (
            "customer",
            Node::string().min_length(1).max_length(100).required(),
        ),
        ("email", Node::string().format("email")),
        ("created", Node::string().format("date-time").required()),
        (
            "status",
            Node::string()
                .string_enum(["new", "paid", "shipped", "done"])
                .required(),
        ),
        ("priority", Node::integer().minimum(0).maximum(5)),
        (
            "items",
            Node::array(item).min_items(1).max_items(100).required(),
        ),
        ("notes", Node::string().max_length(2000)),
        ("gift", Node::boolean()),
        ("discount", Node::number().minimum(0).maximum(1)),
        (
            "currency",
            Node::string().string_enum(["EUR", "USD", "GBP"]),
        ),
        (
            "address",
            Node::object([
                ("street", Node::string().required()),
                ("city", Node::string().required()),
                ("zip", Node::string().pattern("^\\d{5}$")),
                (
                    "country",
                    Node::string().min_length(2).max_length(2).required(),
                ),
            ])
            .additional_properties(false),
        ),
        ("phone", Node::union([Node::string(), Node::null()])),
        ("channel", Node::literal("web")),
        ("coupons", Node::array(Node::string()).max_items(5)),
        ("weight_kg", Node::number().exclusive_minimum(0)),
        ("fragile", Node::boolean()),
        ("warehouse", Node::integer()),
        (
            "metadata",
            Node::object::<&str>([]).additional_schema(Node::string()),
        ),
        ("retries", Node::integer().minimum(0)),
    ]);
    let items: Vec<_> = (0..8)
        .map(|i| json!({"sku": format!("ABC-{:04}", 1000 + i), "quantity": i + 1, "price": 9.99 + i as f64, "tags": ["blue", "sale"]}))
        .collect();
    let value = json!({
        "order_id": "123e4567-e89b-12d3-a456-426614174000", "customer": "Ada Lovelace",
        "email": "ada@example.com", "created": "2024-02-29T12:00:00Z", "status": "paid",
        "priority": 2, "items": items, "notes": "leave at the door", "gift": false,
        "discount": 0.1, "currency": "EUR",
        "address": {"street": "1 Analytical Way", "city": "London", "zip": "12345", "country": "GB"},
        "phone": null, "channel": "web", "coupons": ["WELCOME"], "weight_kg": 2.5,
        "fragile": true, "warehouse": 7, "metadata": {"source": "app"}, "retries": 0
    });
    (params, value)
}
