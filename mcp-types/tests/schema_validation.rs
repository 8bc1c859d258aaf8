//! Values built with our constructors validate against the official
//! `schema.json` (`#/$defs/<Type>`), when `MCP_SPEC_DIR` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::PathBuf;

use mcp_types::*;
use serde::Serialize;
use serde_json::{Number, Value, json};

fn load_schema() -> Option<Value> {
    let dir = PathBuf::from(std::env::var_os("MCP_SPEC_DIR")?);
    let text = std::fs::read_to_string(dir.join("schema.json")).unwrap();
    Some(serde_json::from_str(&text).unwrap())
}

/// Validates `instance` against `#/$defs/<def>` of the root schema. Returns the
/// error messages (empty when valid).
fn errors_for(root: &Value, def: &str, instance: &Value) -> Vec<String> {
    compile(root, def)
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

/// A validator for `#/$defs/<def>`: the whole root document plus a root `$ref`,
/// so every internal `$ref` resolves.
fn compile(root: &Value, def: &str) -> jsonschema::Validator {
    assert!(
        root["$defs"].get(def).is_some(),
        "schema.json has no $defs/{def}"
    );
    let mut schema = root.clone();
    schema
        .as_object_mut()
        .unwrap()
        .insert("$ref".into(), json!(format!("#/$defs/{def}")));
    jsonschema::validator_for(&schema).unwrap()
}

fn v<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

fn obj(v: Value) -> JsonObject {
    v.as_object().unwrap().clone()
}

fn server_info() -> Implementation {
    let mut i = Implementation::new("notes", "0.1.0");
    i.title = Some("Notes".into());
    i.icons = Some(vec![Icon::new("https://example.com/icon.png")]);
    i
}

fn request_meta() -> RequestMeta {
    let caps = ClientCapabilities::none()
        .with_elicitation(ElicitationCapability::form_and_url())
        .with_roots();
    let mut m = RequestMeta::new(LATEST_PROTOCOL_VERSION, caps);
    m.client_info = Some(Implementation::new("client", "1"));
    m.log_level = Some(LoggingLevel::Warning);
    m.progress_token = Some(ProgressToken::String("p1".into()));
    m
}

fn every_form_field() -> RequestedSchema {
    let mut email = StringSchema::new();
    email.format = Some(StringFormat::Email);
    email.min_length = Some(3);
    email.max_length = Some(200);
    let mut age = NumberSchema::new(NumberKind::Integer);
    age.minimum = Some(Number::from(18));
    age.maximum = Some(Number::from(130));
    age.default = Some(Number::from(30));
    let mut ratio = NumberSchema::new(NumberKind::Number);
    ratio.maximum = Number::from_f64(0.5);
    let mut agree = BooleanSchema::new();
    agree.default = Some(false);
    RequestedSchema::new()
        .field("email", email, true)
        .field("age", age, false)
        .field("ratio", ratio, false)
        .field("agree", agree, true)
        .field(
            "color",
            UntitledSingleSelectEnumSchema {
                kind: StringType,
                title: Some("Colour".into()),
                description: None,
                values: vec!["red".into(), "green".into()],
                default: Some("red".into()),
                extra: JsonObject::new(),
            },
            false,
        )
        .field(
            "size",
            TitledSingleSelectEnumSchema {
                kind: StringType,
                title: None,
                description: None,
                one_of: vec![EnumOption::new("s", "Small"), EnumOption::new("l", "Large")],
                default: None,
                extra: JsonObject::new(),
            },
            false,
        )
        .field(
            "tags",
            UntitledMultiSelectEnumSchema {
                kind: ArrayType,
                title: None,
                description: None,
                min_items: Some(1),
                max_items: Some(2),
                items: UntitledEnumItems {
                    kind: StringType,
                    values: vec!["a".into(), "b".into()],
                    extra: JsonObject::new(),
                },
                default: Some(vec!["a".into()]),
                extra: JsonObject::new(),
            },
            false,
        )
        .field(
            "features",
            TitledMultiSelectEnumSchema {
                kind: ArrayType,
                title: None,
                description: None,
                min_items: None,
                max_items: None,
                items: TitledEnumItems {
                    any_of: vec![EnumOption::new("x", "X ray")],
                    extra: JsonObject::new(),
                },
                default: None,
                extra: JsonObject::new(),
            },
            false,
        )
        .field(
            "legacy",
            LegacyTitledEnumSchema {
                kind: StringType,
                title: None,
                description: None,
                values: vec!["1".into(), "2".into()],
                enum_names: Some(vec!["One".into(), "Two".into()]),
                default: None,
                extra: JsonObject::new(),
            },
            false,
        )
}

fn sampling_request() -> CreateMessageRequest {
    let mut p = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("Capital of France?")],
        100,
    );
    p.model_preferences = Some(ModelPreferences {
        hints: Some(vec![ModelHint {
            name: Some("claude".into()),
            extra: JsonObject::new(),
        }]),
        cost_priority: Number::from_f64(0.3),
        speed_priority: Some(Number::from(1)),
        intelligence_priority: None,
        extra: JsonObject::new(),
    });
    p.include_context = Some(IncludeContext::None);
    p.temperature = Number::from_f64(0.7);
    p.tools = Some(vec![Tool::new("get_weather", InputSchema::empty_object())]);
    p.tool_choice = Some(ToolChoice {
        mode: Some(ToolChoiceMode::Auto),
        extra: JsonObject::new(),
    });
    CreateMessageRequest::new(p)
}

/// (def name, value) pairs produced by our constructors.
fn emitted() -> Vec<(&'static str, Value)> {
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    let meta = request_meta();

    // Envelopes.
    let call =
        CallToolRequestParams::new(meta.clone(), "add_note", Some(obj(json!({"title":"t"}))));
    out.push((
        "CallToolRequest",
        v(&JsonRpcRequest::new(1, METHOD_TOOLS_CALL, &call).unwrap()),
    ));
    let discover = DiscoverRequestParams {
        meta: meta.clone(),
        extra: JsonObject::new(),
    };
    out.push((
        "DiscoverRequest",
        v(&JsonRpcRequest::new("d-1", METHOD_SERVER_DISCOVER, &discover).unwrap()),
    ));
    let list = PaginatedRequestParams {
        meta: meta.clone(),
        cursor: Some(String::new()),
        extra: JsonObject::new(),
    };
    out.push((
        "ListToolsRequest",
        v(&JsonRpcRequest::new(2, METHOD_TOOLS_LIST, &list).unwrap()),
    ));
    out.push(("RequestMetaObject", v(&meta)));

    // Discover.
    let caps = ServerCapabilities {
        tools: Some(ToolsCapability {
            list_changed: Some(true),
            extra: JsonObject::new(),
        }),
        logging: Some(JsonObject::new()),
        ..Default::default()
    };
    let mut d = DiscoverResult::new(
        vec![LATEST_PROTOCOL_VERSION.into()],
        caps,
        60_000,
        CacheScope::Public,
    );
    d.instructions = Some("Use add_note to store notes.".into());
    d.meta = Some(ResultMeta::with_server_info(server_info()));
    out.push(("DiscoverResult", v(&d)));
    out.push((
        "DiscoverResultResponse",
        v(&JsonRpcResponse::new(RequestId::from("d-1"), &d).unwrap()),
    ));

    // Tools.
    let mut tool = Tool::new(
        "add_note",
        InputSchema::new(obj(
            json!({"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}),
        ))
        .unwrap(),
    );
    tool.title = Some("Add note".into());
    tool.description = Some("Stores a note".into());
    tool.output_schema = Some(obj(json!({"type":"array","items":{"type":"string"}})));
    tool.annotations = Some(ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        ..Default::default()
    });
    tool.icons = Some(vec![Icon::new("data:image/png;base64,AAAA")]);
    out.push(("Tool", v(&tool)));
    let mut lt = ListToolsResult::new(vec![tool], 300_000, CacheScope::Private);
    lt.next_cursor = Some("c2".into());
    out.push(("ListToolsResult", v(&lt)));
    out.push((
        "ListToolsResultResponse",
        v(&JsonRpcResponse::new(RequestId::Number(2), &lt).unwrap()),
    ));

    // Content and call results.
    let mut text = TextContent::new("hello");
    text.annotations = Some(Annotations {
        audience: Some(vec![Role::User]),
        priority: Number::from_f64(0.5),
        last_modified: None,
        extra: JsonObject::new(),
    });
    let mut link = ResourceLink::new("file:///notes/1.md", "1.md");
    link.size = Some(12);
    let blocks: Vec<ContentBlock> = vec![
        text.into(),
        ImageContent::new("iVBORw0KGgo=", "image/png").into(),
        AudioContent::new("UklGRg==", "audio/wav").into(),
        link.into(),
        EmbeddedResource::new(
            TextResourceContents {
                uri: "file:///a".into(),
                mime_type: Some("text/plain".into()),
                text: "a".into(),
                meta: None,
                extra: JsonObject::new(),
            }
            .into(),
        )
        .into(),
        EmbeddedResource::new(
            BlobResourceContents {
                uri: "file:///b".into(),
                mime_type: None,
                blob: "AAAA".into(),
                meta: None,
                extra: JsonObject::new(),
            }
            .into(),
        )
        .into(),
    ];
    for b in &blocks {
        out.push(("ContentBlock", v(b)));
    }
    let mut ok = CallToolResult::success(blocks);
    ok.structured_content = Some(json!(["x", 1]));
    ok.meta = Some(ResultMeta::with_server_info(server_info()));
    out.push(("CallToolResult", v(&ok)));
    out.push((
        "CallToolResult",
        v(&CallToolResult::error("title must not be empty")),
    ));
    out.push((
        "CallToolResultResponse",
        v(&JsonRpcResponse::new(RequestId::Number(1), &ok).unwrap()),
    ));

    // MRTR.
    let requests = InputRequests::new()
        .with(
            "form",
            ElicitRequest::form("Tell me about you", every_form_field()),
        )
        .with(
            "login",
            ElicitRequest::url("Sign in to GitHub", "https://example.com/connect?s=abc"),
        )
        .with("llm", sampling_request())
        .with("roots", ListRootsRequest::new());
    out.push(("InputRequests", v(&requests)));
    for (_, r) in requests.iter() {
        out.push(("InputRequest", v(r)));
    }
    let ir = InputRequiredResult::new(Some(requests), Some("opaque-state".into())).unwrap();
    out.push(("InputRequiredResult", v(&ir)));
    out.push((
        "InputRequiredResult",
        v(&InputRequiredResult::retry_with_state("s")),
    ));
    out.push((
        "CallToolResultResponse",
        v(&JsonRpcResponse::new(RequestId::Number(1), &ir).unwrap()),
    ));
    out.push((
        "ElicitRequestFormParams",
        v(&ElicitRequestFormParams::new("m", every_form_field())),
    ));
    out.push((
        "ElicitRequestURLParams",
        v(&ElicitRequestUrlParams::new("m", "https://example.com/x")),
    ));

    let mut content = ElicitContent::new();
    content.insert("email".into(), ElicitContentValue::String("a@b.c".into()));
    content.insert("age".into(), ElicitContentValue::Number(Number::from(30)));
    content.insert("agree".into(), ElicitContentValue::Boolean(true));
    content.insert(
        "tags".into(),
        ElicitContentValue::StringArray(vec!["a".into()]),
    );
    let accepted = ElicitResult::accept(Some(content));
    out.push(("ElicitResult", v(&accepted)));
    out.push(("ElicitResult", v(&ElicitResult::accept(None))));
    out.push(("ElicitResult", v(&ElicitResult::decline())));
    out.push(("ElicitResult", v(&ElicitResult::cancel())));
    let cm = CreateMessageResult {
        role: Role::Assistant,
        content: SamplingContent::text("Paris"),
        model: "m-1".into(),
        stop_reason: Some("endTurn".into()),
        meta: None,
        extra: JsonObject::new(),
    };
    out.push(("CreateMessageResult", v(&cm)));
    let roots = ListRootsResult {
        roots: vec![Root::new("file:///home/u/project")],
        meta: None,
        extra: JsonObject::new(),
    };
    out.push(("ListRootsResult", v(&roots)));
    let responses = InputResponses::new()
        .with("form", accepted)
        .unwrap()
        .with("llm", cm)
        .unwrap()
        .with("roots", roots)
        .unwrap();
    out.push(("InputResponses", v(&responses)));
    let mut retry = CallToolRequestParams::new(meta.clone(), "add_note", None);
    retry.input_responses = Some(responses);
    retry.request_state = Some("opaque-state".into());
    out.push(("CallToolRequestParams", v(&retry)));

    // Capabilities.
    let full = ClientCapabilities::none()
        .with_elicitation(ElicitationCapability::form_and_url())
        .with_sampling(SamplingCapability {
            tools: Some(JsonObject::new()),
            context: Some(JsonObject::new()),
            extra: JsonObject::new(),
        })
        .with_roots()
        .with_extension("io.modelcontextprotocol/ui");
    out.push(("ClientCapabilities", v(&full)));
    if let Some(m) = full.missing_from(&ClientCapabilities::none()) {
        out.push(("ClientCapabilities", v(&m)));
    }

    // Errors.
    let missing = ClientCapabilities::none()
        .with_elicitation(ElicitationCapability::url())
        .missing_from(&ClientCapabilities::none())
        .unwrap();
    let e = ErrorObject::missing_required_client_capability(&missing);
    out.push((
        "MissingRequiredClientCapabilityError",
        v(&JsonRpcErrorResponse::new(Some(RequestId::Number(1)), e)),
    ));
    let e = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "1900-01-01");
    out.push((
        "UnsupportedProtocolVersionError",
        v(&JsonRpcErrorResponse::new(Some(RequestId::Number(1)), e)),
    ));
    out.push((
        "HeaderMismatchError",
        v(&JsonRpcErrorResponse::new(
            None,
            ErrorObject::header_mismatch("Mcp-Method missing"),
        )),
    ));
    out.push(("ParseError", v(&ErrorObject::parse_error("Invalid JSON"))));
    out.push(("InvalidRequestError", v(&ErrorObject::invalid_request("x"))));
    out.push((
        "MethodNotFoundError",
        v(&ErrorObject::method_not_found("x/y")),
    ));
    out.push((
        "MethodNotFoundError",
        v(&ErrorObject::capability_not_supported(
            "Prompts not supported",
            "none",
        )),
    ));
    out.push(("InvalidParamsError", v(&ErrorObject::unknown_tool("nope"))));
    out.push((
        "InvalidParamsError",
        v(&MetaError::Missing(MetaField::ProtocolVersion).to_error_object()),
    ));
    out.push(("InternalError", v(&ErrorObject::internal_error("boom"))));
    for bad in [
        json!(null),
        json!([1]),
        json!({"jsonrpc":"2.0","id":null,"method":"m"}),
        json!({"id":1,"method":"m"}),
    ] {
        out.push(("JSONRPCErrorResponse", v(&classify(&bad).unwrap_err())));
    }
    out.push(("JSONRPCErrorResponse", v(&parse_message(b"{").unwrap_err())));

    // Notifications.
    let mut progress =
        ProgressNotificationParams::new(ProgressToken::Number(7), 50, Some(Number::from(100)));
    progress.message = Some("half way".into());
    out.push((
        "ProgressNotification",
        v(&JsonRpcNotification::new(METHOD_NOTIFICATION_PROGRESS, &progress).unwrap()),
    ));
    let cancelled = CancelledNotificationParams {
        request_id: RequestId::from("r"),
        reason: None,
        meta: None,
        extra: JsonObject::new(),
    };
    out.push((
        "CancelledNotification",
        v(&JsonRpcNotification::new(METHOD_NOTIFICATION_CANCELLED, &cancelled).unwrap()),
    ));
    let log = LoggingMessageNotificationParams {
        level: LoggingLevel::Error,
        logger: Some("db".into()),
        data: json!({"e":1}),
        meta: None,
        extra: JsonObject::new(),
    };
    out.push((
        "LoggingMessageNotification",
        v(&JsonRpcNotification::new(METHOD_NOTIFICATION_MESSAGE, &log).unwrap()),
    ));
    let lc = NotificationParams {
        meta: Some(NotificationMeta {
            subscription_id: Some(RequestId::from("listen-1")),
            extra: JsonObject::new(),
        }),
        extra: JsonObject::new(),
    };
    out.push((
        "ToolListChangedNotification",
        v(&JsonRpcNotification::new(METHOD_NOTIFICATION_TOOLS_LIST_CHANGED, &lc).unwrap()),
    ));
    out
}

#[test]
fn constructor_outputs_validate_against_official_schema() {
    let Some(root) = load_schema() else {
        println!("MCP_SPEC_DIR not set: schema validation test skipped");
        return;
    };
    let values = emitted();
    let mut failures = Vec::new();
    // Compile each $defs validator once: building one is far costlier than validating.
    let mut validators = std::collections::HashMap::new();
    for (def, value) in &values {
        let validator = validators
            .entry(*def)
            .or_insert_with(|| compile(&root, def));
        let errs: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        if !errs.is_empty() {
            failures.push(format!("{def}: {value}\n    {}", errs.join("\n    ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} values failed:\n{}",
        failures.len(),
        values.len(),
        failures.join("\n")
    );
    println!("{} constructed values validated", values.len());
}

/// Guards against a validator that accepts everything (e.g. unresolved `$ref`s).
#[test]
fn validator_really_rejects_bad_shapes() {
    let Some(root) = load_schema() else {
        println!("MCP_SPEC_DIR not set: schema validation test skipped");
        return;
    };
    assert!(
        !errors_for(
            &root,
            "Tool",
            &json!({"name":"x","inputSchema":{"type":"array"}})
        )
        .is_empty()
    );
    assert!(
        !errors_for(
            &root,
            "JSONRPCErrorResponse",
            &json!({"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}})
        )
        .is_empty()
    );
    assert!(
        !errors_for(
            &root,
            "UnsupportedProtocolVersionError",
            &json!({"jsonrpc":"2.0","error":{"code":-32022,"message":"m","data":{"supported":[]}}})
        )
        .is_empty()
    );
    // Nested $ref resolution: a bad content block deep inside a result.
    assert!(
        !errors_for(
            &root,
            "CallToolResult",
            &json!({"resultType":"complete","content":[{"type":"text"}]})
        )
        .is_empty()
    );
    // The documented schema.ts/schema.json conflict: schema.json only allows integer
    // numbers in ElicitResult content; we accept any number (schema.ts) on input.
    let frac = json!({"action":"accept","content":{"x":1.5}});
    assert!(!errors_for(&root, "ElicitResult", &frac).is_empty());
    assert!(serde_json::from_value::<ElicitResult>(frac).is_ok());
}
