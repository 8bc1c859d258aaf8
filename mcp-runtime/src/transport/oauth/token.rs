//! Verifying one JWT access token: algorithm allow-list, key by `kid`, signature, `iss`, `aud`,
//! `exp`/`nbf`, `sub`; then the principal and the granted scopes.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Validation, decode, decode_header};
use serde::Deserialize;

use super::keys::KeyCache;
use super::{LOG_TARGET, OAuthConfig, principal_for};
use crate::service::{AuthScheme, Grant};
use crate::transport::auth::AuthRejection;

/// Larger tokens are refused unread (a JWT access token is a few KiB at most).
const MAX_TOKEN_BYTES: usize = 16 * 1024;

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    /// RFC 9068 §2.2.3: space-separated scopes.
    #[serde(default)]
    scope: Option<String>,
}

/// Logs why a token was refused (never the token) and refuses it.
fn refuse(reason: &str) -> AuthRejection {
    tracing::debug!(target: LOG_TARGET, reason, "access token refused");
    AuthRejection::InvalidToken
}

/// Verifies `token`; with `fetch`, unknown or stale keys are refetched first.
pub(super) async fn verify(
    config: &OAuthConfig,
    keys: &KeyCache,
    token: &str,
    fetch: bool,
) -> Result<Grant, AuthRejection> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(refuse("token too large"));
    }
    // Not header.payload.signature: an opaque token, which only the issuer can judge.
    if token.split('.').count() != 3 {
        if !fetch {
            return Err(refuse("opaque token on a path that cannot ask the issuer"));
        }
        return super::introspect::introspect(config, keys, token).await;
    }
    // `alg: none` and unknown algorithms fail to parse here.
    let header = decode_header(token).map_err(|_| refuse("malformed or unsupported header"))?;
    if !config.algorithms.contains(&header.alg) {
        return Err(refuse("algorithm not allowed"));
    }
    let kid = header.kid.as_deref();
    let mut set = keys.snapshot();
    if fetch && (keys.is_stale(&set) || set.find(kid, header.alg).is_none()) {
        match keys.refresh(Some(set.generation)).await {
            Ok(fresh) => set = fresh,
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "cannot refresh the issuer's signing keys; using the cached ones");
            }
        }
    }
    let key = set
        .find(kid, header.alg)
        .ok_or_else(|| refuse("no matching signing key"))?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[&config.issuer]);
    validation.set_audience(&[&config.resource]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.leeway = config.leeway.as_secs();
    validation.validate_nbf = true;
    validation.validate_exp = true;
    let data = decode::<Claims>(token, &key.decoding, &validation).map_err(|e| {
        // A fixed reason only: error details may quote token content.
        refuse(match e.kind() {
            ErrorKind::ExpiredSignature => "expired",
            ErrorKind::ImmatureSignature => "not yet valid",
            ErrorKind::InvalidAudience => "issued for another resource",
            ErrorKind::InvalidIssuer => "wrong issuer",
            ErrorKind::InvalidSignature => "bad signature",
            ErrorKind::MissingRequiredClaim(_) => "missing a required claim",
            ErrorKind::InvalidAlgorithm => "algorithm does not fit the key",
            _ => "malformed token",
        })
    })?;
    let claims = data.claims;
    if claims.sub.is_empty() {
        return Err(refuse("empty sub"));
    }
    let scopes = claims
        .scope
        .as_deref()
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(Grant {
        principal: principal_for(&claims.iss, &claims.sub),
        scopes: Some(scopes),
        scheme: AuthScheme::OAuth,
    })
}
