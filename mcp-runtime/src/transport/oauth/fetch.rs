//! Fetching the issuer's JSON documents: https only (plain http on loopback for development
//! and tests), no redirects, bounded in time and size.

use std::time::Duration;

use super::OAuthError;

/// Whether `host` names this machine (`localhost`, `127.0.0.0/8`, `::1`).
pub(super) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Checks that `url` is an absolute `https` URL (or `http` on loopback) without a fragment
/// (and, when `no_query`, without a query).
pub(super) fn check_url(what: &'static str, url: &str, no_query: bool) -> Result<(), OAuthError> {
    let bad = |reason| {
        Err(OAuthError::Url {
            what,
            url: url.to_owned(),
            reason,
        })
    };
    let Ok(uri) = url.parse::<http::Uri>() else {
        return bad("write an absolute URL such as https://login.example.com");
    };
    let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
        return bad("write an absolute URL such as https://login.example.com");
    };
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if is_loopback(host) => {}
        Some("http") => return bad("use https (plain http is accepted on loopback only)"),
        _ => return bad("write an absolute https URL"),
    }
    if url.contains('#') {
        return bad("remove the #fragment");
    }
    if no_query && uri.query().is_some() {
        return bad("remove the ?query");
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return bad("remove the user information before @");
    }
    Ok(())
}

/// A client for the issuer's documents.
#[derive(Debug, Clone)]
pub(super) struct Fetcher {
    client: reqwest::Client,
    max_bytes: usize,
    timeout: Duration,
}

impl Fetcher {
    /// `direct`: never through an environment-configured proxy (for an issuer on loopback).
    pub(super) fn new(
        timeout: Duration,
        max_bytes: usize,
        direct: bool,
    ) -> Result<Self, OAuthError> {
        let mut builder = reqwest::Client::builder();
        if direct {
            builder = builder.no_proxy();
        }
        let client = builder
            .timeout(timeout)
            .connect_timeout(timeout)
            // A redirect could lead anywhere; the issuer's documents are fetched where they are.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| OAuthError::Client(e.to_string()))?;
        Ok(Self {
            client,
            max_bytes,
            timeout,
        })
    }

    /// GETs `url` and parses it as JSON; fails on a non-200 status, a body over the limit, or
    /// the deadline.
    pub(super) async fn json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<T, OAuthError> {
        self.send(url, self.client.get(url)).await
    }

    /// POSTs `form` to `url` with HTTP Basic credentials and parses the answer as JSON.
    pub(super) async fn post_form<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        form: &[(&str, &str)],
        (user, password): (&str, &str),
    ) -> Result<T, OAuthError> {
        let request = self
            .client
            .post(url)
            .basic_auth(user, Some(password))
            .form(form);
        self.send(url, request).await
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, OAuthError> {
        let fail = |reason: String| OAuthError::Fetch {
            url: url.to_owned(),
            reason,
        };
        let fetched = tokio::time::timeout(self.timeout, async {
            let mut response = request
                .header(http::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| fail(e.without_url().to_string()))?;
            if response.status() != reqwest::StatusCode::OK {
                return Err(fail(format!("HTTP status {}", response.status())));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| fail(e.without_url().to_string()))?
            {
                if body.len() + chunk.len() > self.max_bytes {
                    return Err(fail(format!("larger than {} bytes", self.max_bytes)));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        })
        .await
        .map_err(|_| fail(format!("no answer within {} ms", self.timeout.as_millis())))??;
        serde_json::from_slice(&fetched).map_err(|e| fail(format!("not the expected JSON: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for ok in [
            "https://login.example.com",
            "https://login.example.com/realms/x",
            "http://127.0.0.1:8080",
            "http://localhost:3000/a",
            "http://[::1]:9",
        ] {
            assert!(check_url("x", ok, true).is_ok(), "{ok}");
        }
        for bad in [
            "http://login.example.com",
            "ftp://x",
            "/relative",
            "https://x/#frag",
            "https://x/?q=1",
            "https://user@x/",
            "not a url",
        ] {
            assert!(check_url("x", bad, true).is_err(), "{bad}");
        }
    }
}
