// Attribute combinations no answer, or no default, could satisfy are refused at the attribute
// that has to change, before the form ships (at run time the user would be re-asked forever).
use mcp_runtime::{ElicitChoice, ElicitForm};

#[derive(ElicitChoice)]
enum Color {
    Red,
    Green,
    Blue,
}

#[derive(ElicitForm)]
struct Search {
    // A default outside the field's own bounds.
    #[form(default = 500, maximum = 100)]
    limit: u32,
    #[form(default = 0, minimum = 1)]
    page: u32,
    #[form(default = -0.5, minimum = 0.0, maximum = 1.0)]
    ratio: f64,
    // Inverted bounds.
    #[form(minimum = 10, maximum = -5)]
    offset: i32,
    #[form(min_length = 10, max_length = 5)]
    query: String,
    #[form(min_items = 3, max_items = 2)]
    colors: Vec<Color>,
    // A default text longer or shorter than the field allows.
    #[form(default = "everything", max_length = 5)]
    scope: String,
    #[form(default = "", min_length = 1)]
    language: Option<String>,
    // None of these is reported:
    #[form(default = 100, minimum = 1, maximum = 100)]
    per_page: u32,
    #[form(default = 0.5, minimum = 0, maximum = 1)]
    weight: f64,
    #[form(default = "en", min_length = 2, max_length = 2)]
    locale: String,
}

fn main() {}
