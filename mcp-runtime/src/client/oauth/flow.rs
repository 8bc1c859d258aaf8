//! The authorization code flow with PKCE, client registration, and token requests.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::discovery::{ServerMetadata, checked_url, network};
use super::{AuthError, ClientCredentials, OAuthClient, StoredTokens, TokenAuthMethod};

/// What `application/x-www-form-urlencoded` leaves as is (the WHATWG set; a space becomes
/// `%20`, which every form decoder reads as a space).
const FORM_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'*');

/// A token endpoint's success response.
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// An OAuth error response body.
#[derive(Deserialize, Default)]
struct ErrorResponse {
    #[serde(default)]
    error: String,
    #[serde(default)]
    error_description: String,
}

/// A dynamic registration response (RFC 7591 §3.2.1).
#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

fn random_b64(bytes: usize) -> Result<String, AuthError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf)
        .map_err(|e| AuthError::Config(format!("no system randomness for PKCE: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

impl OAuthClient {
    /// Runs the authorization code flow at `metadata`'s server for `resource` and `scope`.
    pub(super) async fn authorize(
        &self,
        metadata: &ServerMetadata,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<StoredTokens, AuthError> {
        let client = self.client_for(metadata).await?;
        let verifier = random_b64(32)?;
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_b64(16)?;
        let mut url = checked_url("authorization_endpoint", &metadata.authorization_endpoint)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &self.inner.redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", resource);
            if let Some(scope) = scope {
                query.append_pair("scope", scope);
            }
        }
        let step = self
            .inner
            .user_agent
            .authorize(url.as_str(), &self.inner.redirect_uri);
        let callback = tokio::time::timeout(self.inner.user_agent_timeout, step)
            .await
            .map_err(|_| AuthError::UserAgentTimeout(self.inner.user_agent_timeout))??;
        let code = self.read_callback(metadata, &callback, &state)?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.inner.redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", resource.to_owned()),
        ];
        let tokens = self.token_request(metadata, &client, &mut form).await?;
        Ok(stored(tokens, scope, metadata, &client))
    }

    /// Exchanges the held refresh token; `None` (after saving nothing) when that fails, so the
    /// caller authorizes afresh.
    pub(super) async fn refresh(&self, server: &str, held: &StoredTokens) -> Option<StoredTokens> {
        let refresh_token = held.refresh_token.clone()?;
        let (metadata, resource) = self.lock_state().metadata.get(server).cloned()?;
        if metadata.issuer != held.issuer {
            return None;
        }
        let client = self.known_client(&metadata)?;
        if client.client_id != held.client_id {
            return None;
        }
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", resource),
        ];
        match self.token_request(&metadata, &client, &mut form).await {
            Ok(tokens) => {
                let mut fresh = stored(tokens, held.scope.as_deref(), &metadata, &client);
                // A server that does not rotate refresh tokens keeps the old one valid.
                if fresh.refresh_token.is_none() {
                    fresh.refresh_token = Some(refresh_token);
                }
                self.inner.store.save(server, fresh.clone());
                Some(fresh)
            }
            Err(e) => {
                tracing::debug!(server, error = %e, "refresh failed; authorizing afresh");
                None
            }
        }
    }

    /// Checks the authorization response (state, error, `iss`) and returns its code.
    fn read_callback(
        &self,
        metadata: &ServerMetadata,
        callback: &str,
        state: &str,
    ) -> Result<String, AuthError> {
        let url = Url::parse(callback)
            .map_err(|e| AuthError::UserAgent(format!("the redirect back is not a URL: {e}")))?;
        let mut code = None;
        let mut got_state = None;
        let mut iss = None;
        let mut error = None;
        let mut description = String::new();
        for (name, value) in url.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut code,
                "state" => &mut got_state,
                "iss" => &mut iss,
                "error" => &mut error,
                "error_description" => {
                    description = value.into_owned();
                    continue;
                }
                _ => continue,
            };
            // A repeated parameter is ambiguous: keep none of it.
            *slot = if slot.is_some() {
                Some(String::new())
            } else {
                Some(value.into_owned())
            };
        }
        if got_state.as_deref() != Some(state) {
            return Err(AuthError::StateMismatch);
        }
        // RFC 9207: a present iss is always compared (simple string comparison); an absent one
        // is an error when the server advertises that it sends it.
        match &iss {
            Some(iss) if iss != &metadata.issuer => {
                return Err(AuthError::ResponseIssuer {
                    expected: metadata.issuer.clone(),
                    found: Some(iss.clone()),
                });
            }
            None if metadata.authorization_response_iss_parameter_supported => {
                return Err(AuthError::ResponseIssuer {
                    expected: metadata.issuer.clone(),
                    found: None,
                });
            }
            _ => {}
        }
        if let Some(error) = error {
            return Err(AuthError::Denied { error, description });
        }
        code.filter(|c| !c.is_empty())
            .ok_or_else(|| AuthError::UserAgent("the redirect back carries no code".into()))
    }

    /// Credentials already known for `metadata`'s issuer (pre-registered or registered).
    fn known_client(&self, metadata: &ServerMetadata) -> Option<ClientCredentials> {
        let issuer = &metadata.issuer;
        if let Some((_, credentials)) = self
            .inner
            .pre_registered
            .iter()
            .find(|(only, _)| only.as_ref().is_none_or(|only| only == issuer))
        {
            return Some(credentials.clone());
        }
        if let Some(registered) = self.lock_state().registered.get(issuer) {
            return Some(registered.clone());
        }
        if metadata.client_id_metadata_document_supported
            && let Some(url) = &self.inner.metadata_document
        {
            return Some(ClientCredentials {
                client_id: url.clone(),
                client_secret: None,
                auth_method: Some(TokenAuthMethod::None),
            });
        }
        None
    }

    /// The client's identity at `metadata`'s server, registering dynamically if need be.
    async fn client_for(&self, metadata: &ServerMetadata) -> Result<ClientCredentials, AuthError> {
        if let Some(known) = self.known_client(metadata) {
            return Ok(known);
        }
        let Some(endpoint) = metadata
            .registration_endpoint
            .as_deref()
            .filter(|_| self.inner.dynamic_registration)
        else {
            return Err(AuthError::NoRegistration {
                issuer: metadata.issuer.clone(),
            });
        };
        let url = checked_url("registration_endpoint", endpoint)?;
        let supported = metadata.token_endpoint_auth_methods_supported.as_deref();
        // A public client unless the server only takes secrets.
        let method = match supported {
            Some(m) if !m.iter().any(|m| m == "none") => m
                .iter()
                .find_map(|m| TokenAuthMethod::parse(m))
                .unwrap_or(TokenAuthMethod::ClientSecretBasic),
            _ => TokenAuthMethod::None,
        };
        let body = json!({
            "client_name": self.inner.client_name,
            "redirect_uris": [self.inner.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method.as_str(),
            "application_type": "native",
        });
        let request = self
            .inner
            .fetcher
            .http
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let bytes = self.exchange("registration", &url, request).await?;
        let registered: RegistrationResponse =
            serde_json::from_slice(&bytes).map_err(|e| AuthError::Malformed {
                url: url.to_string(),
                detail: e.to_string(),
            })?;
        let credentials = ClientCredentials {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            auth_method: registered
                .token_endpoint_auth_method
                .as_deref()
                .and_then(TokenAuthMethod::parse),
        };
        self.lock_state()
            .registered
            .insert(metadata.issuer.clone(), credentials.clone());
        Ok(credentials)
    }

    /// Sends `request` to an authorization-server endpoint and reads its bounded body; a
    /// non-success status becomes [`AuthError::Endpoint`] with the server's OAuth error, if any.
    async fn exchange(
        &self,
        endpoint: &'static str,
        url: &Url,
        request: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, AuthError> {
        let response = request.send().await.map_err(|e| network(url, &e))?;
        let status = response.status();
        let bytes = self.inner.fetcher.read_body(url, response).await?;
        if !status.is_success() {
            let error: ErrorResponse = serde_json::from_slice(&bytes).unwrap_or_default();
            return Err(AuthError::Endpoint {
                endpoint,
                status: status.as_u16(),
                error: error.error,
                description: error.error_description,
            });
        }
        Ok(bytes)
    }

    /// POSTs `form` to the token endpoint with the client's authentication.
    async fn token_request(
        &self,
        metadata: &ServerMetadata,
        client: &ClientCredentials,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<TokenResponse, AuthError> {
        let url = checked_url("token_endpoint", &metadata.token_endpoint)?;
        let method = auth_method(client, metadata);
        let mut request = self.inner.fetcher.http.post(url.clone());
        match (method, &client.client_secret) {
            (TokenAuthMethod::ClientSecretBasic, Some(secret)) => {
                // RFC 6749 §2.3.1: both parts form-urlencoded before Basic encoding.
                let enc = |s: &str| utf8_percent_encode(s, FORM_VALUE).to_string();
                request = request.basic_auth(enc(&client.client_id), Some(enc(secret)));
            }
            (TokenAuthMethod::ClientSecretPost, Some(secret)) => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            _ => form.push(("client_id", client.client_id.clone())),
        }
        let bytes = self.exchange("token", &url, request.form(&*form)).await?;
        let tokens: TokenResponse =
            serde_json::from_slice(&bytes).map_err(|_| AuthError::Malformed {
                url: url.to_string(),
                // serde's message could quote the token: say only what is wrong.
                detail: "not a token response (access_token and token_type are required)".into(),
            })?;
        if !tokens.token_type.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Malformed {
                url: url.to_string(),
                detail: format!("token_type {:?} is not Bearer", tokens.token_type),
            });
        }
        Ok(tokens)
    }
}

/// The method to authenticate with: the registered one, else one the server supports that
/// fits the credentials (RFC 8414's default is `client_secret_basic`).
fn auth_method(client: &ClientCredentials, metadata: &ServerMetadata) -> TokenAuthMethod {
    if let Some(method) = client.auth_method {
        return method;
    }
    if client.client_secret.is_none() {
        return TokenAuthMethod::None;
    }
    let Some(supported) = metadata.token_endpoint_auth_methods_supported.as_deref() else {
        return TokenAuthMethod::ClientSecretBasic;
    };
    let offers = |m: &str| supported.iter().any(|s| s == m);
    if offers("client_secret_basic") {
        TokenAuthMethod::ClientSecretBasic
    } else if offers("client_secret_post") {
        TokenAuthMethod::ClientSecretPost
    } else if offers("none") {
        TokenAuthMethod::None
    } else {
        TokenAuthMethod::ClientSecretBasic
    }
}

fn stored(
    tokens: TokenResponse,
    requested: Option<&str>,
    metadata: &ServerMetadata,
    client: &ClientCredentials,
) -> StoredTokens {
    StoredTokens {
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_at: tokens
            .expires_in
            .map(|s| SystemTime::now() + Duration::from_secs(s.min(u64::from(u32::MAX)))),
        scope: tokens.scope.or_else(|| requested.map(str::to_owned)),
        issuer: metadata.issuer.clone(),
        client_id: client.client_id.clone(),
    }
}
