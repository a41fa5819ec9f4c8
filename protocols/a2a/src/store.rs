//! Where tasks and their push-notification configs live: the [`TaskStore`] trait and its
//! in-memory default. The store owns persistence and listing order (newest first, with an
//! opaque cursor so pages stay stable while new tasks arrive); lifecycle rules are the
//! service's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::error::A2aError;
use crate::v1::types::{Task, TaskPushNotificationConfig, TaskState};

/// What a listing filters on.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    pub updated_after: Option<chrono::DateTime<chrono::Utc>>,
}

/// One page of a listing.
#[derive(Debug, Clone, Default)]
pub struct TaskPage {
    pub tasks: Vec<Task>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<u64>,
    /// How many tasks match the filter in all.
    pub total: usize,
}

/// Persistence for tasks and push configs. Object-safe so a deployment can pick a shared
/// implementation at start-up.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task.
    fn insert(&self, task: Task) -> Result<(), A2aError>;

    fn get(&self, id: &str) -> Option<Task>;

    /// Changes a task in place, atomically; returns the changed task.
    fn update(&self, id: &str, change: &mut dyn FnMut(&mut Task)) -> Result<Task, A2aError>;

    /// Newest first; `cursor` is a page's `next_cursor`.
    fn list(&self, filter: &TaskFilter, cursor: Option<u64>, page_size: usize) -> TaskPage;

    /// Stores (or replaces, by id) a push config of an existing task.
    fn put_push_config(&self, config: TaskPushNotificationConfig) -> Result<(), A2aError>;

    fn push_configs(&self, task_id: &str) -> Vec<TaskPushNotificationConfig>;

    /// Removes a config; `false` when there was none.
    fn delete_push_config(&self, task_id: &str, config_id: &str) -> bool;
}

#[derive(Debug, Default)]
struct Tables {
    /// Insertion sequence → task id; the listing order.
    order: BTreeMap<u64, String>,
    tasks: HashMap<String, (u64, Task)>,
    push: HashMap<String, Vec<TaskPushNotificationConfig>>,
    next_sequence: u64,
}

/// The in-memory [`TaskStore`].
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    tables: Mutex<Tables>,
}

impl MemoryTaskStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, work: impl FnOnce(&mut Tables) -> R) -> Result<R, A2aError> {
        let mut tables = self.tables.lock().map_err(|_| A2aError::Internal)?;
        Ok(work(&mut tables))
    }
}

fn matches(filter: &TaskFilter, task: &Task) -> bool {
    filter
        .context_id
        .as_ref()
        .is_none_or(|context| task.context_id.as_ref() == Some(context))
        && filter.state.is_none_or(|state| task.status.state == state)
        && filter.updated_after.is_none_or(|after| {
            task.status
                .timestamp
                .is_some_and(|timestamp| timestamp > after)
        })
}

impl TaskStore for MemoryTaskStore {
    fn insert(&self, task: Task) -> Result<(), A2aError> {
        self.with(|tables| {
            let sequence = tables.next_sequence;
            tables.next_sequence += 1;
            tables.order.insert(sequence, task.id.clone());
            tables.tasks.insert(task.id.clone(), (sequence, task));
        })
    }

    fn get(&self, id: &str) -> Option<Task> {
        self.with(|tables| tables.tasks.get(id).map(|(_, task)| task.clone()))
            .ok()
            .flatten()
    }

    fn update(&self, id: &str, change: &mut dyn FnMut(&mut Task)) -> Result<Task, A2aError> {
        self.with(|tables| {
            let (_, task) = tables
                .tasks
                .get_mut(id)
                .ok_or_else(|| A2aError::TaskNotFound(id.to_owned()))?;
            change(task);
            Ok(task.clone())
        })?
    }

    fn list(&self, filter: &TaskFilter, cursor: Option<u64>, page_size: usize) -> TaskPage {
        self.with(|tables| {
            let matching: Vec<(u64, &Task)> = tables
                .order
                .iter()
                .rev()
                .filter_map(|(sequence, id)| {
                    let (_, task) = tables.tasks.get(id)?;
                    matches(filter, task).then_some((*sequence, task))
                })
                .collect();
            let total = matching.len();
            let mut after_cursor = matching
                .into_iter()
                .filter(|(sequence, _)| cursor.is_none_or(|cursor| *sequence < cursor));
            let tasks: Vec<(u64, Task)> = after_cursor
                .by_ref()
                .take(page_size)
                .map(|(sequence, task)| (sequence, task.clone()))
                .collect();
            let more = after_cursor.next().is_some();
            TaskPage {
                next_cursor: tasks.last().filter(|_| more).map(|(sequence, _)| *sequence),
                tasks: tasks.into_iter().map(|(_, task)| task).collect(),
                total,
            }
        })
        .unwrap_or_default()
    }

    fn put_push_config(&self, config: TaskPushNotificationConfig) -> Result<(), A2aError> {
        let task_id = config.task_id.clone().unwrap_or_default();
        self.with(|tables| {
            if !tables.tasks.contains_key(&task_id) {
                return Err(A2aError::TaskNotFound(task_id));
            }
            let configs = tables.push.entry(task_id).or_default();
            configs.retain(|existing| existing.id != config.id);
            configs.push(config);
            Ok(())
        })?
    }

    fn push_configs(&self, task_id: &str) -> Vec<TaskPushNotificationConfig> {
        self.with(|tables| tables.push.get(task_id).cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    fn delete_push_config(&self, task_id: &str, config_id: &str) -> bool {
        self.with(|tables| {
            let Some(configs) = tables.push.get_mut(task_id) else {
                return false;
            };
            let before = configs.len();
            configs.retain(|config| config.id.as_deref() != Some(config_id));
            configs.len() != before
        })
        .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::types::TaskStatus;

    fn task(id: &str, context: &str) -> Task {
        Task {
            artifacts: Vec::new(),
            context_id: Some(context.into()),
            history: Vec::new(),
            id: id.into(),
            metadata: serde_json::Map::new(),
            status: TaskStatus::default(),
        }
    }

    #[test]
    fn pages_walk_every_task_newest_first_without_repeats() {
        let store = MemoryTaskStore::new();
        for n in 0..5 {
            store.insert(task(&format!("t{n}"), "c")).unwrap();
        }
        let first = store.list(&TaskFilter::default(), None, 2);
        assert_eq!(first.total, 5);
        let ids = |page: &TaskPage| page.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&first), ["t4", "t3"]);
        // A task created between pages does not shift the cursor.
        store.insert(task("t5", "c")).unwrap();
        let second = store.list(&TaskFilter::default(), first.next_cursor, 2);
        assert_eq!(ids(&second), ["t2", "t1"]);
        let third = store.list(&TaskFilter::default(), second.next_cursor, 2);
        assert_eq!(ids(&third), ["t0"]);
        assert_eq!(third.next_cursor, None);
    }

    #[test]
    fn listing_filters_by_context() {
        let store = MemoryTaskStore::new();
        store.insert(task("a", "one")).unwrap();
        store.insert(task("b", "two")).unwrap();
        let filter = TaskFilter {
            context_id: Some("two".into()),
            ..TaskFilter::default()
        };
        let page = store.list(&filter, None, 10);
        assert_eq!(page.total, 1);
        assert_eq!(page.tasks[0].id, "b");
    }

    #[test]
    fn push_config_for_unknown_task_is_task_not_found() {
        let store = MemoryTaskStore::new();
        let config = TaskPushNotificationConfig {
            task_id: Some("nope".into()),
            ..TaskPushNotificationConfig::default()
        };
        assert!(matches!(
            store.put_push_config(config),
            Err(A2aError::TaskNotFound(_))
        ));
    }
}
