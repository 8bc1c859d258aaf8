//! The reference notes server. The demo is not written yet.

fn main() {
    eprintln!("notes-example: the demo is not implemented yet");
    std::process::exit(2);
}
