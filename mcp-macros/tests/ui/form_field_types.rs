use std::collections::HashMap;

use mcp_runtime::ElicitForm;

/// A user's own type that is no form field kind.
struct Money {
    cents: i64,
}

#[derive(ElicitForm)]
struct Order {
    price: Money,
    extra: HashMap<String, String>,
    lucky_numbers: Vec<i32>,
    tags: Vec<String>,
    big: u128,
    #[form(min_length = 3)]
    age: u8,
    #[form(minimum = 0.5)]
    count: u32,
    #[form(max_items = 2)]
    note: Option<String>,
    #[form(default = "yes")]
    agree: bool,
    #[form(choices)]
    pick: u8,
}

fn main() {}
