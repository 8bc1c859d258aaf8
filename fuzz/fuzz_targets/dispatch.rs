//! Whole-server dispatch of arbitrary bytes: never a panic, and every reply is one JSON-RPC
//! response (with `jsonrpc: "2.0"` and exactly one of `result`/`error`).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_runtime::prelude::*;

#[args]
struct Args {
    title: String,
}

#[derive(ElicitForm)]
struct Pick {
    #[form(choices)]
    note_id: String,
    confirm: bool,
}

/// Asks which of two notes to act on.
#[tool(destructive, requires(form_elicitation))]
async fn pick(ctx: &mut RequestContext, args: Args) -> Result<String, HandlerError> {
    let choices = Pick::choices().note_id(["a.md", "b.md"]);
    match ctx.elicit::<Pick>("pick", args.title, choices).await? {
        Elicitation::Accepted(p) if p.confirm => Ok(p.note_id),
        _ => Ok("nothing".into()),
    }
}

/// Echoes its text.
#[tool]
fn echo(args: Args) -> String {
    args.title
}

fn server() -> &'static (Server, tokio::runtime::Runtime) {
    static S: OnceLock<(Server, tokio::runtime::Runtime)> = OnceLock::new();
    S.get_or_init(|| {
        let server = Server::builder(Implementation::new("fuzz", "0"))
            .tools(tools![pick, echo])
            .build()
            .expect("server builds");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        (server, rt)
    })
}

fuzz_target!(|data: &[u8]| {
    let (server, rt) = server();
    let principal = Principal::new("fuzzer");
    if let Some(reply) = rt.block_on(server.handle_bytes(data, &principal)) {
        let v: serde_json::Value = serde_json::from_slice(&reply).expect("replies are JSON");
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(v.get("result").is_some() != v.get("error").is_some());
    }
});
