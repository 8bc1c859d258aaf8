//! W3C Baggage as it reaches the server: the `baggage` key of a request's `params._meta`
//! (SEP-414) and the HTTP `baggage` header, read by a bounded, validating parser.
//!
//! Client-controlled, so read strictly and never an error: a list member that is not what the
//! W3C Baggage specification allows is skipped, the others kept; input past the
//! specification's limits ([`MAX_BAGGAGE_LEN`] bytes, [`MAX_BAGGAGE_MEMBERS`] members) is not
//! read. With the `otel` feature the entries join the OpenTelemetry context of the request
//! span (as baggage, never as span attributes), for the application's own code to read.

/// The most bytes of a baggage list read (the specification's 8,192); members past it are not
/// read.
pub const MAX_BAGGAGE_LEN: usize = 8192;

/// The most list members read (the specification's 180); members past it are not read.
pub const MAX_BAGGAGE_MEMBERS: usize = 180;

/// A validated W3C baggage list: names and percent-decoded values, in order, each name once
/// (a repeated name keeps its last value). Member properties (`;...`) are not kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baggage {
    entries: Vec<(String, String)>,
}

impl Baggage {
    /// Reads a baggage list. Never fails: malformed members are skipped; only the first
    /// [`MAX_BAGGAGE_LEN`] bytes and [`MAX_BAGGAGE_MEMBERS`] members are read (a member cut
    /// by the byte limit is dropped whole).
    pub fn parse(list: &str) -> Self {
        let mut baggage = Self::default();
        let mut read = 0usize;
        for member in list.split(',').take(MAX_BAGGAGE_MEMBERS) {
            // A member ending past the limit is not read, nor any after it.
            read = read.saturating_add(member.len()).saturating_add(1);
            if read > MAX_BAGGAGE_LEN.saturating_add(1) {
                break;
            }
            if let Some((name, value)) = parse_member(member) {
                baggage.entries.retain(|(n, _)| *n != name);
                baggage.entries.push((name, value));
            }
        }
        baggage
    }

    /// Reads the `baggage` key of a request's `_meta` (SEP-414: unprefixed); `None` when it
    /// is absent, not a string, or holds no valid member.
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let list = meta.get("baggage")?.as_str()?;
        Some(Self::parse(list)).filter(|b| !b.is_empty())
    }

    /// The entries, in order: (name, value).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// How many entries were read.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was read.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One `name=value[;properties]` member, optional whitespace around name and value; `None`
/// when malformed.
fn parse_member(member: &str) -> Option<(String, String)> {
    let ows = [' ', '\t'];
    let (pair, _properties) = member.split_once(';').unwrap_or((member, ""));
    let (name, value) = pair.split_once('=')?;
    let name = name.trim_matches(ows);
    let value = value.trim_matches(ows);
    if name.is_empty() || !name.bytes().all(is_token_char) {
        return None;
    }
    if !value.bytes().all(is_value_char) {
        return None;
    }
    Some((name.to_owned(), percent_decode(value)?))
}

/// RFC 7230 `tchar`.
fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// The specification's `baggage-octet`: printable ASCII except space, `"`, `,`, `;`, `\`.
fn is_value_char(c: u8) -> bool {
    matches!(c, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e)
}

/// `value` with its `%XX` escapes decoded; `None` when an escape is cut short or not hex, or
/// the result is not UTF-8.
fn percent_decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn members_are_read_with_whitespace_properties_and_escapes() {
        let b = Baggage::parse(" userId = alice ;p=1, serverNode=DF%2028,isProduction=false");
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            [
                ("userId", "alice"),
                ("serverNode", "DF 28"),
                ("isProduction", "false")
            ]
        );
        assert_eq!(b.get("serverNode"), Some("DF 28"));
    }

    #[test]
    fn malformed_members_are_skipped_the_others_kept() {
        let b = Baggage::parse("a=1,novalue,=x,b c=2,d=\"q\",e=%zz,f=%e2%82,g=ok,a=2");
        assert_eq!(b.iter().collect::<Vec<_>>(), [("g", "ok"), ("a", "2")]);
        assert!(Baggage::parse("").is_empty());
        assert!(Baggage::parse(",,,").is_empty());
    }

    #[test]
    fn limits_are_kept() {
        let many = (0..MAX_BAGGAGE_MEMBERS + 20)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        let b = Baggage::parse(&many);
        assert_eq!(b.len(), MAX_BAGGAGE_MEMBERS);
        assert_eq!(b.get("k179"), Some("v"));
        assert_eq!(b.get("k180"), None);
        // A member reaching past 8,192 bytes is not read.
        let long = format!("a=1,b={},c=3", "x".repeat(MAX_BAGGAGE_LEN));
        assert_eq!(
            Baggage::parse(&long).iter().collect::<Vec<_>>(),
            [("a", "1")]
        );
        let exact = format!("a={}", "x".repeat(MAX_BAGGAGE_LEN - 2));
        assert_eq!(Baggage::parse(&exact).len(), 1);
    }

    #[test]
    fn meta_key_is_read_unprefixed() {
        let meta = serde_json::json!({"baggage": "k=v"});
        let b = Baggage::from_meta(meta.as_object().unwrap()).unwrap();
        assert_eq!(b.get("k"), Some("v"));
        for meta in [
            serde_json::json!({"baggage": 1}),
            serde_json::json!({"baggage": "bad"}),
            serde_json::json!({}),
        ] {
            assert_eq!(Baggage::from_meta(meta.as_object().unwrap()), None);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_input_never_panics_and_stays_bounded(s in ".{0,600}", reps in 0usize..40) {
            let input = s.repeat(reps);
            let b = Baggage::parse(&input);
            prop_assert!(b.len() <= MAX_BAGGAGE_MEMBERS);
            let size: usize = b.iter().map(|(n, v)| n.len() + v.len()).sum();
            prop_assert!(size <= MAX_BAGGAGE_LEN);
        }

        #[test]
        fn baggage_like_input_never_panics(s in "([a-z%=;, \t]{0,8}[0-9A-Fa-f]{0,3}){0,400}") {
            let b = Baggage::parse(&s);
            prop_assert!(b.len() <= MAX_BAGGAGE_MEMBERS);
            for (name, _) in b.iter() {
                prop_assert!(!name.is_empty());
            }
        }
    }
}
