//! MRTR results, keyed input decoding, elicitation and form schemas.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use mcp_types::*;
use serde_json::{Value, json};

fn rt<T: serde::de::DeserializeOwned + serde::Serialize>(v: Value) -> T {
    let t: T = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&t).unwrap(), v);
    t
}

#[test]
fn input_required_needs_requests_or_state() {
    assert_eq!(
        InputRequiredResult::new(None, None),
        Err(InputRequiredError::Empty)
    );
    assert_eq!(
        InputRequiredResult::new(Some(InputRequests::new()), None),
        Err(InputRequiredError::Empty)
    );
    assert!(InputRequiredResult::new(None, Some(String::new())).is_ok());
    assert!(
        serde_json::from_value::<InputRequiredResult>(json!({"resultType":"input_required"}))
            .is_err()
    );
    assert!(
        serde_json::from_value::<InputRequiredResult>(
            json!({"resultType":"complete","requestState":"s"})
        )
        .is_err()
    );
    let r: InputRequiredResult =
        rt(json!({"resultType":"input_required","requestState":"abc","x-extra":1}));
    assert_eq!(r.request_state(), Some("abc"));
    assert!(r.input_requests().is_none());
}

#[test]
fn maybe_input_required_dispatches_on_result_type() {
    let done: MaybeInputRequired<CallToolResult> =
        serde_json::from_value(json!({"resultType":"complete","content":[]})).unwrap();
    assert!(matches!(done, MaybeInputRequired::Complete(_)));
    let legacy: MaybeInputRequired<CallToolResult> =
        serde_json::from_value(json!({"content":[]})).unwrap();
    assert!(matches!(legacy, MaybeInputRequired::Complete(_)));
    let more: MaybeInputRequired<CallToolResult> = serde_json::from_value(
        json!({"resultType":"input_required","requestState":"s","content":[]}),
    )
    .unwrap();
    assert!(matches!(more, MaybeInputRequired::InputRequired(_)));
    assert!(
        serde_json::from_value::<MaybeInputRequired<CallToolResult>>(
            json!({"resultType":"task","content":[]})
        )
        .is_err()
    );
}

#[test]
fn input_requests_dispatch_on_method_and_preserve_stray_members() {
    let v = json!({
        "ask": {"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}},
        "where": {"method":"roots/list","id":"stray"},
        "think": {"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"maxTokens":5}}
    });
    let r: InputRequests = rt(v);
    let keys: Vec<&String> = r.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["ask", "where", "think"], "key order preserved");
    match r.get("ask").unwrap() {
        InputRequest::Elicit(ElicitRequest {
            params: ElicitRequestParams::Form(f),
            ..
        }) => assert_eq!(f.mode, None),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.get("where").unwrap().method(), "roots/list");
    assert!(serde_json::from_value::<InputRequests>(json!({"k":{"method":"ping"}})).is_err());
    assert!(
        serde_json::from_value::<InputRequest>(json!({"method":"elicitation/create"})).is_err(),
        "params required"
    );
}

#[test]
fn input_responses_decode_by_key() {
    let responses: InputResponses = rt(json!({
        "ask": {"action":"accept","content":{"n":"Ada","age":36,"ok":true,"tags":["a","b"],"ratio":0.25}},
        "think": {"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"},
        "where": {"roots":[{"uri":"file:///p","name":"p"}]},
        "junk": 5
    }));
    let ask: ElicitResult = responses.get_as("ask").unwrap().unwrap();
    let content = ask.content.unwrap();
    assert_eq!(content["n"], ElicitContentValue::String("Ada".into()));
    assert_eq!(content["age"], ElicitContentValue::Number(36.into()));
    assert_eq!(
        serde_json::to_value(&content["age"]).unwrap(),
        json!(36),
        "integer stays integer"
    );
    assert_eq!(
        content["tags"],
        ElicitContentValue::StringArray(vec!["a".into(), "b".into()])
    );
    assert_eq!(
        serde_json::to_value(&content["ratio"]).unwrap(),
        json!(0.25)
    );

    let think = responses
        .decode_for(
            "think",
            &CreateMessageRequest::new(CreateMessageRequestParams::new(vec![], 1)).into(),
        )
        .unwrap();
    assert!(matches!(think, Some(InputResponse::CreateMessage(r)) if r.model == "m"));
    let roots: ListRootsResult = responses.get_as("where").unwrap().unwrap();
    assert_eq!(roots.roots[0].uri, "file:///p");
    assert!(
        responses
            .get_as::<ElicitResult>("absent")
            .unwrap()
            .is_none()
    );
    let err = responses.get_as::<ElicitResult>("think").unwrap_err();
    assert_eq!(err.key, "think");
    assert_eq!(err.expected, "ElicitResult");
    assert!(responses.get_as::<ElicitResult>("junk").is_err());
}

#[test]
fn elicit_result_actions_and_bad_values() {
    let d: ElicitResult = rt(json!({"action":"decline"}));
    assert_eq!(d.action, ElicitAction::Decline);
    let c: ElicitResult = rt(json!({"action":"cancel","content":{}}));
    assert_eq!(c.action, ElicitAction::Cancel);
    assert!(serde_json::from_value::<ElicitResult>(json!({"action":"maybe"})).is_err());
    assert!(
        serde_json::from_value::<ElicitResult>(
            json!({"action":"accept","content":{"x":{"nested":1}}})
        )
        .is_err()
    );
    assert!(
        serde_json::from_value::<ElicitResult>(json!({"action":"accept","content":{"x":[1]}}))
            .is_err()
    );
    assert!(
        serde_json::from_value::<ElicitResult>(json!({"action":"accept","content":{"x":null}}))
            .is_err()
    );
    assert_eq!(
        serde_json::to_value(ElicitResult::accept(None)).unwrap(),
        json!({"action":"accept"})
    );
}

#[test]
fn elicit_params_mode_dispatch() {
    let url: ElicitRequestParams =
        rt(json!({"mode":"url","message":"Connect","url":"https://x.test/a"}));
    assert!(matches!(url, ElicitRequestParams::Url(_)));
    let form: ElicitRequestParams = rt(
        json!({"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}),
    );
    assert!(matches!(
        form,
        ElicitRequestParams::Form(ElicitRequestFormParams { mode: Some(_), .. })
    ));
    assert!(
        serde_json::from_value::<ElicitRequestParams>(json!({"mode":"sms","message":"m"})).is_err()
    );
    assert!(
        serde_json::from_value::<ElicitRequestParams>(json!({"mode":"url","message":"m"})).is_err(),
        "url required"
    );
    assert!(
        serde_json::from_value::<ElicitRequestParams>(
            json!({"message":"m","requestedSchema":{"type":"array","properties":{}}})
        )
        .is_err(),
        "requestedSchema root must be an object schema"
    );
    assert_eq!(
        serde_json::to_value(ElicitRequest::url("Connect", "https://x.test")).unwrap(),
        json!({"method":"elicitation/create","params":{"mode":"url","message":"Connect","url":"https://x.test"}})
    );
}

#[test]
fn primitive_schema_dispatch_order() {
    use PrimitiveSchemaDefinition as P;
    type Check = fn(&P) -> bool;
    let cases: Vec<(Value, Check)> = vec![
        (
            json!({"type":"string","format":"date-time","minLength":1}),
            |p| matches!(p, P::String(s) if s.format == Some(StringFormat::DateTime)),
        ),
        (
            json!({"type":"string","enum":["a"],"enumNames":["A"]}),
            |p| matches!(p, P::LegacyTitledEnum(_)),
        ),
        (
            json!({"type":"string","enum":["a","b"],"default":"a"}),
            |p| matches!(p, P::UntitledSingleSelect(_)),
        ),
        (
            json!({"type":"string","oneOf":[{"const":"a","title":"A"}]}),
            |p| matches!(p, P::TitledSingleSelect(_)),
        ),
        (
            json!({"type":"integer","minimum":1,"maximum":10,"default":5}),
            |p| matches!(p, P::Number(n) if n.kind == NumberKind::Integer),
        ),
        (
            json!({"type":"number","minimum":-0.5}),
            |p| matches!(p, P::Number(n) if n.kind == NumberKind::Number),
        ),
        (
            json!({"type":"boolean","default":true}),
            |p| matches!(p, P::Boolean(b) if b.default == Some(true)),
        ),
        (
            json!({"type":"array","items":{"type":"string","enum":["x"]},"minItems":1}),
            |p| matches!(p, P::UntitledMultiSelect(_)),
        ),
        (
            json!({"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]},"default":["x"]}),
            |p| matches!(p, P::TitledMultiSelect(_)),
        ),
    ];
    for (v, check) in cases {
        let p: P = rt(v.clone());
        assert!(check(&p), "{v} decoded as {p:?}");
    }
    for bad in [
        json!({"type":"object"}),
        json!({"enum":["a"]}),
        json!({"type":"string","format":"phone"}),
        json!({"type":"array","items":{"type":"string"}}),
        json!({"type":"string","oneOf":[{"const":"a"}]}),
    ] {
        assert!(
            serde_json::from_value::<P>(bad.clone()).is_err(),
            "{bad} should be rejected"
        );
    }
}

#[test]
fn number_bounds_keep_their_json_form() {
    let n: NumberSchema = rt(json!({"type":"number","minimum":18,"maximum":99.5,"default":50}));
    assert_eq!(
        serde_json::to_string(&n).unwrap(),
        r#"{"type":"number","minimum":18,"maximum":99.5,"default":50}"#
    );
}

#[test]
fn requested_schema_keeps_field_order() {
    let s = RequestedSchema::new()
        .field("zeta", StringSchema::new(), true)
        .field("alpha", BooleanSchema::new(), false)
        .field("mid", NumberSchema::new(NumberKind::Integer), true);
    let text = serde_json::to_string(&s).unwrap();
    assert_eq!(
        text,
        r#"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"integer"}},"required":["zeta","mid"]}"#
    );
    let back: RequestedSchema = serde_json::from_str(&text).unwrap();
    let names: Vec<&String> = back.properties.keys().collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
}
