import HubEngine
import HubValue
import HubWire

/// What a hub tells the cluster it belongs to, and asks of it (HubCluster's
/// `ClusterNode` is the one implementation): the hub calls it on its loop for what
/// happens locally, never for what the link itself applies from other nodes
/// (``Hub/applyingClusterEvent(to:_:)``), so that nothing echoes around the cluster.
///
/// The values of subjects with history are not forwarded (they travel in the shared
/// store), nor anything of the system subjects; the completion and the deletion of a
/// subject with history are (for a deletion, once the store has removed the history).
public protocol HubClusterLink: AnyObject {
    /// `value` was published into `subject` (without history) here, before its local
    /// subscribers got it.
    func hub(_ hub: Hub, published value: Value, to subject: HubSubject)
    /// `subject` completed (`error` nil) or failed with `error` here.
    func hub(_ hub: Hub, finished subject: HubSubject, error: Value?)
    /// `subject` was deleted here: it is out of the hub, and its history, if it had one,
    /// is removed from the store (the next subject of that name is not registered yet).
    func hub(_ hub: Hub, deleted subject: HubSubject)
    /// `trigger` was activated here, for `key` if given.
    func hub(_ hub: Hub, activated trigger: HubTrigger, key: Value?)
    /// A subscription to the subject or trigger `name` began or ended here: its number of
    /// local subscribers may have changed (the count is current once the loop's present
    /// work is done).
    func hub(_ hub: Hub, interestMayHaveChangedIn name: String)
    /// The catalog of the whole cluster, given this hub's own.
    func clusterCatalog(merging local: Catalog) -> Catalog
}
