//! `#[derive(ElicitForm)]` / `#[derive(ElicitChoice)]`: schema snapshots, spec conformance of
//! every generated schema, and server-side re-validation of submitted content.

use mcp_runtime::form::{ElicitForm, FormProblem};
use mcp_runtime::{ElicitChoice, ElicitForm};
use mcp_types::{JsonObject, PrimitiveSchemaDefinition, RequestedSchema};
use proptest::prelude::*;
use serde_json::{Value, json};

mod support;

#[derive(Debug, ElicitForm)]
struct DeleteChoice {
    /// Which note to delete
    #[form(title = "Note", choices)]
    note_id: String,
    /// Yes, delete it
    confirm: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, ElicitChoice)]
enum Color {
    #[form(title = "Red")]
    Red,
    #[form(value = "green", title = "Green")]
    Green,
    Blue,
}

#[derive(Debug, Clone, Copy, PartialEq, ElicitChoice)]
#[form(rename_all = "snake_case")]
enum Topic {
    RustLang,
    Databases,
    Networking,
}

#[derive(Debug, ElicitForm)]
#[form(rename_all = "camelCase")]
struct Profile {
    /// Your full name
    #[form(title = "Name", min_length = 2, max_length = 20)]
    full_name: String,
    #[form(title = "Email", format = "email")]
    email_address: String,
    #[form(format = "date", description = "Birthday (YYYY-MM-DD)")]
    birthday: Option<String>,
    #[form(format = "uri")]
    homepage: Option<String>,
    #[form(format = "date-time")]
    meeting_at: Option<String>,
    /// Age in years
    #[form(minimum = 13, maximum = 130)]
    age: u8,
    #[form(minimum = -1.5, maximum = 1.5, default = 0)]
    score: f64,
    offset: i16,
    favorite_color: Color,
    #[form(min_items = 1, max_items = 2)]
    topics: Vec<Topic>,
    #[form(default = true)]
    newsletter: bool,
    #[form(choices, max_items = 3)]
    labels: Option<Vec<String>>,
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

fn delete_choices() -> DeleteChoiceChoices {
    DeleteChoice::choices().note_id([
        ("n-2".to_owned(), "Groceries".to_owned()),
        ("n-1".to_owned(), "Ideas".to_owned()),
    ])
}

fn profile_choices() -> ProfileChoices {
    Profile::choices().labels(["work", "home", "later"])
}

fn valid_profile() -> Value {
    json!({
        "fullName": "Ada Lovelace",
        "emailAddress": "ada@example.org",
        "birthday": "1815-12-10",
        "homepage": "https://example.org/ada",
        "meetingAt": "2026-07-28T10:00:00Z",
        "age": 36,
        "score": 1.25,
        "offset": -300,
        "favoriteColor": "green",
        "topics": ["rust_lang", "databases"],
        "newsletter": false,
        "labels": ["work"]
    })
}

#[test]
fn delete_choice_schema_snapshot() {
    support::assert_snapshot(
        "form_delete_choice.json",
        &DeleteChoice::requested_schema(&delete_choices()),
    );
}

#[test]
fn profile_schema_snapshot() {
    support::assert_snapshot(
        "form_profile.json",
        &Profile::requested_schema(&profile_choices()),
    );
}

#[test]
fn schemas_are_byte_identical_when_regenerated() {
    let a = serde_json::to_vec(&Profile::requested_schema(&profile_choices())).unwrap();
    let b = serde_json::to_vec(&Profile::requested_schema(&profile_choices())).unwrap();
    assert_eq!(a, b);
}

fn all_schemas() -> Vec<RequestedSchema> {
    vec![
        DeleteChoice::requested_schema(&delete_choices()),
        DeleteChoice::requested_schema(&DeleteChoice::choices().note_id(["a", "b"])),
        Profile::requested_schema(&profile_choices()),
        Profile::requested_schema(&Profile::choices()),
    ]
}

#[test]
fn every_schema_decodes_as_primitive_definitions() {
    for schema in all_schemas() {
        let wire = serde_json::to_value(&schema).unwrap();
        let back: RequestedSchema = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(back, schema);
        for (name, def) in wire["properties"].as_object().unwrap() {
            let d: PrimitiveSchemaDefinition =
                serde_json::from_value(def.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(serde_json::to_value(&d).unwrap(), *def, "{name}");
        }
    }
}

#[test]
fn every_schema_validates_against_the_official_spec_schema() {
    let Some(validator) = support::spec_validator("ElicitRequestFormParams") else {
        println!("skip: MCP_SPEC_DIR not set; official ElicitRequestFormParams check skipped");
        return;
    };
    for schema in all_schemas() {
        let params =
            json!({"mode": "form", "message": "Please fill in", "requestedSchema": schema});
        let errors: Vec<String> = validator
            .iter_errors(&params)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{params:#}");
    }
}

#[test]
fn runtime_choices_keep_order_and_titles() {
    let wire = serde_json::to_value(DeleteChoice::requested_schema(&delete_choices())).unwrap();
    assert_eq!(
        wire["properties"]["note_id"]["oneOf"],
        json!([{"const": "n-2", "title": "Groceries"}, {"const": "n-1", "title": "Ideas"}])
    );
    let untitled = DeleteChoice::choices().note_id(vec!["z".to_owned(), "a".to_owned()]);
    let wire = serde_json::to_value(DeleteChoice::requested_schema(&untitled)).unwrap();
    assert_eq!(wire["properties"]["note_id"]["enum"], json!(["z", "a"]));
    assert_eq!(wire["required"], json!(["note_id", "confirm"]));
}

#[test]
fn accepts_valid_content_and_types_it() {
    let d = DeleteChoice::from_content(
        &obj(json!({"note_id": "n-1", "confirm": true})),
        &delete_choices(),
    )
    .unwrap();
    assert_eq!(d.note_id, "n-1");
    assert!(d.confirm);

    let p = Profile::from_content(&obj(valid_profile()), &profile_choices()).unwrap();
    assert_eq!(p.full_name, "Ada Lovelace");
    assert_eq!(p.age, 36);
    assert_eq!(p.offset, -300);
    assert_eq!(p.favorite_color, Color::Green);
    assert_eq!(p.topics, vec![Topic::RustLang, Topic::Databases]);
    assert!(!p.newsletter);
    assert_eq!(p.labels, Some(vec!["work".to_owned()]));
    assert_eq!(p.birthday.as_deref(), Some("1815-12-10"));
    assert_eq!(p.email_address, "ada@example.org");
    assert_eq!(p.homepage.as_deref(), Some("https://example.org/ada"));
    assert_eq!(p.meeting_at.as_deref(), Some("2026-07-28T10:00:00Z"));
}

#[test]
fn defaults_fill_absent_fields_and_options_stay_empty() {
    let mut v = valid_profile();
    let o = v.as_object_mut().unwrap();
    for k in [
        "score",
        "newsletter",
        "birthday",
        "homepage",
        "meetingAt",
        "labels",
    ] {
        o.remove(k);
    }
    let p = Profile::from_content(&obj(v), &profile_choices()).unwrap();
    assert_eq!(p.score, 0.0);
    assert!(p.newsletter);
    assert_eq!(p.birthday, None);
    assert_eq!(p.labels, None);
}

#[test]
fn rejects_values_outside_runtime_choices() {
    let e = DeleteChoice::from_content(
        &obj(json!({"note_id": "n-3", "confirm": true})),
        &delete_choices(),
    )
    .unwrap_err();
    assert_eq!(e.field, "note_id");
    assert!(matches!(e.problem, FormProblem::NotAChoice { .. }));
    assert!(e.to_string().contains("\"n-1\""), "{e}");
    // No choices supplied: nothing can be accepted.
    let e = DeleteChoice::from_content(
        &obj(json!({"note_id": "n-1", "confirm": true})),
        &DeleteChoice::choices(),
    )
    .unwrap_err();
    assert!(matches!(e.problem, FormProblem::NotAChoice { .. }));
}

#[test]
fn rejects_every_constraint_violation() {
    type Case = (&'static str, Value, fn(&FormProblem) -> bool);
    let cases: Vec<Case> = vec![
        ("fullName", json!("A"), |p| {
            matches!(p, FormProblem::TooShort { .. })
        }),
        ("fullName", json!("A".repeat(21)), |p| {
            matches!(p, FormProblem::TooLong { .. })
        }),
        ("fullName", json!(42), |p| {
            matches!(p, FormProblem::WrongType { .. })
        }),
        ("emailAddress", json!("ada at example.org"), |p| {
            matches!(p, FormProblem::BadFormat { format: "email" })
        }),
        ("birthday", json!("2023-02-29"), |p| {
            matches!(p, FormProblem::BadFormat { format: "date" })
        }),
        ("homepage", json!("not a uri"), |p| {
            matches!(p, FormProblem::BadFormat { format: "uri" })
        }),
        ("meetingAt", json!("2026-07-28 10:00"), |p| {
            matches!(
                p,
                FormProblem::BadFormat {
                    format: "date-time"
                }
            )
        }),
        ("age", json!(12), |p| {
            matches!(p, FormProblem::BelowMinimum { .. })
        }),
        ("age", json!(131), |p| {
            matches!(p, FormProblem::AboveMaximum { .. })
        }),
        ("age", json!(36.5), |p| {
            matches!(p, FormProblem::NotInteger { .. })
        }),
        ("age", json!("36"), |p| {
            matches!(p, FormProblem::WrongType { .. })
        }),
        ("offset", json!(40000), |p| {
            matches!(p, FormProblem::AboveMaximum { .. })
        }),
        ("score", json!(1.51), |p| {
            matches!(p, FormProblem::AboveMaximum { .. })
        }),
        ("score", json!(-2), |p| {
            matches!(p, FormProblem::BelowMinimum { .. })
        }),
        ("favoriteColor", json!("Green"), |p| {
            matches!(p, FormProblem::NotAChoice { .. })
        }),
        ("favoriteColor", json!(true), |p| {
            matches!(p, FormProblem::WrongType { .. })
        }),
        ("topics", json!([]), |p| {
            matches!(p, FormProblem::TooFewItems { .. })
        }),
        (
            "topics",
            json!(["rust_lang", "databases", "networking"]),
            |p| matches!(p, FormProblem::TooManyItems { .. }),
        ),
        ("topics", json!(["RustLang"]), |p| {
            matches!(p, FormProblem::NotAChoice { .. })
        }),
        ("topics", json!(["databases", "databases"]), |p| {
            matches!(p, FormProblem::DuplicateItem { .. })
        }),
        ("topics", json!("databases"), |p| {
            matches!(p, FormProblem::WrongType { .. })
        }),
        ("newsletter", json!("yes"), |p| {
            matches!(p, FormProblem::WrongType { .. })
        }),
        ("labels", json!(["work", "elsewhere"]), |p| {
            matches!(p, FormProblem::NotAChoice { .. })
        }),
        ("labels", json!([1]), |p| {
            matches!(p, FormProblem::WrongType { .. })
        }),
    ];
    for (field, bad, expected) in cases {
        let mut v = valid_profile();
        v[field] = bad.clone();
        let e = Profile::from_content(&obj(v), &profile_choices())
            .err()
            .unwrap_or_else(|| panic!("{field} = {bad} was accepted"));
        assert_eq!(e.field, field, "{bad}");
        assert!(expected(&e.problem), "{field} = {bad}: {e}");
    }
    for required in [
        "fullName",
        "emailAddress",
        "age",
        "offset",
        "favoriteColor",
        "topics",
    ] {
        let mut v = valid_profile();
        v.as_object_mut().unwrap().remove(required);
        let e = Profile::from_content(&obj(v), &profile_choices()).unwrap_err();
        assert_eq!(
            (e.field.as_str(), &e.problem),
            (required, &FormProblem::Missing)
        );
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (0u8..140).prop_map(Value::from),
        "[a-z_@.:/0-9 -]{0,24}".prop_map(Value::String),
        prop_oneof![
            Just("ada@example.org"),
            Just("2024-02-29"),
            Just("https://x.y/z"),
            Just("2026-07-28T10:00:00Z"),
            Just("green"),
            Just("Red"),
            Just("work"),
            Just("rust_lang"),
            Just("databases"),
            Just("Ada Lovelace")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(Value::Array)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Arbitrary content never panics the validator, and whatever it accepts is valid against
    /// the schema it sent (checked by an independent JSON Schema validator, formats included).
    #[test]
    fn random_content_never_panics_and_accepted_content_satisfies_the_schema(
        overrides in prop::collection::vec((0usize..12, any_json(), any::<bool>()), 0..6)
    ) {
        let keys = ["fullName", "emailAddress", "birthday", "homepage", "meetingAt", "age",
                    "score", "offset", "favoriteColor", "topics", "newsletter", "labels"];
        let mut v = valid_profile();
        for (k, value, remove) in overrides {
            if remove { v.as_object_mut().unwrap().remove(keys[k]); } else { v[keys[k]] = value; }
        }
        let choices = profile_choices();
        if Profile::from_content(&obj(v.clone()), &choices).is_ok() {
            let schema = serde_json::to_value(Profile::requested_schema(&choices)).unwrap();
            let validator = support::content_validator(&schema);
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            prop_assert!(errors.is_empty(), "accepted but invalid: {:?}\n{}", errors, v);
        }
    }
}
