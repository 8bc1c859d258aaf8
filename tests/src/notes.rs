//! Fixtures for the notes-example black-box tests: a lesson workspace, a shared key file and
//! store, `serve --stdio` processes, and readers for the results the server sends.

use std::path::{Path, PathBuf};

use mcp_runtime::client::{Client, ClientError, Round, Step};
use mcp_types::{CallToolResult, InputResponses};
use notes_example::tools::DeleteChoice;
use serde_json::{Value, json};

use crate::{
    Error, StdioServer, call_params, file_uri, form_caps, lesson_workspace, notes_binary,
    notes_client, retry_params,
};

/// The elicitation key of the deletion form.
pub const DELETE_KEY: &str = "delete_choice";

/// A temporary directory holding `notes/` (the lesson), a state key file and a SQLite store.
pub struct NotesFixture {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The workspace directory (canonical).
    pub notes: PathBuf,
    /// Its `file:` URI.
    pub uri: String,
    /// A key file shared by every process of this fixture.
    pub key_file: PathBuf,
    /// `sqlite:PATH` shared by every process of this fixture.
    pub store: String,
}

/// A fixed, valid key line (32 bytes of base64) for tests that need two processes to agree.
pub const TEST_KEY_LINE: &str = "test:dGhpcyBpcyBhIHRlc3Qga2V5IG9mIDMyIGJ5dGVzISE=";

impl NotesFixture {
    /// Lays out the lesson's notes, a key file and a store path.
    pub fn new() -> Result<Self, Error> {
        let dir = tempfile::Builder::new().prefix("notes-test-").tempdir()?;
        let root = std::fs::canonicalize(dir.path())?;
        let notes = lesson_workspace(&root)?;
        let uri = file_uri(&notes)?;
        let key_file = root.join("state.key");
        std::fs::write(&key_file, format!("{TEST_KEY_LINE}\n"))?;
        let store = format!("sqlite:{}", root.join("replay.sqlite3").display());
        Ok(Self {
            dir,
            notes,
            uri,
            key_file,
            store,
        })
    }

    /// The fixture's root directory (parent of `notes/`).
    pub fn root(&self) -> PathBuf {
        self.notes
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.dir.path().to_path_buf())
    }

    /// Whether `rel` exists in the workspace (a dangling link counts as existing).
    pub fn exists(&self, rel: &str) -> bool {
        self.notes.join(rel).symlink_metadata().is_ok()
    }

    /// `serve --stdio` for `principal` on this workspace, shared key and store, plus `extra`.
    pub fn spawn(&self, principal: &str, extra: &[&str]) -> Result<StdioServer, Error> {
        let notes = self.notes.to_string_lossy().into_owned();
        let mut args = vec!["--workspace", notes.as_str()];
        args.extend_from_slice(extra);
        self.spawn_without_workspace(principal, &args)
    }

    /// `serve --stdio` for `principal` with the shared key and store, granting only the
    /// workspaces `extra` names.
    pub fn spawn_without_workspace(
        &self,
        principal: &str,
        extra: &[&str],
    ) -> Result<StdioServer, Error> {
        self.spawn_with_store(principal, &self.store, extra)
    }

    /// `serve --stdio` for `principal` with the shared key and the replay store `store`,
    /// granting only the workspaces `extra` names.
    pub fn spawn_with_store(
        &self,
        principal: &str,
        store: &str,
        extra: &[&str],
    ) -> Result<StdioServer, Error> {
        let key = self.key_file.to_string_lossy().into_owned();
        let mut args = vec![
            "serve",
            "--stdio",
            "--principal",
            principal,
            "--store",
            store,
            "--state-key-file",
            key.as_str(),
        ];
        args.extend_from_slice(extra);
        StdioServer::spawn(&notes_binary()?, &args)
    }

    /// `serve --http 127.0.0.1:0` for `principal` on this workspace with the shared key and
    /// store, plus `extra` arguments and `env` variables; returns the server and its address.
    pub fn spawn_http_with_env(
        &self,
        principal: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<(StdioServer, std::net::SocketAddr), Error> {
        let notes = self.notes.to_string_lossy().into_owned();
        let key = self.key_file.to_string_lossy().into_owned();
        let mut args = vec![
            "serve",
            "--http",
            "127.0.0.1:0",
            "--principal",
            principal,
            "--workspace",
            notes.as_str(),
            "--store",
            self.store.as_str(),
            "--state-key-file",
            key.as_str(),
        ];
        args.extend_from_slice(extra);
        crate::spawn_notes_http_with_env(&args, env)
    }

    /// `serve --stdio` for `principal` on this workspace (shared key and store, plus `extra`),
    /// behind the typed client (`mcp_runtime::client`) instead of hand-built JSON.
    pub fn client(&self, principal: &str, extra: &[&str]) -> Result<Client, Error> {
        let notes = self.notes.to_string_lossy().into_owned();
        let mut args = vec!["--workspace", notes.as_str()];
        args.extend_from_slice(extra);
        self.client_without_workspace(principal, &args)
    }

    /// Like [`NotesFixture::client`], granting only the workspaces `extra` names.
    pub fn client_without_workspace(
        &self,
        principal: &str,
        extra: &[&str],
    ) -> Result<Client, Error> {
        self.client_with_store(principal, &self.store, extra, &[])
    }

    /// Like [`NotesFixture::client_without_workspace`], on the replay store `store`, with
    /// extra environment variables `env` for the server process.
    pub fn client_with_store(
        &self,
        principal: &str,
        store: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Client, Error> {
        let key = self.key_file.to_string_lossy().into_owned();
        let mut args = vec![
            "serve",
            "--stdio",
            "--principal",
            principal,
            "--store",
            store,
            "--state-key-file",
            key.as_str(),
        ];
        args.extend_from_slice(extra);
        notes_client(&args, env)
    }

    /// `notes_delete` arguments for this workspace.
    pub fn delete_args(&self, title: &str) -> Value {
        json!({"workspaceUri": self.uri, "title": title})
    }
}

/// Sends the first leg of `notes_delete` and returns the response.
pub fn first_leg(server: &mut StdioServer, args: &Value) -> Result<Value, Error> {
    server.request(
        "tools/call",
        call_params("notes_delete", args.clone(), form_caps()),
    )
}

/// Sends a retry of `notes_delete` answering the form with `response`.
pub fn answer(
    server: &mut StdioServer,
    args: &Value,
    response: Value,
    state: &str,
) -> Result<Value, Error> {
    server.request(
        "tools/call",
        retry_params(
            "notes_delete",
            args.clone(),
            form_caps(),
            json!({ DELETE_KEY: response }),
            state,
        ),
    )
}

/// An accepted form choosing `note_id` with `confirm`.
pub fn choose(note_id: &str, confirm: bool) -> Value {
    json!({"action": "accept", "content": {"note_id": note_id, "confirm": confirm}})
}

/// The `resultType` of a response, if it is a result.
pub fn result_type(response: &Value) -> Option<&str> {
    response.get("result")?.get("resultType")?.as_str()
}

/// The `requestState` of an input-required result.
pub fn request_state(response: &Value) -> Result<String, Error> {
    response["result"]["requestState"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no requestState in {response}").into())
}

/// A complete result without `isError: true` that did the work (not a replay).
pub fn is_success(response: &Value) -> bool {
    response.get("result").is_some_and(|r| {
        r["resultType"] == "complete" && r["isError"] != true && !is_replay(response)
    })
}

/// The recorded result of an earlier, identical retry (`_meta` marks it as a replay): the
/// work it reports was done once, by that earlier retry.
pub fn is_replay(response: &Value) -> bool {
    response["result"]["_meta"][mcp_runtime::context::REPLAYED_META_KEY] == true
}

/// A complete result with `isError: true`.
pub fn is_tool_error(response: &Value) -> bool {
    response
        .get("result")
        .is_some_and(|r| r["resultType"] == "complete" && r["isError"] == true)
}

/// A JSON-RPC error's code.
pub fn error_code(response: &Value) -> Option<i64> {
    response.get("error")?.get("code")?.as_i64()
}

/// Refused: a JSON-RPC error or an `isError` result (never `input_required`, never success).
pub fn is_refusal(response: &Value) -> bool {
    error_code(response).is_some() || is_tool_error(response)
}

/// The text of a result's text blocks, or the error message.
pub fn text(response: &Value) -> String {
    if let Some(message) = response["error"]["message"].as_str() {
        return message.to_owned();
    }
    response["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The note ids the deletion form offers, in order.
pub fn offered_ids(response: &Value) -> Vec<String> {
    let field = &response["result"]["inputRequests"][DELETE_KEY]["params"]["requestedSchema"]["properties"]
        ["note_id"];
    if let Some(options) = field["oneOf"].as_array() {
        return options
            .iter()
            .filter_map(|o| o["const"].as_str().map(str::to_owned))
            .collect();
    }
    field["enum"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

// ---- the same readings through the typed client --------------------------------------------

/// What one `tools/call` came back with, read through the typed client
/// (`mcp_runtime::client`): the tests assert on this instead of hand-read JSON.
// Held by value, as the client's own `Step`: boxing would only add noise to test code.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Outcome {
    /// A complete result (`isError` or not).
    Complete(CallToolResult),
    /// An `input_required` result.
    Pending(Round<CallToolResult>),
    /// A JSON-RPC error, or a transport failure (server gone, timeout).
    Failed(ClientError),
}

impl From<Result<Step<CallToolResult>, ClientError>> for Outcome {
    fn from(step: Result<Step<CallToolResult>, ClientError>) -> Self {
        match step {
            Ok(Step::Complete(result)) => Outcome::Complete(result),
            Ok(Step::Pending(round)) => Outcome::Pending(round),
            Err(e) => Outcome::Failed(e),
        }
    }
}

impl Outcome {
    /// A complete result without `isError: true` that did the work (not a replay).
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Complete(r) if r.is_error != Some(true)) && !self.is_replay()
    }

    /// The recorded result of an earlier, identical retry (its `_meta` marks it as a replay):
    /// the work it reports was done once, by that earlier retry.
    pub fn is_replay(&self) -> bool {
        let Outcome::Complete(r) = self else {
            return false;
        };
        serde_json::to_value(&r.meta)
            .is_ok_and(|meta| meta[mcp_runtime::context::REPLAYED_META_KEY] == true)
    }

    /// A complete result with `isError: true`.
    pub fn is_tool_error(&self) -> bool {
        matches!(self, Outcome::Complete(r) if r.is_error == Some(true))
    }

    /// A complete result, error or not.
    pub fn is_complete(&self) -> bool {
        matches!(self, Outcome::Complete(_))
    }

    /// The JSON-RPC error code, if the server answered with an error.
    pub fn error_code(&self) -> Option<i64> {
        match self {
            Outcome::Failed(e) => e.code().map(mcp_types::ErrorCode::code),
            _ => None,
        }
    }

    /// Refused: a JSON-RPC error or an `isError` result (never `input_required`, never
    /// success, never a transport failure).
    pub fn is_refusal(&self) -> bool {
        self.error_code().is_some() || self.is_tool_error()
    }

    /// The text of a result's text blocks, or the error message.
    pub fn text(&self) -> String {
        match self {
            Outcome::Complete(r) => r.text(),
            Outcome::Pending(_) => String::new(),
            Outcome::Failed(e) => e
                .error_object()
                .map_or_else(|| e.to_string(), |o| o.message().to_owned()),
        }
    }

    /// The complete result's `structuredContent`.
    pub fn structured(&self) -> Option<&Value> {
        match self {
            Outcome::Complete(r) => r.structured_content.as_ref(),
            _ => None,
        }
    }

    /// The note ids the deletion form offers, in order (empty unless the form was asked).
    pub fn offered_ids(&self) -> Vec<String> {
        match self {
            Outcome::Pending(round) => round
                .form::<DeleteChoice>(DELETE_KEY)
                .map(|form| form.choice_values("note_id"))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The `requestState` of an input-required result.
    pub fn request_state(&self) -> Result<String, Error> {
        match self {
            Outcome::Pending(round) => round
                .request_state()
                .map(str::to_owned)
                .ok_or_else(|| "an input_required result without requestState".into()),
            other => Err(format!("expected input_required, got {other:?}").into()),
        }
    }
}

/// `inputResponses` answering the deletion form with `response` (raw JSON, so a test can
/// send what the typed answer constructors would refuse to build).
pub fn delete_responses(response: Value) -> InputResponses {
    let mut responses = InputResponses::new();
    responses.0.insert(DELETE_KEY.to_owned(), response);
    responses
}

/// The first leg of `notes_delete` through the client.
pub async fn ask_delete(client: &Client, args: &Value) -> Outcome {
    client.call("notes_delete", args).await.into()
}

/// A retry of `notes_delete` answering the form with `response` and echoing `state`.
pub async fn answer_delete(client: &Client, args: &Value, response: Value, state: &str) -> Outcome {
    client
        .resume(
            "notes_delete",
            args,
            delete_responses(response),
            Some(state),
        )
        .await
        .into()
}

/// `tools/call` of `notes_list` on `workspace_uri` through the client.
pub async fn list_notes(client: &Client, workspace_uri: &str) -> Outcome {
    client
        .call("notes_list", json!({"workspaceUri": workspace_uri}))
        .await
        .into()
}
