//! Captures what the current thread logs, for tests that assert on log output.
//!
//! One global subscriber per test binary, writing to the buffer of the thread that logs. A
//! scoped subscriber per test (`tracing::subscriber::set_default`) is not enough: tracing-core
//! keeps one interest cache per callsite for the whole process, and while a single dispatcher
//! is registered it computes a new callsite's interest from the registering thread's default
//! alone. A callsite first hit by a test running beside ours (a thread with no subscriber) is
//! then cached as "never", and our own event at that callsite is silently dropped (seen as
//! 11 of 40 runs of one binary failing, and as a CI flake of another). With a global
//! subscriber every thread computes interest against it, so no callsite is lost; threads that
//! are not capturing write nowhere.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // test helpers: panics are failures

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::Level;

/// How the binary's global subscriber formats events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One human-readable line per event, without colours.
    Text,
    /// One JSON object per event, with the current span's fields under `span`.
    Json,
}

/// What one thread logged while its [`CaptureGuard`] lived.
#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

thread_local! {
    static THREAD_CAPTURE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// The global subscriber's writer: the logging thread's capture, if it has one.
struct ThreadCapture;

impl io::Write for ThreadCapture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        THREAD_CAPTURE.with(|c| {
            if let Some(capture) = &*c.borrow() {
                capture.0.lock().unwrap().extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Stops this thread's capture when dropped.
pub struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        THREAD_CAPTURE.with(|c| *c.borrow_mut() = None);
    }
}

impl Capture {
    /// Captures this thread's events at `level` and above while the guard lives. Run the test
    /// on a current-thread runtime (`#[tokio::test]`'s default) so that the server's tasks log
    /// on the test's thread. Every test of a binary must ask for the same format and level:
    /// the first call installs the binary's subscriber, and a later call asking for another
    /// panics rather than capture something else than it asked for.
    pub fn install(format: Format, level: Level) -> (Self, CaptureGuard) {
        static GLOBAL: OnceLock<(Format, Level)> = OnceLock::new();
        let installed = *GLOBAL.get_or_init(|| {
            let builder = tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(|| ThreadCapture)
                .with_max_level(level);
            let set = match format {
                Format::Text => tracing::subscriber::set_global_default(builder.finish()),
                Format::Json => tracing::subscriber::set_global_default(
                    builder
                        .json()
                        .with_current_span(true)
                        .with_span_list(false)
                        .finish(),
                ),
            };
            set.expect("no other global subscriber in this test binary");
            // Installing rebuilt every registered callsite's interest; once more for one whose
            // registration, on another thread, straddled the installation.
            tracing::callsite::rebuild_interest_cache();
            (format, level)
        });
        assert_eq!(
            installed,
            (format, level),
            "every test of a binary captures with the same format and level"
        );
        let capture = Self::default();
        THREAD_CAPTURE.with(|c| *c.borrow_mut() = Some(capture.clone()));
        (capture, CaptureGuard(()))
    }

    /// Everything captured so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}
