//! Signed `requestState`: what lets any instance finish a flow another instance began.
//!
//! When a tool needs input, the server answers with an input-required result carrying an
//! opaque `requestState`; the client echoes it on the retry. The state is a token sealed here
//! with HMAC-SHA256, so the server needs no session storage: everything it must remember
//! (which principal, which call, which round, answers already accepted) travels in the token,
//! and the signature proves the server wrote it.
//!
//! # Token format (version 2)
//!
//! ```text
//! v2.<kid>.<payload>.<mac>
//! ```
//!
//! - `v2`: format version. This build writes `v2` and still reads `v1` (see below); anything
//!   else is rejected as [`StateError::UnsupportedVersion`].
//! - `<kid>`: id of the key that signed it (1 to 32 of `A-Z a-z 0-9 - _`), see [`StateKeyring`].
//! - `<payload>`: unpadded url-safe base64 of the binary encoding of [`StatePayload`]
//!   described under [Binary payload](self#binary-payload).
//! - `<mac>`: unpadded url-safe base64 of HMAC-SHA256(key, `"v2.<kid>.<payload>"`), i.e. the
//!   MAC covers the version, the key id and the encoded payload exactly as transmitted.
//!
//! Version 1 tokens (`v1.<kid>.<payload>.<mac>`, the payload being the JSON serialisation of
//! [`StatePayload`]) are still accepted, so flows begun on an instance running an older build
//! finish on a newer one. The version is covered by the MAC, so it cannot be swapped.
//!
//! # Binary payload
//!
//! Fields in declaration order; strings and the answers' JSON text are length-prefixed with an
//! unsigned LEB128 varint, digests and nonces are raw bytes, integers are varints, and maps are
//! a varint count followed by their entries (bindings and correlations in ascending key
//! order). Decoding is strict: one encoding per payload, nothing left over.
//!
//! Base64 decoding is strict (no padding, no non-zero trailing bits), so each payload has
//! exactly one encoding and no character of a token can change without breaking the MAC.
//! Tokens longer than [`MAX_TOKEN_LEN`] are rejected before any decoding.
//!
//! The payload is **signed, not encrypted**: the client can read it. It holds only things the
//! client already knows (its own answers, the call it made) plus digests; never put secrets in
//! it.
//!
//! # Verification order
//!
//! [`StateKeyring::open`] checks length, shape, version, key id, then the MAC (constant-time)
//! *before* parsing any JSON, so unauthenticated bytes never reach the JSON parser. Only then
//! are the time window and the bindings (principal, method, target, argument digest) checked.
//! Each failure is its own [`StateError`] variant with a stable [`StateError::reason`] code.
//!
//! One-time use is not this module's job: the payload carries a random [`Nonce`] which the
//! caller claims in a [`crate::replay::ReplayStore`] after opening the token.

pub(crate) mod canonical;
pub(crate) mod keys;
mod payload;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use canonical::{ArgDigest, canonical_digest, canonical_json};
pub use keys::{
    KeyError, KeyProblem, MAX_KEY_LEN, MAX_KID_LEN, MIN_KEY_LEN, StateKey, StateKeyring,
};

/// Strict unpadded url-safe base64, used for every binary field of a token.
pub(crate) const B64: base64::engine::GeneralPurpose = URL_SAFE_NO_PAD;

/// The token format version this build writes (and reads).
pub const TOKEN_VERSION: &str = "v2";

/// Older token format versions this build still reads: `v1`, whose payload is JSON.
pub const LEGACY_TOKEN_VERSIONS: &[&str] = &["v1"];

/// Longest token accepted by [`StateKeyring::open`] or produced by [`StateKeyring::seal`]
/// (16 KiB). Bounds the work an unauthenticated client can cause.
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// How far in the future `issued_at` may lie (clock skew between instances) before a token is
/// rejected as [`StateError::IssuedInFuture`].
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(60);

/// A random 128-bit value making each sealed state unique and claimable once.
///
/// Serialised as unpadded url-safe base64 (22 characters).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Nonce([u8; 16]);

impl Nonce {
    /// A fresh nonce from the operating system's random source.
    ///
    /// The OS source is read in blocks of [`RANDOM_BLOCK`] bytes per thread and handed out
    /// 16 bytes at a time (each byte once), which saves a system call on every sealed state.
    /// Nonces need uniqueness, not secrecy: they travel inside the (readable) token. A
    /// process that `fork`s without `exec` would share the unused rest of a block with its
    /// child; a repeated nonce then fails closed (its second claim is refused).
    pub fn random() -> Result<Self, RandomnessUnavailable> {
        let mut bytes = [0u8; 16];
        fill_random(&mut bytes).map_err(|e| RandomnessUnavailable(e.to_string()))?;
        Ok(Self(bytes))
    }

    /// Wraps raw nonce bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The raw nonce bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nonce({self})")
    }
}

impl fmt::Display for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&B64.encode(self.0))
    }
}

impl Serialize for Nonce {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&B64.encode(self.0))
    }
}

impl<'de> Deserialize<'de> for Nonce {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let bytes = B64
            .decode(text.as_bytes())
            .map_err(|_| serde::de::Error::custom("nonce is not unpadded url-safe base64"))?;
        let bytes: [u8; 16] = bytes
            .try_into()
            .map_err(|_| serde::de::Error::custom("nonce is not 16 bytes"))?;
        Ok(Self(bytes))
    }
}

/// Bytes read from the OS random source at once by [`Nonce::random`] (per thread).
pub const RANDOM_BLOCK: usize = 1024;

thread_local! {
    /// Unused OS randomness of this thread, and how much of it is already handed out.
    static RANDOM_POOL: std::cell::RefCell<([u8; RANDOM_BLOCK], usize)> =
        const { std::cell::RefCell::new(([0; RANDOM_BLOCK], RANDOM_BLOCK)) };
}

/// Fills `out` from this thread's pool of OS randomness, refilling it when too little is left.
fn fill_random(out: &mut [u8; 16]) -> Result<(), getrandom::Error> {
    RANDOM_POOL.with_borrow_mut(|(block, used)| {
        if *used + out.len() > block.len() {
            getrandom::fill(block)?;
            *used = 0;
        }
        let taken = &mut block[*used..*used + out.len()];
        out.copy_from_slice(taken);
        // Handed-out bytes are wiped so that they are never handed out or found again.
        taken.fill(0);
        *used += out.len();
        Ok(())
    })
}

/// The operating system's random source failed (nothing sensible can be signed without it).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the OS random source failed: {0}")]
pub struct RandomnessUnavailable(String);

/// Everything a request state token vouches for.
///
/// Field names are short on the wire because the whole token rides in every retry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatePayload {
    /// The authenticated principal the flow belongs to ([`crate::Principal::as_str`]).
    #[serde(rename = "p")]
    pub principal: String,
    /// The request method that started the flow, e.g. `tools/call`.
    #[serde(rename = "m")]
    pub method: String,
    /// What the method targets, e.g. the tool name.
    #[serde(rename = "t")]
    pub target: String,
    /// [`canonical_digest`] of the salient arguments; a retry with other arguments is refused.
    #[serde(rename = "a")]
    pub arg_digest: ArgDigest,
    /// Handler-chosen digests, keyed by input key: e.g. the schema and candidate ids shown
    /// under that key, so an answer is only accepted against what was actually offered.
    #[serde(rename = "b", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bindings: BTreeMap<String, ArgDigest>,
    /// The round number: 0 for the first input request, +1 per further round.
    #[serde(rename = "r")]
    pub round: u32,
    /// Answers accepted in earlier rounds, by input key, in the order they were accepted.
    #[serde(rename = "ans", default, skip_serializing_if = "Map::is_empty")]
    pub answers: Map<String, Value>,
    /// When the token was sealed, seconds since the Unix epoch.
    #[serde(rename = "iat")]
    pub issued_at: u64,
    /// When the token stops being accepted, seconds since the Unix epoch.
    #[serde(rename = "exp")]
    pub expires_at: u64,
    /// Random value for one-time use (claim it in a [`crate::replay::ReplayStore`]).
    #[serde(rename = "n")]
    pub nonce: Nonce,
    /// Correlation ids minted by the runtime for out-of-band steps (URL-mode elicitation),
    /// by input key; kept for the whole flow so the handler sees the same id on every pass.
    #[serde(rename = "c", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub correlations: BTreeMap<String, CorrelationId>,
    /// The trace and span of the flow's first leg (with the `otel` feature), kept for the
    /// whole flow so that every retry's span joins the flow's trace and links to its root,
    /// on any instance. Ids only: 24 bytes, nothing secret.
    #[serde(rename = "ft", default, skip_serializing_if = "Option::is_none")]
    pub flow_trace: Option<FlowTrace>,
}

/// Where a multi-round flow's trace began: the OpenTelemetry trace id and span id of its
/// first leg's request span.
///
/// Serialised (in the JSON form) as `TRACEID-SPANID` in lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowTrace {
    /// The trace id (never all zeros).
    pub trace_id: [u8; 16],
    /// The first leg's span id (never all zeros).
    pub span_id: [u8; 8],
}

impl FlowTrace {
    /// The ids, or `None` when either is all zeros (not a valid span).
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8]) -> Option<Self> {
        (trace_id != [0; 16] && span_id != [0; 8]).then_some(Self { trace_id, span_id })
    }
}

impl fmt::Debug for FlowTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FlowTrace({self})")
    }
}

impl fmt::Display for FlowTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.span_id {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl Serialize for FlowTrace {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FlowTrace {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let bad = || serde::de::Error::custom("flow trace is not TRACEID-SPANID in lowercase hex");
        let (trace, span) = text.split_once('-').ok_or_else(bad)?;
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        hex_into(trace, &mut trace_id).ok_or_else(bad)?;
        hex_into(span, &mut span_id).ok_or_else(bad)?;
        Self::new(trace_id, span_id).ok_or_else(bad)
    }
}

/// Fills `out` from exactly `2 * out.len()` lowercase hex digits.
fn hex_into(text: &str, out: &mut [u8]) -> Option<()> {
    let b = text.as_bytes();
    if b.len() != 2 * out.len() {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    for (i, o) in out.iter_mut().enumerate() {
        *o = nibble(b[2 * i])? << 4 | nibble(b[2 * i + 1])?;
    }
    Some(())
}

/// A random 128-bit id tying an out-of-band step (e.g. a web page the user visits after a
/// URL-mode elicitation) to one tool-call flow.
///
/// The runtime mints it and keeps it in the signed `requestState`, so a handler gets the same
/// id on every pass of the flow ([`crate::context::RequestContext::correlation_id`]). It is not a
/// secret (the client can read the state) and must not be put in the URL: give the user an
/// opaque link whose server-side record holds the principal and this id instead.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CorrelationId(Nonce);

impl CorrelationId {
    /// A fresh id from the operating system's random source.
    pub fn random() -> Result<Self, RandomnessUnavailable> {
        Nonce::random().map(Self)
    }
}

impl fmt::Debug for CorrelationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CorrelationId({})", self.0)
    }
}

impl fmt::Display for CorrelationId {
    /// Unpadded url-safe base64 (22 characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StatePayload {
    /// A round-0 payload with a fresh nonce, valid from `now` for `ttl`.
    pub fn new(
        principal: impl Into<String>,
        method: impl Into<String>,
        target: impl Into<String>,
        arg_digest: ArgDigest,
        now: SystemTime,
        ttl: Duration,
    ) -> Result<Self, RandomnessUnavailable> {
        let issued_at = unix_secs(now);
        Ok(Self {
            principal: principal.into(),
            method: method.into(),
            target: target.into(),
            arg_digest,
            bindings: BTreeMap::new(),
            round: 0,
            answers: Map::new(),
            issued_at,
            expires_at: issued_at.saturating_add(ttl.as_secs()),
            nonce: Nonce::random()?,
            correlations: BTreeMap::new(),
            flow_trace: None,
        })
    }

    /// The payload for the following round: same call, `round + 1`, answers kept, bindings
    /// cleared (the next round binds what it shows), fresh nonce and validity window.
    pub fn next_round(
        &self,
        now: SystemTime,
        ttl: Duration,
    ) -> Result<Self, RandomnessUnavailable> {
        let issued_at = unix_secs(now);
        Ok(Self {
            bindings: BTreeMap::new(),
            round: self.round.saturating_add(1),
            issued_at,
            expires_at: issued_at.saturating_add(ttl.as_secs()),
            nonce: Nonce::random()?,
            ..self.clone()
        })
    }

    /// When the token stops being accepted, as a [`SystemTime`] (e.g. for a replay store).
    pub fn expires_at_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.expires_at)
    }
}

/// What the retry request must match for its state to be accepted.
#[derive(Debug, Clone, Copy)]
pub struct Expectation<'a> {
    /// The principal making the retry.
    pub principal: &'a str,
    /// The retry's method, e.g. `tools/call`.
    pub method: &'a str,
    /// The retry's target, e.g. the tool name.
    pub target: &'a str,
    /// [`canonical_digest`] of the retry's salient arguments.
    pub arg_digest: ArgDigest,
}

/// Why a request state token was refused.
///
/// Messages are safe to show a client (they never echo the token); [`Self::reason`] is a
/// stable code for logs and metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Longer than [`MAX_TOKEN_LEN`]; rejected without decoding.
    #[error(
        "requestState is {len} bytes, over the {max}-byte limit; restart the request without requestState"
    )]
    TooLong {
        /// Length received.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Not `version.kid.payload.mac`, or a part is not valid base64 of the right size.
    #[error("requestState is malformed ({0}); send back the requestState exactly as received")]
    Malformed(&'static str),
    /// A version this server does not read.
    #[error(
        "requestState has an unsupported format version (expected {TOKEN_VERSION}); restart the request without requestState"
    )]
    UnsupportedVersion,
    /// Signed by a key this server does not (or no longer) have.
    #[error("requestState was signed with an unknown key{}; it may predate a key rotation, restart the request without requestState", kid.as_deref().map(|k| format!(" `{k}`")).unwrap_or_default())]
    UnknownKey {
        /// The key id, when it is a well-formed id (otherwise omitted).
        kid: Option<String>,
    },
    /// The MAC does not match: the token was altered or forged.
    #[error("requestState signature is invalid; send back the requestState exactly as received")]
    BadSignature,
    /// Authenticated but the payload does not parse (a server-side bug or incompatible build).
    #[error(
        "requestState payload is not understood by this server version; restart the request without requestState"
    )]
    InvalidPayload,
    /// Past its expiry.
    #[error(
        "requestState expired at {expired_at} (unix seconds); restart the request without requestState"
    )]
    Expired {
        /// Expiry, unix seconds.
        expired_at: u64,
    },
    /// Issued further in the future than clock skew explains.
    #[error("requestState is issued in the future (check clock synchronisation between servers)")]
    IssuedInFuture,
    /// Issued to another principal.
    #[error("requestState belongs to a different principal")]
    PrincipalMismatch,
    /// Issued for another method.
    #[error("requestState was issued for a different method")]
    MethodMismatch,
    /// Issued for another target (e.g. another tool).
    #[error("requestState was issued for a different target")]
    TargetMismatch,
    /// The retry's arguments differ from the original call's.
    #[error(
        "arguments differ from the call that produced this requestState; retry with the original arguments or restart without requestState"
    )]
    ArgumentsChanged,
}

impl StateError {
    /// A stable short code for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::TooLong { .. } => "too_long",
            Self::Malformed(_) => "malformed",
            Self::UnsupportedVersion => "unsupported_version",
            Self::UnknownKey { .. } => "unknown_key",
            Self::BadSignature => "bad_signature",
            Self::InvalidPayload => "invalid_payload",
            Self::Expired { .. } => "expired",
            Self::IssuedInFuture => "issued_in_future",
            Self::PrincipalMismatch => "principal_mismatch",
            Self::MethodMismatch => "method_mismatch",
            Self::TargetMismatch => "target_mismatch",
            Self::ArgumentsChanged => "arguments_changed",
        }
    }
}

/// Why a payload could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The sealed token would exceed [`MAX_TOKEN_LEN`] (e.g. too many or too large answers),
    /// so [`StateKeyring::open`] would refuse it.
    #[error(
        "request state would be {len} bytes, over the {max}-byte limit; keep fewer or smaller answers in it"
    )]
    TooLarge {
        /// Length the token would have.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Reads a token's payload **without verifying its signature**, for debugging, logs of a
/// client's own state and tests. Nothing it returns may be trusted: a client can write any
/// payload it likes; only [`StateKeyring::open`] vouches for one.
///
/// # Errors
/// [`StateError::TooLong`], [`StateError::Malformed`], [`StateError::UnsupportedVersion`] or
/// [`StateError::InvalidPayload`], as [`StateKeyring::open`] would report them.
pub fn read_unverified(token: &str) -> Result<StatePayload, StateError> {
    let [version, _kid, payload_b64, _mac] = split_token(token)?;
    let legacy = is_legacy(version)?;
    let bytes = B64
        .decode(payload_b64)
        .map_err(|_| StateError::InvalidPayload)?;
    if legacy {
        serde_json::from_slice(&bytes).map_err(|_| StateError::InvalidPayload)
    } else {
        payload::decode(&bytes).map_err(|_| StateError::InvalidPayload)
    }
}

/// A token's four parts (version, key id, payload, MAC), refusing an over-long token before
/// looking at it.
fn split_token(token: &str) -> Result<[&str; 4], StateError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(StateError::TooLong {
            len: token.len(),
            max: MAX_TOKEN_LEN,
        });
    }
    // Byte scans rather than `split('.')`: the first two dots are found from the front and the
    // last from the back, next to the short parts (version, key id, MAC), and only the long
    // payload between them is scanned in full, by the word-at-a-time search of
    // `<[u8]>::contains`, for a dot that would make a fifth part.
    let bytes = token.as_bytes();
    let is_dot = |b: &u8| *b == b'.';
    let dots = (|| {
        let first = bytes.iter().position(is_dot)?;
        let second = first + 1 + bytes[first + 1..].iter().position(is_dot)?;
        let last = bytes.iter().rposition(is_dot)?;
        (last > second && !bytes[second + 1..last].contains(&b'.')).then_some((first, second, last))
    })();
    let Some((first, second, last)) = dots else {
        return Err(StateError::Malformed("expected four dot-separated parts"));
    };
    Ok([
        &token[..first],
        &token[first + 1..second],
        &token[second + 1..last],
        &token[last + 1..],
    ])
}

/// Whether `version` is a legacy format this build still reads (`false` for the current one).
fn is_legacy(version: &str) -> Result<bool, StateError> {
    match version {
        TOKEN_VERSION => Ok(false),
        v if LEGACY_TOKEN_VERSIONS.contains(&v) => Ok(true),
        _ => Err(StateError::UnsupportedVersion),
    }
}

/// Seconds since the Unix epoch (0 for times before it).
fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
