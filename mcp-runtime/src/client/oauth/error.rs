//! [`AuthError`]: why the client could not obtain (or refused to use) an access token.

use std::time::Duration;

/// Why authorization failed. Every variant names what was refused and what to do; none
/// carries a token, a code or a client secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A request to the authorization server or a metadata document could not be made or
    /// timed out.
    #[error("authorization: request to {url} failed: {detail}")]
    Network {
        /// The URL requested.
        url: String,
        /// What went wrong (connection refused, timeout, …).
        detail: String,
    },
    /// No protected-resource or authorization-server metadata at any of the URLs tried.
    #[error(
        "authorization: no {what} metadata found (tried {tried:?}); check the server's OAuth configuration"
    )]
    NoMetadata {
        /// `protected-resource` or `authorization-server`.
        what: &'static str,
        /// The URLs tried, in order, with the HTTP status each gave.
        tried: Vec<String>,
    },
    /// A metadata document or token response is larger than the configured bound.
    #[error("authorization: the response from {url} is larger than {limit} bytes; refused")]
    TooLarge {
        /// The URL requested.
        url: String,
        /// The bound ([`super::OAuthClientBuilder::max_response_bytes`]).
        limit: usize,
    },
    /// A metadata document or token response is not the JSON it must be.
    #[error("authorization: malformed response from {url}: {detail}")]
    Malformed {
        /// The URL requested.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The protected-resource metadata names a resource that is not this server (RFC 9728
    /// §3.3): a server pointing the client at someone else's tokens.
    #[error(
        "authorization: the protected-resource metadata is for {published:?}, not for this server ({server}); refused"
    )]
    ResourceMismatch {
        /// The MCP server's URL.
        server: String,
        /// The `resource` the metadata published.
        published: String,
    },
    /// The authorization-server metadata's `issuer` is not the issuer it was fetched for
    /// (RFC 8414 §3.3).
    #[error(
        "authorization: the metadata fetched for issuer {expected:?} claims issuer {found:?}; refused"
    )]
    IssuerMismatch {
        /// The issuer the metadata URL was built from.
        expected: String,
        /// The `issuer` the document named.
        found: String,
    },
    /// The authorization response's `iss` parameter is not the issuer, or is missing although
    /// the server advertises it (RFC 9207): a mix-up attack, the code is not redeemed.
    #[error(
        "authorization: the authorization response's iss is {found:?}, expected {expected:?}; the code was not redeemed"
    )]
    ResponseIssuer {
        /// The authorization server's issuer.
        expected: String,
        /// The `iss` received (`None`: absent).
        found: Option<String>,
    },
    /// The authorization response's `state` does not match the request (or is missing).
    #[error(
        "authorization: the authorization response's state does not match; the code was not redeemed"
    )]
    StateMismatch,
    /// A redirect to another origin (or too many redirects) while fetching metadata or
    /// following the authorization endpoint headlessly.
    #[error("authorization: refused a redirect from {from} to {to}")]
    Redirect {
        /// The URL that redirected.
        from: String,
        /// Where it pointed.
        to: String,
    },
    /// An endpoint or issuer that is not `https` (plain `http` is allowed on loopback only),
    /// or not a URL at all.
    #[error("authorization: {what} {url:?} is not an https URL (http is allowed on loopback only)")]
    InsecureUrl {
        /// Which URL (issuer, token endpoint, …).
        what: &'static str,
        /// The URL.
        url: String,
    },
    /// The authorization server does not advertise PKCE with S256, which OAuth 2.1 requires.
    #[error(
        "authorization: {issuer} does not advertise PKCE S256 (code_challenge_methods_supported); refused"
    )]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// No way to identify this client to the authorization server: not pre-registered for it,
    /// no client ID metadata document it accepts, no dynamic registration endpoint.
    #[error(
        "authorization: no client registration for {issuer}; pre-register the client (OAuthClientBuilder::pre_registered) or use a server that supports client ID metadata documents or dynamic registration"
    )]
    NoRegistration {
        /// The issuer.
        issuer: String,
    },
    /// The authorization server answered the authorization request with an error.
    #[error("authorization: the authorization server refused: {error} ({description})")]
    Denied {
        /// The OAuth `error` code.
        error: String,
        /// `error_description`, or empty.
        description: String,
    },
    /// The token or registration endpoint answered with an error.
    #[error("authorization: {endpoint} endpoint answered HTTP {status}: {error} ({description})")]
    Endpoint {
        /// `token` or `registration`.
        endpoint: &'static str,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code, or empty.
        error: String,
        /// `error_description`, or empty.
        description: String,
    },
    /// The server kept refusing the token for its scope after the step-up limit
    /// ([`super::OAuthClientBuilder::max_step_ups`]).
    #[error(
        "authorization: the server still requires scope {scope:?} after {attempts} step-up authorizations; the user may lack that permission"
    )]
    StepUpLimit {
        /// Step-up authorizations made for the request.
        attempts: u32,
        /// The scope the last challenge asked for.
        scope: String,
    },
    /// The server kept answering 401 after fresh authorization.
    #[error(
        "authorization: the server still answers 401 after {attempts} authorizations; the token is not accepted"
    )]
    StillUnauthorized {
        /// Authorizations made for the request.
        attempts: u32,
    },
    /// The user-agent step failed or passed its deadline.
    #[error("authorization: the user-agent step failed: {0}")]
    UserAgent(String),
    /// The user-agent step did not finish within its deadline.
    #[error("authorization: the user did not complete authorization within {0:?}")]
    UserAgentTimeout(Duration),
    /// The client is misconfigured (bad redirect URI, TLS setup failure, …).
    #[error("authorization: configuration: {0}")]
    Config(String),
}
