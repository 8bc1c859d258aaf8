use mcp_runtime::{ElicitChoice, ElicitForm};

#[derive(ElicitForm)]
enum NotAStruct {
    A,
}

#[derive(ElicitForm)]
struct Tuple(String);

#[derive(ElicitForm)]
struct Generic<T> {
    value: T,
}

#[derive(ElicitChoice)]
enum Payload {
    Text(String),
}

fn main() {}
