//! Metadata discovery: protected-resource metadata (RFC 9728) from the challenge or the
//! well-known URLs, then the authorization server's metadata (RFC 8414, OpenID Connect
//! Discovery) at the well-known URLs built from its issuer, each checked before use.

use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::Value;

use super::AuthError;

/// How many same-origin redirects a metadata fetch follows.
const MAX_REDIRECTS: usize = 3;

/// The parts of RFC 9728 protected-resource metadata the client uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier, sent back verbatim as the `resource` parameter (RFC 8707).
    pub resource: String,
    /// Issuers that can mint tokens for it; the first is used.
    pub authorization_servers: Vec<String>,
    /// Scopes the resource uses.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// The parts of RFC 8414 authorization-server metadata the client uses (endpoints already
/// checked to be https or loopback http).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// A bounded, redirect-checked JSON fetcher over one reqwest client.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    pub http: reqwest::Client,
    pub max_bytes: usize,
}

/// A fetched document, or the status that made the caller try the next URL.
pub(crate) enum Fetched {
    Json(Value),
    Status(StatusCode),
}

impl Fetcher {
    /// GETs `url` as JSON, following at most [`MAX_REDIRECTS`] redirects within its origin.
    pub(crate) async fn get_json(&self, url: &Url) -> Result<Fetched, AuthError> {
        let mut current = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let response = self
                .http
                .get(current.clone())
                .header(reqwest::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| network(&current, &e))?;
            let status = response.status();
            if status.is_redirection() {
                let to = location(&current, &response)?;
                if to.origin() != url.origin() {
                    return Err(AuthError::Redirect {
                        from: current.to_string(),
                        to: to.to_string(),
                    });
                }
                current = to;
                continue;
            }
            if !status.is_success() {
                return Ok(Fetched::Status(status));
            }
            let body = self.read_body(&current, response).await?;
            return serde_json::from_slice::<Value>(&body)
                .ok()
                .filter(Value::is_object)
                .map(Fetched::Json)
                .ok_or_else(|| AuthError::Malformed {
                    url: current.to_string(),
                    detail: "not a JSON object".into(),
                });
        }
        Err(AuthError::Redirect {
            from: url.to_string(),
            to: format!("{current} (more than {MAX_REDIRECTS} redirects)"),
        })
    }

    /// Reads a response body, refusing more than `max_bytes`.
    pub(crate) async fn read_body(
        &self,
        url: &Url,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, AuthError> {
        let too_large = || AuthError::TooLarge {
            url: url.to_string(),
            limit: self.max_bytes,
        };
        if response
            .content_length()
            .is_some_and(|n| n > self.max_bytes as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| network(url, &e))? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Protected-resource metadata for the MCP endpoint `server`: from the challenge's
    /// `resource_metadata` when given, else the path-inserted then the root well-known URL;
    /// its `resource` must cover `server`.
    pub(crate) async fn resource_metadata(
        &self,
        server: &Url,
        from_challenge: Option<&str>,
    ) -> Result<ResourceMetadata, AuthError> {
        let candidates = match from_challenge {
            Some(url) => vec![checked_url("resource_metadata", url)?],
            None => {
                let origin = server.origin().ascii_serialization();
                let path = server.path().trim_end_matches('/');
                let mut urls = Vec::new();
                if !path.is_empty() {
                    urls.push(format!(
                        "{origin}/.well-known/oauth-protected-resource{path}"
                    ));
                }
                urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
                urls.iter()
                    .map(|u| checked_url("resource_metadata", u))
                    .collect::<Result<_, _>>()?
            }
        };
        let mut tried = Vec::new();
        for url in candidates {
            match self.get_json(&url).await? {
                Fetched::Json(value) => {
                    let meta: ResourceMetadata =
                        serde_json::from_value(value).map_err(|e| AuthError::Malformed {
                            url: url.to_string(),
                            detail: e.to_string(),
                        })?;
                    if meta.authorization_servers.is_empty() {
                        return Err(AuthError::Malformed {
                            url: url.to_string(),
                            detail: "authorization_servers is empty".into(),
                        });
                    }
                    if !resource_covers(&meta.resource, server) {
                        return Err(AuthError::ResourceMismatch {
                            server: server.to_string(),
                            published: meta.resource,
                        });
                    }
                    return Ok(meta);
                }
                Fetched::Status(status) => tried.push(format!("{url} ({status})")),
            }
        }
        Err(AuthError::NoMetadata {
            what: "protected-resource",
            tried,
        })
    }

    /// The metadata of the authorization server `issuer`, from the RFC 8414 and OpenID
    /// Connect well-known URLs in the order MCP prescribes. The document's `issuer` must be
    /// `issuer` exactly, its endpoints https (or loopback http), and it must offer PKCE S256.
    pub(crate) async fn server_metadata(&self, issuer: &str) -> Result<ServerMetadata, AuthError> {
        let base = checked_url("issuer", issuer)?;
        if base.query().is_some() || base.fragment().is_some() {
            return Err(AuthError::Malformed {
                url: issuer.to_owned(),
                detail: "an issuer has no query or fragment".into(),
            });
        }
        let origin = base.origin().ascii_serialization();
        let path = base.path().trim_end_matches('/');
        let candidates = if path.is_empty() {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ]
        };
        let mut tried = Vec::new();
        for candidate in candidates {
            let url = checked_url("metadata URL", &candidate)?;
            let value = match self.get_json(&url).await? {
                Fetched::Json(value) => value,
                Fetched::Status(status) => {
                    tried.push(format!("{url} ({status})"));
                    continue;
                }
            };
            let meta: ServerMetadata =
                serde_json::from_value(value).map_err(|e| AuthError::Malformed {
                    url: url.to_string(),
                    detail: e.to_string(),
                })?;
            // Simple string comparison (RFC 8414 §3.3): no normalization.
            if meta.issuer != issuer {
                return Err(AuthError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found: meta.issuer,
                });
            }
            checked_url("authorization_endpoint", &meta.authorization_endpoint)?;
            checked_url("token_endpoint", &meta.token_endpoint)?;
            if let Some(registration) = &meta.registration_endpoint {
                checked_url("registration_endpoint", registration)?;
            }
            let s256 = meta
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|m| m.iter().any(|m| m == "S256"));
            if !s256 {
                return Err(AuthError::PkceUnsupported {
                    issuer: issuer.to_owned(),
                });
            }
            return Ok(meta);
        }
        Err(AuthError::NoMetadata {
            what: "authorization-server",
            tried,
        })
    }
}

/// Whether the published resource identifier covers the MCP endpoint: same scheme, host and
/// port, and its path a segment prefix of the endpoint's.
pub(crate) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.fragment().is_some() || resource.origin() != server.origin() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"))
}

/// `url` parsed, and https or http on a loopback host.
pub(crate) fn checked_url(what: &'static str, url: &str) -> Result<Url, AuthError> {
    let insecure = || AuthError::InsecureUrl {
        what,
        url: url.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|_| insecure())?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        _ => Err(insecure()),
    }
}

fn is_loopback(url: &Url) -> bool {
    url.host_str().is_some_and(|host| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// The absolute target of a redirect response.
pub(crate) fn location(from: &Url, response: &reqwest::Response) -> Result<Url, AuthError> {
    let to = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| AuthError::Malformed {
            url: from.to_string(),
            detail: format!("HTTP {} without a Location", response.status()),
        })?;
    from.join(to).map_err(|_| AuthError::Redirect {
        from: from.to_string(),
        to: to.to_owned(),
    })
}

/// A transport error, without the URL's query (it may hold a code).
pub(crate) fn network(url: &Url, error: &reqwest::Error) -> AuthError {
    let mut shown = url.clone();
    shown.set_query(None);
    let detail = if error.is_timeout() {
        "timed out".to_owned()
    } else {
        // reqwest's Display includes the URL; the source chain says why.
        let mut why = String::new();
        let mut source = std::error::Error::source(error);
        while let Some(s) = source {
            why = s.to_string();
            source = s.source();
        }
        if why.is_empty() {
            error.to_string()
        } else {
            why
        }
    };
    AuthError::Network {
        url: shown.to_string(),
        detail,
    }
}
