//! [`Grant`]: what an authenticated request may do, as its transport hands it to the core.
//!
//! Authentication belongs to the transports (only they see headers, sockets and processes);
//! authorization belongs to the core. A grant is the one thing that crosses: the core checks
//! every scope requirement against it, for every way a request enters.

use crate::Principal;

/// How a request's sender was authenticated.
///
/// Recorded with the grant so the core and the logs can tell an OAuth token from a local
/// process; policy is decided by [`Grant::scopes`], not by the scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthScheme {
    /// A local, trusted caller: the user who spawned a stdio server, or the application
    /// itself in process (its tests through the in-process client included).
    Local,
    /// No credentials: every request runs as one fixed principal (development only).
    Anonymous,
    /// A static bearer token (an auth file).
    BearerToken,
    /// An OAuth 2.1 access token, verified against its issuer.
    OAuth,
    /// A scheme of the application's own (an [`Authenticator`](crate::transport::Authenticator)
    /// written outside this crate).
    Custom,
}

impl AuthScheme {
    /// A short stable name, for logs and span attributes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Anonymous => "anonymous",
            Self::BearerToken => "bearer_token",
            Self::OAuth => "oauth",
            Self::Custom => "custom",
        }
    }
}

/// What an authenticated request may do: who it runs as, which OAuth scopes its credentials
/// grant, and how it was authenticated.
///
/// A grant without scopes (`scopes: None`: local stdio, static bearer tokens, anonymous) is
/// trusted with every tool the server serves; a grant with scopes is held to each tool's,
/// prompt's and resource's declared scopes, and refused for anything that declares none
/// unless it was declared public (deny by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Who the request runs as.
    pub principal: Principal,
    /// The scopes granted, or `None` for a scheme without scopes.
    pub scopes: Option<Vec<String>>,
    /// How the sender was authenticated.
    pub scheme: AuthScheme,
}

/// A local, trusted principal ([`AuthScheme::Local`], no scopes): what stdio and the
/// in-process client run as when given a plain [`Principal`].
impl From<Principal> for Grant {
    fn from(principal: Principal) -> Self {
        Self::unscoped(principal, AuthScheme::Local)
    }
}

/// See the conversion from [`Principal`].
impl From<&Principal> for Grant {
    fn from(principal: &Principal) -> Self {
        Self::unscoped(principal.clone(), AuthScheme::Local)
    }
}

impl Grant {
    /// A grant without scopes: `principal`, authenticated by `scheme`.
    pub fn unscoped(principal: Principal, scheme: AuthScheme) -> Self {
        Self {
            principal,
            scopes: None,
            scheme,
        }
    }

    /// A grant holding exactly `scopes` (an OAuth token's, or a test's).
    pub fn scoped(
        principal: Principal,
        scopes: impl IntoIterator<Item = impl Into<String>>,
        scheme: AuthScheme,
    ) -> Self {
        Self {
            principal,
            scopes: Some(scopes.into_iter().map(Into::into).collect()),
            scheme,
        }
    }

    /// Whether the credentials carry scopes (and so are held to scope requirements).
    pub fn is_scoped(&self) -> bool {
        self.scopes.is_some()
    }

    /// The scopes of `required` this grant lacks (none for a grant without scopes).
    pub fn missing<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        match &self.scopes {
            None => Vec::new(),
            Some(granted) => required
                .iter()
                .filter(|need| !granted.iter().any(|g| g == *need))
                .map(String::as_str)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scoped_grants_miss_scopes() {
        let required = vec!["notes:read".to_owned(), "notes:write".to_owned()];
        let local = Grant::unscoped(Principal::new("me"), AuthScheme::Local);
        assert!(local.missing(&required).is_empty());
        let reader = Grant::scoped(Principal::new("a"), ["notes:read"], AuthScheme::OAuth);
        assert_eq!(reader.missing(&required), ["notes:write"]);
        let none = Grant::scoped(Principal::new("a"), Vec::<String>::new(), AuthScheme::OAuth);
        assert_eq!(none.missing(&required), ["notes:read", "notes:write"]);
    }
}
