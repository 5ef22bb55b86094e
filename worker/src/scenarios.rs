//! Log-analysis scenarios on the worker's side. A message names its example's scenario by
//! digest ([`ScenarioRef`]); the worker reads each digest from the run's store once, checks it
//! is the content the digest names, and attaches the one shared copy to every example that
//! names it. Examples that never left their process (the embedded `run`) carry their scenario
//! already and cost nothing here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use evalfleet_contract::store::{ResultStore, StoreError};
use evalfleet_suites::evaluate::Example;
use evalfleet_suites::loganalysis::{load_stored, Scenario};

use crate::store_retry::retry_store;

/// Why an example's scenario could not be attached.
#[derive(Debug)]
pub(crate) enum Unattached {
    /// The run has no such scenario, or not that content: the example fails with this reason.
    Missing(String),
    /// The store did not answer: the message is settled as for any store error.
    Store(StoreError),
}

/// The scenarios this process has loaded for one run, by digest.
#[derive(Default)]
pub(crate) struct Scenarios {
    loaded: Mutex<HashMap<String, Arc<Scenario>>>,
}

impl Scenarios {
    /// Gives `example` its scenario when it is a log-analysis example that came off the wire.
    pub(crate) async fn attach<S: ResultStore>(
        &self,
        store: &S,
        run_id: &str,
        example: &Example,
    ) -> Result<(), Unattached> {
        let Example::Log(e) = example else {
            return Ok(());
        };
        if e.scenario.get().is_some() {
            return Ok(());
        }
        let digest = e.scenario.digest();
        if let Some(known) = self.lookup(digest) {
            e.scenario.attach(known);
            return Ok(());
        }
        let stored = retry_store("reading a scenario", || store.scenario(run_id, digest))
            .await
            .map_err(Unattached::Store)?
            .ok_or_else(|| {
                Unattached::Missing(format!(
                    "scenario {digest} is not stored for run '{run_id}'"
                ))
            })?;
        let scenario = load_stored(digest, &stored).map_err(Unattached::Missing)?;
        if let Ok(mut loaded) = self.loaded.lock() {
            loaded.insert(digest.to_owned(), scenario.clone());
        }
        e.scenario.attach(scenario);
        Ok(())
    }

    fn lookup(&self, digest: &str) -> Option<Arc<Scenario>> {
        self.loaded.lock().ok()?.get(digest).cloned()
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_contract::store::InProcessStore;
    use evalfleet_contract::testing::block_on;
    use evalfleet_suites::loganalysis::{canonical_json, LogExample, ScenarioRef};
    use serde_json::json;

    use super::*;

    fn wire_example(original: &ScenarioRef) -> Example {
        let sent = Example::Log(LogExample {
            id: "a".into(),
            scenario: original.clone(),
            output: String::new(),
            config: None,
            model: None,
            human: Default::default(),
        });
        serde_json::from_str(&serde_json::to_string(&sent).unwrap()).unwrap()
    }

    fn scenario_of(example: &Example) -> Option<&Arc<Scenario>> {
        match example {
            Example::Log(e) => e.scenario.get(),
            _ => None,
        }
    }

    #[test]
    fn a_scenario_is_read_from_the_store_once_and_shared() {
        let (store, _events) = InProcessStore::new("r", 4, 1).unwrap();
        let scenario: Scenario = serde_json::from_value(json!({"metrics": {"errors": 3}})).unwrap();
        let original = ScenarioRef::new(Arc::new(scenario));
        let json = canonical_json(original.get().unwrap());
        block_on(store.put_scenario("r", original.digest(), &json)).unwrap();
        let scenarios = Scenarios::default();
        let (a, b) = (wire_example(&original), wire_example(&original));
        assert!(scenario_of(&a).is_none());
        block_on(scenarios.attach(&store, "r", &a)).unwrap();
        block_on(scenarios.attach(&store, "r", &b)).unwrap();
        let (sa, sb) = (scenario_of(&a).unwrap(), scenario_of(&b).unwrap());
        assert!(Arc::ptr_eq(sa, sb), "one copy per digest");
        assert_eq!(sa, original.get().unwrap());
    }

    #[test]
    fn a_scenario_missing_or_altered_in_the_store_fails_the_example() {
        let (store, _events) = InProcessStore::new("r", 4, 1).unwrap();
        let original = ScenarioRef::new(Arc::new(Scenario::default()));
        let example = wire_example(&original);
        let scenarios = Scenarios::default();
        match block_on(scenarios.attach(&store, "r", &example)) {
            Err(Unattached::Missing(reason)) => {
                assert!(reason.contains("is not stored for run 'r'"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        block_on(store.put_scenario("r", original.digest(), r#"{"metrics":{"x":1}}"#)).unwrap();
        match block_on(scenarios.attach(&store, "r", &example)) {
            Err(Unattached::Missing(reason)) => {
                assert!(reason.contains("does not match its digest"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}
