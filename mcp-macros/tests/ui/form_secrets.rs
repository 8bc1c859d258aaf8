// Form mode refuses secret-looking field names, word by word; names that only look alike
// (`max_tokens`, `passwordless`) pass, and `#[form(not_secret)]` overrides a false positive.
use mcp_runtime::ElicitForm;

#[derive(ElicitForm)]
struct Checkout {
    pin: String,
    otp_code: String,
    cvv: String,
    card_number: String,
    access_token: String,
    // None of these is reported:
    max_tokens: u32,
    passwordless: bool,
    #[form(not_secret)]
    pin_note: bool,
}

// One-time codes, session cookies and bank data, under any spelling.
#[derive(ElicitForm)]
struct SignIn {
    mfa_code: String,
    #[form(rename = "sessionCookie")]
    cookie_value: String,
    sort_code: String,
    // None of these is reported:
    zip_code: String,
    pass_count: u32,
    session_cookie_name: String,
}

// The names that once slipped through, and lookalikes that must keep passing.
#[derive(ElicitForm)]
struct Recovery {
    auth_code: String,
    bearer: String,
    pwd: String,
    pass: String,
    passcode: String,
    verification_code: String,
    session_cookie: String,
    recovery_phrase: String,
    mnemonic: String,
    account_number: String,
    routing_number: String,
    bank_account: String,
    // None of these is reported:
    token_count: u32,
    pinned: bool,
    spinner: bool,
    secretary: String,
    key_layout: String,
    tokenizer: String,
}

fn main() {}
