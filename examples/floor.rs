fn main() {
    // the 1 MB document as JSON text
    let mut items = Vec::new();
    for i in 0..6300 {
        items.push(serde_json::json!({"id": i, "name": format!("record number {i}"), "score": i as f64 * 1.25, "active": i % 2 == 0, "tags": ["alpha", "beta", "gamma"], "nested": {"depth": 1, "label": format!("x{i}"), "values": [i, i + 1, i + 2]}}));
    }
    let text = serde_json::to_string(&items).unwrap();
    let t = std::time::Instant::now();
    for _ in 0..20 {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        std::hint::black_box(v);
    }
    eprintln!("serde from_str: {:?}", t.elapsed() / 20);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let t = std::time::Instant::now();
    for _ in 0..20 {
        std::hint::black_box(serde_json::to_string(&v).unwrap());
    }
    eprintln!("serde to_string: {:?}", t.elapsed() / 20);
    let t = std::time::Instant::now();
    for _ in 0..20 {
        std::hint::black_box(v.clone());
    }
    eprintln!("Value clone+drop: {:?}", t.elapsed() / 20);
    let rt = rquickjs::Runtime::new().unwrap();
    let ctx = rquickjs::Context::full(&rt).unwrap();
    ctx.with(|ctx| {
        let t = std::time::Instant::now();
        for _ in 0..20 {
            std::hint::black_box(ctx.json_parse(text.clone()).unwrap());
        }
        eprintln!("JSON.parse: {:?}", t.elapsed() / 20);
        let val = ctx.json_parse(text.clone()).unwrap();
        let t = std::time::Instant::now();
        for _ in 0..20 {
            std::hint::black_box(ctx.json_stringify(val.clone()).unwrap());
        }
        eprintln!("JSON.stringify: {:?}", t.elapsed() / 20);
    });
}
