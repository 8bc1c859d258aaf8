//! The secret-name check of form fields: form mode must not carry passwords, keys, tokens,
//! one-time codes or bank and card data, so a field whose name reads as one is refused at
//! compile time.

/// What a secret-looking field name was taken for, and the word(s) that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SecretMatch {
    /// The listed term that matched (`"password"`, `"card number"`, …).
    pub(crate) term: &'static str,
    /// What the term denotes, for the error message ("a password", "card data", …).
    pub(crate) kind: &'static str,
}

const PASSWORD: &str = "a password";
const ONE_TIME_CODE: &str = "a one-time code";
const BANK_ACCOUNT: &str = "a bank account number";
const RECOVERY_PHRASE: &str = "a recovery phrase";
const SESSION_COOKIE: &str = "a session cookie";

/// Words that mark a field as secret wherever they appear as a whole word (plural too).
/// Documented on `#[derive(ElicitForm)]`; keep the two lists in step.
const SECRET_WORDS: &[(&str, &str)] = &[
    ("password", PASSWORD),
    ("passwd", PASSWORD),
    ("passphrase", PASSWORD),
    ("passcode", PASSWORD),
    // `pwd` also names a working directory, but a form asking for one says `cwd` or `dir`.
    ("pwd", PASSWORD),
    ("secret", "a secret"),
    ("credential", "a credential"),
    ("apikey", "an API key"),
    ("bearer", "an access token"),
    ("pin", "a PIN"),
    ("otp", ONE_TIME_CODE),
    ("totp", ONE_TIME_CODE),
    ("authcode", ONE_TIME_CODE),
    ("cvv", "card data"),
    ("cvv2", "card data"),
    ("cvc", "card data"),
    ("iban", BANK_ACCOUNT),
    ("ssn", "a national identity number"),
    // A wallet's seed words; an assembler's `opcode_mnemonic` needs `not_secret`.
    ("mnemonic", RECOVERY_PHRASE),
];

/// Closed compounds ending in one of these (`newpassword`, `dbpasswd`) are secret too; the
/// ending matters because the head of an English compound comes last (`passwordless` is not).
const SECRET_ENDINGS: &[&str] = &["password", "passwd", "passphrase", "passcode", "pwd"];

/// Secret phrases: consecutive words, wherever they appear (the last one plural too).
const SECRET_PHRASES: &[(&[&str], &str, &str)] = &[
    (&["pass", "word"], "password", PASSWORD),
    (&["pass", "phrase"], "passphrase", PASSWORD),
    (&["pass", "code"], "passcode", PASSWORD),
    (&["api", "key"], "api key", "an API key"),
    (&["private", "key"], "private key", "a private key"),
    (&["secret", "key"], "secret key", "a secret key"),
    (&["access", "key"], "access key", "an access key"),
    (&["signing", "key"], "signing key", "a signing key"),
    (
        &["encryption", "key"],
        "encryption key",
        "an encryption key",
    ),
    (&["ssh", "key"], "ssh key", "a private key"),
    (&["recovery", "key"], "recovery key", "a recovery key"),
    (&["card", "number"], "card number", "card data"),
    (&["card", "num"], "card number", "card data"),
    (&["card", "no"], "card number", "card data"),
    (&["security", "code"], "security code", "card data"),
    // Codes sent or shown to prove who is asking, valid once or briefly. Not `code` alone:
    // `zip_code`, `country_code` and `promo_code` are ordinary answers.
    (&["auth", "code"], "auth code", ONE_TIME_CODE),
    (
        &["authorization", "code"],
        "authorization code",
        ONE_TIME_CODE,
    ),
    (
        &["authorisation", "code"],
        "authorization code",
        ONE_TIME_CODE,
    ),
    (&["oauth", "code"], "oauth code", ONE_TIME_CODE),
    (&["mfa", "code"], "mfa code", ONE_TIME_CODE),
    (&["2fa", "code"], "2fa code", ONE_TIME_CODE),
    (&["two", "factor", "code"], "two factor code", ONE_TIME_CODE),
    (&["one", "time", "code"], "one time code", ONE_TIME_CODE),
    (&["onetime", "code"], "one time code", ONE_TIME_CODE),
    (
        &["verification", "code"],
        "verification code",
        ONE_TIME_CODE,
    ),
    (&["verify", "code"], "verification code", ONE_TIME_CODE),
    (
        &["confirmation", "code"],
        "confirmation code",
        ONE_TIME_CODE,
    ),
    (&["login", "code"], "login code", ONE_TIME_CODE),
    (&["sms", "code"], "sms code", ONE_TIME_CODE),
    (&["access", "code"], "access code", "an access code"),
    (&["recovery", "code"], "recovery code", ONE_TIME_CODE),
    (&["backup", "code"], "backup code", ONE_TIME_CODE),
    (&["recovery", "phrase"], "recovery phrase", RECOVERY_PHRASE),
    (&["seed", "phrase"], "seed phrase", RECOVERY_PHRASE),
    (&["seed", "word"], "seed words", RECOVERY_PHRASE),
    (&["account", "number"], "account number", BANK_ACCOUNT),
    (&["account", "num"], "account number", BANK_ACCOUNT),
    (&["account", "no"], "account number", BANK_ACCOUNT),
    (&["acct", "number"], "account number", BANK_ACCOUNT),
    (&["acct", "num"], "account number", BANK_ACCOUNT),
    (&["acct", "no"], "account number", BANK_ACCOUNT),
    (&["routing", "number"], "routing number", BANK_ACCOUNT),
    (&["routing", "num"], "routing number", BANK_ACCOUNT),
    (&["routing", "no"], "routing number", BANK_ACCOUNT),
    (&["sort", "code"], "sort code", BANK_ACCOUNT),
    (
        &["social", "security"],
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

/// Words that make a following `pass` a ticket or a round rather than a password
/// (`boarding_pass`, `first_pass`).
const PASS_MODIFIERS: &[&str] = &[
    "boarding", "season", "day", "bus", "ski", "hall", "first", "second", "third", "last", "final",
    "next", "previous", "single", "multi",
];

/// A head noun: secret only as the last word(s) of a name (the head of an English compound
/// comes last: a `session_cookie` is one, a `session_cookie_name` is not) and not after one
/// of its modifiers.
struct Head {
    /// The last word(s) of the name.
    phrase: &'static [&'static str],
    /// Whether the last word may be plural (not `pass`: `passes` are rounds).
    plural: bool,
    /// Words that, just before the phrase, make it something else (`max_tokens`).
    not_after: &'static [&'static str],
    term: &'static str,
    kind: &'static str,
}

/// The head nouns; documented on `#[derive(ElicitForm)]` with the other lists.
const SECRET_HEADS: &[Head] = &[
    Head {
        phrase: &["token"],
        plural: true,
        not_after: TOKEN_QUANTIFIERS,
        term: "token",
        kind: "an access token",
    },
    Head {
        phrase: &["pass"],
        plural: false,
        not_after: PASS_MODIFIERS,
        term: "pass",
        kind: PASSWORD,
    },
    Head {
        phrase: &["bank", "account"],
        plural: true,
        not_after: &[],
        term: "bank account",
        kind: BANK_ACCOUNT,
    },
    Head {
        phrase: &["session", "cookie"],
        plural: true,
        not_after: &[],
        term: "session cookie",
        kind: SESSION_COOKIE,
    },
    Head {
        phrase: &["auth", "cookie"],
        plural: true,
        not_after: &[],
        term: "auth cookie",
        kind: SESSION_COOKIE,
    },
    Head {
        phrase: &["login", "cookie"],
        plural: true,
        not_after: &[],
        term: "login cookie",
        kind: SESSION_COOKIE,
    },
];

/// Splits a name into lowercase words at `_`, `-` and other non-alphanumerics, at a lower
/// case letter or digit followed by an upper case one (`authCode`), and before the last
/// capital of an acronym followed by a lower case letter (`MFACode` → `mfa`, `code`).
/// Finer than the `rename_all` split, which must keep its wire names.
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let next = chars.get(i + 1).copied();
        let camel = c.is_uppercase() && prev.is_some_and(|p| p.is_lowercase() || p.is_numeric());
        let acronym_end = c.is_uppercase()
            && prev.is_some_and(char::is_uppercase)
            && next.is_some_and(char::is_lowercase);
        if (camel || acronym_end) && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `word`, or `word` without a plural `s`, is `term`.
fn is_word(word: &str, term: &str) -> bool {
    word == term || word.strip_suffix('s') == Some(term)
}

/// Whether `words` reads `phrase`, the last word plural too.
fn reads(words: &[String], phrase: &[&str]) -> bool {
    words.len() == phrase.len()
        && words.iter().zip(phrase).enumerate().all(|(i, (w, p))| {
            if i + 1 == phrase.len() {
                is_word(w, p)
            } else {
                w == p
            }
        })
}

/// Returns what a field name looks like if it names a secret, else `None`.
///
/// The name is split into words (`snake_case`, `kebab-case`, `camelCase` and acronyms) and
/// matched word by word, so `secretary`, `tokenizer`, `passenger` and `passwordless` pass
/// while `otp_code`, `cardNumber`, `MFACode` and `access_token` do not. Head nouns count only
/// as the last word(s): an `access_token` and a `db_pass`, not a `token_count`, a
/// `pass_count` or a `session_cookie_name`; and not after a modifier (`max_tokens`,
/// `boarding_pass`).
pub(crate) fn secret_word(name: &str) -> Option<SecretMatch> {
    let words = words(name);
    for w in &words {
        for &(term, kind) in SECRET_WORDS {
            if is_word(w, term) {
                return Some(SecretMatch { term, kind });
            }
        }
        for &term in SECRET_ENDINGS {
            if w.ends_with(term) || w.strip_suffix('s').is_some_and(|s| s.ends_with(term)) {
                return Some(SecretMatch {
                    term,
                    kind: PASSWORD,
                });
            }
        }
    }
    for &(phrase, term, kind) in SECRET_PHRASES {
        if words.windows(phrase.len()).any(|w| reads(w, phrase)) {
            return Some(SecretMatch { term, kind });
        }
    }
    for h in SECRET_HEADS {
        let Some(start) = words.len().checked_sub(h.phrase.len()) else {
            continue;
        };
        let tail = &words[start..];
        let head = if h.plural {
            reads(tail, h.phrase)
        } else {
            tail.iter().zip(h.phrase).all(|(w, p)| w == p)
        };
        let modified = start
            .checked_sub(1)
            .and_then(|i| words.get(i))
            .is_some_and(|m| h.not_after.contains(&m.as_str()));
        if head && !modified {
            return Some(SecretMatch {
                term: h.term,
                kind: h.kind,
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
    use super::{secret_word, words};

    /// Runs `check` on every name and fails once, listing every name that failed.
    fn each(names: &[&str], check: impl Fn(&str) -> Option<String>) {
        let failures: Vec<String> = names.iter().filter_map(|n| check(n)).collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn secret_names_are_refused() {
        each(
            &[
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
                "APIKey",
                "private_key",
                "ssh_keys",
                "credentials",
                "db_credential",
                "pin",
                "pin_code",
                "otp",
                "otp_code",
                "OTPCode",
                "totp",
                "cvv",
                "cvc",
                "iban",
                "ssn",
                "card_number",
                "cardNumber",
                "card_no",
                "security_code",
                // A password hint often gives the password away: refused like it.
                "password_hint",
            ],
            |n| {
                secret_word(n)
                    .is_none()
                    .then(|| format!("`{n}` should be refused"))
            },
        );
    }

    /// Each name with the kind its error names.
    #[test]
    fn codes_passwords_recovery_phrases_and_bank_data_are_refused() {
        let cases: &[(&str, &str)] = &[
            ("auth_code", "a one-time code"),
            ("authCode", "a one-time code"),
            ("authcode", "a one-time code"),
            ("authorization_code", "a one-time code"),
            ("oauth_code", "a one-time code"),
            ("mfa_code", "a one-time code"),
            ("mfaCode", "a one-time code"),
            ("MFACode", "a one-time code"),
            ("two_factor_code", "a one-time code"),
            ("one_time_code", "a one-time code"),
            ("verification_code", "a one-time code"),
            ("verificationCodes", "a one-time code"),
            ("confirmation_code", "a one-time code"),
            ("login_code", "a one-time code"),
            ("sms_code", "a one-time code"),
            ("access_code", "an access code"),
            ("recovery_codes", "a one-time code"),
            ("backup_code", "a one-time code"),
            ("bearer", "an access token"),
            ("bearer_value", "an access token"),
            ("pwd", "a password"),
            ("db_pwd", "a password"),
            ("userpwd", "a password"),
            ("pass", "a password"),
            ("db_pass", "a password"),
            ("wifiPass", "a password"),
            ("passcode", "a password"),
            ("device_passcode", "a password"),
            ("passWord", "a password"),
            ("pass_phrase", "a password"),
            ("passCode", "a password"),
            ("session_cookie", "a session cookie"),
            ("sessionCookie", "a session cookie"),
            ("session_cookies", "a session cookie"),
            ("auth_cookie", "a session cookie"),
            ("recovery_phrase", "a recovery phrase"),
            ("seed_phrase", "a recovery phrase"),
            ("seed_words", "a recovery phrase"),
            ("mnemonic", "a recovery phrase"),
            ("mnemonic_phrase", "a recovery phrase"),
            ("recovery_key", "a recovery key"),
            ("account_number", "a bank account number"),
            ("accountNumber", "a bank account number"),
            ("account_no", "a bank account number"),
            ("acct_num", "a bank account number"),
            ("routing_number", "a bank account number"),
            ("bank_account", "a bank account number"),
            ("bankAccount", "a bank account number"),
            ("bank_account_number", "a bank account number"),
            ("sort_code", "a bank account number"),
            ("sortCode", "a bank account number"),
            ("iban", "a bank account number"),
        ];
        each(&cases.iter().map(|c| c.0).collect::<Vec<_>>(), |n| {
            let want = cases.iter().find(|c| c.0 == n).map(|c| c.1);
            match secret_word(n) {
                None => Some(format!("`{n}` should be refused as {want:?}")),
                Some(m) if Some(m.kind) != want => {
                    Some(format!("`{n}` is taken for {}, not {want:?}", m.kind))
                }
                Some(_) => None,
            }
        });
    }

    #[test]
    fn ordinary_names_pass() {
        each(
            &[
                "max_tokens",
                "maxTokens",
                "num_tokens",
                "token_count",
                "tokenizer",
                "tokenizer_name",
                "passwordless",
                "passwordless_login",
                "secretary",
                "title",
                "keyboard",
                "key",
                "key_layout",
                "sort_key",
                "apiary",
                "note_id",
                "spin",
                "pinned",
                "spinner",
                "option",
                "card_title",
                "phone_number",
            ],
            |n| secret_word(n).map(|m| format!("`{n}` should pass, not be taken for {m:?}")),
        );
    }

    /// Names that share a word or a prefix with the rules above but name nothing secret.
    #[test]
    fn lookalikes_of_the_new_rules_pass() {
        each(
            &[
                // `pass` is a password only as the whole word ending the name.
                "passenger",
                "passengers",
                "passage",
                "bypass",
                "compass",
                "passport_number",
                "pass_count",
                "passCount",
                "pass_rate",
                "pass_through",
                "passes",
                "num_passes",
                "boarding_pass",
                "season_pass",
                "first_pass",
                "final_pass",
                // `code` alone is source code, a country, a postcode or a discount.
                "code",
                "code_language",
                "source_code",
                "zip_code",
                "postal_code",
                "country_code",
                "area_code",
                "currency_code",
                "language_code",
                "status_code",
                "error_code",
                "promo_code",
                "coupon_code",
                "invite_code",
                "referral_code",
                "time_code",
                // Verification, MFA and auth settings are not codes.
                "verification_status",
                "verification_method",
                "mfa_enabled",
                "two_factor_enabled",
                "auth_method",
                "auth_type",
                "access_level",
                // A session is referred to by id; the cookie's settings are not the cookie.
                "session_id",
                "session_name",
                "session_cookie_name",
                "cookie_banner",
                "cookie_consent",
                "accept_cookies",
                "cookie",
                // Accounts and banks by name, type or id.
                "account_name",
                "account_id",
                "account_type",
                "bank_name",
                "bank_account_type",
                "bank_account_holder",
                "bank_accounts_count",
                "routing_key",
                "sort_order",
                "sortBy",
                // Recovery contacts, random seeds, bearings.
                "recovery_email",
                "recovery_phone",
                "seed",
                "random_seed",
                "phrase",
                "bearing",
                "cwd",
                "working_dir",
            ],
            |n| secret_word(n).map(|m| format!("`{n}` should pass, not be taken for {m:?}")),
        );
    }

    #[test]
    fn the_match_names_what_was_found() {
        let m = secret_word("card_number").unwrap();
        assert_eq!((m.term, m.kind), ("card number", "card data"));
        let m = secret_word("otp_code").unwrap();
        assert_eq!(m.term, "otp");
        let m = secret_word("mfa_code").unwrap();
        assert_eq!((m.term, m.kind), ("mfa code", "a one-time code"));
    }

    #[test]
    fn words_split_acronyms_and_camel_case() {
        assert_eq!(words("MFACode"), ["mfa", "code"]);
        assert_eq!(words("sessionCookie"), ["session", "cookie"]);
        assert_eq!(words("cvv2"), ["cvv2"]);
        assert_eq!(words("APIKEY"), ["apikey"]);
        assert_eq!(words("wifi-pass word"), ["wifi", "pass", "word"]);
    }
}
