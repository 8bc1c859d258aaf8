//! RFC 7662 introspection of opaque access tokens: the issuer says whether the token is active
//! and what it grants; the same audience, issuer, time and subject rules as for JWTs apply.

use serde::Deserialize;

use super::keys::KeyCache;
use super::{LOG_TARGET, OAuthConfig, principal_for};
use crate::service::{AuthScheme, Grant};
use crate::transport::auth::AuthRejection;

#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<serde_json::Value>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    nbf: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

fn refuse(reason: &str) -> AuthRejection {
    tracing::debug!(target: LOG_TARGET, reason, "opaque access token refused");
    AuthRejection::InvalidToken
}

fn names(aud: Option<&serde_json::Value>, resource: &str) -> bool {
    match aud {
        Some(serde_json::Value::String(one)) => one == resource,
        Some(serde_json::Value::Array(many)) => many.iter().any(|a| a.as_str() == Some(resource)),
        _ => false,
    }
}

/// Asks the issuer about `token` (sent only to the issuer's own introspection endpoint).
pub(super) async fn introspect(
    config: &OAuthConfig,
    keys: &KeyCache,
    token: &str,
) -> Result<Grant, AuthRejection> {
    let Some(client) = &config.introspection else {
        return Err(refuse("not a JWT and introspection is not configured"));
    };
    let Some(endpoint) = keys.introspection_endpoint().await else {
        return Err(refuse("the issuer has no introspection_endpoint"));
    };
    let answer: Answer = keys
        .fetcher()
        .post_form(
            &endpoint,
            &[("token", token), ("token_type_hint", "access_token")],
            (&client.client_id, &client.client_secret),
        )
        .await
        .map_err(|e| {
            tracing::warn!(target: LOG_TARGET, error = %e, "token introspection failed");
            AuthRejection::InvalidToken
        })?;
    if !answer.active {
        return Err(refuse("inactive"));
    }
    if answer
        .iss
        .as_deref()
        .is_some_and(|iss| iss != config.issuer)
    {
        return Err(refuse("wrong issuer"));
    }
    if !names(answer.aud.as_ref(), &config.resource) {
        return Err(refuse("issued for another resource"));
    }
    let now = jsonwebtoken::get_current_timestamp();
    let leeway = config.leeway.as_secs();
    match answer.exp {
        Some(exp) if exp.saturating_add(leeway) > now => {}
        _ => return Err(refuse("expired or without exp")),
    }
    if answer
        .nbf
        .is_some_and(|nbf| nbf > now.saturating_add(leeway))
    {
        return Err(refuse("not yet valid"));
    }
    let sub = answer
        .sub
        .filter(|s| !s.is_empty())
        .ok_or_else(|| refuse("no sub"))?;
    let scopes = answer
        .scope
        .as_deref()
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Ok(Grant {
        principal: principal_for(&config.issuer, &sub),
        scopes: Some(scopes),
        scheme: AuthScheme::OAuth,
    })
}
