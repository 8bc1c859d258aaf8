//! The hand-written form JSON is serde's, byte for byte.

use mcp_types::{
    ArrayType, BooleanSchema, BooleanType, ElicitRequest, EnumOption, FormMode, InputRequest,
    InputRequests, LegacyTitledEnumSchema, NumberKind, NumberSchema, PrimitiveSchemaDefinition,
    RequestedSchema, StringFormat, StringSchema, StringType, TitledEnumItems,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Number, json};

use super::{write_call_tool_result, write_input_requests};
use crate::mrtr::{PendingRequest, PendingRequests};

/// Runs `test` on its own thread with a larger stack: the nested strategies' values are built in
/// deep, wide frames in debug builds.
fn on_a_large_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}

fn hand_written(requests: &InputRequests) -> String {
    written(&PendingRequests::from(requests.clone()))
}

fn written(requests: &PendingRequests) -> String {
    let mut buf = Vec::new();
    write_input_requests(&mut buf, requests).unwrap();
    String::from_utf8(buf).unwrap()
}

/// `request` as the runtime registers it: a plain form (what a derived form asks) with its
/// schema written as JSON when `as_written`, anything else typed.
fn pending(request: InputRequest, as_written: bool) -> PendingRequest {
    match request {
        InputRequest::Elicit(ElicitRequest {
            params: mcp_types::ElicitRequestParams::Form(form),
            ..
        }) if as_written && form.mode.is_some() && form.extra.is_empty() => PendingRequest::Form {
            schema: serde_json::to_vec(&form.requested_schema).unwrap(),
            message: form.message,
        },
        other => PendingRequest::Typed(Box::new(other)),
    }
}

fn assert_same(requests: &InputRequests) {
    let serde = serde_json::to_string(requests).unwrap();
    assert_eq!(hand_written(requests), serde);
}

/// Any text, quotes, backslashes, control characters and non-ASCII included.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        "[a-z \"\\\\\n\t\u{1}\u{7f}é☃]{0,12}",
        Just(String::new()),
    ]
    .boxed()
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    option::of(text())
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    vec(text(), 0..4)
}

fn options() -> impl Strategy<Value = Vec<EnumOption>> {
    vec(
        (text(), text()).prop_map(|(v, t)| EnumOption::new(v, t)),
        0..4,
    )
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
    ]
}

fn format() -> impl Strategy<Value = Option<StringFormat>> {
    option::of(prop_oneof![
        Just(StringFormat::Email),
        Just(StringFormat::Uri),
        Just(StringFormat::Date),
        Just(StringFormat::DateTime),
    ])
}

/// Extension members, mostly none (a non-empty one takes the serde path).
fn extra() -> impl Strategy<Value = mcp_types::JsonObject> {
    prop_oneof![
        8 => Just(mcp_types::JsonObject::new()),
        1 => text().prop_map(|k| {
            let mut m = mcp_types::JsonObject::new();
            m.insert(k, json!({"x": [1, "y"]}));
            m
        }),
    ]
}

fn definition() -> impl Strategy<Value = PrimitiveSchemaDefinition> {
    use PrimitiveSchemaDefinition as P;
    let head = || (opt_text(), opt_text(), extra());
    prop_oneof![
        (
            head(),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            format(),
            opt_text()
        )
            .prop_map(|((title, description, extra), min, max, format, default)| {
                P::String(StringSchema {
                    kind: StringType,
                    title,
                    description,
                    min_length: min,
                    max_length: max,
                    format,
                    default,
                    extra,
                })
            }),
        (
            head(),
            any::<bool>(),
            option::of(number()),
            option::of(number()),
            option::of(number())
        )
            .prop_map(
                |((title, description, extra), int, minimum, maximum, default)| {
                    P::Number(NumberSchema {
                        kind: if int {
                            NumberKind::Integer
                        } else {
                            NumberKind::Number
                        },
                        title,
                        description,
                        minimum,
                        maximum,
                        default,
                        extra,
                    })
                }
            ),
        (head(), option::of(any::<bool>())).prop_map(|((title, description, extra), default)| {
            P::Boolean(BooleanSchema {
                kind: BooleanType,
                title,
                description,
                default,
                extra,
            })
        }),
        (head(), texts(), opt_text()).prop_map(|((title, description, extra), values, default)| {
            P::UntitledSingleSelect(UntitledSingleSelectEnumSchema {
                kind: StringType,
                title,
                description,
                values,
                default,
                extra,
            })
        }),
        (head(), options(), opt_text()).prop_map(
            |((title, description, extra), one_of, default)| {
                P::TitledSingleSelect(TitledSingleSelectEnumSchema {
                    kind: StringType,
                    title,
                    description,
                    one_of,
                    default,
                    extra,
                })
            }
        ),
        (
            head(),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            texts(),
            extra(),
            option::of(texts())
        )
            .prop_map(
                |(
                    (title, description, extra),
                    min_items,
                    max_items,
                    values,
                    items_extra,
                    default,
                )| {
                    P::UntitledMultiSelect(UntitledMultiSelectEnumSchema {
                        kind: ArrayType,
                        title,
                        description,
                        min_items,
                        max_items,
                        items: UntitledEnumItems {
                            kind: StringType,
                            values,
                            extra: items_extra,
                        },
                        default,
                        extra,
                    })
                }
            ),
        (
            head(),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            options(),
            extra(),
            option::of(texts())
        )
            .prop_map(
                |(
                    (title, description, extra),
                    min_items,
                    max_items,
                    any_of,
                    items_extra,
                    default,
                )| {
                    P::TitledMultiSelect(TitledMultiSelectEnumSchema {
                        kind: ArrayType,
                        title,
                        description,
                        min_items,
                        max_items,
                        items: TitledEnumItems {
                            any_of,
                            extra: items_extra,
                        },
                        default,
                        extra,
                    })
                }
            ),
        (head(), texts(), option::of(texts()), opt_text()).prop_map(
            |((title, description, extra), values, enum_names, default)| {
                P::LegacyTitledEnum(LegacyTitledEnumSchema {
                    kind: StringType,
                    title,
                    description,
                    values,
                    enum_names,
                    default,
                    extra,
                })
            }
        ),
    ]
}

fn schema() -> impl Strategy<Value = RequestedSchema> {
    (
        opt_text(),
        vec((text(), definition()), 0..5),
        option::of(texts()),
        extra(),
    )
        .prop_map(|(dialect, properties, required, extra)| {
            let mut schema = RequestedSchema::new();
            schema.schema = dialect;
            schema.properties = properties.into_iter().collect();
            schema.required = required;
            schema.extra = extra;
            schema
        })
}

fn request() -> impl Strategy<Value = InputRequest> {
    prop_oneof![
        6 => (text(), schema(), any::<bool>(), extra()).prop_map(|(message, schema, mode, extra)| {
            let mut request = ElicitRequest::form(message, schema);
            if let mcp_types::ElicitRequestParams::Form(form) = &mut request.params {
                form.mode = mode.then_some(FormMode);
                form.extra = extra;
            }
            InputRequest::Elicit(request)
        }),
        1 => (text(), text()).prop_map(|(m, u)| InputRequest::Elicit(ElicitRequest::url(m, u))),
    ]
}

#[test]
fn input_requests_are_written_as_serde_writes_them() {
    let run = || {
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(&vec((text(), request(), any::<bool>()), 0..4), |requests| {
                let mut registered = PendingRequests::default();
                for (key, request, as_written) in &requests {
                    registered.insert(key, pending(request.clone(), *as_written));
                }
                let typed = InputRequests(requests.into_iter().map(|(k, r, _)| (k, r)).collect());
                let serde = serde_json::to_string(&typed).unwrap();
                prop_assert_eq!(hand_written(&typed), serde.clone());
                prop_assert_eq!(written(&registered), serde.clone());
                // Typed again, the same wire (not always the same value: a legacy enum
                // without `enumNames` reads back as an untitled select).
                let retyped = registered.into_typed().unwrap();
                prop_assert_eq!(serde_json::to_string(&retyped).unwrap(), serde);
                Ok(())
            })
            .unwrap();
    };
    on_a_large_stack(run);
}

/// The benchmark's form (a titled select and a checkbox), and strings that need escaping.
#[test]
fn a_typical_form_and_escaped_strings() {
    let mut schema = RequestedSchema::new();
    schema.properties.insert(
        "note_id".into(),
        PrimitiveSchemaDefinition::TitledSingleSelect(TitledSingleSelectEnumSchema {
            kind: StringType,
            title: Some("Note".into()),
            description: Some("Which \"note\"\n\u{1}".into()),
            one_of: vec![
                EnumOption::new("note-3", "TPS report (note-3): Q2"),
                EnumOption::new("n\\14", "é ☃"),
            ],
            default: None,
            extra: mcp_types::JsonObject::new(),
        }),
    );
    schema.properties.insert(
        "confirm".into(),
        PrimitiveSchemaDefinition::Boolean(BooleanSchema {
            kind: BooleanType,
            title: None,
            description: Some("Yes, delete it".into()),
            default: Some(false),
            extra: mcp_types::JsonObject::new(),
        }),
    );
    schema.required = Some(vec!["note_id".into(), "confirm".into()]);
    let mut requests = InputRequests::new();
    requests.0.insert(
        "delete_choice".into(),
        InputRequest::Elicit(ElicitRequest::form("3 notes match \"TPS\"", schema)),
    );
    requests.0.insert(
        "open".into(),
        InputRequest::Elicit(ElicitRequest::url("go", "https://example.com/x")),
    );
    assert_same(&requests);
    assert!(hand_written(&requests).contains(r#""description":"Which \"note\"\n\u0001""#));
}

#[test]
fn no_requests_is_an_empty_object() {
    assert_eq!(hand_written(&InputRequests::new()), "{}");
}

fn content_block() -> impl Strategy<Value = mcp_types::ContentBlock> {
    use mcp_types::{Annotations, ContentBlock, ImageContent, TextContent};
    prop_oneof![
        6 => text().prop_map(ContentBlock::text),
        1 => (text(), extra()).prop_map(|(t, extra)| {
            let mut block = TextContent::new(t);
            block.extra = extra;
            block.annotations = Some(Annotations::default());
            ContentBlock::Text(block)
        }),
        1 => (text(), text()).prop_map(|(d, m)| ContentBlock::Image(ImageContent::new(d, m))),
    ]
}

#[test]
fn call_tool_results_are_written_as_serde_writes_them() {
    use mcp_types::{CallToolResult, ResultType};
    let run = || {
        let strategy = (
            vec(content_block(), 0..4),
            option::of(prop_oneof![
                Just(json!(null)),
                Just(json!({"a": [1, "b\"c"]}))
            ]),
            option::of(any::<bool>()),
            prop_oneof![
                Just(ResultType::Complete),
                text().prop_map(ResultType::Other)
            ],
            extra(),
        );
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(
                &strategy,
                |(content, structured, is_error, result_type, extra)| {
                    let mut result = CallToolResult::success(content);
                    result.structured_content = structured;
                    result.is_error = is_error;
                    result.result_type = result_type;
                    result.extra = extra;
                    let mut buf = Vec::new();
                    write_call_tool_result(&mut buf, &result).unwrap();
                    prop_assert_eq!(
                        String::from_utf8(buf).unwrap(),
                        serde_json::to_string(&result).unwrap()
                    );
                    Ok(())
                },
            )
            .unwrap();
    };
    on_a_large_stack(run);
}
