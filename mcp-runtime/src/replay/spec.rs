//! Reading a store spec string (`memory`, `memory:N`, `sqlite:PATH`, `postgres://...`,
//! `redis://...`), shared by [`open_store`](super::open_store) and
//! [`open_task_store`](crate::tasks::open_task_store) so that one setting names one backend
//! for replay claims and tasks alike.

/// A store spec, read but not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreSpec<'a> {
    /// `memory` (`None`: the store's default capacity) or `memory:N`.
    Memory(Option<usize>),
    /// `sqlite:PATH` (or `sqlite://PATH`): the path.
    Sqlite(&'a str),
    /// `postgres://...` or `postgresql://...`: the whole URL.
    Postgres(&'a str),
    /// `redis://...`: the whole URL.
    Redis(&'a str),
}

impl<'a> StoreSpec<'a> {
    /// Reads `spec` (surrounding whitespace ignored); the error is a hint saying what to write.
    pub(crate) fn parse(spec: &'a str) -> Result<Self, &'static str> {
        let spec = spec.trim();
        if spec == "memory" {
            return Ok(Self::Memory(None));
        }
        if let Some(capacity) = spec.strip_prefix("memory:") {
            return capacity
                .parse()
                .ok()
                .filter(|c| *c > 0)
                .map(|c| Self::Memory(Some(c)))
                .ok_or("write `memory` or `memory:N` with N a positive integer");
        }
        if let Some(path) = spec.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err("write `sqlite:PATH`, e.g. `sqlite:/var/lib/mcp/state.db`");
            }
            return Ok(Self::Sqlite(path));
        }
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            return Ok(Self::Postgres(spec));
        }
        if spec.starts_with("redis://") {
            return Ok(Self::Redis(spec));
        }
        Err(
            "expected `memory`, `memory:N`, `sqlite:PATH`, `postgres://USER@HOST:PORT/DB` or `redis://HOST:PORT/DB`",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_form_and_hints_at_the_rest() {
        assert_eq!(StoreSpec::parse(" memory "), Ok(StoreSpec::Memory(None)));
        assert_eq!(StoreSpec::parse("memory:5"), Ok(StoreSpec::Memory(Some(5))));
        assert_eq!(
            StoreSpec::parse("sqlite:///x.db"),
            Ok(StoreSpec::Sqlite("/x.db"))
        );
        assert_eq!(
            StoreSpec::parse("sqlite:x.db"),
            Ok(StoreSpec::Sqlite("x.db"))
        );
        assert_eq!(
            StoreSpec::parse("postgresql://u@h/db"),
            Ok(StoreSpec::Postgres("postgresql://u@h/db"))
        );
        assert_eq!(
            StoreSpec::parse("redis://h:1/0"),
            Ok(StoreSpec::Redis("redis://h:1/0"))
        );
        for bad in [
            "",
            "memory:0",
            "memory:-1",
            "sqlite:",
            "mysql://x",
            "memoryx",
        ] {
            assert!(StoreSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
