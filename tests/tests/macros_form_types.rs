//! Form field kinds are decided by traits, not by how a type is spelled: aliases of supported
//! types and a user's own type (through `FormValue` + `FormKind`) are form fields.

use mcp_runtime::form::{
    ElicitForm, FieldKind, FieldOptions, FieldValue, FormContent, FormError, FormKind, FormValue,
};
use mcp_runtime::{ElicitChoice, ElicitForm};
use serde_json::{Value, json};

type Title = String;
type Count = u8;
type MaybeTitle = Option<Title>;

#[derive(Debug, Clone, Copy, PartialEq, ElicitChoice)]
enum Size {
    Small,
    Large,
}

type Sizes = Vec<Size>;

/// A user's own field type: a percentage, carried as an integer from 0 to 100.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Percent(u8);

impl FormValue for Percent {
    fn from_value(value: FieldValue, field: &str) -> Result<Self, FormError> {
        value.into_int::<u8>(field).map(Percent)
    }
    fn to_value(&self) -> Value {
        json!(self.0)
    }
}

impl FormKind for Percent {
    fn kind(_: &FieldOptions) -> FieldKind<'static> {
        FieldKind::Integer {
            minimum: 0,
            maximum: 100,
            default: None,
        }
    }
}

#[derive(Debug, PartialEq, ElicitForm)]
struct Aliased {
    #[form(min_length = 1)]
    title: Title,
    #[form(maximum = 9)]
    count: Count,
    subtitle: MaybeTitle,
    sizes: Sizes,
    done: Percent,
}

#[derive(Debug, PartialEq, ElicitForm)]
struct Spelled {
    #[form(min_length = 1)]
    title: String,
    #[form(maximum = 9)]
    count: u8,
    subtitle: Option<String>,
    sizes: Vec<Size>,
    #[form(minimum = 0, maximum = 100)]
    done: u8,
}

#[test]
fn aliases_give_the_same_schema_as_the_types_they_name() {
    let aliased = serde_json::to_string(&Aliased::requested_schema(&())).unwrap();
    let spelled = serde_json::to_string(&Spelled::requested_schema(&())).unwrap();
    assert_eq!(aliased, spelled);
    assert_eq!(
        aliased,
        r#"{"type":"object","properties":{"title":{"type":"string","minLength":1},"count":{"type":"integer","minimum":0,"maximum":9},"subtitle":{"type":"string"},"sizes":{"type":"array","items":{"type":"string","enum":["Small","Large"]}},"done":{"type":"integer","minimum":0,"maximum":100}},"required":["title","count","sizes","done"]}"#
    );
}

#[test]
fn aliased_and_user_fields_round_trip_and_are_checked() {
    let form = Aliased {
        title: "t".into(),
        count: 3,
        subtitle: None,
        sizes: vec![Size::Large],
        done: Percent(40),
    };
    let content = form.to_content();
    assert_eq!(
        Value::Object(content.clone()),
        json!({"title": "t", "count": 3, "sizes": ["Large"], "done": 40})
    );
    assert_eq!(Aliased::from_content(&content, &()).unwrap(), form);
    let mut over = content;
    over.insert("done".into(), json!(101));
    assert!(Aliased::from_content(&over, &()).is_err());
}
