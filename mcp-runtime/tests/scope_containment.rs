//! Containment on a real directory tree: symlink escapes, races, bounds.
#![cfg(unix)] // symlinks and Unix sockets
#![allow(clippy::unwrap_used)] // test fixtures: a failed setup step should abort the test

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use mcp_runtime::Principal;
use mcp_runtime::scope::{FsError, RelPath, ScopePolicy, WalkOptions, Workspace};
use proptest::prelude::*;

const SECRET: &str = "SECRET outside the workspace";

/// base/
///   outside/secret.md, outside/b.md
///   ws/                      (the workspace)
///     a.md, x.txt, notes/b.md, notes/deep/c.md
///     notes/up.md   -> ../a.md              (relative, stays inside)
///     in-file.md    -> a.md                 (stays inside)
///     out-file.md   -> ../outside/secret.md (escapes)
///     abs-file.md   -> <abs path of ws/a.md> (absolute: refused even though inside)
///     out-dir       -> ../outside           (symlinked directory leading out)
///     in-dir        -> notes                (symlinked directory inside: not descended)
struct Tree {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    ws: Workspace,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let w = base.join("ws");
    for d in ["outside", "ws/notes/deep"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::fs::write(base.join("outside/secret.md"), SECRET).unwrap();
    std::fs::write(base.join("outside/b.md"), SECRET).unwrap();
    std::fs::write(w.join("a.md"), "alpha").unwrap();
    std::fs::write(w.join("x.txt"), "text").unwrap();
    std::fs::write(w.join("notes/b.md"), "bravo").unwrap();
    std::fs::write(w.join("notes/deep/c.md"), "charlie").unwrap();
    symlink("../a.md", w.join("notes/up.md")).unwrap();
    symlink("a.md", w.join("in-file.md")).unwrap();
    symlink("../outside/secret.md", w.join("out-file.md")).unwrap();
    symlink(w.join("a.md"), w.join("abs-file.md")).unwrap();
    symlink("../outside", w.join("out-dir")).unwrap();
    symlink("notes", w.join("in-dir")).unwrap();
    let policy = ScopePolicy::new().allow(Principal::new("u"), &w).unwrap();
    let uri = format!("file://{}", w.display());
    let ws = policy.authorize(&Principal::new("u"), &uri).unwrap();
    Tree {
        _tmp: tmp,
        base,
        ws,
    }
}

fn rel(s: &str) -> RelPath {
    RelPath::new(s).unwrap()
}

fn ids(files: &[RelPath]) -> Vec<&str> {
    files.iter().map(RelPath::as_str).collect()
}

#[test]
fn walk_lists_contained_regular_files_only() {
    let t = tree();
    let listing = t.ws.walk(|p| p.as_str().ends_with(".md")).unwrap();
    assert!(!listing.truncated);
    assert_eq!(
        ids(&listing.files),
        [
            "a.md",
            "in-file.md",
            "notes/b.md",
            "notes/deep/c.md",
            "notes/up.md"
        ]
    );
    let all = t.ws.walk(|_| true).unwrap();
    assert!(ids(&all.files).contains(&"x.txt"));
    assert!(
        !ids(&all.files)
            .iter()
            .any(|id| id.contains("out") || id.starts_with("in-dir"))
    );
}

#[test]
fn walk_skips_sockets_and_odd_names() {
    let t = tree();
    let _sock = std::os::unix::net::UnixListener::bind(t.base.join("ws/sock.md")).unwrap();
    std::fs::write(t.base.join("ws/back\\slash.md"), "x").unwrap();
    let listing = t.ws.walk(|_| true).unwrap();
    assert!(
        !ids(&listing.files)
            .iter()
            .any(|id| id.contains("sock") || id.contains("slash"))
    );
    assert!(matches!(
        t.ws.read(&rel("sock.md"), 100),
        Err(FsError::NotARegularFile { .. })
    ));
}

#[test]
fn walk_bounds_truncate() {
    let t = tree();
    let shallow =
        t.ws.walk_with(
            WalkOptions::default()
                .with_max_depth(1)
                .with_max_entries(100),
            |_| true,
        )
        .unwrap();
    assert!(shallow.truncated);
    assert!(ids(&shallow.files).iter().all(|id| !id.contains('/')));
    assert!(ids(&shallow.files).contains(&"a.md"));
    let few =
        t.ws.walk_with(WalkOptions::default().with_max_entries(2), |_| true)
            .unwrap();
    assert!(few.truncated);
    assert!(few.files.len() <= 2);
}

#[test]
fn reads_follow_only_links_that_stay_inside() {
    let t = tree();
    assert_eq!(t.ws.read_to_string(&rel("a.md"), 100).unwrap(), "alpha");
    assert_eq!(
        t.ws.read_to_string(&rel("in-file.md"), 100).unwrap(),
        "alpha"
    );
    assert_eq!(
        t.ws.read_to_string(&rel("notes/up.md"), 100).unwrap(),
        "alpha"
    );
    for escape in ["out-file.md", "out-dir/secret.md", "abs-file.md"] {
        let err = t.ws.read_to_string(&rel(escape), 100).unwrap_err();
        assert!(matches!(err, FsError::Denied { .. }), "{escape}: {err}");
        assert!(
            !err.to_string().contains(&t.base.display().to_string()),
            "{err}"
        );
    }
}

#[test]
fn reads_are_bounded_and_typed() {
    let t = tree();
    assert!(matches!(
        t.ws.read_to_string(&rel("a.md"), 4),
        Err(FsError::TooLarge { limit: 4, .. })
    ));
    assert_eq!(t.ws.read_to_string(&rel("a.md"), 5).unwrap(), "alpha");
    std::fs::write(t.base.join("ws/bin.md"), [0xff, 0xfe]).unwrap();
    assert!(matches!(
        t.ws.read_to_string(&rel("bin.md"), 10),
        Err(FsError::NotUtf8 { .. })
    ));
    assert!(matches!(
        t.ws.read(&rel("notes"), 10),
        Err(FsError::NotARegularFile { .. })
    ));
    assert!(matches!(
        t.ws.read(&rel("nope.md"), 10),
        Err(FsError::NotFound { .. })
    ));
}

#[test]
fn remove_file_deletes_regular_files_and_refuses_links() {
    let t = tree();
    t.ws.remove_file(&rel("notes/b.md")).unwrap();
    assert!(!t.base.join("ws/notes/b.md").exists());
    for link in ["in-file.md", "out-file.md", "abs-file.md", "notes/up.md"] {
        let err = t.ws.remove_file(&rel(link)).unwrap_err();
        assert!(
            matches!(err, FsError::SymlinkRefused { .. }),
            "{link}: {err}"
        );
    }
    let err = t.ws.remove_file(&rel("out-dir/secret.md")).unwrap_err();
    assert!(matches!(err, FsError::SymlinkRefused { .. }), "{err}");
    let err = t.ws.remove_file(&rel("in-dir/deep/c.md")).unwrap_err();
    assert!(matches!(err, FsError::SymlinkRefused { .. }), "{err}");
    assert!(matches!(
        t.ws.remove_file(&rel("notes")),
        Err(FsError::NotARegularFile { .. })
    ));
    assert!(matches!(
        t.ws.remove_file(&rel("gone.md")),
        Err(FsError::NotFound { .. })
    ));
    assert!(t.base.join("outside/secret.md").exists());
    assert!(t.base.join("ws/a.md").exists());
    assert!(t.base.join("ws/notes/deep/c.md").exists());
}

#[test]
fn parent_swapped_for_symlink_after_listing_is_refused() {
    for target in ["../outside", "notes-real"] {
        let t = tree();
        let listing = t.ws.walk(|p| p.as_str() == "notes/b.md").unwrap();
        assert_eq!(ids(&listing.files), ["notes/b.md"]);
        // Between listing and deletion, the parent becomes a symlink.
        std::fs::rename(t.base.join("ws/notes"), t.base.join("ws/notes-real")).unwrap();
        symlink(target, t.base.join("ws/notes")).unwrap();
        let err = t.ws.remove_file(&listing.files[0]).unwrap_err();
        assert!(
            matches!(err, FsError::SymlinkRefused { .. }),
            "{target}: {err}"
        );
        assert!(t.base.join("outside/b.md").exists());
        assert!(t.base.join("ws/notes-real/b.md").exists());
    }
}

#[test]
fn write_file_replaces_atomically_without_following_links() {
    let t = tree();
    t.ws.write_file(&rel("new.md"), b"fresh").unwrap();
    assert_eq!(
        std::fs::read_to_string(t.base.join("ws/new.md")).unwrap(),
        "fresh"
    );
    t.ws.write_file(&rel("notes/b.md"), b"replaced").unwrap();
    assert_eq!(
        std::fs::read_to_string(t.base.join("ws/notes/b.md")).unwrap(),
        "replaced"
    );
    for link in ["in-file.md", "out-file.md", "out-dir/secret.md"] {
        let err = t.ws.write_file(&rel(link), b"pwned").unwrap_err();
        assert!(
            matches!(err, FsError::SymlinkRefused { .. }),
            "{link}: {err}"
        );
    }
    assert!(matches!(
        t.ws.write_file(&rel("missing-dir/n.md"), b"x"),
        Err(FsError::NotFound { .. })
    ));
    assert_eq!(
        std::fs::read_to_string(t.base.join("outside/secret.md")).unwrap(),
        SECRET
    );
    assert_eq!(
        std::fs::read_to_string(t.base.join("ws/a.md")).unwrap(),
        "alpha"
    );
    let leftovers = t.ws.walk(|p| p.as_str().ends_with(".tmp")).unwrap();
    assert!(leftovers.files.is_empty(), "{leftovers:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever relative id is requested, no operation reads, writes or deletes outside.
    #[test]
    fn no_relative_id_reaches_outside(
        segs in prop::collection::vec(
            prop::sample::select(vec!["..", ".", "", "a.md", "notes", "out-dir", "out-file.md",
                "secret.md", "in-dir", "b.md", "outside", "ws", "deep", "c.md", "/"]),
            1..6,
        ),
    ) {
        let t = tree();
        let id = segs.join("/");
        if let Ok(p) = RelPath::new(id) {
            if let Ok(text) = t.ws.read_to_string(&p, 1024) {
                prop_assert_ne!(text, SECRET);
            }
            let _ = t.ws.write_file(&p, b"overwritten");
            let _ = t.ws.remove_file(&p);
        }
        prop_assert_eq!(std::fs::read_to_string(t.base.join("outside/secret.md")).unwrap(), SECRET);
        prop_assert_eq!(std::fs::read_to_string(t.base.join("outside/b.md")).unwrap(), SECRET);
        let outside: Vec<_> = std::fs::read_dir(t.base.join("outside")).unwrap().collect();
        prop_assert_eq!(outside.len(), 2);
    }
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Opens a FIFO for writing without blocking, which releases a reader stuck in `open(2)`.
fn release_fifo_readers(path: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
}

#[test]
fn reads_refuse_a_fifo_at_once_and_follow_no_link_when_asked() {
    let t = tree();
    mkfifo(&t.base.join("ws/pipe.md"));
    let ws = t.ws.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let follow = ws.read_to_string(&rel("pipe.md"), 100);
        let nofollow = ws.read_to_string_nofollow(&rel("pipe.md"), 100);
        let _ = tx.send((
            follow.map_err(|e| e.to_string()),
            nofollow.map_err(|e| e.to_string()),
        ));
    });
    let outcome = rx.recv_timeout(std::time::Duration::from_secs(5));
    release_fifo_readers(&t.base.join("ws/pipe.md"));
    let (follow, nofollow) = outcome.expect("reading a FIFO blocked");
    for result in [follow, nofollow] {
        let err = result.unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
    }
    assert_eq!(
        t.ws.read_to_string_nofollow(&rel("a.md"), 100).unwrap(),
        "alpha"
    );
    for link in ["in-file.md", "out-file.md", "abs-file.md", "notes/up.md"] {
        let err = t.ws.read_nofollow(&rel(link), 100).unwrap_err();
        assert!(
            matches!(err, FsError::SymlinkRefused { .. }),
            "{link}: {err}"
        );
    }
    let err =
        t.ws.read_nofollow(&rel("out-dir/secret.md"), 100)
            .unwrap_err();
    assert!(matches!(err, FsError::SymlinkRefused { .. }), "{err}");
    assert!(matches!(
        t.ws.read_nofollow(&rel("notes"), 10),
        Err(FsError::NotARegularFile { .. })
    ));
    assert!(matches!(
        t.ws.read_nofollow(&rel("a.md"), 4),
        Err(FsError::TooLarge { limit: 4, .. })
    ));
}

/// A note swapped for a FIFO between the check and the open must not block the reader: the
/// swap is raced thousands of times against both kinds of read.
#[test]
fn a_file_swapped_for_a_fifo_mid_read_never_blocks() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let t = tree();
    let w = t.base.join("ws");
    let (swap, regular, fifo) = (w.join("swap.md"), w.join("regular"), w.join("fifo"));
    std::fs::write(&regular, "text").unwrap();
    mkfifo(&fifo);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (ws, reader_stop) = (t.ws.clone(), Arc::clone(&stop));
    std::thread::spawn(move || {
        let target = rel("swap.md");
        let mut reads = 0u64;
        while !reader_stop.load(Ordering::Relaxed) {
            let _ = ws.read(&target, 100);
            let _ = ws.read_nofollow(&target, 100);
            reads += 1;
        }
        let _ = tx.send(reads);
    });
    for _ in 0..20_000 {
        std::fs::rename(&regular, &swap).unwrap();
        std::fs::rename(&swap, &regular).unwrap();
        std::fs::rename(&fifo, &swap).unwrap();
        std::fs::rename(&swap, &fifo).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let finished = rx.recv_timeout(std::time::Duration::from_secs(5));
    for path in [&swap, &fifo] {
        release_fifo_readers(path);
    }
    let reads = finished.expect("a read blocked in open(2) on a FIFO swapped in for the file");
    assert!(reads > 0);
}
