//! A fleet under faults: three `notes-example serve --http` instances behind HAProxy (round
//! robin, health checks, `retries 0`: the proxy never resends a POST), sharing one PostgreSQL
//! database (notes, claims, tasks), then one Redis (claims, tasks; notes in one shared
//! directory). 16 agents run whole `notes_delete` flows through the proxy, resending the same
//! retry after errors and timeouts, while one instance is killed (SIGKILL) and restarted, the
//! store "restarts" (PostgreSQL: connections refused and the servers' connections terminated
//! on the fleet's own database for 1 s; Redis: a server of the test's own stopped and started
//! again) and another instance is stopped (SIGSTOP) for 3 s. See `mcp_tests::fleet` for the
//! scenario and what each count means.
//!
//! Must hold: no confirmation lost, no double deletion, no untruthful reply, every error a
//! client saw retryable (no reply, "retry", "outcome unknown") or truthful ("nothing was
//! deleted" while the note is still there), the lesson's notes untouched, and flows complete
//! again after the faults.
//!
//! What today's runtime does instead (why both are `#[ignore]`d until the runtime's change
//! lands: claimed work runs to completion after a disconnect, an in-flight duplicate waits for
//! the recorded outcome, and "nothing was changed" is said only when certain):
//!
//! - an instance stopped (SIGSTOP) after it took a claim: the proxy answers 504 and drops the
//!   connection; resent retries get "This confirmation was already used ... Restart the call"
//!   (not retryable, says nothing of the outcome); when the instance resumes, the dropped
//!   request either still deletes the note without recording the outcome (files; and
//!   PostgreSQL, which commits claim and deletion together), and later retries are told
//!   "No note title contains ...; nothing was deleted" (untruthful), or never deletes it
//!   (files: the work after the claim is dropped with the request), a lost confirmation;
//! - Redis stopping while a claim is written: "replay store unavailable (redis); nothing was
//!   changed, retry later", then, once Redis is back, "already used" for the retry it asked
//!   for, and the note is never deleted (a lost confirmation);
//! - PostgreSQL, an instance killed (SIGKILL) after its transaction (claim and deletion)
//!   committed and before the outcome was recorded: the proxy answers 502, and every resent
//!   retry is told "No note title contains ...; nothing was deleted" (untruthful);
//! - a SIGKILL between the claim and the unlink of a file note loses that confirmation by
//!   design (files are deleted at most once): counted apart, not a failure.
//!
//! Skipped with a printed reason without HAProxy (unless `MCP_REQUIRE_HAPROXY`), PostgreSQL
//! (unless `MCP_REQUIRE_POSTGRES`) or `redis-server` (unless `MCP_REQUIRE_REDIS`). The two
//! runs take turns (about 25 s each), so that neither slows the other.

// Test helpers outside #[test] fns fail the test loudly on setup errors, by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use mcp_tests::fleet::{FleetError, FleetPlan, StoreKind, run};
use mcp_tests::haproxy::haproxy_or_skip;

static ONE_FLEET_AT_A_TIME: Mutex<()> = Mutex::new(());

fn fleet_under_faults(store: StoreKind, require: &str) {
    let _turn = ONE_FLEET_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(haproxy) = haproxy_or_skip("the fleet test") else {
        return;
    };
    let report = match run(&FleetPlan::new(store), &haproxy) {
        Ok(report) => report,
        Err(FleetError::Missing(why)) => {
            assert!(
                std::env::var_os(require).is_none(),
                "{require} is set but {why}"
            );
            println!("skipped: the fleet test on {}: {why}", store.name());
            return;
        }
        Err(FleetError::Failed(e)) => panic!("the fleet run failed: {e}"),
    };
    println!("{}", report.summary());
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "{}\n{}\n{}",
        failures.join(", "),
        report.summary(),
        report.logs
    );
    // Not vacuous: flows ran and completed, also after every fault had ended.
    assert!(report.completed >= 100, "{}", report.summary());
    assert!(report.completed_after_faults > 0, "{}", report.summary());
}

#[test]
#[ignore = "fails intermittently on today's runtime (about 1 run in 4): an instance stopped mid-confirmation commits claim and deletion after the proxy's 504 dropped the client, records no outcome, and retries get 'already used, restart' then an untruthful 'nothing was deleted'; un-ignore with the runtime's claim/retry change"]
fn a_fleet_on_postgres_under_faults_deletes_each_confirmed_note_once_and_says_so() {
    fleet_under_faults(StoreKind::Postgres, "MCP_REQUIRE_POSTGRES");
}

#[test]
#[ignore = "fails on today's runtime: after a 504 (instance stopped) or a Redis restart, retries get 'already used, restart' (non-retryable), confirmations are lost, and a resumed instance deletes with no recorded outcome so retries are told 'nothing was deleted'; un-ignore with the runtime's claim/retry change"]
fn a_fleet_on_redis_under_faults_deletes_each_confirmed_note_once_and_says_so() {
    fleet_under_faults(StoreKind::Redis, "MCP_REQUIRE_REDIS");
}
