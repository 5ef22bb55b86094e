//! The Redis registry seen through the worker's [`RunDirectory`] seam.

use evalfleet_contract::runs::{RunDirectory, RunStatus};
use evalfleet_contract::store::StoreError;
use evalfleet_suites::spec::RunSpec;

use crate::redis::RedisStore;

impl RunDirectory for RedisStore {
    async fn spec(&self, run_id: &str) -> Result<Option<RunSpec>, StoreError> {
        match RedisStore::spec(self, run_id)
            .await
            .map_err(StoreError::from)?
        {
            None => Ok(None),
            Some(json) => serde_json::from_str(&json).map(Some).map_err(|e| {
                StoreError::Backend(format!("run '{run_id}' has an unreadable spec: {e}"))
            }),
        }
    }

    async fn state(&self, run_id: &str) -> Result<Option<RunStatus>, StoreError> {
        let meta = self.run(run_id).await.map_err(StoreError::from)?;
        Ok(meta.map(|m| m.status))
    }

    async fn keep_failed_message(
        &self,
        run_id: &str,
        index: u64,
        message_json: &str,
    ) -> Result<(), StoreError> {
        RedisStore::keep_failed_message(self, run_id, index, message_json)
            .await
            .map_err(StoreError::from)
    }
}
