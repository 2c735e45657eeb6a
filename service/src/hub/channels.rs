//! The conversations' buffers on this instance ([`Channels`]): each
//! one's replay buffer and, while someone watches, its broadcast ring; and
//! the sweep that bounds how many of them nobody watches (the idle ones
//! past [`MAX_IDLE_CHANNELS`], or idle for [`IDLE_EVICTION`]), dooming a
//! few at a time and freeing them outside the hub's lock.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::{Sequenced, RING_CAPACITY};

/// A conversation's buffer is dropped after this long with no event and no
/// subscriber.
const IDLE_EVICTION: Duration = Duration::from_secs(600);
/// At most this many conversations nobody watches keep a buffer; past it
/// the longest idle go first, so memory stays bounded however many
/// conversations come and go (a client reconnecting to one of them gets
/// `resync`, and reloads).
pub(super) const MAX_IDLE_CHANNELS: usize = 1024;
/// How often publishing and subscribing look for buffers to drop, at
/// least.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// They also look after this many conversations were made since the last
/// look. A look dooms about as many buffers as conversations were made
/// since the one before, and the calls after it free them: counted this
/// way, the freeing comes in small, even steps however fast conversations
/// come. (A look every 250 ms at 2,200 new conversations a second doomed
/// ~550 at once, and freeing their events in the next few dozen ms slowed
/// every turn in flight: BENCHMARKS.md, round 32.)
pub(super) const SWEEP_AFTER_MADE: usize = 64;
/// Buffers dropped per publish or subscription, at most: many more than a
/// turn makes conversations, and few enough that no call takes long.
pub(super) const EVICTED_PER_CALL: usize = 4;

/// A conversation's live stream on this instance.
pub(super) struct Channel {
    /// Made for the first subscriber (its ring is allocated whole), dropped
    /// by a sweep once nobody listens: a conversation nobody watches costs
    /// only its replay buffer.
    pub(super) tx: Option<broadcast::Sender<Arc<Sequenced>>>,
    pub(super) replay: VecDeque<Arc<Sequenced>>,
    /// How many events this channel has buffered since it was made: the
    /// position of the next one (see [`subscription`]).
    pub(super) pushed: u64,
    touched: Instant,
}

impl Channel {
    fn new() -> Self {
        Self {
            tx: None,
            replay: VecDeque::new(),
            pushed: 0,
            touched: Instant::now(),
        }
    }

    /// A receiver of the ring (made for the first subscriber), at the
    /// position [`Channel::pushed`] says.
    pub(super) fn subscribe(&mut self) -> broadcast::Receiver<Arc<Sequenced>> {
        self.tx
            .get_or_insert_with(|| broadcast::channel(RING_CAPACITY).0)
            .subscribe()
    }

    pub(super) fn watched(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.receiver_count() > 0)
    }
}

/// This instance's conversations, and when they were last swept.
#[derive(Default)]
pub(super) struct Channels {
    pub(super) map: HashMap<String, Channel>,
    pub(super) swept: Option<Instant>,
    /// Conversations made since the last sweep.
    made: usize,
    /// What the last sweep chose to drop (and when each was last
    /// touched), taken out a few at a time: freeing a thousand
    /// conversations' events at once is milliseconds of work.
    pub(super) doomed: Vec<(String, Instant)>,
}

impl Channels {
    /// The channel of `session_id`, made when missing.
    pub(super) fn of(&mut self, session_id: &str) -> &mut Channel {
        // A lookup first: the common case allocates no key.
        if !self.map.contains_key(session_id) {
            self.map.insert(session_id.to_owned(), Channel::new());
            self.made += 1;
        }
        let channel = self
            .map
            .get_mut(session_id)
            .unwrap_or_else(|| unreachable!("inserted above"));
        channel.touched = Instant::now();
        channel
    }

    /// Sweeps when the last sweep is [`SWEEP_EVERY`] old or
    /// [`SWEEP_AFTER_MADE`] conversations were made since, and takes out a
    /// few of the buffers the last sweep doomed: what it takes out is the
    /// caller's to drop once the lock is released.
    pub(super) fn sweep_if_due(&mut self) -> Evicted {
        let mut evicted = Evicted::default();
        let now = Instant::now();
        if self.made >= SWEEP_AFTER_MADE || self.swept.is_none_or(|at| now - at >= SWEEP_EVERY) {
            self.swept = Some(now);
            self.made = 0;
            evicted.rings = self.sweep();
        }
        for _ in 0..EVICTED_PER_CALL {
            let Some((id, touched)) = self.doomed.pop() else {
                break;
            };
            // Not if it was watched or written to since.
            if self
                .map
                .get(&id)
                .is_some_and(|c| !c.watched() && c.touched == touched)
            {
                evicted.channels.extend(self.map.remove(&id));
            }
        }
        evicted
    }

    /// Dooms the buffers of conversations nobody watched or wrote for
    /// [`IDLE_EVICTION`], then the longest idle past [`MAX_IDLE_CHANNELS`];
    /// takes out the rings nobody listens to.
    fn sweep(&mut self) -> Vec<broadcast::Sender<Arc<Sequenced>>> {
        let mut idle: Vec<(Instant, &String)> = self
            .map
            .iter()
            .filter(|(_, c)| !c.watched())
            .map(|(id, c)| (c.touched, id))
            .collect();
        // The expired, and the oldest past the bound: the first `doomed`.
        let past_bound = idle.len().saturating_sub(MAX_IDLE_CHANNELS);
        if past_bound > 0 {
            idle.select_nth_unstable(past_bound - 1);
        }
        let (oldest, younger) = idle.split_at(past_bound);
        self.doomed = oldest
            .iter()
            .chain(
                younger
                    .iter()
                    .filter(|(at, _)| at.elapsed() >= IDLE_EVICTION),
            )
            .map(|(at, id)| ((*id).clone(), *at))
            .collect();
        self.map
            .values_mut()
            .filter(|c| !c.watched())
            .filter_map(|c| c.tx.take())
            .collect()
    }
}

/// The channels under the hub's lock, with what a sweep took out: the
/// fields drop in order, the lock first.
pub(super) struct Swept<'a> {
    pub(super) channels: std::sync::MutexGuard<'a, Channels>,
    pub(super) _evicted: Evicted,
}

impl std::ops::Deref for Swept<'_> {
    type Target = Channels;
    fn deref(&self) -> &Channels {
        &self.channels
    }
}

impl std::ops::DerefMut for Swept<'_> {
    fn deref_mut(&mut self) -> &mut Channels {
        &mut self.channels
    }
}

/// What a sweep took out. Dropping it frees the events those
/// conversations buffered, which happens after the hub's lock is
/// released: no other publisher waits for it.
#[derive(Default)]
pub(super) struct Evicted {
    channels: Vec<Channel>,
    rings: Vec<broadcast::Sender<Arc<Sequenced>>>,
}
