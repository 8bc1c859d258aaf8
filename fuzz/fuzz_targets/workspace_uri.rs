//! A parsed workspace URI is always absolute and free of dot segments, and containment in a
//! fixed base agrees with a component-wise comparison.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_runtime::scope::WorkspaceUri;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(uri) = WorkspaceUri::parse(text) else {
        return;
    };
    assert!(uri.path().is_absolute());
    for part in uri.components() {
        assert!(!part.is_empty() && part != "." && part != "..");
        assert!(!part.contains('/') && !part.contains('\0'));
    }
    let base = WorkspaceUri::parse("file:///srv/notes").expect("valid base");
    let inside = uri.components().starts_with(base.components());
    assert_eq!(uri.is_within(&base), inside);
});
