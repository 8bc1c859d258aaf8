//! Exact spec shapes of the error constructors.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use mcp_types::*;
use serde_json::json;

fn j<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap()
}

#[test]
fn unsupported_version_shape() {
    let e = ErrorObject::unsupported_protocol_version(&["2026-07-28", "2025-11-25"], "1900-01-01");
    let resp = JsonRpcErrorResponse::new(Some(RequestId::Number(1)), e.clone());
    assert_eq!(
        j(&resp),
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version",
            "data":{"supported":["2026-07-28","2025-11-25"],"requested":"1900-01-01"}}})
    );
    let data = e.unsupported_version_data().unwrap();
    assert_eq!(data.requested, "1900-01-01");
    assert_eq!(data.supported.len(), 2);
}

#[test]
fn missing_capability_shapes() {
    let req = ClientCapabilities::none().with_elicitation(ElicitationCapability::form());
    let missing = req.missing_from(&ClientCapabilities::none()).unwrap();
    let e = ErrorObject::missing_required_client_capability(&missing);
    assert_eq!(
        j(&e),
        json!({"code":-32021,"message":"Server requires the elicitation capability for this request",
            "data":{"requiredCapabilities":{"elicitation":{"form":{}}}}})
    );
    assert_eq!(
        e.missing_capability_data().unwrap().required_capabilities,
        missing
    );
}

#[test]
fn other_constructors() {
    assert_eq!(
        j(&ErrorObject::header_mismatch(
            "Mcp-Name header value 'foo' does not match body value 'bar'"
        )),
        json!({"code":-32020,"message":"Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'"})
    );
    assert_eq!(
        j(&ErrorObject::unknown_tool("nope")),
        json!({"code":-32602,"message":"Unknown tool: nope"})
    );
    assert_eq!(
        j(&ErrorObject::parse_error("Invalid JSON")),
        json!({"code":-32700,"message":"Parse error: Invalid JSON"})
    );
    assert_eq!(
        j(&ErrorObject::method_not_found("foo/bar")),
        json!({"code":-32601,"message":"Method not found: foo/bar"})
    );
    assert_eq!(
        j(&ErrorObject::capability_not_supported(
            "Prompts not supported",
            "no prompts here"
        )),
        json!({"code":-32601,"message":"Prompts not supported","data":{"reason":"no prompts here"}})
    );
    assert_eq!(
        j(&ErrorObject::internal_error("boom")),
        json!({"code":-32603,"message":"boom"})
    );
    assert_eq!(
        j(&ErrorObject::invalid_request("x")),
        json!({"code":-32600,"message":"Invalid Request: x"})
    );
}

#[test]
fn retired_and_reserved_codes_cannot_be_constructed() {
    for code in [-32002, -32042, -32000, -32768, -32700, -32021, -32099] {
        assert_eq!(
            ErrorObject::application(code, "x", None),
            Err(ErrorCodeError::Reserved(code))
        );
    }
    let ok =
        ErrorObject::application(1001, "quota exceeded", Some(json!({"retryAfter": 3}))).unwrap();
    assert_eq!(
        j(&ok),
        json!({"code":1001,"message":"quota exceeded","data":{"retryAfter":3}})
    );
}

#[test]
fn codes_map_both_ways() {
    for c in [
        -32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022, -32023, -32002, 7,
    ] {
        assert_eq!(ErrorCode::from_code(c).code(), c);
    }
    assert_eq!(ErrorCode::from_code(-32023), ErrorCode::RateLimited);
    assert_eq!(ErrorCode::RateLimited.code(), -32023);
    assert_eq!(ErrorCode::from_code(-32002), ErrorCode::Other(-32002));
    let received: ErrorObject =
        serde_json::from_value(json!({"code":-32002,"message":"old","data":null})).unwrap();
    assert_eq!(received.data(), Some(&serde_json::Value::Null));
    assert_eq!(
        j(&received),
        json!({"code":-32002,"message":"old","data":null})
    );
}

#[test]
fn rate_limited_shape_and_round_trip() {
    let data = RateLimitedData::after_secs(30).with_quota(10, 60);
    let e = ErrorObject::rate_limited(&data, "at most 10 calls of `notes_delete` per 60 s");
    let resp = JsonRpcErrorResponse::new(Some(RequestId::Number(7)), e.clone());
    let wire = json!({"jsonrpc":"2.0","id":7,"error":{"code":-32023,
        "message":"Rate limited: at most 10 calls of `notes_delete` per 60 s",
        "data":{"retryAfterMs":30000,"retryAfter":30,"limit":10,"window":60}}});
    assert_eq!(j(&resp), wire);
    assert_eq!(e.code(), ErrorCode::RateLimited);
    assert_eq!(e.rate_limited_data(), Some(data.clone()));
    // Round trip through the wire form.
    let back: JsonRpcErrorResponse = serde_json::from_value(wire).unwrap();
    assert_eq!(back, resp);
    assert_eq!(back.error.rate_limited_data(), Some(data));
    assert_eq!(
        back.error.rate_limited_data().unwrap().retry_after(),
        Some(std::time::Duration::from_secs(30))
    );
}

#[test]
fn rate_limited_waits_are_whole_seconds_at_least_one() {
    let zero = RateLimitedData::after_secs(0);
    assert_eq!(
        j(&ErrorObject::rate_limited(&zero, "x")),
        json!({"code":-32023,"message":"Rate limited: x","data":{"retryAfterMs":1000,"retryAfter":1}})
    );
}

#[test]
fn rate_limited_data_reads_either_wait_preferring_milliseconds() {
    let sep: ErrorObject = serde_json::from_value(
        json!({"code":-32023,"message":"slow down","data":{"retryAfterMs":1500,"limit":5,"remaining":0}}),
    )
    .unwrap();
    let data = sep.rate_limited_data().unwrap();
    assert_eq!(
        data.retry_after(),
        Some(std::time::Duration::from_millis(1500))
    );
    assert_eq!((data.limit, data.remaining), (Some(5), Some(0)));
    let both: ErrorObject = serde_json::from_value(
        json!({"code":-32023,"message":"m","data":{"retryAfterMs":2500,"retryAfter":9}}),
    )
    .unwrap();
    assert_eq!(
        both.rate_limited_data().unwrap().retry_after(),
        Some(std::time::Duration::from_millis(2500))
    );
    let secs: ErrorObject =
        serde_json::from_value(json!({"code":-32023,"message":"m","data":{"retryAfter":4}}))
            .unwrap();
    assert_eq!(
        secs.rate_limited_data().unwrap().retry_after(),
        Some(std::time::Duration::from_secs(4))
    );
    // No wait at all, or another code: not rate-limit data.
    let none: ErrorObject =
        serde_json::from_value(json!({"code":-32023,"message":"m","data":{"limit":4}})).unwrap();
    assert_eq!(none.rate_limited_data(), None);
    let other = ErrorObject::internal_error("x").with_data(json!({"retryAfterMs": 5}));
    assert_eq!(other.rate_limited_data(), None);
}
