//! Parsing accepted form content never panics, and whatever it accepts satisfies every
//! constraint of the schema that was sent (client validation creates no trust).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_runtime::form::ElicitForm;
use mcp_runtime::prelude::*;

#[derive(ElicitChoice, Debug, PartialEq)]
enum Size {
    Small,
    Large,
}

#[derive(ElicitForm, Debug)]
struct Order {
    #[form(min_length = 2, max_length = 20)]
    name: String,
    #[form(format = "email")]
    email: Option<String>,
    #[form(minimum = 1, maximum = 9)]
    count: u8,
    ratio: Option<f64>,
    size: Size,
    #[form(min_items = 1, max_items = 2)]
    extras: Vec<Size>,
    #[form(choices)]
    store: String,
    gift: bool,
}

fuzz_target!(|data: &[u8]| {
    let Ok(serde_json::Value::Object(content)) = serde_json::from_slice(data) else {
        return;
    };
    let choices = Order::choices().store(["north", "south"]);
    if let Ok(order) = Order::from_content(&content, &choices) {
        let chars = order.name.chars().count();
        assert!((2..=20).contains(&chars));
        assert!(order.email.as_deref().is_none_or(|e| e.contains('@')));
        assert!((1..=9).contains(&order.count));
        assert!(order.ratio.is_none_or(f64::is_finite));
        assert!((1..=2).contains(&order.extras.len()));
        assert!(order.store == "north" || order.store == "south");
        let _ = (order.size, order.gift);
    }
});
