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
//! What the runtime did before copies of a retry waited for the one recorded outcome and a
//! retry ran to its end on its own task (each of these failed this test then):
//!
//! - an instance stopped (SIGSTOP) after it took a claim: the proxy answered 504 and dropped
//!   the connection; resent retries got "already used ... Restart the call"; when the instance
//!   resumed, the dropped request deleted the note without recording the outcome, and later
//!   retries were told "No note title contains ...; nothing was deleted" (untruthful), or the
//!   work after the claim was dropped with the request (a lost confirmation);
//! - Redis stopping while a claim was written: the driver's own 0.5 s timeout answered
//!   "nothing was changed, retry later" while the claim landed, then the retry got "already
//!   used" and the note was never deleted;
//! - PostgreSQL, an instance killed after its transaction (claim and deletion) committed and
//!   before the outcome was recorded: every resent retry was told "nothing was deleted".
//!
//! A SIGKILL between the claim and the unlink of a file note loses that confirmation by
//! design (files are deleted at most once): counted apart, not a failure.
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
fn a_fleet_on_postgres_under_faults_deletes_each_confirmed_note_once_and_says_so() {
    fleet_under_faults(StoreKind::Postgres, "MCP_REQUIRE_POSTGRES");
}

#[test]
fn a_fleet_on_redis_under_faults_deletes_each_confirmed_note_once_and_says_so() {
    fleet_under_faults(StoreKind::Redis, "MCP_REQUIRE_REDIS");
}
