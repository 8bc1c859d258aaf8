//! Digests binding what a tool showed under a key: a retry's answer is only read when what the
//! tool would show now has the digest sealed when it was asked.

use crate::form::ElicitForm;
use crate::state::ArgDigest;

/// Prefix hashed before a binding (domain separation from argument digests and from any
/// other SHA-256 of the same bytes; bump the version whenever the layout below changes).
const BINDING_DOMAIN: &[u8] = b"mcp-runtime/input-binding/v3\0";

/// Digest binding what was shown under `key`: the method, the key and the request body.
///
/// The body's compact serde serialization is streamed straight into SHA-256: no `Value` tree,
/// no canonicalisation. It only has to be deterministic for one build (the same schema value
/// always serializes to the same bytes: struct fields in declaration order, maps in insertion
/// order) and to change whenever what the client is shown changes, which any change to the
/// serialized request does. Method and key are length-prefixed so no two (method, key, body)
/// triples share an input.
pub(crate) fn binding_digest<T: serde::Serialize + ?Sized>(
    method: &str,
    key: &str,
    body: &T,
) -> Result<ArgDigest, serde_json::Error> {
    use sha2::Digest as _;
    let mut hasher = binding_hasher(method, key);
    serde_json::to_writer(&mut hasher, body)?;
    Ok(ArgDigest::from_bytes(hasher.0.finalize().into()))
}

/// [`binding_digest`] of a form: what [`ElicitForm::write_binding`] writes for `choices`,
/// under the elicitation method and `key`.
pub(crate) fn form_binding_digest<F: ElicitForm>(
    key: &str,
    choices: &F::Choices,
) -> std::io::Result<ArgDigest> {
    use sha2::Digest as _;
    // Buffered: the description is written in many small pieces, and one hash update over
    // the whole buffer is much cheaper than one per piece.
    crate::scratch::with_buffer(|buf| {
        F::write_binding(choices, buf)?;
        let mut hasher = binding_hasher(mcp_types::METHOD_ELICITATION_CREATE, key);
        hasher.0.update(&buf);
        Ok(ArgDigest::from_bytes(hasher.0.finalize().into()))
    })
}

fn binding_hasher(method: &str, key: &str) -> HashWriter {
    use sha2::Digest as _;
    let mut hasher = HashWriter(sha2::Sha256::new());
    hasher.0.update(BINDING_DOMAIN);
    for part in [method, key] {
        hasher.0.update((part.len() as u64).to_le_bytes());
        hasher.0.update(part.as_bytes());
    }
    hasher
}

/// Feeds serializer output into a hasher without buffering it.
struct HashWriter(sha2::Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::binding_digest;
    use serde_json::json;

    #[test]
    fn binding_digest_is_deterministic_and_separates_its_parts() {
        let schema = json!({"type": "object", "properties": {"id": {"enum": ["a", "b"]}}});
        let d = |m: &str, k: &str, b: &serde_json::Value| binding_digest(m, k, b).unwrap();
        let base = d("elicitation/create", "pick", &schema);
        assert_eq!(base, d("elicitation/create", "pick", &schema.clone()));
        // A changed choice list, key or method gives another digest.
        let fewer = json!({"type": "object", "properties": {"id": {"enum": ["a"]}}});
        assert_ne!(base, d("elicitation/create", "pick", &fewer));
        assert_ne!(base, d("elicitation/create", "pick2", &schema));
        assert_ne!(base, d("sampling/createMessage", "pick", &schema));
        // Length prefixes: moving a byte between method and key changes the digest.
        let null = serde_json::Value::Null;
        assert_ne!(d("ab", "c", &null), d("a", "bc", &null));
    }
}
