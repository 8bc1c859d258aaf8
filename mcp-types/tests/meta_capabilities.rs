//! Request `_meta` parsing and capability queries.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use mcp_types::*;
use serde_json::{Value, json};

fn params(v: Value) -> JsonObject {
    v.as_object().unwrap().clone()
}

fn caps(v: Value) -> ClientCapabilities {
    serde_json::from_value(v).unwrap()
}

#[test]
fn from_params_reads_every_known_key_and_keeps_the_rest() {
    let p = params(json!({"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},
        "io.modelcontextprotocol/clientInfo":{"name":"c","version":"2"},
        "io.modelcontextprotocol/logLevel":"notice",
        "progressToken": 12,
        "traceparent":"00-abc-def-01",
        "com.example/flag": true
    }, "name":"x"}));
    let m = RequestMeta::from_params(&p).unwrap();
    assert_eq!(m.protocol_version, "2026-07-28");
    assert!(m.client_capabilities.supports_form());
    assert_eq!(m.client_info.as_ref().unwrap().name, "c");
    assert_eq!(m.log_level, Some(LoggingLevel::Notice));
    assert_eq!(m.progress_token, Some(ProgressToken::Number(12)));
    assert_eq!(m.extra.get("traceparent"), Some(&json!("00-abc-def-01")));
    assert_eq!(m.extra.get("com.example/flag"), Some(&json!(true)));
    // Same answer as plain serde, and it round-trips.
    let via_serde: RequestMeta = serde_json::from_value(p["_meta"].clone()).unwrap();
    assert_eq!(via_serde, m);
    assert_eq!(serde_json::to_value(&m).unwrap(), p["_meta"]);
}

#[test]
fn from_params_names_the_faulty_field() {
    let cases = [
        (json!({}), MetaError::Missing(MetaField::Meta)),
        (
            json!({"_meta": 3}),
            MetaError::WrongType {
                field: MetaField::Meta,
                expected: "an object",
                found: "a number",
            },
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities":{}}}),
            MetaError::Missing(MetaField::ProtocolVersion),
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}),
            MetaError::WrongType {
                field: MetaField::ProtocolVersion,
                expected: "a string",
                found: "a number",
            },
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}),
            MetaError::Missing(MetaField::ClientCapabilities),
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}),
            MetaError::WrongType {
                field: MetaField::ClientCapabilities,
                expected: "an object",
                found: "an array",
            },
        ),
        (
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":true}}),
            MetaError::WrongType {
                field: MetaField::ProgressToken,
                expected: "a string or an integer",
                found: "a boolean",
            },
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(
            RequestMeta::from_params(&params(input.clone())),
            Err(expected),
            "input {input}"
        );
    }
    let bad_level = params(
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"verbose"}}),
    );
    let err = RequestMeta::from_params(&bad_level).unwrap_err();
    assert_eq!(err.field(), MetaField::LogLevel);
    let bad_caps = params(
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{"elicitation":5}}}),
    );
    assert_eq!(
        RequestMeta::from_params(&bad_caps).unwrap_err().field(),
        MetaField::ClientCapabilities
    );
}

#[test]
fn meta_error_becomes_exact_invalid_params() {
    let e = MetaError::Missing(MetaField::ProtocolVersion).to_error_object();
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"code":-32602,"message":"Invalid params: missing required params._meta member \"io.modelcontextprotocol/protocolVersion\""})
    );
    let e = MetaError::WrongType {
        field: MetaField::ClientCapabilities,
        expected: "an object",
        found: "a string",
    }
    .to_error_object();
    assert_eq!(
        e.message(),
        "Invalid params: params._meta member \"io.modelcontextprotocol/clientCapabilities\" must be an object, got a string"
    );
}

#[test]
fn elicitation_mode_table() {
    let none = caps(json!({}));
    assert!(!none.supports_form() && !none.supports_url());
    let empty = caps(json!({"elicitation":{}}));
    assert!(empty.supports_form() && !empty.supports_url());
    let form = caps(json!({"elicitation":{"form":{}}}));
    assert!(form.supports_form() && !form.supports_url());
    let url = caps(json!({"elicitation":{"url":{}}}));
    assert!(!url.supports_form() && url.supports_url());
    let both = caps(json!({"elicitation":{"form":{},"url":{}}}));
    assert!(both.supports_form() && both.supports_url());
}

#[test]
fn other_capability_queries() {
    let c = caps(
        json!({"sampling":{"tools":{}},"roots":{},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}),
    );
    assert!(c.supports_sampling() && c.supports_sampling_tools() && !c.supports_sampling_context());
    assert!(c.supports_roots());
    assert!(c.supports_extension("io.modelcontextprotocol/ui"));
    assert!(!c.supports_extension("io.modelcontextprotocol/tasks"));
}

#[test]
fn missing_from_produces_exact_required_capabilities() {
    let cases = [
        (
            json!({"elicitation":{"form":{}}}),
            json!({}),
            Some(json!({"elicitation":{"form":{}}})),
        ),
        (
            json!({"elicitation":{}}),
            json!({}),
            Some(json!({"elicitation":{"form":{}}})),
        ),
        (
            json!({"elicitation":{"url":{}}}),
            json!({"elicitation":{}}),
            Some(json!({"elicitation":{"url":{}}})),
        ),
        (
            json!({"elicitation":{"url":{}}}),
            json!({"elicitation":{"form":{},"url":{}}}),
            None,
        ),
        (
            json!({"elicitation":{"form":{}}}),
            json!({"elicitation":{}}),
            None,
        ),
        (
            json!({"elicitation":{"form":{}}}),
            json!({"elicitation":{"url":{}}}),
            Some(json!({"elicitation":{"form":{}}})),
        ),
        (
            json!({"sampling":{}}),
            json!({}),
            Some(json!({"sampling":{}})),
        ),
        (
            json!({"sampling":{"tools":{}}}),
            json!({"sampling":{}}),
            Some(json!({"sampling":{"tools":{}}})),
        ),
        (
            json!({"sampling":{"tools":{}}}),
            json!({}),
            Some(json!({"sampling":{"tools":{}}})),
        ),
        (
            json!({"sampling":{}}),
            json!({"sampling":{"context":{}}}),
            None,
        ),
        (json!({"roots":{}}), json!({}), Some(json!({"roots":{}}))),
        (json!({"roots":{}}), json!({"roots":{}}), None),
        (
            json!({"extensions":{"a.b/x":{},"a.b/y":{}}}),
            json!({"extensions":{"a.b/x":{"v":1}}}),
            Some(json!({"extensions":{"a.b/y":{}}})),
        ),
        (
            json!({"elicitation":{"form":{}},"roots":{}}),
            json!({"roots":{}}),
            Some(json!({"elicitation":{"form":{}}})),
        ),
        (json!({}), json!({}), None),
    ];
    for (required, declared, expected) in cases {
        let got = caps(required.clone())
            .missing_from(&caps(declared.clone()))
            .map(|m| serde_json::to_value(m).unwrap());
        assert_eq!(got, expected, "required {required} declared {declared}");
    }
}

#[test]
fn unknown_capability_members_survive() {
    let v = json!({"roots":{"listChanged":true},"elicitation":{"form":{"x":1},"future":{}},"newThing":{"a":[1]}});
    let c = caps(v.clone());
    assert_eq!(serde_json::to_value(&c).unwrap(), v);
    let s: ServerCapabilities =
        serde_json::from_value(json!({"tools":{"listChanged":false},"custom":1})).unwrap();
    assert_eq!(s.tools.as_ref().unwrap().list_changed, Some(false));
    assert_eq!(
        serde_json::to_value(&s).unwrap(),
        json!({"tools":{"listChanged":false},"custom":1})
    );
}

#[test]
fn result_meta_and_implementation_round_trip() {
    let v = json!({"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1","websiteUrl":"https://x.test",
        "icons":[{"src":"https://x.test/i.png","sizes":["48x48","any"],"theme":"dark","mimeType":"image/png"}]},"other":1});
    let m: ResultMeta = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(
        m.server_info.as_ref().unwrap().icons.as_ref().unwrap()[0].theme,
        Some(IconTheme::Dark)
    );
    assert_eq!(serde_json::to_value(&m).unwrap(), v);
    assert!(serde_json::from_value::<Icon>(json!({"src":"x","theme":"sepia"})).is_err());
}

#[test]
fn logging_levels_are_ordered_by_severity() {
    assert!(
        LoggingLevel::Debug < LoggingLevel::Info && LoggingLevel::Alert < LoggingLevel::Emergency
    );
    assert_eq!(
        serde_json::to_value(LoggingLevel::Warning).unwrap(),
        json!("warning")
    );
}
