//! Paginated list results (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`), serialised once at build time, with opaque cursors.
//!
//! A cursor names a page of one list of one configuration: it encodes the list kind, the page
//! index and a fingerprint of the whole list, base64url-encoded. A cursor from another list,
//! another server configuration, or made up answers `-32602`. Every page carries the same
//! `ttlMs`/`cacheScope`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_types::ErrorObject;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The serialised pages of one list.
pub(super) struct Pages {
    kind: &'static str,
    fingerprint: String,
    pages: Vec<Vec<u8>>,
}

impl Pages {
    /// Splits `items` into pages of `page_size` (at least 1) and serialises each with `make`,
    /// which receives the page's items and its `nextCursor`.
    pub(super) fn build<T: Serialize + Clone, R: Serialize>(
        kind: &'static str,
        items: &[T],
        page_size: usize,
        make: impl Fn(Vec<T>, Option<String>) -> R,
    ) -> Result<Self, serde_json::Error> {
        let mut hasher = Sha256::new();
        hasher.update(kind.as_bytes());
        for item in items {
            hasher.update(serde_json::to_vec(item)?);
            hasher.update([0]);
        }
        let digest = hasher.finalize();
        let fingerprint: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let chunks: Vec<&[T]> = if items.is_empty() {
            vec![&[]]
        } else {
            items.chunks(page_size.max(1)).collect()
        };
        let count = chunks.len();
        let mut pages = Vec::with_capacity(count);
        for (i, chunk) in chunks.into_iter().enumerate() {
            let next = (i + 1 < count).then(|| cursor(kind, i + 1, &fingerprint));
            pages.push(serde_json::to_vec(&make(chunk.to_vec(), next))?);
        }
        Ok(Self {
            kind,
            fingerprint,
            pages,
        })
    }

    /// The page a request's `cursor` names (the first page when absent).
    pub(super) fn page(&self, cursor: Option<&Value>) -> Result<&[u8], ErrorObject> {
        let index = match cursor {
            // An empty cursor is treated as absent, as tools/list always did.
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) if c.is_empty() => 0,
            Some(Value::String(c)) => self.decode(c).ok_or_else(invalid_cursor)?,
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: \"cursor\" must be the string from a previous nextCursor",
                ));
            }
        };
        self.pages
            .get(index)
            .map(Vec::as_slice)
            .ok_or_else(invalid_cursor)
    }

    /// How many pages the list has.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.pages.len()
    }

    fn decode(&self, cursor: &str) -> Option<usize> {
        if cursor.len() > 256 {
            return None;
        }
        let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        let text = std::str::from_utf8(&raw).ok()?;
        let mut parts = text.split(':');
        let (kind, index, fingerprint) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || kind != self.kind || fingerprint != self.fingerprint {
            return None;
        }
        let index: usize = index.parse().ok()?;
        (index > 0).then_some(index)
    }
}

fn cursor(kind: &str, index: usize, fingerprint: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{kind}:{index}:{fingerprint}"))
}

fn invalid_cursor() -> ErrorObject {
    ErrorObject::invalid_params(
        "Invalid params: unknown or expired cursor; list again without a cursor",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pages(n: usize, size: usize) -> Pages {
        let items: Vec<u32> = (0..u32::try_from(n).unwrap()).collect();
        Pages::build("things", &items, size, |page, next| {
            json!({ "things": page, "nextCursor": next, "ttlMs": 5, "cacheScope": "public" })
        })
        .unwrap()
    }

    fn body(p: &Pages, cursor: Option<&Value>) -> Value {
        serde_json::from_slice(p.page(cursor).unwrap()).unwrap()
    }

    #[test]
    fn walks_every_page_in_order_with_the_same_hints() {
        let p = pages(7, 3);
        assert_eq!(p.len(), 3);
        let mut seen = Vec::new();
        let mut cursor: Option<Value> = None;
        loop {
            let b = body(&p, cursor.as_ref());
            assert_eq!(b["ttlMs"], 5);
            assert_eq!(b["cacheScope"], "public");
            seen.extend(b["things"].as_array().unwrap().iter().cloned());
            match b["nextCursor"].clone() {
                Value::Null => break,
                c => cursor = Some(c),
            }
        }
        assert_eq!(seen, (0..7).map(|i| json!(i)).collect::<Vec<_>>());
        // Stable: the same cursor gives the same bytes.
        let c = body(&p, None)["nextCursor"].clone();
        assert_eq!(p.page(Some(&c)).unwrap(), p.page(Some(&c)).unwrap());
    }

    #[test]
    fn refuses_foreign_and_forged_cursors() {
        let p = pages(7, 3);
        let other = pages(8, 3);
        let foreign = body(&other, None)["nextCursor"].clone();
        for bad in [
            foreign,
            json!("not base64 !"),
            json!(cursor("things", 9, &p.fingerprint)),
            json!(cursor("things", 0, &p.fingerprint)),
            json!(cursor("other", 1, &p.fingerprint)),
            json!(7),
        ] {
            let e = p.page(Some(&bad)).unwrap_err();
            assert_eq!(e.code().code(), -32602, "{bad}");
        }
    }

    #[test]
    fn empty_list_is_one_page() {
        let p = pages(0, 3);
        assert_eq!(p.len(), 1);
        assert_eq!(body(&p, None)["things"], json!([]));
    }
}
