//! Any byte string either classifies as a client message or yields a ready error response;
//! whatever comes back serializes, and nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match mcp_types::parse_client_message(data) {
        Ok(message) => {
            let _ = serde_json::to_vec(&message);
        }
        Err(response) => {
            let bytes = serde_json::to_vec(&response).expect("error responses always serialize");
            let value: serde_json::Value =
                serde_json::from_slice(&bytes).expect("we emit valid JSON");
            // An error response never carries `"id": null`.
            assert!(value.get("id").is_none_or(|id| !id.is_null()));
        }
    }
});
