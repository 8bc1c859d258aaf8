//! `notes-example`: the demo (no arguments) or `serve --stdio|--http`.

use clap::Parser;
use notes_example::cli::{Cli, Command, EXIT_USAGE, LogFormat};

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
            // One line: clap's first line, plus the item it introduces when it ends in ':'
            // ("required arguments were not provided:" / "  --workspace <DIR>").
            let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut message = lines.next().unwrap_or("invalid arguments").to_owned();
            if message.ends_with(':')
                && let Some(item) = lines.next()
            {
                message.push(' ');
                message.push_str(item);
            }
            eprintln!("notes-example: {message} (see `notes-example --help`)");
            std::process::exit(EXIT_USAGE);
        }
    };
    let code = match cli.command {
        None | Some(Command::Demo) => notes_example::demo::run(),
        Some(Command::Import(args)) => notes_example::serve::import(&args),
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
        Some(Command::Serve(args)) => {
            use tracing_subscriber::Layer as _;
            use tracing_subscriber::layer::SubscriberExt as _;
            use tracing_subscriber::util::SubscriberInitExt as _;
            // OpenTelemetry export runs threads of its own, so it starts after the sandbox
            // (`run_with`); its layer joins the subscriber now.
            let otel = notes_example::telemetry::prepare(args.otlp_endpoint.as_deref());
            // Logs go to stderr: on stdio, stdout carries only MCP messages.
            let filter = tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
            let logs = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false);
            let logs = match args.log_format {
                LogFormat::Text => logs.boxed(),
                // The request span's fields ride on its closing event.
                LogFormat::Json => logs
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .boxed(),
            };
            tracing_subscriber::registry()
                .with(filter)
                .with(logs)
                .with(otel.as_ref().map(|otel| otel.layer()))
                .init();
            let code = match notes_example::serve::prepare(&args) {
                Ok(prepared) => notes_example::serve::run_with(prepared, || {
                    notes_example::telemetry::start_export(otel.as_ref()).map_err(|e| e.to_string())
                }),
                Err(e) => {
                    eprintln!("notes-example: {e}");
                    EXIT_USAGE
                }
            };
            notes_example::telemetry::stop(otel);
            code
        }
    };
    std::process::exit(code);
}
