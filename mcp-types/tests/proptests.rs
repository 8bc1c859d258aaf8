//! Property tests: generated InputRequiredResult / ElicitResult /
//! ClientCapabilities values round-trip, and the classifier never panics.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use mcp_types::*;
use proptest::prelude::*;
use serde_json::{Number, Value, json};

fn key() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,8}"
}

fn small_object() -> impl Strategy<Value = JsonObject> {
    prop::collection::vec(
        (
            key(),
            prop_oneof![
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                "[ -~]{0,6}".prop_map(Value::from)
            ],
        ),
        0..3,
    )
    .prop_map(|kv| kv.into_iter().collect())
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        (-1e9f64..1e9).prop_filter_map("finite", Number::from_f64),
    ]
}

fn content_value() -> impl Strategy<Value = ElicitContentValue> {
    prop_oneof![
        "[ -~]{0,10}".prop_map(ElicitContentValue::String),
        number().prop_map(ElicitContentValue::Number),
        any::<bool>().prop_map(ElicitContentValue::Boolean),
        prop::collection::vec("[a-z]{0,5}", 0..4).prop_map(ElicitContentValue::StringArray),
    ]
}

fn elicit_result() -> impl Strategy<Value = ElicitResult> {
    (
        prop_oneof![
            Just(ElicitAction::Accept),
            Just(ElicitAction::Decline),
            Just(ElicitAction::Cancel)
        ],
        prop::option::of(prop::collection::vec((key(), content_value()), 0..5)),
        prop::option::of(small_object()),
    )
        .prop_map(|(action, content, meta)| ElicitResult {
            action,
            content: content.map(|c| c.into_iter().collect()),
            meta,
            extra: JsonObject::new(),
        })
}

fn opt_obj() -> impl Strategy<Value = Option<JsonObject>> {
    prop::option::of(small_object())
}

fn client_capabilities() -> impl Strategy<Value = ClientCapabilities> {
    (
        prop::option::of((opt_obj(), opt_obj())),
        prop::option::of((opt_obj(), opt_obj())),
        any::<bool>(),
        prop::option::of(prop::collection::vec(
            ("[a-z]{1,5}\\.[a-z]{1,5}/[a-z]{1,5}", small_object()),
            0..3,
        )),
        prop::option::of(prop::collection::vec((key(), small_object()), 0..3)),
    )
        .prop_map(|(elicitation, sampling, roots, extensions, experimental)| {
            ClientCapabilities {
                elicitation: elicitation.map(|(form, url)| ElicitationCapability {
                    form,
                    url,
                    extra: JsonObject::new(),
                }),
                sampling: sampling.map(|(context, tools)| SamplingCapability {
                    context,
                    tools,
                    extra: JsonObject::new(),
                }),
                roots: roots.then(RootsCapability::default),
                extensions: extensions.map(|v| v.into_iter().collect()),
                experimental: experimental.map(|v| v.into_iter().collect()),
                extra: JsonObject::new(),
            }
        })
}

fn primitive_schema() -> impl Strategy<Value = PrimitiveSchemaDefinition> {
    let title = prop::option::of("[A-Za-z ]{1,8}");
    let values = prop::collection::vec("[a-z]{1,4}", 1..4);
    prop_oneof![
        (
            title.clone(),
            prop::option::of(0u64..5),
            prop::option::of(prop_oneof![
                Just(StringFormat::Email),
                Just(StringFormat::Uri),
                Just(StringFormat::Date),
                Just(StringFormat::DateTime)
            ])
        )
            .prop_map(|(t, min, f)| {
                let mut s = StringSchema::new();
                s.title = t;
                s.min_length = min;
                s.format = f;
                s.into()
            }),
        (
            any::<bool>(),
            prop::option::of(number()),
            prop::option::of(number())
        )
            .prop_map(|(int, min, def)| {
                let mut n = NumberSchema::new(if int {
                    NumberKind::Integer
                } else {
                    NumberKind::Number
                });
                n.minimum = min;
                n.default = def;
                n.into()
            }),
        prop::option::of(any::<bool>()).prop_map(|d| {
            let mut b = BooleanSchema::new();
            b.default = d;
            b.into()
        }),
        values.clone().prop_map(|v| UntitledSingleSelectEnumSchema {
            kind: StringType,
            title: None,
            description: None,
            default: v.first().cloned(),
            values: v,
            extra: JsonObject::new()
        }
        .into()),
        values.clone().prop_map(|v| TitledSingleSelectEnumSchema {
            kind: StringType,
            title: None,
            description: None,
            default: None,
            one_of: v
                .iter()
                .map(|x| EnumOption::new(x.clone(), x.to_uppercase()))
                .collect(),
            extra: JsonObject::new()
        }
        .into()),
        values.clone().prop_map(|v| UntitledMultiSelectEnumSchema {
            kind: ArrayType,
            title: None,
            description: None,
            min_items: Some(0),
            max_items: None,
            default: Some(vec![]),
            items: UntitledEnumItems {
                kind: StringType,
                values: v,
                extra: JsonObject::new()
            },
            extra: JsonObject::new()
        }
        .into()),
        values.clone().prop_map(|v| TitledMultiSelectEnumSchema {
            kind: ArrayType,
            title: None,
            description: None,
            min_items: None,
            max_items: Some(2),
            default: None,
            items: TitledEnumItems {
                any_of: v
                    .iter()
                    .map(|x| EnumOption::new(x.clone(), x.clone()))
                    .collect(),
                extra: JsonObject::new()
            },
            extra: JsonObject::new()
        }
        .into()),
        values.prop_map(|v| LegacyTitledEnumSchema {
            kind: StringType,
            title: None,
            description: None,
            default: None,
            enum_names: Some(v.iter().map(|x| x.to_uppercase()).collect()),
            values: v,
            extra: JsonObject::new()
        }
        .into()),
    ]
}

fn input_request() -> impl Strategy<Value = InputRequest> {
    prop_oneof![
        (
            "[ -~]{0,12}",
            prop::collection::vec((key(), primitive_schema(), any::<bool>()), 0..4),
            any::<bool>()
        )
            .prop_map(|(msg, fields, explicit)| {
                let schema = fields
                    .into_iter()
                    .fold(RequestedSchema::new(), |s, (k, d, r)| s.field(k, d, r));
                let mut p = ElicitRequestFormParams::new(msg, schema);
                if !explicit {
                    p.mode = None;
                }
                InputRequest::Elicit(ElicitRequest {
                    method: ElicitationCreateMethod,
                    params: ElicitRequestParams::Form(p),
                })
            }),
        ("[ -~]{0,12}", "https://[a-z]{1,8}\\.test/[a-z]{0,6}")
            .prop_map(|(m, u)| ElicitRequest::url(m, u).into()),
        ("[ -~]{1,12}", 1u64..10_000).prop_map(|(text, max)| {
            CreateMessageRequest::new(CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text(text)],
                max,
            ))
            .into()
        }),
        Just(ListRootsRequest::new().into()),
    ]
}

fn input_required_result() -> impl Strategy<Value = InputRequiredResult> {
    (
        prop::option::of(prop::collection::vec((key(), input_request()), 0..4)),
        prop::option::of("[A-Za-z0-9_-]{0,20}"),
    )
        .prop_filter_map("needs requests or state", |(reqs, state)| {
            let reqs = reqs.map(|v| {
                v.into_iter()
                    .fold(InputRequests::new(), |acc, (k, r)| acc.with(k, r))
            });
            InputRequiredResult::new(reqs, state).ok()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn elicit_result_round_trips(r in elicit_result()) {
        let v = serde_json::to_value(&r).unwrap();
        let back: ElicitResult = serde_json::from_value(v.clone()).unwrap();
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), v);
    }

    #[test]
    fn client_capabilities_round_trip(c in client_capabilities()) {
        let text = serde_json::to_string(&c).unwrap();
        let back: ClientCapabilities = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back, &c);
    }

    #[test]
    fn is_empty_means_equal_to_the_default(c in client_capabilities(), extra in any::<bool>()) {
        let mut c = c;
        if extra {
            c.extra.insert("x-unknown".to_owned(), json!(true));
        }
        prop_assert_eq!(c.is_empty(), c == ClientCapabilities::default());
    }

    #[test]
    fn nothing_is_missing_when_nothing_is_required(declared in client_capabilities()) {
        let mut unknown_only = ClientCapabilities::default();
        unknown_only.extra.insert("x-unknown".to_owned(), json!({}));
        prop_assert_eq!(ClientCapabilities::default().missing_from(&declared), None);
        prop_assert_eq!(unknown_only.missing_from(&declared), None);
    }

    #[test]
    fn missing_from_is_sound(req in client_capabilities(), declared in client_capabilities()) {
        // Nothing is missing against yourself, and adding what is missing satisfies the need.
        prop_assert_eq!(req.missing_from(&req), None);
        if let Some(missing) = req.missing_from(&declared) {
            let mut merged = serde_json::to_value(&declared).unwrap();
            merge(&mut merged, &serde_json::to_value(&missing).unwrap());
            let merged: ClientCapabilities = serde_json::from_value(merged).unwrap();
            prop_assert_eq!(req.missing_from(&merged), None, "missing {:?}", missing);
        }
    }

    #[test]
    fn input_required_result_round_trips(r in input_required_result()) {
        let v = serde_json::to_value(&r).unwrap();
        prop_assert_eq!(&v["resultType"], &json!("input_required"));
        let back: InputRequiredResult = serde_json::from_value(v.clone()).unwrap();
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), v);
    }

    #[test]
    fn classifier_never_panics_and_never_emits_null_id(v in arb_json()) {
        if let Err(e) = classify(&v) {
            let out = serde_json::to_value(&e).unwrap();
            prop_assert!(out.get("id").is_none_or(|id| !id.is_null()));
            let code = out["error"]["code"].as_i64().unwrap();
            prop_assert!(code == -32600 || code == -32700);
        }
    }

    #[test]
    fn action_of_agrees_with_deserialize(v in elicit_result_like()) {
        let typed = serde_json::from_value::<ElicitResult>(v.clone()).ok().map(|r| r.action);
        prop_assert_eq!(ElicitResult::action_of(&v), typed, "value {}", v);
    }

    #[test]
    fn parse_message_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse_message(&bytes);
    }

    /// `ToolsCall::read` checks UTF-8 once and then reads text: whatever bytes a string member
    /// holds (valid UTF-8, broken sequences, control bytes), it reads exactly the messages the
    /// byte parser accepts, with the same values, and `read_str` of the same text agrees.
    #[test]
    fn a_tools_call_reads_bytes_like_the_byte_parser(
        filler in prop_oneof![
            any::<String>().prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..24),
        ],
    ) {
        let mut raw = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":""#.to_vec();
        raw.extend(filler.into_iter().filter(|b| *b != b'"' && *b != b'\\'));
        raw.extend_from_slice(br#""},"requestState":"s"}}"#);
        let tree = serde_json::from_slice::<Value>(&raw);
        match ToolsCall::read(&raw) {
            Some(call) => {
                let tree = tree.expect("read only what the byte parser accepts");
                prop_assert_eq!(call.params.arguments.as_ref(), Some(&tree["params"]["arguments"]));
                prop_assert_eq!(call.params.request_state, Some(json!("s")));
                let text = std::str::from_utf8(&raw).expect("read only UTF-8");
                prop_assert!(ToolsCall::read_str(text).is_some());
            }
            None => prop_assert!(tree.is_err(), "refused a message the byte parser reads"),
        }
    }

    /// `ToolsCall::read` remembers the last few `_meta` texts per thread: whether a text is
    /// read fresh, remembered, or was pushed out by others since, the request's `_meta` and
    /// depth are exactly what the general path reads from the parsed tree.
    #[test]
    fn a_tools_call_meta_reads_like_the_tree_whether_remembered_or_not(
        metas in prop::collection::vec(
            (prop_oneof![Just("2026-07-28".to_owned()), "[0-9a-z-]{0,12}"], client_capabilities()),
            1..8,
        ),
        order in prop::collection::vec(any::<prop::sample::Index>(), 1..24),
    ) {
        for pick in order {
            let (version, caps) = &metas[pick.index(metas.len())];
            let meta = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": caps,
            });
            let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "t", "_meta": meta}});
            let text = serde_json::to_string(&message).unwrap();
            let mut call = ToolsCall::read(text.as_bytes()).expect("a plain tools/call");
            for max in 0..8 {
                prop_assert_eq!(
                    call.exceeds_depth(max),
                    mcp_types::depth::value_depth_exceeds(&message, max),
                    "depth limit {}", max
                );
            }
            let expected = RequestMeta::from_meta_member(Some(&meta)).unwrap();
            prop_assert_eq!(call.params.take_meta().unwrap(), expected);
        }
    }
}

fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(
                    a.entry(k.clone())
                        .or_insert(Value::Object(JsonObject::new())),
                    v,
                );
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// Values shaped roughly like an `ElicitResult`: each member present or not, well-typed or not.
fn elicit_result_like() -> impl Strategy<Value = Value> {
    let action = prop_oneof![
        Just(json!("accept")),
        Just(json!("decline")),
        Just(json!("cancel")),
        Just(json!("Accept")),
        Just(json!(1)),
        Just(Value::Null),
    ];
    let content_value = prop_oneof![
        Just(json!("note-14")),
        Just(json!(3)),
        Just(json!(2.5)),
        Just(json!(true)),
        Just(json!(["a", "b"])),
        Just(json!([])),
        Just(json!(["a", 1])),
        Just(Value::Null),
        Just(json!({"x": 1})),
    ];
    let content = prop_oneof![
        prop::collection::vec(("[a-c]", content_value), 0..3)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        arb_json(),
    ];
    (
        prop::option::of(action),
        prop::option::of(content),
        prop::option::of(arb_json()),
        prop::option::of(arb_json()),
    )
        .prop_map(|(action, content, meta, extra)| {
            let mut obj = JsonObject::new();
            for (k, v) in [
                ("action", action),
                ("content", content),
                ("_meta", meta),
                ("extra", extra),
            ] {
                if let Some(v) = v {
                    obj.insert(k.to_owned(), v);
                }
            }
            Value::Object(obj)
        })
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!(1.5)),
        prop_oneof![
            Just("2.0".to_owned()),
            Just("tools/call".to_owned()),
            "[a-z]{0,4}".prop_map(String::from)
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("jsonrpc"),
                        Just("id"),
                        Just("method"),
                        Just("params"),
                        Just("result"),
                        Just("error"),
                        Just("code"),
                        Just("message")
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}
