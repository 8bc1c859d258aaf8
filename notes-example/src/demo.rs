//! The demo: a temporary workspace with the lesson's notes, the server driven in-process
//! through every checkpoint, and a transcript of the JSON exchanged.
//!
//! Exit code 0 only if every checkpoint behaved as the rules say.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_runtime::Principal;
use mcp_runtime::prelude::Server;
use mcp_runtime::replay::open_store;
use mcp_runtime::scope::{ScopePolicy, WorkspaceUri};
use mcp_runtime::state::StateKeyring;
use serde_json::{Value, json};

use crate::notes::Notes;
use crate::tools::{DELETE_CHOICE_KEY, build_server};

const VERSION: &str = "2026-07-28";

/// Runs the demo, printing the transcript to stdout; returns the exit code.
pub fn run() -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("notes-example demo: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(demo()) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("notes-example demo: {e}");
            1
        }
    }
}

type DemoError = Box<dyn std::error::Error + Send + Sync>;

/// Writes the lesson's notes into `dir` (created if missing): three "TPS report" notes, one in
/// the subfolder `2025/`, and a shopping list. The demo and the black-box tests share them.
pub fn write_lesson_notes(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("2025"))?;
    std::fs::write(
        dir.join("tps-report.md"),
        "# TPS report\n\nNew cover sheets.\n",
    )?;
    std::fs::write(
        dir.join("tps-report-draft.md"),
        "# TPS report (draft)\n\nDid you get the memo?\n",
    )?;
    std::fs::write(
        dir.join("2025/tps-2025.md"),
        "# TPS Report 2025\n\nQ3 numbers.\n",
    )?;
    std::fs::write(
        dir.join("shopping.md"),
        "# Shopping list\n\n- milk\n- stapler\n",
    )
}

/// The lesson's files, created in `root`: `notes/` (three TPS reports, one in a subfolder, a
/// shopping list, and a link to a private note outside), `notes-evil/` and `private/`.
fn lay_out(root: &Path) -> Result<PathBuf, DemoError> {
    let notes = root.join("notes");
    write_lesson_notes(&notes)?;
    std::fs::create_dir_all(root.join("notes-evil"))?;
    std::fs::create_dir_all(root.join("private"))?;
    std::fs::write(root.join("notes-evil/tps.md"), "# TPS report (evil twin)\n")?;
    std::fs::write(root.join("private/salary.md"), "# TPS report: salaries\n")?;
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("private/salary.md"), notes.join("salary-link.md"))?;
    Ok(notes)
}

struct Demo {
    principal: Principal,
    next_id: i64,
    passed: usize,
    failed: Vec<String>,
    section: usize,
}

impl Demo {
    fn heading(&mut self, title: &str, why: &str) {
        self.section += 1;
        println!("\n━━━ {}. {title} ━━━", self.section);
        println!("{why}");
    }

    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
            println!("✔ {what}");
        } else {
            self.failed.push(format!("{}: {what}", self.section));
            println!("✘ {what}");
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Sends `message` to `server` as the demo principal, printing both directions.
    async fn exchange(&self, server: &Server, message: &Value) -> Option<Value> {
        println!("→ {}", pretty(message));
        let bytes = message.to_string();
        let reply = server.handle_bytes(bytes.as_bytes(), &self.principal).await;
        match reply {
            None => {
                println!("← (no response)");
                None
            }
            Some(body) => {
                let value: Value = serde_json::from_slice(&body)
                    .unwrap_or_else(|e| json!({"demo": format!("unparseable response: {e}")}));
                println!("← {}", pretty(&value));
                Some(value)
            }
        }
    }
}

/// Pretty JSON with long `requestState` values shortened for reading.
fn pretty(value: &Value) -> String {
    fn shorten(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "requestState"
                        && let Value::String(s) = v
                        && s.len() > 48
                    {
                        *s = format!("{}…({} bytes)", &s[..40], s.len());
                    } else {
                        shorten(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(shorten),
            _ => {}
        }
    }
    let mut shown = value.clone();
    shorten(&mut shown);
    serde_json::to_string_pretty(&shown).unwrap_or_else(|_| shown.to_string())
}

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "notes-demo-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

fn call(tool: &str, args: Value) -> Value {
    json!({"_meta": meta(form()), "name": tool, "arguments": args})
}

fn retry(tool: &str, args: Value, response: Value, state: &str) -> Value {
    json!({
        "_meta": meta(form()),
        "name": tool,
        "arguments": args,
        "inputResponses": {DELETE_CHOICE_KEY: response},
        "requestState": state,
    })
}

fn result_type(v: &Option<Value>) -> Option<&str> {
    v.as_ref()?.get("result")?.get("resultType")?.as_str()
}

fn is_error_result(v: &Option<Value>) -> bool {
    v.as_ref()
        .and_then(|v| v.get("result"))
        .is_some_and(|r| r["resultType"] == "complete" && r["isError"] == true)
}

/// Whether `v` is the recorded result of an earlier, identical retry.
fn is_replayed(v: &Option<Value>) -> bool {
    v.as_ref()
        .is_some_and(|v| v["result"]["_meta"][mcp_runtime::context::REPLAYED_META_KEY] == true)
}

fn is_ok_result(v: &Option<Value>) -> bool {
    v.as_ref()
        .and_then(|v| v.get("result"))
        .is_some_and(|r| r["resultType"] == "complete" && r["isError"] != true)
}

fn error_code(v: &Option<Value>) -> Option<i64> {
    v.as_ref()?.get("error")?.get("code")?.as_i64()
}

/// A refusal: a JSON-RPC error, or a complete result with `isError: true`.
fn refused(v: &Option<Value>) -> bool {
    error_code(v).is_some() || is_error_result(v)
}

fn text_of(v: &Option<Value>) -> String {
    v.as_ref()
        .and_then(|v| v.get("result"))
        .and_then(|r| r.get("content"))
        .and_then(|c| c.as_array())
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn state_of(v: &Option<Value>) -> String {
    v.as_ref()
        .and_then(|v| v["result"]["requestState"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The `const` values offered for `note_id` in an input-required result's form.
fn offered_ids(v: &Option<Value>) -> Vec<String> {
    let Some(schema) = v.as_ref().map(|v| {
        &v["result"]["inputRequests"][DELETE_CHOICE_KEY]["params"]["requestedSchema"]["properties"]
            ["note_id"]
    }) else {
        return Vec::new();
    };
    if let Some(options) = schema["oneOf"].as_array() {
        return options
            .iter()
            .filter_map(|o| o["const"].as_str().map(str::to_owned))
            .collect();
    }
    schema["enum"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn demo() -> Result<bool, DemoError> {
    let temp = tempfile::Builder::new().prefix("notes-demo-").tempdir()?;
    let root = std::fs::canonicalize(temp.path())?;
    let notes_dir = lay_out(&root)?;
    let principal = Principal::new("demo-user");
    let uri = WorkspaceUri::from_path(&notes_dir)?.to_string();
    let store_spec = format!("sqlite:{}", root.join("replay.sqlite3").display());
    let keys = StateKeyring::generate()?;
    let owner = principal.clone();
    let policy = || ScopePolicy::new().allow(owner.clone(), &notes_dir);
    let ttl = Duration::from_secs(120);
    let server = build_server(
        Notes::new(policy()?),
        keys.clone(),
        open_store(&store_spec).await?,
        ttl,
    )?;

    println!("notes-example demo");
    println!("workspace {uri} (allowed for principal `demo-user` by server configuration)");
    println!(
        "replay store {store_spec}; state lifetime {}s",
        ttl.as_secs()
    );
    let mut d = Demo {
        principal,
        next_id: 1,
        passed: 0,
        failed: Vec::new(),
        section: 0,
    };
    let exists = |rel: &str| notes_dir.join(rel).exists();

    d.heading(
        "Discovery",
        "The client learns the protocol versions and capabilities; no handshake, no session.",
    );
    let msg = d.request("server/discover", json!({"_meta": meta(json!({}))}));
    let r = d.exchange(&server, &msg).await;
    let supported = r
        .as_ref()
        .and_then(|v| v["result"]["supportedVersions"].as_array().cloned());
    d.check(
        result_type(&r) == Some("complete")
            && supported.is_some_and(|s| s.iter().any(|v| v == VERSION)),
        "server/discover lists 2026-07-28 and the tools capability",
    );

    d.heading(
        "tools/list",
        "Descriptors are serialised once: every call (and every run) returns the same bytes.",
    );
    let msg = d.request("tools/list", json!({"_meta": meta(json!({}))}));
    let first = d.exchange(&server, &msg).await;
    let again = server
        .handle_bytes(
            d.request("tools/list", json!({"_meta": meta(json!({}))}))
                .to_string()
                .as_bytes(),
            &d.principal,
        )
        .await;
    let tools = |v: &Option<Value>| v.as_ref().map(|v| v["result"]["tools"].clone());
    let again: Option<Value> = again.and_then(|b| serde_json::from_slice(&b).ok());
    d.check(
        tools(&first).is_some() && tools(&first) == tools(&again),
        "both tools listed, descriptors identical on every call",
    );
    let delete_schema = first.as_ref().and_then(|v| {
        v["result"]["tools"]
            .as_array()?
            .iter()
            .find(|t| t["name"] == "notes_delete")
            .cloned()
    });
    d.check(
        delete_schema.is_some_and(|t| {
            t["inputSchema"]["required"] == json!(["workspaceUri", "title"])
                && t["annotations"]["destructiveHint"] == true
        }),
        "notes_delete takes {workspaceUri, title}, both required, and is marked destructive",
    );

    d.heading(
        "notes_list (structured output)",
        "Ids and titles as structuredContent; symlinks are never listed.",
    );
    let msg = d.request(
        "tools/call",
        call("notes_list", json!({"workspaceUri": uri})),
    );
    let r = d.exchange(&server, &msg).await;
    let listed: Vec<String> = r
        .as_ref()
        .and_then(|v| {
            v["result"]["structuredContent"]["notes"]
                .as_array()
                .cloned()
        })
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n["id"].as_str().map(str::to_owned))
        .collect();
    d.check(
        listed
            == [
                "2025/tps-2025.md",
                "shopping.md",
                "tps-report-draft.md",
                "tps-report.md",
            ],
        "four notes listed; the symlink to a private note outside is not",
    );

    d.heading(
        "The form: which TPS report?",
        "Deleting always asks: a form with exactly the matching notes, and a confirmation.",
    );
    let args = json!({"workspaceUri": uri, "title": "tps"});
    let msg = d.request("tools/call", call("notes_delete", args.clone()));
    let r = d.exchange(&server, &msg).await;
    let offered = offered_ids(&r);
    d.check(
        result_type(&r) == Some("input_required")
            && offered == ["2025/tps-2025.md", "tps-report-draft.md", "tps-report.md"],
        "input_required with a form offering exactly the three TPS notes (not the linked one)",
    );
    let state = state_of(&r);

    d.heading(
        "Accepted deletion",
        "The retry carries the answer and the signed requestState; the chosen note goes.",
    );
    let accept =
        json!({"action": "accept", "content": {"note_id": "tps-report-draft.md", "confirm": true}});
    let msg = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), accept.clone(), &state),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_ok_result(&r) && !exists("tps-report-draft.md") && exists("tps-report.md"),
        "exactly the chosen note was deleted",
    );

    d.heading(
        "Replay of the same confirmation",
        "A confirmation acts once. An identical retry (a lost response) gets the recorded \
         result again, marked as a replay; any other use is refused.",
    );
    // Put the note back so the candidates are exactly those the state was issued for: only
    // the one-time claim can stop this replay.
    std::fs::write(
        notes_dir.join("tps-report-draft.md"),
        "# TPS report (draft)\n\nRestored from backup.\n",
    )?;
    println!("(tps-report-draft.md restored from backup, so the candidate set is unchanged)");
    let msg = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), accept.clone(), &state),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_ok_result(&r)
            && is_replayed(&r)
            && exists("tps-report-draft.md")
            && exists("tps-report.md")
            && exists("2025/tps-2025.md"),
        "the identical retry gets the recorded result, marked as a replay; nothing deleted",
    );
    let other =
        json!({"action": "accept", "content": {"note_id": "tps-report.md", "confirm": true}});
    let msg = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), other, &state),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        error_code(&r) == Some(-32602) && exists("tps-report.md"),
        "another answer to the used confirmation is refused as already used; nothing deleted",
    );

    d.heading(
        "Decline",
        "The user says no: a normal answer, and that confirmation is spent.",
    );
    let msg = d.request("tools/call", call("notes_delete", args.clone()));
    let r = d.exchange(&server, &msg).await;
    let state = state_of(&r);
    let msg = d.request(
        "tools/call",
        retry(
            "notes_delete",
            args.clone(),
            json!({"action": "decline"}),
            &state,
        ),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_ok_result(&r) && exists("tps-report.md") && exists("2025/tps-2025.md"),
        "a complete, non-error refusal; the notes are kept",
    );
    let accept_other =
        json!({"action": "accept", "content": {"note_id": "tps-report.md", "confirm": true}});
    let msg = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), accept_other.clone(), &state),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        refused(&r) && exists("tps-report.md"),
        "the declined state cannot be used again",
    );

    d.heading(
        "Cancel, then retry the same state",
        "The user dismisses the form: nothing happens, and the same state can be answered later.",
    );
    let msg = d.request("tools/call", call("notes_delete", args.clone()));
    let r = d.exchange(&server, &msg).await;
    let state = state_of(&r);
    let msg = d.request(
        "tools/call",
        retry(
            "notes_delete",
            args.clone(),
            json!({"action": "cancel"}),
            &state,
        ),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        !is_ok_result(&r) && exists("tps-report.md") && exists("2025/tps-2025.md"),
        "cancel mutates nothing",
    );
    let malformed =
        json!({"action": "accept", "content": {"note_id": "shopping.md", "confirm": true}});
    let msg = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), malformed, &state),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        !is_ok_result(&r) && exists("shopping.md") && exists("tps-report.md"),
        "a note_id outside the offered candidates is refused; nothing deleted",
    );
    let msg = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), accept_other.clone(), &state),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_ok_result(&r) && !exists("tps-report.md"),
        "the same state stayed retryable: accepted now, the chosen note deleted",
    );

    d.heading(
        "Changed title on the retry",
        "The state is bound to the arguments it was issued for.",
    );
    let msg = d.request("tools/call", call("notes_delete", args.clone()));
    let r = d.exchange(&server, &msg).await;
    let state = state_of(&r);
    let changed = json!({"workspaceUri": uri, "title": "shopping"});
    let steal = json!({"action": "accept", "content": {"note_id": "shopping.md", "confirm": true}});
    let msg = d.request("tools/call", retry("notes_delete", changed, steal, &state));
    let r = d.exchange(&server, &msg).await;
    d.check(
        refused(&r) && exists("shopping.md"),
        "state issued for title \"tps\" is refused for title \"shopping\"",
    );

    d.heading("Two server instances race one confirmation", "Two Server values share one SQLite store file and key: any instance can finish the flow, once.");
    let twin = build_server(
        Notes::new(policy()?),
        keys.clone(),
        open_store(&store_spec).await?,
        ttl,
    )?;
    let final_accept =
        json!({"action": "accept", "content": {"note_id": "2025/tps-2025.md", "confirm": true}});
    let msg_a = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), final_accept.clone(), &state),
    );
    let msg_b = d.request(
        "tools/call",
        retry("notes_delete", args.clone(), final_accept, &state),
    );
    println!("(the same accepted retry, sent to instance A and instance B at once)");
    let (a, b) = tokio::join!(d.exchange(&server, &msg_a), d.exchange(&twin, &msg_b));
    // The loser is refused, or (when the winner's result is already recorded) gets that
    // result again, marked as a replay.
    let successes = [&a, &b]
        .iter()
        .filter(|r| is_ok_result(r) && !is_replayed(r))
        .count();
    d.check(
        successes == 1 && !exists("2025/tps-2025.md") && exists("shopping.md"),
        "exactly one instance deleted the note and reported success; the other was refused or got the recorded result",
    );

    d.heading(
        "Prefix confusion",
        "Workspaces are compared by path components, never by string prefix.",
    );
    let evil = format!("{uri}-evil");
    let msg = d.request(
        "tools/call",
        call(
            "notes_delete",
            json!({"workspaceUri": evil, "title": "tps"}),
        ),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_error_result(&r) && root.join("notes-evil/tps.md").exists(),
        "…/notes-evil is not …/notes: refused",
    );

    d.heading(
        "Encoded traversal",
        "Percent-encoded dot segments are resolved before authorization.",
    );
    let traversal = format!("{uri}/%2e%2e/private");
    let msg = d.request(
        "tools/call",
        call(
            "notes_delete",
            json!({"workspaceUri": traversal, "title": "tps"}),
        ),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_error_result(&r) && root.join("private/salary.md").exists(),
        "…/notes/%2e%2e/private is refused",
    );

    d.heading(
        "No matching note",
        "A complete result with isError: true, so the model can try another title.",
    );
    let msg = d.request(
        "tools/call",
        call(
            "notes_delete",
            json!({"workspaceUri": uri, "title": "quarterly"}),
        ),
    );
    let r = d.exchange(&server, &msg).await;
    d.check(
        is_error_result(&r) && text_of(&r).contains("No note"),
        "a complete result with isError: true saying no note matches",
    );

    d.heading(
        "Missing client capability",
        "A client that cannot show forms gets -32021 before the tool runs.",
    );
    let no_form = json!({"_meta": meta(json!({})), "name": "notes_delete", "arguments": {"workspaceUri": uri, "title": "shopping"}});
    let msg = d.request("tools/call", no_form);
    let r = d.exchange(&server, &msg).await;
    d.check(
        error_code(&r) == Some(-32021)
            && r.as_ref().is_some_and(|v| {
                v["error"]["data"]["requiredCapabilities"]["elicitation"].is_object()
            }),
        "-32021 naming the elicitation capability the request lacks",
    );

    d.heading(
        "Unsupported protocol version",
        "Versions are checked on every request.",
    );
    let mut old = meta(json!({}));
    old["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let msg = d.request("server/discover", json!({"_meta": old}));
    let r = d.exchange(&server, &msg).await;
    d.check(
        error_code(&r) == Some(-32022)
            && r.as_ref()
                .is_some_and(|v| v["error"]["data"]["requested"] == "1900-01-01"),
        "-32022 with the supported and requested versions",
    );

    d.heading(
        "A notification gets no response",
        "Notifications are never answered, not even with an error.",
    );
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}});
    let r = d.exchange(&server, &note).await;
    d.check(r.is_none(), "nothing is sent back");

    println!("\n━━━ Summary ━━━");
    println!("{} checks passed, {} failed", d.passed, d.failed.len());
    for f in &d.failed {
        println!("✘ {f}");
    }
    Ok(d.failed.is_empty())
}
