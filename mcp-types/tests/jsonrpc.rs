//! Envelope classification and exact error-response shapes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use mcp_types::*;
use serde_json::{Value, json};

fn err_json(r: Result<JsonRpcMessage, JsonRpcErrorResponse>) -> Value {
    match r {
        Ok(m) => panic!("expected an error response, got {m:?}"),
        Err(e) => serde_json::to_value(e).unwrap(),
    }
}

#[test]
fn request_notification_and_responses_are_classified() {
    let req =
        classify(&json!({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{}}}))
            .unwrap();
    assert!(
        matches!(&req, JsonRpcMessage::Request(r) if r.id == RequestId::Number(7) && r.method == "tools/list")
    );

    let note = classify(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}),
    )
    .unwrap();
    assert!(
        matches!(&note, JsonRpcMessage::Notification(n) if n.method == "notifications/cancelled")
    );

    let ok =
        classify(&json!({"jsonrpc":"2.0","id":"x","result":{"resultType":"complete"}})).unwrap();
    assert!(matches!(&ok, JsonRpcMessage::Response(r) if r.id == RequestId::String("x".into())));

    let err =
        classify(&json!({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error: bad"}}))
            .unwrap();
    match err {
        JsonRpcMessage::ErrorResponse(e) => {
            assert_eq!(e.id, None);
            assert_eq!(e.error.code(), ErrorCode::ParseError);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn null_id_is_invalid_and_error_omits_id() {
    let v = err_json(classify(
        &json!({"jsonrpc":"2.0","id":null,"method":"tools/list"}),
    ));
    assert_eq!(v["error"]["code"], -32600);
    assert!(
        v.as_object().unwrap().get("id").is_none(),
        "id must be omitted, not null: {v}"
    );
    assert!(v["error"]["message"].as_str().unwrap().contains("not null"));
}

#[test]
fn fractional_or_bool_ids_are_unreadable() {
    for id in [json!(1.5), json!(true), json!({"a":1}), json!([1])] {
        let v = err_json(classify(&json!({"jsonrpc":"2.0","id":id,"method":"m"})));
        assert_eq!(v["error"]["code"], -32600);
        assert!(v.get("id").is_none());
    }
}

#[test]
fn readable_id_is_echoed_on_invalid_request() {
    let v = err_json(classify(&json!({"jsonrpc":"1.0","id":"abc","method":"m"})));
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","id":"abc","error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\", got \"1.0\""}})
    );

    let v = err_json(classify(&json!({"id":3,"method":"m"})));
    assert_eq!(v["id"], 3);
    assert_eq!(
        v["error"]["message"],
        "Invalid Request: missing \"jsonrpc\": \"2.0\""
    );

    let v = err_json(classify(&json!({"jsonrpc":"2.0","id":4,"method":12})));
    assert_eq!(v["id"], 4);
    assert_eq!(
        v["error"]["message"],
        "Invalid Request: \"method\" must be a string, got a number"
    );

    let v = err_json(classify(
        &json!({"jsonrpc":"2.0","id":5,"method":"m","params":[1,2]}),
    ));
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["code"], -32600);
}

#[test]
fn batches_and_non_objects_are_invalid_requests_without_id() {
    let v = err_json(classify(&json!([{"jsonrpc":"2.0","id":1,"method":"m"}])));
    assert_eq!(v["error"]["code"], -32600);
    assert!(v["error"]["message"].as_str().unwrap().contains("batch"));
    assert!(v.get("id").is_none());
    let v = err_json(classify(&json!("hello")));
    assert_eq!(v["error"]["code"], -32600);
    assert!(v.get("id").is_none());
}

#[test]
fn missing_method_and_mixed_members_are_rejected() {
    let v = err_json(classify(&json!({"jsonrpc":"2.0","id":1})));
    assert_eq!(v["error"]["code"], -32600);
    let v = err_json(classify(
        &json!({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}),
    ));
    assert_eq!(v["error"]["code"], -32600);
    let v = err_json(classify(
        &json!({"jsonrpc":"2.0","id":1,"method":"m","result":{}}),
    ));
    assert_eq!(v["error"]["code"], -32600);
    let v = err_json(classify(&json!({"jsonrpc":"2.0","result":{}})));
    assert_eq!(v["error"]["code"], -32600);
}

#[test]
fn parse_errors_are_32700_without_id() {
    let e = parse_message(b"{\"jsonrpc\":").unwrap_err();
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v["error"]["code"], -32700);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error: Invalid JSON")
    );
    assert!(v.get("id").is_none());
    assert!(parse_message(&[0xff, 0xfe]).is_err());
}

#[test]
fn clients_may_not_post_responses() {
    let e = classify_client_message(
        &json!({"jsonrpc":"2.0","id":9,"result":{"resultType":"complete"}}),
    )
    .unwrap_err();
    assert_eq!(e.id, Some(RequestId::Number(9)));
    assert_eq!(e.error.code(), ErrorCode::InvalidRequest);
    let e = parse_client_message(br#"{"jsonrpc":"2.0","error":{"code":-1,"message":"x"}}"#)
        .unwrap_err();
    assert_eq!(e.id, None);
    assert!(matches!(
        parse_client_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        Ok(ClientMessage::Request(_))
    ));
}

#[test]
fn error_response_never_deserializes_null_id() {
    assert!(
        serde_json::from_value::<JsonRpcErrorResponse>(
            json!({"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}})
        )
        .is_err()
    );
    let e: JsonRpcErrorResponse =
        serde_json::from_value(json!({"jsonrpc":"2.0","error":{"code":1,"message":"m"}})).unwrap();
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"jsonrpc":"2.0","error":{"code":1,"message":"m"}})
    );
}

#[test]
fn typed_request_roundtrip_through_envelope() {
    let meta = RequestMeta::new(LATEST_PROTOCOL_VERSION, ClientCapabilities::none());
    let params = CallToolRequestParams::new(
        meta,
        "echo",
        Some(json!({"text":"hi"}).as_object().unwrap().clone()),
    );
    let req = JsonRpcRequest::new(1, METHOD_TOOLS_CALL, &params).unwrap();
    let wire = serde_json::to_value(&req).unwrap();
    assert_eq!(
        wire,
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hi"}}})
    );
    let back: JsonRpcMessage = serde_json::from_value(wire).unwrap();
    let JsonRpcMessage::Request(r) = back else {
        panic!("not a request")
    };
    assert_eq!(r.params_as::<CallToolRequestParams>().unwrap(), params);
    assert!(
        serde_json::from_value::<JsonRpcRequest>(json!({"jsonrpc":"2.1","id":1,"method":"m"}))
            .is_err()
    );
}
