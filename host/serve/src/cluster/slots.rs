//! Which pipelines this node runs: each pipeline hashes onto one of a fixed
//! set of slots, the partitions of the slots topic, and the nodes form a
//! consumer group on that topic (Kafka Streams' unit of assignment is a
//! partition too). The group protocol decides who holds what: the
//! cooperative-sticky assignor moves only the slots a joining or leaving
//! node changes, and a node silent past the session timeout loses its
//! slots to the others. No record is ever read from the topic.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, TopicPartitionList};

use super::ClusterConfig;

/// The slot of tenant `tenant`'s pipeline `name`: FNV-1a over
/// `tenant/name`, so every node computes the same one.
pub fn slot_of(tenant: &str, name: &str, slots: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tenant.bytes().chain([b'/']).chain(name.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % u64::from(slots.max(1))) as u32
}

/// The slots this node holds, kept by the group's rebalance callbacks.
pub struct Held {
    slots: Mutex<BTreeSet<u32>>,
    changed: Box<dyn Fn() + Send + Sync>,
    leaving: AtomicBool,
    /// Told when the group's consumer has closed (left the group).
    closed: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Held {
    /// Leave the group, so the slots move now rather than after the
    /// session timeout: returns once the consumer has closed (its
    /// LeaveGroup sent), or after 10 s.
    pub fn leave(&self) {
        self.leaving.store(true, Ordering::SeqCst);
        let closed = self.closed.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(closed) = closed
            && closed.recv_timeout(Duration::from_secs(10)).is_err()
        {
            tracing::warn!("cluster: the nodes' group was not left within 10 s");
        }
    }

    pub fn now(&self) -> BTreeSet<u32> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn update(&self, tpl: &TopicPartitionList, add: bool) {
        {
            let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            for e in tpl.elements() {
                let p = e.partition() as u32;
                if add {
                    s.insert(p);
                } else {
                    s.remove(&p);
                }
            }
            tracing::info!("cluster: this node holds slots {s:?}");
        }
        (self.changed)();
    }
}

struct GroupEvents(Arc<Held>);

impl ClientContext for GroupEvents {}

impl ConsumerContext for GroupEvents {
    /// Revoked (or lost) slots are given up before the group moves them:
    /// placement stops their pipelines; the checkpoint lease and the
    /// sinks' transactional ids fence a run that outlives this.
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = r {
            self.0.update(tpl, false);
        }
    }

    fn post_rebalance(&self, _: &BaseConsumer<Self>, r: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = r {
            self.0.update(tpl, true);
        }
    }
}

/// Join the nodes' group and keep polling it (which is what keeps this
/// node a member) on a thread of its own; returns the held slots.
pub fn join(
    config: &ClusterConfig,
    changed: impl Fn() + Send + Sync + 'static,
) -> Result<Arc<Held>, String> {
    let held = Arc::new(Held {
        slots: Mutex::new(BTreeSet::new()),
        changed: Box::new(changed),
        leaving: AtomicBool::new(false),
        closed: Mutex::new(None),
    });
    let (tell_closed, closed) = std::sync::mpsc::channel();
    *held.closed.lock().unwrap_or_else(|e| e.into_inner()) = Some(closed);
    let session = config.session_timeout.as_millis().to_string();
    // Members learn of a rebalance (a node joining or leaving) at their
    // next heartbeat: a sixth of the session, at least every 3 s.
    let heartbeat = (config.session_timeout / 6)
        .clamp(Duration::from_millis(500), Duration::from_secs(3))
        .as_millis()
        .to_string();
    let consumer: BaseConsumer<GroupEvents> = config
        .client()
        .set("group.id", format!("{}.nodes", config.topic_prefix))
        .set("client.id", format!("weir-node-{}", config.node))
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("session.timeout.ms", &session)
        .set("heartbeat.interval.ms", &heartbeat)
        .set("enable.auto.commit", "false")
        .create_with_context(GroupEvents(held.clone()))
        .map_err(|e| format!("joining the cluster's group: {e}"))?;
    consumer
        .subscribe(&[&config.slots_topic()])
        .map_err(|e| format!("joining the cluster's group: {e}"))?;
    let leaving = held.clone();
    std::thread::Builder::new()
        .name("weir-cluster-slots".into())
        .spawn(move || {
            while !leaving.leaving.load(Ordering::SeqCst) {
                // Nothing is ever produced to the topic; polling serves the
                // group's rebalances.
                if let Some(Err(e)) = consumer.poll(Duration::from_millis(200)) {
                    tracing::warn!("cluster: the nodes' group: {e}");
                }
            }
            // Closing leaves the group (its revocation runs first).
            drop(consumer);
            leaving
                .slots
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            let _ = tell_closed.send(());
        })
        .map_err(|e| e.to_string())?;
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_stable_and_spread() {
        assert_eq!(slot_of("acme", "p1", 12), slot_of("acme", "p1", 12));
        assert_ne!(
            slot_of("acme", "p1", 1 << 20),
            slot_of("acm", "ep1", 1 << 20)
        );
        let mut seen = BTreeSet::new();
        for i in 0..200 {
            seen.insert(slot_of("t", &format!("p{i}"), 12));
        }
        assert_eq!(seen.len(), 12);
    }
}
