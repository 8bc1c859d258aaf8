//! [`open_link_store`]: a link store from the same spec string as the replay store's.

use std::sync::Arc;

use super::{LinkStore, LinkStoreError};

/// Opens the link store named by `spec`, written as for
/// [`replay::open_store`](crate::replay::open_store), so that one setting puts a server's
/// replay claims, tasks and URL-mode links in the same backend: `memory` (or `memory:N`, at
/// most N links), `sqlite:PATH` (table `mcp_url_links`, beside the others in the same file) or
/// `postgres://...` (table `mcp_url_links`). There is no Redis link store: with `redis://...`
/// the error says to pick another. A backend not compiled in (features `sqlite`, `postgres`)
/// is an error naming the feature; a scheme registered with
/// [`backend::register`](crate::backend::register) opens its backend's link store.
///
/// # Errors
/// [`LinkStoreError::InvalidSpec`], [`LinkStoreError::NotCompiledIn`], or the backend's
/// failure to open.
pub async fn open_link_store(spec: &str) -> Result<Arc<dyn LinkStore>, LinkStoreError> {
    match crate::backend::backend_for(spec) {
        Some(backend) => backend.link_store(spec.trim()).await,
        None => Err(LinkStoreError::InvalidSpec {
            spec: crate::replay::redact(spec.trim()),
            hint: crate::backend::UNKNOWN_SCHEME,
        }),
    }
}
