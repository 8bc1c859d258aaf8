//! Signing keys for request state, with key ids for rotation, and the [`StateKeyring`] that

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use super::{
    B64, Expectation, MAX_CLOCK_SKEW, MAX_TOKEN_LEN, SealError, StateError, StatePayload,
    TOKEN_VERSION, is_legacy, payload, split_token, unix_secs,
};

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// Shortest accepted key, in bytes (the HMAC-SHA256 output size).
pub const MIN_KEY_LEN: usize = 32;
/// Longest accepted key, in bytes (anything longer is a mistake, e.g. a whole file pasted).
pub const MAX_KEY_LEN: usize = 1024;
/// Longest accepted key id, in characters.
pub const MAX_KID_LEN: usize = 32;

const LENIENT_CONFIG: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const KEY_B64_STANDARD: GeneralPurpose =
    GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT_CONFIG);
const KEY_B64_URL: GeneralPurpose =
    GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT_CONFIG);

/// Why a key, key id or key file was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key file could not be read.
    #[error("cannot read state key file {}: {source}", path.display())]
    Io {
        /// The file that was being read.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The key file holds no keys.
    #[error(
        "state key file holds no keys; add a line `KID:BASE64KEY` (at least {MIN_KEY_LEN} random bytes)"
    )]
    Empty,
    /// A line of the key file is not `KID:BASE64KEY`.
    #[error("state key file line {line}: {problem}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with that line (never contains key material).
        problem: KeyProblem,
    },
    /// The operating system's random source failed.
    #[error("cannot generate a state key: the OS random source failed: {0}")]
    Random(String),
}

/// What is wrong with one key (used inside [`KeyError::Line`] and by [`StateKey::new`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyProblem {
    /// No `:` separating key id and key.
    #[error("expected `KID:BASE64KEY`, found no `:`")]
    MissingSeparator,
    /// The key id is empty, too long or has characters outside `A-Z a-z 0-9 - _`.
    #[error("key id must be 1 to {MAX_KID_LEN} characters from A-Z a-z 0-9 - _")]
    BadKid,
    /// The key id appeared on an earlier line.
    #[error("key id `{kid}` already used on line {first_line}")]
    DuplicateKid {
        /// The repeated id.
        kid: String,
        /// Where it first appeared.
        first_line: usize,
    },
    /// The key is not valid base64.
    #[error("key is not valid base64 (standard or url-safe alphabet)")]
    BadBase64,
    /// The key decodes to fewer than [`MIN_KEY_LEN`] bytes.
    #[error("key is {len} bytes; use at least {MIN_KEY_LEN} random bytes")]
    TooShort {
        /// Decoded length.
        len: usize,
    },
    /// The key decodes to more than [`MAX_KEY_LEN`] bytes.
    #[error("key is {len} bytes; at most {MAX_KEY_LEN} are accepted")]
    TooLong {
        /// Decoded length.
        len: usize,
    },
}

/// One HMAC-SHA256 key and its id. Debug output shows the id only.
#[derive(Clone)]
pub struct StateKey {
    kid: String,
    mac: HmacSha256,
}

impl StateKey {
    /// A key from raw bytes (at least [`MIN_KEY_LEN`] random bytes) and an id.
    pub fn new(kid: &str, key: &[u8]) -> Result<Self, KeyProblem> {
        if !valid_kid(kid) {
            return Err(KeyProblem::BadKid);
        }
        if key.len() < MIN_KEY_LEN {
            return Err(KeyProblem::TooShort { len: key.len() });
        }
        if key.len() > MAX_KEY_LEN {
            return Err(KeyProblem::TooLong { len: key.len() });
        }
        let mac =
            HmacSha256::new_from_slice(key).map_err(|_| KeyProblem::TooShort { len: key.len() })?;
        Ok(Self {
            kid: kid.to_owned(),
            mac,
        })
    }

    /// The key id written into every token this key signs.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// A fresh HMAC instance keyed with this key.
    pub(crate) fn mac(&self) -> HmacSha256 {
        self.mac.clone()
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// Whether `kid` is an acceptable key id (1..=32 of `A-Z a-z 0-9 - _`).
pub(crate) fn valid_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= MAX_KID_LEN
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The keys a server signs and verifies request state with.
///
/// Signs with the current key; verifies with the current key or any previous one, selected by
/// the key id in the token. Debug output lists key ids only.
///
/// # Details
///
/// Signing keys for request state, with key ids for rotation, and the [`StateKeyring`] that
/// seals and opens tokens with them (the whole `impl StateKeyring` is here; the token format
/// is described in the [parent module](super)).
///
/// # Key file format
///
/// A UTF-8 text file, one key per line:
///
/// ```text
/// # comments and blank lines are ignored
/// 2026-07:Qk1hY2sgYSByYW5kb20ga2V5IHdpdGggYXQgbGVhc3QgMzIgYnl0ZXMh
/// 2026-06:b2xkZXIga2V5IHN0aWxsIGFjY2VwdGVkIGZvciB2ZXJpZmljYXRpb24uLg
/// ```
///
/// - `KID:KEY`, split at the first `:`. Surrounding whitespace is ignored.
/// - `KID` is 1 to 32 characters from `A-Z a-z 0-9 - _`; ids must be unique in the file.
/// - `KEY` is base64 (standard or url-safe alphabet, padding optional) of **at least 32 random
///   bytes** (at most 1024).
/// - The **first** key is the current key: it signs new state. Every key (current and the
///   ones after it) verifies. To rotate: put a new key on top, keep the old one below it for at
///   least the longest state lifetime, then remove it.
///
/// Every instance serving one deployment must load the same file, so that any instance can
/// verify state another one issued. [`StateKeyring::generate_key_line`] prints a fresh line.
#[derive(Clone)]
pub struct StateKeyring {
    /// `keys[0]` is current.
    keys: Vec<StateKey>,
}

impl StateKeyring {
    /// A keyring that signs with `current` and also verifies tokens signed by `previous`.
    ///
    /// Fails if two keys share an id (the id would not say which key to use).
    pub fn new(current: StateKey, previous: Vec<StateKey>) -> Result<Self, KeyProblem> {
        let mut keys = Vec::with_capacity(previous.len() + 1);
        keys.push(current);
        for key in previous {
            if let Some(position) = keys.iter().position(|k| k.kid == key.kid) {
                // `first_line` is the 1-based position among the keys (current = 1).
                return Err(KeyProblem::DuplicateKid {
                    kid: key.kid,
                    first_line: position + 1,
                });
            }
            keys.push(key);
        }
        Ok(Self { keys })
    }

    /// A keyring with one fresh random 32-byte key, for a single process.
    ///
    /// State sealed by it cannot be opened by other processes or after a restart; use a key
    /// file for anything with more than one instance.
    pub fn generate() -> Result<Self, KeyError> {
        let mut key = [0u8; MIN_KEY_LEN];
        getrandom::fill(&mut key).map_err(|e| KeyError::Random(e.to_string()))?;
        let mut id = [0u8; 6];
        getrandom::fill(&mut id).map_err(|e| KeyError::Random(e.to_string()))?;
        let kid = format!("gen-{}", B64.encode(id));
        let key =
            StateKey::new(&kid, &key).map_err(|problem| KeyError::Line { line: 0, problem })?;
        Ok(Self { keys: vec![key] })
    }

    /// A fresh key-file line `KID:BASE64KEY` with 32 random bytes, for provisioning.
    pub fn generate_key_line(kid: &str) -> Result<String, KeyError> {
        if !valid_kid(kid) {
            return Err(KeyError::Line {
                line: 0,
                problem: KeyProblem::BadKid,
            });
        }
        let mut key = [0u8; MIN_KEY_LEN];
        getrandom::fill(&mut key).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(format!("{kid}:{}", B64.encode(key)))
    }

    /// Reads a key file (format in the docs of [`StateKeyring`]).
    pub fn from_key_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_key_file_contents(&text)
    }

    /// Parses key file contents (format in the docs of [`StateKeyring`]).
    pub fn from_key_file_contents(text: &str) -> Result<Self, KeyError> {
        let mut keys: Vec<(usize, StateKey)> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let fail = |problem| KeyError::Line { line, problem };
            let (kid, key_b64) = trimmed
                .split_once(':')
                .ok_or(fail(KeyProblem::MissingSeparator))?;
            let (kid, key_b64) = (kid.trim(), key_b64.trim());
            if !valid_kid(kid) {
                return Err(fail(KeyProblem::BadKid));
            }
            if let Some((first_line, _)) = keys.iter().find(|(_, k)| k.kid == kid) {
                return Err(fail(KeyProblem::DuplicateKid {
                    kid: kid.to_owned(),
                    first_line: *first_line,
                }));
            }
            let bytes = KEY_B64_STANDARD
                .decode(key_b64)
                .or_else(|_| KEY_B64_URL.decode(key_b64))
                .map_err(|_| fail(KeyProblem::BadBase64))?;
            let key = StateKey::new(kid, &bytes).map_err(fail)?;
            keys.push((line, key));
        }
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(Self {
            keys: keys.into_iter().map(|(_, k)| k).collect(),
        })
    }

    /// The key that signs new state.
    pub fn current(&self) -> &StateKey {
        // Invariant: every constructor puts at least one key in.
        &self.keys[0]
    }

    /// Every key id this keyring verifies, current first.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.kid.as_str())
    }

    /// The key with id `kid`, if configured.
    pub fn key(&self, kid: &str) -> Option<&StateKey> {
        self.keys.iter().find(|k| k.kid == kid)
    }

    /// Seals `payload` with the current key into a `v2.<kid>.<payload>.<mac>` token.
    ///
    /// # Errors
    /// [`SealError::TooLarge`] when the token would be longer than [`MAX_TOKEN_LEN`].
    pub fn seal(&self, payload: &StatePayload) -> Result<String, SealError> {
        let mut bytes = Vec::with_capacity(160);
        payload::encode(payload, &mut bytes);
        let key = self.current();
        let mut token = String::with_capacity(
            TOKEN_VERSION.len() + key.kid().len() + bytes.len().div_ceil(3) * 4 + 48,
        );
        token.push_str(TOKEN_VERSION);
        token.push('.');
        token.push_str(key.kid());
        token.push('.');
        B64.encode_string(&bytes, &mut token);
        let mut mac = key.mac();
        mac.update(token.as_bytes());
        let tag = mac.finalize().into_bytes();
        token.push('.');
        B64.encode_string(tag, &mut token);
        if token.len() > MAX_TOKEN_LEN {
            return Err(SealError::TooLarge {
                len: token.len(),
                max: MAX_TOKEN_LEN,
            });
        }
        Ok(token)
    }

    /// Verifies `token` and checks it against `expect` at time `now`.
    ///
    /// The MAC is checked (in constant time) before the payload is decoded or parsed.
    pub fn open(
        &self,
        token: &str,
        expect: &Expectation<'_>,
        now: SystemTime,
    ) -> Result<StatePayload, StateError> {
        let [version, kid, payload_b64, mac_b64] = split_token(token)?;
        let legacy = is_legacy(version)?;
        let Some(key) = self.key(kid) else {
            let kid = valid_kid(kid).then(|| kid.to_owned());
            return Err(StateError::UnknownKey { kid });
        };
        // 32 bytes encode to exactly 43 characters; checking first keeps decoding bounded.
        if mac_b64.len() != 43 {
            return Err(StateError::Malformed("signature has the wrong length"));
        }
        // Decoded on the stack: 43 characters are 32 bytes (the estimate rounds up to 33).
        let mut tag = [0u8; 33];
        let tag_len = B64
            .decode_slice(mac_b64, &mut tag)
            .map_err(|_| StateError::Malformed("signature is not unpadded url-safe base64"))?;
        let signed_len = token.len() - mac_b64.len() - 1;
        let mut mac = key.mac();
        mac.update(&token.as_bytes()[..signed_len]);
        let computed: [u8; 32] = mac.finalize().into_bytes().into();
        let presented: Option<&[u8; 32]> = tag[..tag_len].try_into().ok();
        if !presented.is_some_and(|tag| super::canonical::digests_equal(&computed, tag)) {
            return Err(StateError::BadSignature);
        }

        // Authenticated from here on: these bytes were written by a holder of the key.
        // Typical payloads are decoded on the stack; large ones (many answers) on the heap.
        let mut stack = [0u8; 512];
        let mut heap = Vec::new();
        let estimate = base64::decoded_len_estimate(payload_b64.len());
        let buf: &mut [u8] = if estimate <= stack.len() {
            &mut stack
        } else {
            heap.resize(estimate, 0);
            &mut heap
        };
        let len = B64
            .decode_slice(payload_b64, buf)
            .map_err(|_| StateError::InvalidPayload)?;
        let bytes = &buf[..len];
        let payload = if legacy {
            serde_json::from_slice::<StatePayload>(bytes).map_err(|_| StateError::InvalidPayload)?
        } else {
            payload::decode(bytes).map_err(|_| StateError::InvalidPayload)?
        };

        let now_secs = unix_secs(now);
        if now_secs >= payload.expires_at {
            return Err(StateError::Expired {
                expired_at: payload.expires_at,
            });
        }
        if payload.issued_at > now_secs.saturating_add(MAX_CLOCK_SKEW.as_secs()) {
            return Err(StateError::IssuedInFuture);
        }
        if payload.principal != expect.principal {
            return Err(StateError::PrincipalMismatch);
        }
        if payload.method != expect.method {
            return Err(StateError::MethodMismatch);
        }
        if payload.target != expect.target {
            return Err(StateError::TargetMismatch);
        }
        if payload.arg_digest != expect.arg_digest {
            return Err(StateError::ArgumentsChanged);
        }
        Ok(payload)
    }
}

impl fmt::Debug for StateKeyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKeyring")
            .field("current", &self.current().kid)
            .field("kids", &self.kids().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"; // bytes 0..32, url-safe, no pad

    #[test]
    fn parses_several_keys_first_is_current() {
        let text = format!(
            "# keys\n\n new : {K32}\nold:{}\n",
            "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
        );
        let ring = StateKeyring::from_key_file_contents(&text).unwrap();
        assert_eq!(ring.current().kid(), "new");
        assert_eq!(ring.kids().collect::<Vec<_>>(), ["new", "old"]);
        assert!(ring.key("old").is_some());
        assert!(ring.key("nope").is_none());
    }

    #[test]
    fn rejects_bad_lines_naming_the_line() {
        let cases: [(String, usize, KeyProblem); 5] = [
            (
                format!("a:{K32}\nnocolon\n"),
                2,
                KeyProblem::MissingSeparator,
            ),
            (format!("bad kid:{K32}"), 1, KeyProblem::BadKid),
            ("\n\na:AAEC".to_owned(), 3, KeyProblem::TooShort { len: 3 }),
            ("a:!!notbase64!!".to_owned(), 1, KeyProblem::BadBase64),
            (
                format!("a:{K32}\n#\na:{K32}"),
                3,
                KeyProblem::DuplicateKid {
                    kid: "a".into(),
                    first_line: 1,
                },
            ),
        ];
        for (text, want_line, want_problem) in cases {
            match StateKeyring::from_key_file_contents(&text) {
                Err(KeyError::Line { line, problem }) => {
                    assert_eq!((line, &problem), (want_line, &want_problem), "{text}");
                    let message = KeyError::Line { line, problem }.to_string();
                    assert!(message.contains(&format!("line {want_line}")), "{message}");
                }
                other => panic!("{text}: expected a line error, got {other:?}"),
            }
        }
        assert!(matches!(
            StateKeyring::from_key_file_contents("# only\n\n"),
            Err(KeyError::Empty)
        ));
    }

    #[test]
    fn debug_never_prints_key_material() {
        let ring = StateKeyring::from_key_file_contents(&format!("k1:{K32}")).unwrap();
        let shown = format!("{ring:?} {:?}", ring.current());
        assert!(shown.contains("k1"));
        assert!(!shown.contains(K32));
        assert!(!shown.contains("AAECAwQF"));
        // Raw byte listing (e.g. `[0, 1, 2, 3`) must not appear either.
        assert!(!shown.contains("0, 1, 2"), "{shown}");
    }

    #[test]
    fn generate_and_generated_line_round_trip() {
        let a = StateKeyring::generate().unwrap();
        let b = StateKeyring::generate().unwrap();
        assert_ne!(a.current().kid(), b.current().kid());
        let line = StateKeyring::generate_key_line("fresh").unwrap();
        let ring = StateKeyring::from_key_file_contents(&line).unwrap();
        assert_eq!(ring.current().kid(), "fresh");
        assert!(StateKeyring::generate_key_line("no spaces").is_err());
    }

    #[test]
    fn io_error_names_the_file() {
        let err = StateKeyring::from_key_file("/nonexistent/dir/keys.txt").unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/dir/keys.txt"),
            "{err}"
        );
    }
}
