//! The session store contract ([`protocols_testkit::sessions`]) held by the in-memory store and
//! by the record store replicas share, so the contract itself is known to pass on both kinds:
//! live objects and serialized records behind boxed futures.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use protocols_runtime::session::MemorySessionStore;
use protocols_runtime::tail::{EventStore, MemoryEventStore};
use protocols_testkit::sessions::{
    ContractStore, RecordSessionStore, SharedRecords, session_store_contract,
};

#[tokio::test]
async fn the_memory_store_keeps_the_session_store_contract() {
    session_store_contract(|limits| ContractStore {
        store: Arc::new(MemorySessionStore::new(limits)),
        outage: None,
    })
    .await;
}

#[tokio::test]
async fn the_record_store_keeps_the_session_store_contract_through_an_outage() {
    session_store_contract(|limits| {
        let shared = Arc::new(SharedRecords::default());
        let events: Arc<dyn EventStore> = Arc::new(MemoryEventStore::new(4));
        let outage = Arc::clone(&shared);
        ContractStore {
            store: Arc::new(RecordSessionStore::<()>::new(&shared, &events, limits)),
            outage: Some(Box::new(move |down| outage.set_down(down))),
        }
    })
    .await;
}
