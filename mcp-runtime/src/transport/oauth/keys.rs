//! The issuer's signing keys: discovered through its metadata, cached, refetched on an unknown
//! `kid` (rate-limited, one fetch at a time) or when old, bounded in number.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;

use super::fetch::{Fetcher, check_url, is_loopback};
use super::metadata::issuer_metadata_urls;
use super::{LOG_TARGET, OAuthConfig, OAuthError};

/// One verification key.
pub(super) struct Key {
    kid: Option<String>,
    /// The JWK's own `alg`, which then is the only algorithm it verifies.
    alg: Option<Algorithm>,
    pub(super) decoding: DecodingKey,
}

/// The keys of one JWKS fetch.
#[derive(Default)]
pub(super) struct KeySet {
    keys: Vec<Key>,
    fetched: Option<Instant>,
    /// Bumped on every successful fetch, so waiters can tell someone else refreshed.
    pub(super) generation: u64,
}

impl KeySet {
    /// The key that may verify a token with this `kid` and `alg`: same family, the JWK's own
    /// `alg` (if any) equal, and, without a `kid`, the only such key.
    pub(super) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&Key> {
        let mut fits = self
            .keys
            .iter()
            .filter(|k| k.decoding.family() == alg.family() && k.alg.is_none_or(|own| own == alg));
        match kid {
            Some(kid) => fits.find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let first = fits.next();
                if fits.next().is_some() { None } else { first }
            }
        }
    }
}

#[derive(Deserialize)]
struct IssuerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
}

#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<serde_json::Value>,
}

#[derive(Default)]
struct RefreshState {
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
    last_attempt: Option<Instant>,
}

pub(super) struct KeyCache {
    issuer: String,
    fetcher: Fetcher,
    algorithms: Vec<Algorithm>,
    max_keys: usize,
    refresh_interval: Duration,
    max_key_age: Duration,
    current: RwLock<Arc<KeySet>>,
    refresh: tokio::sync::Mutex<RefreshState>,
}

impl KeyCache {
    pub(super) fn new(config: &OAuthConfig) -> Result<Self, OAuthError> {
        Ok(Self {
            issuer: config.issuer.clone(),
            fetcher: Fetcher::new(
                config.fetch_timeout,
                config.max_document_bytes,
                config
                    .issuer
                    .parse::<http::Uri>()
                    .ok()
                    .and_then(|u| u.host().map(is_loopback))
                    .unwrap_or(false),
            )?,
            algorithms: config.algorithms.clone(),
            max_keys: config.max_keys,
            refresh_interval: config.refresh_interval,
            max_key_age: config.max_key_age,
            current: RwLock::new(Arc::new(KeySet::default())),
            refresh: tokio::sync::Mutex::new(RefreshState::default()),
        })
    }

    /// The keys as last fetched.
    pub(super) fn snapshot(&self) -> Arc<KeySet> {
        match self.current.read() {
            Ok(set) => Arc::clone(&set),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Whether `set` was never fetched or is older than the maximum key age.
    pub(super) fn is_stale(&self, set: &KeySet) -> bool {
        set.fetched
            .is_none_or(|at| at.elapsed() >= self.max_key_age)
    }

    /// Refetches the keys. `seen`: the generation the caller found lacking (unknown `kid`, or
    /// stale); the fetch is skipped if another caller refreshed since, or if the last attempt
    /// was less than the refresh interval ago: a flood of unknown `kid`s, or an issuer that is
    /// down, costs one fetch per interval, and requests keep the cached keys meanwhile.
    /// `None` forces a fetch (start-up discovery).
    pub(super) async fn refresh(&self, seen: Option<u64>) -> Result<Arc<KeySet>, OAuthError> {
        let mut state = self.refresh.lock().await;
        let current = self.snapshot();
        if let Some(seen) = seen {
            let recent = state
                .last_attempt
                .is_some_and(|at| at.elapsed() < self.refresh_interval);
            if current.generation != seen || recent {
                return Ok(current);
            }
        }
        state.last_attempt = Some(Instant::now());
        let jwks_uri = match &state.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let (uri, introspection) = self.discover().await?;
                state.jwks_uri = Some(uri.clone());
                state.introspection_endpoint = introspection;
                uri
            }
        };
        let raw: RawJwks = self.fetcher.json(&jwks_uri).await?;
        let keys: Vec<Key> = raw
            .keys
            .into_iter()
            .filter_map(|value| self.usable(value))
            .take(self.max_keys)
            .collect();
        tracing::info!(target: LOG_TARGET, keys = keys.len(), "fetched the issuer's signing keys");
        let set = Arc::new(KeySet {
            keys,
            fetched: Some(Instant::now()),
            generation: current.generation.wrapping_add(1),
        });
        match self.current.write() {
            Ok(mut slot) => *slot = Arc::clone(&set),
            Err(poisoned) => *poisoned.into_inner() = Arc::clone(&set),
        }
        Ok(set)
    }

    /// Finds the issuer's `jwks_uri` in its metadata (RFC 8414, else OpenID discovery); the
    /// metadata must name exactly our issuer.
    async fn discover(&self) -> Result<(String, Option<String>), OAuthError> {
        let mut last = None;
        for url in issuer_metadata_urls(&self.issuer) {
            match self.fetcher.json::<IssuerMetadata>(&url).await {
                Ok(metadata) => {
                    let bad = |reason: String| OAuthError::Metadata {
                        issuer: self.issuer.clone(),
                        reason,
                    };
                    if metadata.issuer != self.issuer {
                        return Err(bad(format!(
                            "it names the issuer {:?}; configure exactly that issuer",
                            metadata.issuer
                        )));
                    }
                    let uri = metadata
                        .jwks_uri
                        .ok_or_else(|| bad("it has no jwks_uri".into()))?;
                    check_url("jwks_uri", &uri, false)?;
                    let introspection = metadata
                        .introspection_endpoint
                        .filter(|u| check_url("introspection_endpoint", u, false).is_ok());
                    return Ok((uri, introspection));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| OAuthError::Metadata {
            issuer: self.issuer.clone(),
            reason: "no metadata URL".into(),
        }))
    }

    /// The issuer's introspection endpoint, as its metadata named it (discovering it first if
    /// nothing was fetched yet).
    pub(super) async fn introspection_endpoint(&self) -> Option<String> {
        let known = self.refresh.lock().await.introspection_endpoint.clone();
        if known.is_some() {
            return known;
        }
        let mut state = self.refresh.lock().await;
        if state.jwks_uri.is_none()
            && let Ok((jwks, introspection)) = self.discover().await
        {
            state.jwks_uri = Some(jwks);
            state.introspection_endpoint = introspection;
        }
        state.introspection_endpoint.clone()
    }

    /// The fetcher, for introspection.
    pub(super) fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// A signature key we may verify with: not for encryption, not symmetric, its own `alg`
    /// (if any) on the allow-list.
    fn usable(&self, value: serde_json::Value) -> Option<Key> {
        let jwk: Jwk = serde_json::from_value(value).ok()?;
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            return None;
        }
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            return None;
        }
        let alg = match jwk.common.key_algorithm {
            Some(alg) => {
                let alg = Algorithm::try_from(alg).ok()?;
                if !self.algorithms.contains(&alg) {
                    return None;
                }
                Some(alg)
            }
            None => None,
        };
        let decoding = DecodingKey::from_jwk(&jwk).ok()?;
        if decoding.family() == AlgorithmFamily::Hmac {
            return None;
        }
        Some(Key {
            kid: jwk.common.key_id,
            alg,
            decoding,
        })
    }
}
