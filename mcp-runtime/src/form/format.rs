//! Server-side checks for the string `format`s form mode allows: real checks, not regex
//! approximations (a calendar date must exist; a date-time needs an offset).

use mcp_types::StringFormat;

use super::FormProblem;

/// Checks `s` against `format`.
pub(super) fn check(format: StringFormat, s: &str) -> Result<(), FormProblem> {
    let (ok, name) = match format {
        StringFormat::Email => (is_email(s), "email"),
        StringFormat::Uri => (is_uri(s), "uri"),
        StringFormat::Date => (is_date(s), "date"),
        StringFormat::DateTime => (is_date_time(s), "date-time"),
    };
    if ok {
        Ok(())
    } else {
        Err(FormProblem::BadFormat { format: name })
    }
}

/// `local@domain`: a dot-atom local part (RFC 5322, no quoted strings or comments) of at
/// most 64 bytes, and a domain of at least two LDH labels (RFC 1035), 253 bytes at most.
pub(super) fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local
            .split('.')
            .all(|a| !a.is_empty() && a.chars().all(atext));
    local_ok && is_hostname(domain) && domain.contains('.')
}

fn is_hostname(d: &str) -> bool {
    !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// An absolute URI (RFC 3986): `scheme ":" rest`, with only URI characters or valid
/// percent-escapes after the scheme.
pub(super) fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut sc = scheme.chars();
    let scheme_ok = sc.next().is_some_and(|c| c.is_ascii_alphabetic())
        && sc.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return false;
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(|h| h.is_ascii_hexdigit());
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
            continue;
        }
        let allowed = b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b);
        if !allowed {
            return false;
        }
        i += 1;
    }
    true
}

fn digits(s: &str, n: usize) -> Option<u32> {
    if s.len() == n && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        _ => 0,
    }
}

/// RFC 3339 `full-date`: `YYYY-MM-DD`, a day that exists in that month.
pub(super) fn is_date(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    match (digits(y, 4), digits(m, 2), digits(d, 2)) {
        (Some(y), Some(m), Some(d)) => (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m),
        _ => false,
    }
}

/// RFC 3339 `date-time`: `full-date "T" HH:MM:SS[.frac]` then `Z` or `±HH:MM`
/// (`t`/`z` accepted, leap second 60 allowed as RFC 3339 does).
pub(super) fn is_date_time(s: &str) -> bool {
    let Some(t) = s.find(['T', 't']) else {
        return false;
    };
    let (date, time) = (&s[..t], &s[t + 1..]);
    if !is_date(date) {
        return false;
    }
    let (clock, offset) = if let Some(stripped) = time.strip_suffix(['Z', 'z']) {
        (stripped, None)
    } else if time.len() > 6 {
        let (c, o) = time.split_at(time.len() - 6);
        (c, Some(o))
    } else {
        return false;
    };
    if let Some(o) = offset {
        let ok = (o.starts_with('+') || o.starts_with('-'))
            && o.as_bytes().get(3) == Some(&b':')
            && digits(&o[1..3], 2).is_some_and(|h| h <= 23)
            && digits(&o[4..6], 2).is_some_and(|m| m <= 59);
        if !ok {
            return false;
        }
    }
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (clock, None),
    };
    if frac.is_some_and(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let mut p = hms.split(':');
    match (p.next(), p.next(), p.next(), p.next()) {
        (Some(h), Some(m), Some(sec), None) => {
            digits(h, 2).is_some_and(|h| h <= 23)
                && digits(m, 2).is_some_and(|m| m <= 59)
                && digits(sec, 2).is_some_and(|s| s <= 60)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        for ok in [
            "a@b.co",
            "first.last+tag@mail.example.org",
            "x_y@sub-1.example.com",
        ] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in [
            "",
            "a",
            "@b.co",
            "a@",
            "a@b",
            "a@@b.co",
            "a b@c.de",
            "a..b@c.de",
            ".a@c.de",
            "a@-b.co",
            "a@b..co",
            "a@b.co ",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }

    #[test]
    fn uris() {
        for ok in [
            "https://example.com/a?b=c#d",
            "file:///home/me/notes",
            "urn:isbn:0451450523",
            "mailto:a@b.co",
            "http://x/%20y",
        ] {
            assert!(is_uri(ok), "{ok}");
        }
        for bad in [
            "",
            "example.com",
            "://x",
            "1http://x",
            "http://x y",
            "http://x/%zz",
            "h ttp:x",
        ] {
            assert!(!is_uri(bad), "{bad}");
        }
    }

    #[test]
    fn dates() {
        for ok in ["2024-02-29", "2000-02-29", "1999-12-31", "2026-07-28"] {
            assert!(is_date(ok), "{ok}");
        }
        for bad in [
            "2023-02-29",
            "1900-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024-4-01",
            "24-04-01",
            "2024-04-01T00:00:00Z",
            "",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn date_times() {
        for ok in [
            "2026-07-28T10:00:00Z",
            "2026-07-28t10:00:00.123z",
            "2026-07-28T23:59:60+01:00",
            "2026-07-28T00:00:00-05:30",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "2026-07-28",
            "2026-07-28T10:00:00",
            "2026-07-28T24:00:00Z",
            "2026-07-28T10:60:00Z",
            "2026-07-28T10:00Z",
            "2026-07-28T10:00:00.Z",
            "2026-02-30T10:00:00Z",
            "2026-07-28T10:00:00+1:00",
            "2026-07-28 10:00:00Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }
}
