// Attribute values the field's type can never take (an integer type's range, an enum's
// values) are refused at the attribute, with the type known through aliases too.
use mcp_runtime::{ElicitChoice, ElicitForm};

#[derive(ElicitChoice)]
#[form(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

type Percent = u8;

#[derive(ElicitForm)]
struct Settings {
    #[form(default = 500)]
    volume: u8,
    #[form(default = 1000)]
    brightness: Option<Percent>,
    #[form(minimum = 300)]
    level: u8,
    #[form(maximum = -1)]
    retries: u32,
    #[form(default = "Blue")]
    color: Color,
    #[form(min_items = 3)]
    accents: Vec<Color>,
    // None of these is reported:
    #[form(default = 255, minimum = -5)]
    gain: u8,
    #[form(default = "green")]
    background: Color,
    #[form(min_items = 2)]
    both: Vec<Color>,
    #[form(default = "anything")]
    motto: String,
}

fn main() {}
