//! RFC 9728 protected-resource metadata (what this server serves) and the RFC 8414 / OpenID
//! discovery URLs of the issuer's metadata (what it fetches).

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::get;
use bytes::Bytes;
use http::HeaderValue;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL, CONTENT_TYPE};
use serde_json::json;

use super::{OAuthConfig, OAuthError};

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// `(scheme://authority, path without trailing slash)` of an already checked URL.
fn split(url: &str) -> (String, String) {
    match url.parse::<http::Uri>() {
        Ok(uri) => {
            let origin = format!(
                "{}://{}",
                uri.scheme_str().unwrap_or("https"),
                uri.authority().map_or("", |a| a.as_str())
            );
            (origin, uri.path().trim_end_matches('/').to_owned())
        }
        Err(_) => (url.to_owned(), String::new()),
    }
}

/// Where the issuer's metadata may be: RFC 8414 (`/.well-known/oauth-authorization-server`
/// inserted before the issuer's path), then OpenID Connect Discovery (appended).
pub(super) fn issuer_metadata_urls(issuer: &str) -> [String; 2] {
    let (origin, path) = split(issuer);
    [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// The served document and where it lives.
#[derive(Debug)]
pub(super) struct Metadata {
    url: String,
    /// Route paths: the plain well-known path, and the path-suffixed one for a resource with a
    /// path.
    paths: Vec<String>,
    body: Bytes,
}

impl Metadata {
    pub(super) fn new(config: &OAuthConfig) -> Result<Self, OAuthError> {
        let (origin, path) = split(&config.resource);
        // The suffix becomes a route: plain path characters only, so routing cannot misread it.
        let routable = path.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~' | b'%')
        });
        if !routable || path.contains("//") {
            return Err(OAuthError::Url {
                what: "--resource (resource URI)",
                url: config.resource.clone(),
                reason: "its path may hold only letters, digits, / - . _ ~ and %-escapes",
            });
        }
        let mut document = json!({
            "resource": config.resource,
            "authorization_servers": [config.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !config.scopes_supported.is_empty() {
            document["scopes_supported"] = json!(config.scopes_supported);
        }
        if let Some(name) = &config.resource_name {
            document["resource_name"] = json!(name);
        }
        let body = serde_json::to_vec(&document).map_err(|e| OAuthError::Metadata {
            issuer: config.issuer.clone(),
            reason: e.to_string(),
        })?;
        let mut paths = vec![WELL_KNOWN.to_owned()];
        if !path.is_empty() {
            paths.push(format!("{WELL_KNOWN}{path}"));
        }
        Ok(Self {
            url: format!("{origin}{WELL_KNOWN}{path}"),
            paths,
            body: Bytes::from(body),
        })
    }

    /// The metadata URL for this resource (path-suffixed when the resource has a path).
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    pub(super) fn router(&self) -> Router {
        let body = self.body.clone();
        let serve = move || {
            let body = body.clone();
            async move {
                (
                    [
                        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
                        (
                            CACHE_CONTROL,
                            HeaderValue::from_static("public, max-age=300"),
                        ),
                        // Public metadata: browser-based clients must be able to read it.
                        (ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
                    ],
                    body,
                )
                    .into_response()
            }
        };
        self.paths.iter().fold(Router::new(), |router, path| {
            router.route(path, get(serve.clone()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls() {
        assert_eq!(
            issuer_metadata_urls("https://login.example.com"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server",
                "https://login.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            issuer_metadata_urls("https://login.example.com/realms/a/"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/realms/a",
                "https://login.example.com/realms/a/.well-known/openid-configuration"
            ]
        );
        let config = OAuthConfig::new("https://as.example", "https://mcp.example.com/mcp");
        let m = Metadata::new(&config).unwrap();
        assert_eq!(
            m.url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(m.paths.len(), 2);
        let config = OAuthConfig::new("https://as.example", "https://mcp.example.com/");
        let m = Metadata::new(&config).unwrap();
        assert_eq!(
            m.url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(m.paths.len(), 1);
        let config = OAuthConfig::new("https://as.example", "https://mcp.example.com/{x}");
        assert!(Metadata::new(&config).is_err());
    }
}
