//! Internal macros.

/// Declares a unit struct that serializes as one fixed JSON string and refuses any
/// other value on deserialization. Used for `"jsonrpc": "2.0"`, `"type": "text"`,
/// `"method": "elicitation/create"` and similar spec `const` members, so a typed
/// value can never carry the wrong discriminator.
macro_rules! const_str {
    ($(#[$m:meta])* $name:ident = $value:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The exact wire value.
            pub const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                if s == $value {
                    Ok($name)
                } else {
                    Err(<D::Error as ::serde::de::Error>::custom(format_args!(
                        "expected \"{}\", found \"{}\"",
                        $value, s
                    )))
                }
            }
        }
    };
}
