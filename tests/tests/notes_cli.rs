//! The notes-example command line: configuration errors are one line and exit code 2; the
//! demo runs every checkpoint and exits 0.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use mcp_tests::notes::NotesFixture;
use mcp_tests::notes_binary;

fn run(args: &[&str]) -> Output {
    let bin = notes_binary().expect("build notes-example");
    Command::new(bin)
        .args(args)
        .output()
        .expect("spawn notes-example")
}

fn assert_usage_error(output: &Output, mentions: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr:?}"
    );
    assert!(
        stderr.contains(mentions),
        "{stderr:?} should mention {mentions:?}"
    );
    assert!(output.stdout.is_empty(), "nothing on stdout");
}

#[test]
fn unknown_flag_is_one_line_exit_2() {
    let out = run(&["serve", "--stdio", "--workspace", "/tmp", "--frobnicate"]);
    assert_usage_error(&out, "--frobnicate");
}

#[test]
fn malformed_rate_limits_are_one_line_exit_2() {
    let out = run(&[
        "serve",
        "--stdio",
        "--workspace",
        "/tmp",
        "--rate-limit",
        "60",
    ]);
    assert_usage_error(&out, "e.g. `60/min`");
    let fx = NotesFixture::new().unwrap();
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        fx.notes.to_str().unwrap(),
        "--tool-rate-limit",
        "notes_zap=1/min",
    ]);
    assert_usage_error(&out, "no tool named `notes_zap`");
}

#[test]
fn serve_without_workspace_is_exit_2() {
    let out = run(&["serve", "--stdio"]);
    assert_usage_error(&out, "--workspace");
}

#[test]
fn unreadable_workspace_is_exit_2() {
    let fx = NotesFixture::new().unwrap();
    let missing = fx.root().join("no-such-dir");
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        missing.to_str().unwrap(),
    ]);
    assert_usage_error(&out, "no-such-dir");
}

#[test]
fn unreadable_key_file_is_exit_2() {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let missing = fx.root().join("missing.key");
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
        "--state-key-file",
        missing.to_str().unwrap(),
    ]);
    assert_usage_error(&out, "missing.key");
    let bad = fx.root().join("bad.key");
    std::fs::write(&bad, "k1:dG9vLXNob3J0\n").unwrap();
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
        "--state-key-file",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn auth_file_needs_http_and_bad_store_is_exit_2() {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let out = run(&[
        "serve",
        "--stdio",
        "--workspace",
        notes,
        "--auth-file",
        "/nonexistent",
    ]);
    assert_usage_error(&out, "--auth-file");
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--workspace",
        notes,
        "--store",
        "mysql://x",
    ]);
    assert_usage_error(&out, "--store");
}

#[test]
fn keygen_prints_a_loadable_key_line() {
    let out = run(&["keygen", "--kid", "k2"]);
    assert_eq!(out.status.code(), Some(0));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.starts_with("k2:"), "{line}");
    let fx = NotesFixture::new().unwrap();
    std::fs::write(&fx.key_file, &line).unwrap();
    let mut server = fx.spawn("alice", &["--no-sandbox"]).unwrap();
    let r = server
        .request(
            "server/discover",
            serde_json::json!({"_meta": mcp_tests::meta(serde_json::json!({}))}),
        )
        .unwrap();
    assert!(r.get("result").is_some(), "{r}");
}

#[test]
fn demo_behaves_at_every_checkpoint() {
    let out = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "demo failed:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains('✘'), "{stdout}");
    for heading in [
        "Discovery",
        "tools/list",
        "The form",
        "Accepted deletion",
        "Replay",
        "Decline",
        "Cancel",
        "Changed title",
        "race",
        "Prefix confusion",
        "Encoded traversal",
        "capability",
        "protocol version",
        "notification",
    ] {
        assert!(stdout.contains(heading), "transcript lacks {heading:?}");
    }
    assert!(stdout.matches('✔').count() >= 18, "{stdout}");
    assert!(stdout.contains("\"jsonrpc\": \"2.0\""), "pretty JSON shown");
}

#[test]
fn http_beyond_loopback_needs_an_auth_file() {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let out = run(&[
        "serve",
        "--http",
        "0.0.0.0:0",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
    ]);
    assert_usage_error(&out, "--auth-file");
    let weak = fx.root().join("auth");
    std::fs::write(&weak, "alice short-token\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&weak, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let out = run(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
        "--auth-file",
        weak.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A memory store forgets used confirmations on restart while a key file keeps them valid:
/// refused unless the operator opts in.
#[test]
fn memory_store_with_a_key_file_needs_an_explicit_opt_in() {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let key = fx.key_file.to_str().unwrap();
    for store in ["memory", "memory:100"] {
        let out = run(&[
            "serve",
            "--stdio",
            "--no-sandbox",
            "--store",
            store,
            "--state-key-file",
            key,
            "--workspace",
            notes,
        ]);
        assert_usage_error(&out, "--allow-volatile-store");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("replayed"), "{stderr}");
    }
    // Opted in: it serves (stdin at EOF ends it cleanly).
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--state-key-file",
        key,
        "--allow-volatile-store",
        "--workspace",
        notes,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without a key file the keys die with the process, so memory is fine.
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
    ]);
    assert_eq!(out.status.code(), Some(0));
}

#[cfg(unix)]
#[test]
fn auth_file_readable_by_others_is_refused_with_chmod_advice() {
    use std::os::unix::fs::PermissionsExt;
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let auth = fx.root().join("auth");
    std::fs::write(
        &auth,
        "alice alice-token-0123456789abcdefghijklmnopqrstuv\n",
    )
    .unwrap();
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let args = [
        "serve",
        "--http",
        "127.0.0.1:0",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
        "--auth-file",
        auth.to_str().unwrap(),
    ];
    let out = run(&args);
    assert_usage_error(&out, &format!("chmod 600 {}", auth.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("alice-token"), "{stderr}");
}

#[test]
fn http_limit_flags_need_http_and_sane_values() {
    let fx = NotesFixture::new().unwrap();
    let notes = fx.notes.to_str().unwrap();
    let out = run(&[
        "serve",
        "--stdio",
        "--no-sandbox",
        "--store",
        "memory",
        "--workspace",
        notes,
        "--max-connections",
        "10",
    ]);
    assert_usage_error(&out, "--max-connections");
    for (flag, value) in [
        ("--max-connections", "0"),
        ("--listen-backlog", "0"),
        ("--header-timeout-secs", "0"),
        ("--idle-timeout-secs", "0"),
        ("--body-timeout-secs", "0"),
        ("--allowed-host", "http://x"),
    ] {
        let out = run(&[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-sandbox",
            "--store",
            "memory",
            "--workspace",
            notes,
            flag,
            value,
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
