//! The secret-name check of form fields: form mode must not carry passwords, keys, tokens
//! or card data, so a field whose name reads as one is refused at compile time.

use crate::util;

/// What a secret-looking field name was taken for, and the word(s) that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SecretMatch {
    /// The listed term that matched (`"password"`, `"card number"`, …).
    pub(crate) term: &'static str,
    /// What the term denotes, for the error message ("a password", "card data", …).
    pub(crate) kind: &'static str,
}

/// Words that mark a field as secret wherever they appear as a whole word (plural too).
/// Documented on `#[derive(ElicitForm)]`; keep the two lists in step.
const SECRET_WORDS: &[(&str, &str)] = &[
    ("password", "a password"),
    ("passwd", "a password"),
    ("passphrase", "a password"),
    ("secret", "a secret"),
    ("credential", "a credential"),
    ("apikey", "an API key"),
    ("pin", "a PIN"),
    ("otp", "a one-time code"),
    ("totp", "a one-time code"),
    ("cvv", "card data"),
    ("cvv2", "card data"),
    ("cvc", "card data"),
    ("iban", "a bank account number"),
    ("ssn", "a national identity number"),
];

/// Closed compounds ending in one of these (`newpassword`, `dbpasswd`) are secret too; the
/// ending matters because the head of an English compound comes last (`passwordless` is not).
const SECRET_ENDINGS: &[&str] = &["password", "passwd", "passphrase"];

/// Two-word secrets: the first word, then the second (plural too).
const SECRET_PAIRS: &[(&str, &str, &str, &str)] = &[
    ("api", "key", "api key", "an API key"),
    ("private", "key", "private key", "a private key"),
    ("secret", "key", "secret key", "a secret key"),
    ("access", "key", "access key", "an access key"),
    ("signing", "key", "signing key", "a signing key"),
    ("encryption", "key", "encryption key", "an encryption key"),
    ("ssh", "key", "ssh key", "a private key"),
    ("card", "number", "card number", "card data"),
    ("card", "num", "card number", "card data"),
    ("card", "no", "card number", "card data"),
    ("security", "code", "security code", "card data"),
    (
        "social",
        "security",
        "social security number",
        "a national identity number",
    ),
];

/// Words that make a following `token(s)` a count rather than a credential (`max_tokens`).
const TOKEN_QUANTIFIERS: &[&str] = &[
    "max",
    "min",
    "maximum",
    "minimum",
    "num",
    "number",
    "total",
    "count",
    "limit",
    "remaining",
    "used",
    "input",
    "output",
    "prompt",
    "completion",
];

/// Returns what a field name looks like if it names a secret, else `None`.
///
/// The name is split into words (`snake_case`, `kebab-case` and `camelCase`) and matched word
/// by word, so `secretary`, `tokenizer` and `passwordless` pass while `otp_code`, `cardNumber`
/// and `access_token` do not. `token(s)` counts only as the last word (the head noun: an
/// `access_token`, not a `token_count`) and not after a quantity word (`max_tokens`).
pub(crate) fn secret_word(name: &str) -> Option<SecretMatch> {
    let words = util::words(name);
    let singular = |w: &str| -> String { w.strip_suffix('s').unwrap_or(w).to_owned() };
    for w in &words {
        for (term, kind) in SECRET_WORDS {
            if w == term || singular(w) == *term {
                return Some(SecretMatch { term, kind });
            }
        }
        for term in SECRET_ENDINGS {
            if w.ends_with(term) || singular(w).ends_with(term) {
                return Some(SecretMatch {
                    term,
                    kind: "a password",
                });
            }
        }
    }
    for pair in words.windows(2) {
        for (a, b, term, kind) in SECRET_PAIRS {
            if pair[0] == *a && (pair[1] == *b || singular(&pair[1]) == *b) {
                return Some(SecretMatch { term, kind });
            }
        }
    }
    if let Some(last) = words.last()
        && (last == "token" || last == "tokens")
    {
        let quantified =
            words.len() >= 2 && TOKEN_QUANTIFIERS.contains(&words[words.len() - 2].as_str());
        if !quantified {
            return Some(SecretMatch {
                term: "token",
                kind: "an access token",
            });
        }
    }
    None
}

/// The compile error for a secret-looking field name (`None` when the name passes).
pub(crate) fn secret_error(candidate: &str) -> Option<String> {
    let m = secret_word(candidate)?;
    Some(format!(
        "form mode must not carry secrets: `{candidate}` looks like {kind} (it \
         contains `{term}`), and form answers pass through the client and its \
         logs; collect it in URL mode with `ctx.elicit_url(..)` instead, on a \
         page of your own. If the field is not secret, mark it `#[form(not_secret)]`",
        kind = m.kind,
        term = m.term,
    ))
}

#[cfg(test)]
mod tests {
    use super::secret_word;

    #[test]
    fn secret_names_are_refused() {
        for n in [
            "password",
            "user_password",
            "newPassword",
            "mypassword",
            "Passwd",
            "passphrase",
            "client_secret",
            "secrets",
            "access_token",
            "refreshToken",
            "token",
            "github_tokens",
            "api_key",
            "apiKey",
            "APIKEY",
            "private_key",
            "ssh_keys",
            "credentials",
            "db_credential",
            "pin",
            "pin_code",
            "otp",
            "otp_code",
            "totp",
            "cvv",
            "cvc",
            "iban",
            "ssn",
            "card_number",
            "cardNumber",
            "card_no",
            "security_code",
        ] {
            assert!(secret_word(n).is_some(), "{n} should be refused");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for n in [
            "max_tokens",
            "maxTokens",
            "num_tokens",
            "token_count",
            "tokenizer_name",
            "passwordless",
            "passwordless_login",
            "secretary",
            "title",
            "keyboard",
            "key",
            "sort_key",
            "apiary",
            "note_id",
            "spin",
            "pinned",
            "option",
            "card_title",
            "phone_number",
        ] {
            assert_eq!(secret_word(n), None, "{n} should pass");
        }
    }

    #[test]
    fn the_match_names_what_was_found() {
        let m = secret_word("card_number").unwrap();
        assert_eq!((m.term, m.kind), ("card number", "card data"));
        let m = secret_word("otp_code").unwrap();
        assert_eq!(m.term, "otp");
    }
}
