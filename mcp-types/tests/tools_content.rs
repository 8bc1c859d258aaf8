//! Tools, call results, content blocks, discover, notifications.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use mcp_types::*;
use serde_json::{Value, json};

fn rt<T: serde::de::DeserializeOwned + serde::Serialize>(v: Value) -> T {
    let t: T = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&t).unwrap(), v);
    t
}

#[test]
fn tool_input_schema_root_must_be_object() {
    assert!(
        serde_json::from_value::<Tool>(json!({"name":"t","inputSchema":{"type":"string"}}))
            .is_err()
    );
    assert!(serde_json::from_value::<Tool>(json!({"name":"t","inputSchema":{}})).is_err());
    assert!(serde_json::from_value::<Tool>(json!({"name":"t","inputSchema":null})).is_err());
    assert!(serde_json::from_value::<Tool>(json!({"name":"t"})).is_err());
    let err = InputSchema::new(
        json!({"type":["object","null"]})
            .as_object()
            .unwrap()
            .clone(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("\"type\": \"object\""));
    let t: Tool = rt(json!({
        "name":"search","title":"Search","description":"d",
        "inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}},"oneOf":[{"required":["q"]}]},
        "outputSchema":{"type":"array","items":{"type":"integer"}},
        "annotations":{"readOnlyHint":true,"openWorldHint":false,"future":1},
        "icons":[{"src":"https://x.test/i.svg"}],
        "_meta":{"com.example/k":1},
        "x-unknown":[1,2]
    }));
    assert_eq!(t.annotations.unwrap().read_only_hint, Some(true));
    assert_eq!(
        serde_json::to_value(Tool::new("n", InputSchema::empty_object())).unwrap(),
        json!({"name":"n","inputSchema":{"type":"object"}})
    );
}

#[test]
fn call_tool_result_is_error_and_structured_content() {
    let absent: CallToolResult = rt(json!({"resultType":"complete","content":[]}));
    assert_eq!(absent.is_error, None);
    assert!(!absent.is_error());
    let f: CallToolResult = rt(json!({"resultType":"complete","content":[],"isError":false}));
    assert_eq!(f.is_error, Some(false));
    let null: CallToolResult =
        rt(json!({"resultType":"complete","content":[],"structuredContent":null}));
    assert_eq!(null.structured_content, Some(Value::Null));
    let arr: CallToolResult =
        rt(json!({"resultType":"complete","content":[],"structuredContent":[1,"a",{"b":2.5}]}));
    assert!(arr.structured_content.unwrap().is_array());
    assert_eq!(
        serde_json::to_value(CallToolResult::error("bad date")).unwrap(),
        json!({"resultType":"complete","content":[{"type":"text","text":"bad date"}],"isError":true})
    );
    // Missing resultType (older server) reads as complete; we always write it back.
    let old: CallToolResult = serde_json::from_value(json!({"content":[]})).unwrap();
    assert_eq!(old.result_type, ResultType::Complete);
}

#[test]
fn result_type_preserves_unknown_values() {
    let r: EmptyResult = rt(json!({"resultType":"task","taskId":"t1"}));
    assert_eq!(r.result_type, ResultType::Other("task".into()));
    assert_eq!(
        ResultType::from("input_required"),
        ResultType::InputRequired
    );
}

#[test]
fn content_blocks_by_type() {
    let blocks: Vec<ContentBlock> = rt(json!([
        {"type":"text","text":"t","annotations":{"audience":["user","assistant"],"priority":1,"lastModified":"2025-01-01T00:00:00Z"}},
        {"type":"image","data":"AA==","mimeType":"image/png"},
        {"type":"audio","data":"AA==","mimeType":"audio/wav","_meta":{"k":1}},
        {"type":"resource_link","uri":"file:///x","name":"x","size":10,"mimeType":"text/plain"},
        {"type":"resource","resource":{"uri":"file:///x","text":"hi"}},
        {"type":"resource","resource":{"uri":"file:///y","blob":"AA==","mimeType":"application/octet-stream"}}
    ]));
    assert!(
        matches!(&blocks[0], ContentBlock::Text(t) if t.annotations.as_ref().unwrap().priority == Some(1.into()))
    );
    assert!(matches!(
        &blocks[4],
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Text(_),
            ..
        })
    ));
    assert!(matches!(
        &blocks[5],
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Blob(_),
            ..
        })
    ));
    for bad in [
        json!({"type":"video","data":"x"}),
        json!({"text":"no type"}),
        json!({"type":"image","data":"x"}),
        json!({"type":"resource","resource":{"uri":"u"}}),
        json!({"type":"resource_link","uri":"u","name":"n","size":-1}),
    ] {
        assert!(
            serde_json::from_value::<ContentBlock>(bad.clone()).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn discover_and_list_results_require_cache_hints() {
    let d: DiscoverResult = rt(
        json!({"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
        "ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}),
    );
    assert_eq!(d.cache_scope, CacheScope::Public);
    assert!(serde_json::from_value::<DiscoverResult>(json!({"resultType":"complete","supportedVersions":[],"capabilities":{},"cacheScope":"public"})).is_err());
    assert!(
        serde_json::from_value::<ListToolsResult>(
            json!({"resultType":"complete","tools":[],"ttlMs":-1,"cacheScope":"public"})
        )
        .is_err()
    );
    assert!(
        serde_json::from_value::<ListToolsResult>(
            json!({"resultType":"complete","tools":[],"ttlMs":5,"cacheScope":"shared"})
        )
        .is_err()
    );
}

#[test]
fn call_params_with_mrtr_members() {
    let p: CallToolRequestParams = rt(
        json!({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},
        "name":"book","arguments":{"n":2},"inputResponses":{"k":{"action":"decline"}},"requestState":"st"}),
    );
    assert_eq!(p.request_state.as_deref(), Some("st"));
    assert_eq!(
        p.input_responses
            .unwrap()
            .get_as::<ElicitResult>("k")
            .unwrap()
            .unwrap()
            .action,
        ElicitAction::Decline
    );
}

#[test]
fn notifications_keep_number_forms() {
    let p: ProgressNotificationParams =
        rt(json!({"progressToken":"t","progress":50,"total":100,"message":"m"}));
    assert_eq!(serde_json::to_string(&p.progress).unwrap(), "50");
    let p: ProgressNotificationParams = rt(json!({"progressToken":3,"progress":0.5}));
    assert_eq!(p.progress_token, ProgressToken::Number(3));
    let c: CancelledNotificationParams = rt(json!({"requestId":7,"reason":"user"}));
    assert_eq!(c.request_id, RequestId::Number(7));
    assert!(
        serde_json::from_value::<CancelledNotificationParams>(json!({"requestId":null})).is_err()
    );
    let l: LoggingMessageNotificationParams = rt(json!({"level":"error","data":null}));
    assert_eq!(l.data, Value::Null);
    assert!(
        serde_json::from_value::<LoggingMessageNotificationParams>(json!({"level":"error"}))
            .is_err()
    );
}

#[test]
fn sampling_content_single_or_many() {
    let m: SamplingMessage = rt(json!({"role":"assistant","content":[
        {"type":"tool_use","id":"u1","name":"w","input":{"city":"Paris"}},
        {"type":"text","text":"checking"}]}));
    assert_eq!(m.content.blocks().len(), 2);
    let m: SamplingMessage = rt(
        json!({"role":"user","content":{"type":"tool_result","toolUseId":"u1","content":[{"type":"text","text":"18C"}],"isError":false}}),
    );
    assert!(matches!(
        m.content,
        SamplingContent::Single(SamplingMessageContentBlock::ToolResult(_))
    ));
    assert!(
        serde_json::from_value::<SamplingMessage>(
            json!({"role":"user","content":{"type":"resource_link","uri":"u","name":"n"}})
        )
        .is_err()
    );
}
