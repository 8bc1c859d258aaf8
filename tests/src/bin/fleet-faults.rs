//! `fleet-faults`: the fleet-under-faults scenario of `tests/tests/fleet_haproxy.rs` for a
//! chosen duration, printing its counts and throughput (what `bench/fleet.sh` runs).
//!
//! ```text
//! fleet-faults [--store postgres|redis]... [--duration SECS] [--agents N] [--no-faults]
//! ```
//!
//! Three `notes-example serve --http` instances (the binary `NOTES_EXAMPLE_BIN` names, else a
//! debug build) behind HAProxy (`HAPROXY`, else `haproxy`), sharing one PostgreSQL database
//! (on `MCP_TEST_POSTGRES_URL`) or one Redis (a `redis-server` of its own); one fault cycle
//! per 16 s of load (see `mcp_tests::fleet`). Exit 0 when no confirmation was lost, nothing
//! was deleted twice, every reply was truthful and every error retryable or truthful; 1
//! otherwise; 2 for bad arguments or a missing piece.

use std::process::ExitCode;
use std::time::Duration;

use mcp_tests::fleet::{FleetError, FleetPlan, StoreKind, run};
use mcp_tests::haproxy::haproxy_binary;

const USAGE: &str =
    "usage: fleet-faults [--store postgres|redis]... [--duration SECS] [--agents N] [--no-faults]";

fn parse() -> Result<(Vec<StoreKind>, Duration, usize, bool), String> {
    let mut stores = Vec::new();
    let mut duration = Duration::from_secs(18);
    let mut agents = 16;
    let mut faults = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--store" => {
                let v = value("--store")?;
                stores.push(StoreKind::parse(&v).ok_or_else(|| format!("unknown store {v:?}"))?);
            }
            "--duration" => {
                let v = value("--duration")?;
                let secs: f64 = v.parse().map_err(|_| format!("bad --duration {v:?}"))?;
                if !(1.0..=86_400.0).contains(&secs) {
                    return Err("--duration: 1 to 86400 seconds".to_owned());
                }
                duration = Duration::from_secs_f64(secs);
            }
            "--agents" => {
                let v = value("--agents")?;
                agents = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or_else(|| format!("bad --agents {v:?} (1 to 1024)"))?;
            }
            "--no-faults" => faults = false,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unexpected argument {other:?}\n{USAGE}")),
        }
    }
    if stores.is_empty() {
        stores = vec![StoreKind::Postgres, StoreKind::Redis];
    }
    Ok((stores, duration, agents, faults))
}

fn main() -> ExitCode {
    let (stores, duration, agents, faults) = match parse() {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let haproxy = match haproxy_binary() {
        Ok(binary) => binary,
        Err(e) => {
            eprintln!("fleet-faults: HAProxy is needed: {e}");
            return ExitCode::from(2);
        }
    };
    let mut clean = true;
    for store in stores {
        let plan = FleetPlan {
            agents,
            load: duration,
            faults,
            ..FleetPlan::new(store)
        };
        match run(&plan, &haproxy) {
            Ok(report) => {
                println!("{}", report.summary());
                let failures = report.failures();
                if !failures.is_empty() {
                    println!("  FAILED: {}", failures.join(", "));
                    print!("{}", report.logs);
                    clean = false;
                }
            }
            Err(FleetError::Missing(why)) => {
                eprintln!("fleet-faults: {}: {why}", store.name());
                return ExitCode::from(2);
            }
            Err(FleetError::Failed(e)) => {
                eprintln!("fleet-faults: {}: {e}", store.name());
                return ExitCode::FAILURE;
            }
        }
    }
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
