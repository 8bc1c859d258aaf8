//! Procedural macros for MCP servers built on `mcp-runtime`. The runtime re-exports them:
//! depend on `mcp-runtime` and write `use mcp_runtime::prelude::*;`, not on this crate.
//!
//! | macro | what it generates |
//! |---|---|
//! | `#[tool]` | the function, unchanged, plus a struct of the same name implementing `ToolHandler`: a cached, deterministic descriptor (`inputSchema` from the documented parameters or the arguments struct, `outputSchema` for `Json<T>`, annotations, required capabilities, scopes, task support) and a `call` that makes each parameter and runs the function |
//! | `#[prompt]`, `#[resource]` | the same for `PromptHandler` (the prompt's arguments) and `ResourceHandler` (a fixed URI, or a URI template and its variables) |
//! | `#[derive(ElicitForm)]` | the form's `requestedSchema`, the server-side re-check of an answer, and a `<Form>Choices` builder for `#[form(choices)]` fields |
//! | `#[derive(ElicitChoice)]` | the options of a single or multi select field, from a unit-only enum |
//! | `#[args]` | the serde and schemars derives on a handler's arguments struct, through the runtime (no `serde`/`schemars` in your `Cargo.toml`), and its extractor impl |
//! | `tools![..]`, `prompts![..]`, `resources![..]` (declared by the runtime, expanded here) | a router of the listed handlers; a function listed without its attribute is a compile error |
//!
//! The macros also refuse at compile time what cannot work at run time: an ask in a mode the
//! attribute does not declare, `ctx` used without a context parameter or asked through a
//! `&RequestContext`, an undocumented argument, secret-looking or contradictory form fields.
//!
//! The reference, with compiled examples, is the guide on the front page of
//! [mcp-runtime's documentation](https://docs.rs/mcp-runtime): "Declaring a tool", "Arguments
//! and their schema", "The `#[form]` attribute reference", "Mistakes the macros catch". Its
//! "Architecture" section shows where the generated code meets the runtime.
//!
//! Generated code reaches the runtime only through `mcp_runtime::__macro_support_v1`
//! (override the crate path with `crate = "..."`). Errors carry precise spans, are all reported
//! at once, and say what to do; the macros never panic.

mod args;
mod asks;
mod catalog;
mod choice;
mod context_use;
mod form;
mod params;
mod router;
mod secret;
mod shape;
mod tool;
mod unlisted;
mod util;

use proc_macro::TokenStream;

/// Declares an MCP tool from a free `fn` or `async fn`.
///
/// The function stays callable as written; a `struct` of the same name (type namespace)
/// implementing `ToolHandler` is added next to it, ready for `tools![name]`.
///
/// Parameters, in any order:
/// - a reference is the request context: `&mut RequestContext` or `&RequestContext` (an alias too);
/// - a documented parameter (`/// doc` + `name: Type`) is one property of the `inputSchema`,
///   the doc its description, `Option<T>` not required; `serde`/`schemars` attributes on it
///   apply to the property;
/// - any other owned parameter is made by its `mcp_runtime::extract::FromRequest` impl:
///   `State<T>`, `Principal`, one arguments struct (`#[args]`, or `Args<T>` for a type that
///   derives `Deserialize` and `JsonSchema` itself), or an extractor of your own. Aliases
///   work: the trait decides, not the spelling.
///
/// An undocumented `String`, number, `bool`, `Option` or `Vec` parameter is an error asking
/// for the doc comment; two arguments types are refused by `build()`.
///
/// Attributes: `name = "..."` (default: the function name), `title = "..."`,
/// `description = "..."` (default: the doc comment), `read_only`, `destructive`, `idempotent`,
/// `open_world` (each also `= bool`), `requires(form_elicitation, url_elicitation, sampling,
/// roots)`, `optional(..)` (the same names: used only when the client declares them, so a
/// client without them is not refused; check `ctx.client_capabilities()` before asking),
/// `rename_all = "..."` (serde's rule, for documented parameters), `task` (the tasks
/// extension: `= "optional"`, the bare form's meaning, or `= "required"`), `task_start =
/// "on_call" | "after_input"` (with `task`), `crate = "path"` (default `::mcp_runtime`).
///
/// A body that calls the context's asking methods (`elicit`, `try_elicit`,
/// `elicit_with_commit`, `elicit_with_mutation`: form; `elicit_url`, `elicit_url_again`: URL;
/// `sample`, `try_sample`: sampling; `list_roots`, `try_list_roots`: roots) in method-call
/// syntax must declare that mode in `requires(..)` or `optional(..)`; otherwise the call is a
/// compile error. (Another type's method of one of these names is called by path instead:
/// `Type::sample(..)`.)
///
/// The body is also read against the context parameter (for `#[prompt]` and `#[resource]`
/// too): `ctx.method(..)` with no parameter named `ctx` is an error at the use saying to add
/// `ctx: &mut RequestContext` (or naming the context parameter under its other name), and a
/// `&RequestContext` parameter that the body asks through, or mints a correlation id
/// through, is an error at its type saying to take `&mut RequestContext`. Nothing is reported
/// when a pattern binds the name or a macro could (rustc's own error then stands).
///
/// A `#[tool]` function that no router lists (and so is never offered) is reported by rustc's
/// dead-code lint under a name that says so: "function `x_is_not_listed_in_tools` is never
/// used" (`#[prompt]`: `_in_prompts`, `#[resource]`: `_in_resources`). Like any dead-code
/// warning it is not given for a `pub` function of a library, and an `allow(dead_code)` on the
/// function silences it.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Declares an MCP prompt from a free `fn` or `async fn`.
///
/// Like `#[tool]`: the function stays callable, and a `struct` of the same name implementing
/// `PromptHandler` is added, ready for `prompts![name]`. Parameters, as for `#[tool]`: a
/// reference is the context; owned ones are made by `FromRequest` (`State<T>`, `Principal`,
/// your own extractors); and the arguments: documented `String`/`Option<String>` parameters (any other
/// type is a compile error: prompt arguments are strings), or one arguments struct whose
/// `String`/`Option<String>` fields become the prompt's arguments (checked by `build()`).
/// Doc comments → descriptions, `Option` → not required.
///
/// Attributes: `name`, `title`, `description` (default: the doc comment), `requires(...)`,
/// `optional(...)` (as for `#[tool]`, which also says which asking calls must be declared),
/// `complete(argument = provider_fn, ...)` with `fn(&str, &CompletionContext) -> Vec<String>`,
/// `crate = "path"`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    catalog::expand(catalog::Kind::Prompt, attr.into(), item.into()).into()
}

/// Declares an MCP resource (fixed URI) or resource template (URI with `{var}`s) from a free
/// `fn` or `async fn`; adds a `struct` of the same name implementing `ResourceHandler`, ready
/// for `resources![name]`.
///
/// Parameters, as for `#[tool]`: a reference is the context; owned ones are made by
/// `FromRequest` (`State<T>`, `Principal`, `ResourceUri` (the URI read), your own
/// extractors); and (templates only) one struct with a field per template variable, which a
/// fixed-URI resource refuses at compile time. Attributes: `uri = "..."` (required), `name` (default: the function
/// name), `title`, `description` (default: the doc comment), `mime_type`, `ttl_ms = N` and
/// `cache_scope = "public" | "private"` (read caching hints; default 0 and private),
/// `requires(...)`, `optional(...)` (as for `#[tool]`, which also says which asking calls must
/// be declared), `complete(variable = provider_fn, ...)`, `crate = "path"`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    catalog::expand(catalog::Kind::Resource, attr.into(), item.into()).into()
}

/// Makes a struct (or enum) the arguments of a `#[tool]`, `#[prompt]` or `#[resource]`
/// function: its schema is the `inputSchema` (a prompt's arguments, a template's variables),
/// and a parameter of its type is the call's arguments.
///
/// It adds `#[derive(Deserialize, JsonSchema)]` with `#[serde(crate = ..)]` and
/// `#[schemars(crate = ..)]` pointing at `mcp_runtime`'s own serde and schemars, so the
/// author's crate needs neither in its `Cargo.toml`; `#[serde(..)]` and `#[schemars(..)]`
/// attributes on the type and its fields work as with the derives. It also implements
/// `mcp_runtime::extract::FromRequest` for the type (as `Args<Self>`): the type is an
/// extractor by its own impl, not by a blanket impl over its derives, so a type that derives
/// them itself may be an extractor of another kind. For a type that derives them itself, or
/// comes from another crate, take `Args<T>` instead.
///
/// A type nested in the arguments (a field's enum or struct) needs the derives too; `#[args]`
/// on it gives them through the runtime as well. Put `#[args]` above other attributes.
/// Option: `crate = "path"` (default `::mcp_runtime`).
#[proc_macro_attribute]
pub fn args(attr: TokenStream, item: TokenStream) -> TokenStream {
    args::expand(attr.into(), item.into()).into()
}

/// Expands `mcp_runtime`'s `tools![..]`, `prompts![..]` and `resources![..]`, which pass it
/// their `$crate`, what they list and the list: `($crate) tool a, b::c`. Not for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __router(input: TokenStream) -> TokenStream {
    router::expand(input.into()).into()
}

/// Derives `ElicitForm` for a struct of flat named fields (see `mcp_runtime::form`, and the
/// guide at the `mcp_runtime` crate root).
///
/// Each field is one form input: `String` (text), an integer type (`integer` with the type's
/// range as `minimum`/`maximum`), `f32`/`f64` (`number`), `bool` (`boolean`), a
/// `#[derive(ElicitChoice)]` enum (single select), `Vec<E>` of one (multi select), or
/// `String`/`Vec<String>` with `#[form(choices)]` (options given at run time). `Option<T>`
/// makes a field optional; the doc comment is its description. Every answer is re-checked on
/// the server against the form that was sent.
///
/// | Attribute | Applies to | Schema keyword emitted | Server-side check added |
/// |---|---|---|---|
/// | `title = ".."` | any field | `title` | none (the label; also names the field when an answer is re-asked) |
/// | `description = ".."` (default: doc comment) | any field | `description` | none |
/// | `rename = ".."` | any field | the property key | the answer is read under that key |
/// | `format = "email"` / `"uri"` / `"date"` / `"date-time"` | `String` (free text) | `format` | the value must parse as that format |
/// | `min_length = N` | `String` (free text) | `minLength` | at least N characters |
/// | `max_length = N` | `String` (free text) | `maxLength` | at most N characters |
/// | `minimum = x` | integers, `f32`, `f64` | `minimum` | at least x (integers: also within the type) |
/// | `maximum = x` | integers, `f32`, `f64` | `maximum` | at most x (integers: also within the type) |
/// | `min_items = N` | `Vec<E>`, `Vec<String>` + `choices` | `minItems` | at least N selected |
/// | `max_items = N` | `Vec<E>`, `Vec<String>` + `choices` | `maxItems` | at most N selected |
/// | `default = literal` | `String`, numbers, `bool`, enums, `String` + `choices` | `default` | used when absent (the field is then not required); the default must pass the field's checks (see **Consistency**) |
/// | `choices` | `String` (single), `Vec<String>` (multi) | `enum` / `oneOf`, or `items.enum` / `items.anyOf`, filled at run time | the value must be one offered; no duplicates; an empty list is refused before the form is sent |
/// | `not_secret` | any field | none | none: turns off the secret-name check for this field |
///
/// **Consistency.** Attributes that no answer, or no default, could satisfy are refused at
/// compile time, at the attribute to change: `minimum` above `maximum`, `min_length` above
/// `max_length`, `min_items` above `max_items`; a `default` below `minimum` or above
/// `maximum`, or a default text shorter than `min_length` or longer than `max_length`; and,
/// from the field's type (aliases too), an integer `default` outside the type's range, a
/// `minimum` above its largest value or a `maximum` below its smallest, an enum `default`
/// that is none of its values, and a `min_items` above the enum's number of variants. A
/// default against a `format`, and against run-time `choices`, is checked when the form is
/// answered.
///
/// Container attributes: `rename_all = ".."` (`camelCase`, `snake_case`, `kebab-case`,
/// `lowercase`, `PascalCase`, `SCREAMING_SNAKE_CASE`) and `crate = "path"`.
///
/// **Secrets.** Form mode must not carry passwords, keys, tokens, one-time codes, recovery
/// phrases or bank and card data; use URL elicitation (`ctx.elicit_url`) for them. A field
/// name (and its wire name) is split into words (snake, kebab and camel case, acronyms too:
/// `MFACode` is `mfa code`) and refused at compile time when:
/// - a word is `password`, `passwd`, `passphrase`, `passcode`, `pwd`, `secret`, `credential`,
///   `apikey`, `bearer`, `pin`, `otp`, `totp`, `authcode`, `cvv`, `cvv2`, `cvc`, `iban`,
///   `ssn` or `mnemonic` (or a plural);
/// - a word ends in `password`, `passwd`, `passphrase`, `passcode` or `pwd` (`dbpasswd`);
/// - consecutive words read `pass word`, `pass phrase`, `pass code`, `api key`, `private
///   key`, `secret key`, `access key`, `signing key`, `encryption key`, `ssh key`, `recovery
///   key`, `card number` (`num`, `no`), `security code`, `social security`; a code proving
///   who asks: `auth code`, `authorization code`, `oauth code`, `mfa code`, `2fa code`, `two
///   factor code`, `one time code`, `verification code`, `verify code`, `confirmation code`,
///   `login code`, `sms code`, `access code`, `recovery code`, `backup code`; `recovery
///   phrase`, `seed phrase`, `seed words`; or bank data: `account number` (`num`, `no`, also
///   after `acct`), `routing number` (`num`, `no`), `sort code`;
/// - the name ends in a head noun: `token(s)` not after a quantity word (`max`, `min`, `num`,
///   `total`, `count`, `limit`, `remaining`, `used`, `input`, `output`, `prompt`,
///   `completion`, …), `pass` not after a ticket or round (`boarding`, `season`, `day`,
///   `first`, `last`, `final`, …), `bank account(s)`, or `session`, `auth` or `login`
///   `cookie(s)`.
///
/// So `access_token`, `otp_code`, `mfaCode`, `db_pass`, `session_cookie` and `sort_code` are
/// refused while `max_tokens`, `token_count`, `passwordless`, `passenger`, `pass_count`,
/// `boarding_pass`, `zip_code`, `country_code`, `session_id`, `session_cookie_name` and
/// `bank_account_type` pass. Mark a false positive `#[form(not_secret)]`.
#[proc_macro_derive(ElicitForm, attributes(form))]
pub fn derive_elicit_form(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    form::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `ElicitChoice` for a unit-only enum: each variant is one option
/// (`#[form(value = "...")]` renames it, `#[form(title = "...")]` labels it).
#[proc_macro_derive(ElicitChoice, attributes(form))]
pub fn derive_elicit_choice(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    choice::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
