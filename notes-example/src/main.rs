//! `notes-example`: the demo (no arguments) or `serve --stdio|--http`.

use clap::Parser;
use notes_example::cli::{Cli, Command, EXIT_USAGE};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help / --version: print as clap formats them.
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) => {
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            eprintln!("{first} (see `notes-example --help`)");
            std::process::exit(EXIT_USAGE);
        }
    };
    let code = match cli.command {
        None | Some(Command::Demo) => {
            eprintln!("notes-example: the demo needs the server core, not wired yet");
            1
        }
        Some(Command::Keygen { kid }) => {
            match mcp_runtime::state::StateKeyring::generate_key_line(&kid) {
                Ok(line) => {
                    println!("{line}");
                    0
                }
                Err(e) => {
                    eprintln!("notes-example: {e}");
                    EXIT_USAGE
                }
            }
        }
        Some(Command::Serve(_args)) => {
            eprintln!("notes-example: serve is not wired yet");
            1
        }
    };
    std::process::exit(code);
}
