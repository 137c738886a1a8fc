//! How sales arrive and documents leave: API tokens (`api_tokens`), webhooks in and out (`webhooks`), e-mail to the customer (`email`) and the bounded reader of a file a person pointed Timbra at (`file_input`).

pub mod api_tokens;
pub mod email;
pub mod file_input;
pub mod webhooks;
