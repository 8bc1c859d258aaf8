//! What the task-store tests share: a task record with every optional part empty. Each store's
//! test fills in the parts it wants to see round-trip (`TaskRecord { result: .., ..record(..) }`).
#![allow(dead_code)]

use mcp_runtime::tasks::TaskRecord;
use mcp_types::TaskStatus;

/// Task `id` of `owner`, of tool `t`, created and updated at 1 ms, at revision 0.
pub fn record(id: &str, owner: &str, status: TaskStatus, expires_ms: u64) -> TaskRecord {
    TaskRecord {
        task_id: id.into(),
        owner: owner.into(),
        tool: "t".into(),
        status,
        status_message: None,
        created_ms: 1,
        updated_ms: 1,
        expires_ms,
        result: None,
        error: None,
        input_requests: None,
        collected: Default::default(),
        resume_state: None,
        arguments: Default::default(),
        capabilities: None,
        revision: 0,
    }
}
