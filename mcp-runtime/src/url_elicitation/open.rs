//! [`open_link_store`]: a link store from the same spec string as the replay store's.

use std::sync::Arc;

use super::{LinkLimits, LinkStore, LinkStoreError, MemoryLinkStore};
use crate::replay::StoreSpec;

/// Opens the link store named by `spec`, written as for
/// [`replay::open_store`](crate::replay::open_store), so that one setting puts a server's
/// replay claims, tasks and URL-mode links in the same backend: `memory` (or `memory:N`, at
/// most N links), `sqlite:PATH` (table `mcp_url_links`, beside the others in the same file) or
/// `postgres://...` (table `mcp_url_links`). There is no Redis link store: with `redis://...`
/// the error says to pick another. A backend not compiled in (features `sqlite`, `postgres`)
/// is an error naming the feature.
///
/// # Errors
/// [`LinkStoreError::InvalidSpec`], [`LinkStoreError::NotCompiledIn`], or the backend's
/// failure to open.
// A backend that is not compiled in leaves its path or URL unused.
#[cfg_attr(
    not(all(feature = "sqlite", feature = "postgres")),
    allow(unused_variables)
)]
pub async fn open_link_store(spec: &str) -> Result<Arc<dyn LinkStore>, LinkStoreError> {
    let invalid = |hint| LinkStoreError::InvalidSpec {
        spec: crate::replay::redact(spec.trim()),
        hint,
    };
    match StoreSpec::parse(spec).map_err(invalid)? {
        StoreSpec::Memory(None) => Ok(Arc::new(MemoryLinkStore::new())),
        StoreSpec::Memory(Some(capacity)) => Ok(Arc::new(MemoryLinkStore::with_limits(
            LinkLimits::new(capacity, LinkLimits::DEFAULT_MAX_LINKS_PER_PRINCIPAL),
        ))),
        StoreSpec::Sqlite(path) => {
            #[cfg(feature = "sqlite")]
            return Ok(Arc::new(super::sqlite::SqliteLinkStore::open(path).await?));
            #[cfg(not(feature = "sqlite"))]
            return Err(LinkStoreError::NotCompiledIn("sqlite"));
        }
        StoreSpec::Postgres(url) => {
            #[cfg(feature = "postgres")]
            return Ok(Arc::new(
                super::postgres::PostgresLinkStore::connect(url).await?,
            ));
            #[cfg(not(feature = "postgres"))]
            return Err(LinkStoreError::NotCompiledIn("postgres"));
        }
        StoreSpec::Redis(_) => Err(invalid(
            "there is no Redis link store; use `memory`, `sqlite:PATH` or `postgres://...` (or a LinkStore of your own)",
        )),
    }
}
