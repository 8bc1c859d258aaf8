use std::collections::HashMap;

use mcp_runtime::ElicitForm;

struct Address {
    street: String,
}

#[derive(ElicitForm)]
struct Signup {
    user_password: String,
    api_key: Option<String>,
    extra: HashMap<String, String>,
    point: (i32, i32),
    nick: &'static str,
    lucky_numbers: Vec<i32>,
    #[form(format = "phone")]
    phone: String,
    #[form(min_length = 3)]
    age: u8,
}

#[derive(ElicitForm)]
struct Shipping {
    address: Address,
}

fn main() {}
