//! @generated placeholder until codegen runs.
