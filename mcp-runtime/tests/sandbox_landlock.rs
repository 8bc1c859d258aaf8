//! The Landlock sandbox, observed from a child process (a sandbox cannot be lifted, so the test
//! re-runs this binary in "child mode" and confines only that child).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test fixtures: a failed setup step should abort the test

use std::path::PathBuf;
use std::process::Command;

use mcp_runtime::sandbox::{SandboxError, SandboxStatus, restrict_current_thread_to, restrict_to};

const WS_VAR: &str = "MCP_SANDBOX_PROBE_WS";
const OUTSIDE_VAR: &str = "MCP_SANDBOX_PROBE_OUTSIDE";

/// Child mode: does nothing unless the parent test set the environment variables.
#[test]
fn sandbox_child_probe() {
    let (Some(ws), Some(outside)) = (std::env::var_os(WS_VAR), std::env::var_os(OUTSIDE_VAR))
    else {
        return;
    };
    let ws = PathBuf::from(ws);
    // libtest keeps its main thread alongside this one, so the guarded entry point refuses...
    match restrict_to(std::slice::from_ref(&ws), &[]) {
        Err(SandboxError::MultiThreaded { threads }) => println!("PROBE guard refused {threads}"),
        other => println!("PROBE guard {other:?}"),
    }
    // ...and the probe confines just this thread, which does all the file access below.
    let status = match restrict_current_thread_to(std::slice::from_ref(&ws), &[]) {
        Ok(status) => status,
        Err(e) => {
            println!("PROBE error {e}");
            return;
        }
    };
    println!("PROBE status {status:?}");
    let report = |label: &str, path: PathBuf| match std::fs::read_to_string(&path) {
        Ok(_) => println!("PROBE {label} readable"),
        Err(e) => println!("PROBE {label} denied {:?}", e.kind()),
    };
    report("inside", ws.join("inside.txt"));
    report("outside", PathBuf::from(outside));
    let write = std::fs::write(ws.join("written.txt"), "w").is_ok();
    println!("PROBE write-inside {write}");
}

#[test]
fn sandboxed_child_reads_inside_but_not_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("inside.txt"), "in").unwrap();
    let outside = tmp.path().join("outside.txt");
    std::fs::write(&outside, "out").unwrap();

    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "sandbox_child_probe",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(WS_VAR, &ws)
        .env(OUTSIDE_VAR, &outside)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // libtest prints "test name ... " before the first line of test output.
    let lines: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.find("PROBE ").map(|i| &l[i + "PROBE ".len()..]))
        .collect();
    eprintln!("child reported: {lines:?}");
    assert!(
        !cfg!(target_os = "linux")
            || lines
                .first()
                .is_some_and(|l| l.starts_with("guard refused")),
        "{lines:?}"
    );
    let status = lines.get(1).copied().unwrap_or("");
    if status.starts_with("status NotEnforced") {
        eprintln!("SKIPPED: the kernel does not enforce Landlock here ({status})");
        return;
    }
    assert!(
        status == "status FullyEnforced" || status == "status PartiallyEnforced",
        "unexpected child report: {lines:?}"
    );
    assert!(lines.contains(&"inside readable"), "{lines:?}");
    assert!(
        lines.contains(&"outside denied PermissionDenied"),
        "{lines:?}"
    );
    assert!(lines.contains(&"write-inside true"), "{lines:?}");
    assert!(ws.join("written.txt").exists());
}

#[test]
fn missing_paths_are_reported_before_anything_is_enforced() {
    // The error arises while collecting rules, before restrict_self, so this test thread stays
    // unconfined.
    let missing = PathBuf::from("/definitely/not/here/mcp-sandbox");
    match restrict_current_thread_to(&[], std::slice::from_ref(&missing)) {
        Err(SandboxError::Path { path, .. }) => assert_eq!(path, missing),
        other => panic!("expected a path error, got {other:?}"),
    }
    assert!(std::fs::metadata("/proc/self/status").is_ok());
}

#[cfg(target_os = "linux")]
#[test]
fn guarded_entry_point_refuses_a_multi_threaded_process() {
    // The harness runs this test on a thread of its own, so at least two threads exist.
    let err = restrict_to(&[], &[]).unwrap_err();
    assert!(
        matches!(err, SandboxError::MultiThreaded { threads } if threads >= 2),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("before starting the async runtime")
    );
}

#[test]
fn status_reports_enforcement() {
    assert!(SandboxStatus::FullyEnforced.is_enforced());
    assert!(SandboxStatus::PartiallyEnforced.is_enforced());
    assert!(!SandboxStatus::NotEnforced { reason: "x".into() }.is_enforced());
}
