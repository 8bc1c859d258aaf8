//! Authorization against hostile workspace URIs, on a real directory tree.
#![cfg(target_os = "linux")] // symlinks, and /proc to see where a handle points
#![allow(clippy::unwrap_used)] // test fixtures: a failed setup step should abort the test

use std::path::{Path, PathBuf};

use mcp_runtime::Principal;
use mcp_runtime::scope::{FsError, PolicyError, ScopeError, ScopePolicy};
use proptest::prelude::*;

/// base/
///   alpha-root/          (alice's root)
///     sub/               (a real sub-directory)
///     escape -> ../bravo-root   (symlink leading to bob's root)
///     inner  -> sub             (symlink staying inside)
///   alpha-root-evil/     (prefix confusion)
///   bravo-root/          (bob's root)
///   link-to-alpha -> alpha-root
struct Tree {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    for d in ["alpha-root/sub", "alpha-root-evil", "bravo-root"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    std::os::unix::fs::symlink("../bravo-root", base.join("alpha-root/escape")).unwrap();
    std::os::unix::fs::symlink("sub", base.join("alpha-root/inner")).unwrap();
    std::os::unix::fs::symlink("alpha-root", base.join("link-to-alpha")).unwrap();
    Tree { _tmp: tmp, base }
}

fn alice() -> Principal {
    Principal::new("alice")
}
fn bob() -> Principal {
    Principal::new("bob")
}

fn policy(t: &Tree) -> ScopePolicy {
    ScopePolicy::new()
        .allow(alice(), t.base.join("alpha-root"))
        .unwrap()
        .allow(bob(), t.base.join("bravo-root"))
        .unwrap()
}

fn uri(t: &Tree, rest: &str) -> String {
    format!("file://{}{rest}", t.base.display())
}

/// Where the workspace handle physically points, read back from the kernel.
fn physical(ws: &mcp_runtime::scope::Workspace) -> PathBuf {
    use std::os::fd::{AsFd, AsRawFd};
    std::fs::read_link(format!("/proc/self/fd/{}", ws.dir().as_fd().as_raw_fd())).unwrap()
}

#[test]
fn accepts_root_and_real_subdirectories() {
    let t = tree();
    let p = policy(&t);
    let root = p.authorize(&alice(), &uri(&t, "/alpha-root")).unwrap();
    assert_eq!(root.uri().path(), t.base.join("alpha-root"));
    assert_eq!(physical(&root), t.base.join("alpha-root"));
    let sub = p.authorize(&alice(), &uri(&t, "/alpha-root/sub/")).unwrap();
    assert_eq!(sub.uri().path(), t.base.join("alpha-root/sub"));
    assert_eq!(sub.root().path(), t.base.join("alpha-root"));
    assert_eq!(physical(&sub), t.base.join("alpha-root/sub"));
    let localhost = format!("file://localhost{}/alpha-root", t.base.display());
    assert!(p.authorize(&alice(), &localhost).is_ok());
}

#[test]
fn prefix_confusion_is_not_containment() {
    let t = tree();
    let p = policy(&t);
    for rest in [
        "/alpha-root-evil",
        "/alpha-roo",
        "/alpha-root%2Devil",
        "/alpha",
    ] {
        let err = p.authorize(&alice(), &uri(&t, rest)).unwrap_err();
        assert!(
            matches!(err, ScopeError::NotAuthorized { .. }),
            "{rest}: {err}"
        );
    }
}

#[test]
fn encoded_and_plain_traversal_is_refused() {
    let t = tree();
    let p = policy(&t);
    for rest in [
        "/alpha-root/../bravo-root",
        "/alpha-root/%2e%2e/bravo-root",
        "/alpha-root/%2E%2E/bravo-root",
        "/alpha-root/sub/../../bravo-root",
        "/alpha-root/./%2e%2e/alpha-root-evil",
    ] {
        let err = p.authorize(&alice(), &uri(&t, rest)).unwrap_err();
        assert!(
            matches!(err, ScopeError::NotAuthorized { .. }),
            "{rest}: {err}"
        );
    }
    // A separator smuggled in an escape is a malformed URI, not a path.
    for rest in [
        "/alpha-root/..%2Fbravo-root",
        "/alpha-root/%2e%2e%5Cbravo-root",
    ] {
        let err = p.authorize(&alice(), &uri(&t, rest)).unwrap_err();
        assert!(matches!(err, ScopeError::InvalidUri(_)), "{rest}: {err}");
    }
    // Dot segments that stay inside are fine.
    let ws = p
        .authorize(&alice(), &uri(&t, "/alpha-root/sub/%2e%2e"))
        .unwrap();
    assert_eq!(ws.uri().path(), t.base.join("alpha-root"));
}

#[test]
fn symlinked_sub_workspaces_are_refused() {
    let t = tree();
    let p = policy(&t);
    for rest in ["/alpha-root/escape", "/alpha-root/inner"] {
        let err = p.authorize(&alice(), &uri(&t, rest)).unwrap_err();
        assert!(
            matches!(
                err,
                ScopeError::Unavailable {
                    source: FsError::SymlinkRefused { .. },
                    ..
                }
            ),
            "{rest}: {err}"
        );
    }
    let err = p
        .authorize(&alice(), &uri(&t, "/alpha-root/missing"))
        .unwrap_err();
    assert!(matches!(
        err,
        ScopeError::Unavailable {
            source: FsError::NotFound { .. },
            ..
        }
    ));
}

#[test]
fn principals_are_separate_and_denials_reveal_no_roots() {
    let t = tree();
    let p = policy(&t);
    assert!(p.authorize(&bob(), &uri(&t, "/bravo-root")).is_ok());
    assert!(p.authorize(&bob(), &uri(&t, "/alpha-root")).is_err());
    let stranger = Principal::new("mallory");
    let err = p.authorize(&stranger, &uri(&t, "/charlie")).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains("alpha") && !msg.contains("bravo"), "{msg}");
    let err = p.authorize(&bob(), &uri(&t, "/charlie")).unwrap_err();
    assert!(!err.to_string().contains("bravo"), "{err}");
    assert_eq!(p.roots_for(&stranger), vec![]);
    assert_eq!(p.roots_for(&bob())[0].path(), t.base.join("bravo-root"));
}

#[test]
fn configured_symlink_spelling_is_an_alias_of_the_canonical_root() {
    let t = tree();
    let p = ScopePolicy::new()
        .allow(alice(), t.base.join("link-to-alpha"))
        .unwrap();
    let ws = p
        .authorize(&alice(), &uri(&t, "/link-to-alpha/sub"))
        .unwrap();
    assert_eq!(ws.uri().path(), t.base.join("alpha-root/sub"));
    let ws = p.authorize(&alice(), &uri(&t, "/alpha-root")).unwrap();
    assert_eq!(ws.uri().path(), t.base.join("alpha-root"));
}

#[test]
fn configuration_errors_are_typed() {
    let t = tree();
    let missing = ScopePolicy::new().allow(alice(), t.base.join("nope"));
    assert!(matches!(missing, Err(PolicyError::RootUnavailable { .. })));
    std::fs::write(t.base.join("file"), "x").unwrap();
    let file = ScopePolicy::new().allow(alice(), t.base.join("file"));
    assert!(matches!(file, Err(PolicyError::NotADirectory { .. })));
}

/// A URI segment together with what it means after one percent-decoding.
#[derive(Debug, Clone, Copy)]
enum Meaning {
    Name(&'static str),
    Dot,
    DotDot,
    Empty,
    Invalid,
}

const SEGMENTS: &[(&str, Meaning)] = &[
    ("alpha-root", Meaning::Name("alpha-root")),
    ("%61lpha-root", Meaning::Name("alpha-root")),
    ("alpha-root-evil", Meaning::Name("alpha-root-evil")),
    ("bravo-root", Meaning::Name("bravo-root")),
    ("ALPHA-ROOT", Meaning::Name("ALPHA-ROOT")),
    ("sub", Meaning::Name("sub")),
    ("escape", Meaning::Name("escape")),
    ("inner", Meaning::Name("inner")),
    ("caf%C3%A9", Meaning::Name("café")),
    ("café", Meaning::Name("café")),
    ("%252e%252e", Meaning::Name("%2e%2e")),
    ("...", Meaning::Name("...")),
    (".", Meaning::Dot),
    ("%2e", Meaning::Dot),
    ("%2E", Meaning::Dot),
    ("..", Meaning::DotDot),
    ("%2e%2e", Meaning::DotDot),
    ("%2E%2e", Meaning::DotDot),
    (".%2E", Meaning::DotDot),
    ("", Meaning::Empty),
    ("%2F", Meaning::Invalid),
    ("..%2f..", Meaning::Invalid),
    ("%5c", Meaning::Invalid),
    ("%00", Meaning::Invalid),
    ("%FF", Meaning::Invalid),
    ("%zz", Meaning::Invalid),
    ("a\\b", Meaning::Invalid),
];

#[derive(Debug, PartialEq)]
enum Expect {
    Invalid,
    Denied,
    Unavailable,
    Accepted(PathBuf),
}

/// An independent model of the decision: resolve the meanings, then compare with std's
/// component-wise `Path::starts_with`.
fn model(base: &Path, host_ok: bool, segs: &[(&str, Meaning)]) -> Expect {
    if !host_ok || segs.iter().any(|(_, m)| matches!(m, Meaning::Invalid)) {
        return Expect::Invalid;
    }
    let mut stack: Vec<&str> = base
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    for (_, m) in segs {
        match m {
            Meaning::Name(n) => stack.push(n),
            Meaning::DotDot => {
                stack.pop();
            }
            _ => {}
        }
    }
    let resolved: PathBuf = std::iter::once("/").chain(stack).collect();
    let root = base.join("alpha-root");
    match resolved.strip_prefix(&root) {
        Err(_) => Expect::Denied,
        Ok(rest) if rest == Path::new("") || rest == Path::new("sub") => Expect::Accepted(resolved),
        Ok(_) => Expect::Unavailable,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No generated URI outside alice's root is ever accepted, and the decision matches the model.
    #[test]
    fn authorize_never_accepts_outside_the_root(
        host in prop::sample::select(vec![("", true), ("localhost", true), ("LocalHost", true), ("evil", false), ("localhost:1", false)]),
        lead in prop::sample::select(vec![0usize, 1, 2]),
        tail in prop::collection::vec(prop::sample::select(SEGMENTS), 0..8),
    ) {
        // Most interesting URIs start inside the root, so often begin there.
        let mut segs: Vec<(&str, Meaning)> = SEGMENTS.iter().copied().filter(|(s, _)| *s == "alpha-root" || *s == "sub").take(lead).collect();
        segs.extend(tail);
        let t = tree();
        let p = policy(&t);
        let raw: String = segs.iter().map(|(s, _)| format!("/{s}")).collect();
        let input = format!("file://{}{}{raw}", host.0, t.base.display());
        let got = match p.authorize(&alice(), &input) {
            Ok(ws) => {
                // Component-wise inside, both as computed and as the kernel sees the handle.
                prop_assert!(ws.uri().path().starts_with(t.base.join("alpha-root")));
                prop_assert!(physical(&ws).starts_with(t.base.join("alpha-root")));
                prop_assert_eq!(physical(&ws), ws.uri().path().to_path_buf());
                Expect::Accepted(ws.uri().path().to_path_buf())
            }
            Err(ScopeError::InvalidUri(_)) => Expect::Invalid,
            Err(ScopeError::NotAuthorized { .. }) => Expect::Denied,
            Err(ScopeError::Unavailable { .. }) => Expect::Unavailable,
        };
        prop_assert_eq!(got, model(&t.base, host.1, &segs), "uri {}", input);
    }
}
