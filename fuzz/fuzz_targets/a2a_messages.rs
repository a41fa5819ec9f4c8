//! Every generated A2A request, notification and result enum of every revision on any JSON.
//! Input: a message, `{"method": …, "params": …}` (a `"result"` beside the method is decoded as
//! that method's result). Claims: decoding never panics; whatever decodes re-encodes to JSON
//! that decodes, by the same method, to the same message (see `protocols_fuzz`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols_a2a::generated::{v0_3_0, v1_0_1};
use protocols_fuzz::{message_round_trips, method_and_result, result_round_trips};

macro_rules! check_every_revision {
    ($($revision:ident),+) => {
        fn check(data: &[u8]) {
            let result = method_and_result(data);
            $(
                message_round_trips::<$revision::ClientRequest>(data);
                message_round_trips::<$revision::ClientNotification>(data);
                message_round_trips::<$revision::AgentRequest>(data);
                message_round_trips::<$revision::AgentNotification>(data);
                if let Some((method, result)) = &result {
                    result_round_trips::<$revision::ClientResult>(method, result);
                    result_round_trips::<$revision::AgentResult>(method, result);
                }
            )+
        }
    };
}

check_every_revision!(v0_3_0, v1_0_1);

fuzz_target!(|data: &[u8]| check(data));
