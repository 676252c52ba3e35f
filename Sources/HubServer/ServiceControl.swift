/// What a ``Session`` may ask of the service it belongs to: the figures `list` reports
/// and the admin operations. ``HubService`` provides it; a session made without a
/// service (tests, embedders) has none, and its admin operations are refused.
/// Confined to the hub's event loop.
protocol ServiceControl: AnyObject {
    /// The service's open connections.
    var connectionCount: Int { get }

    /// Starts a lame-duck drain over `grace` (the configured default when `nil`);
    /// `requestedBy` says who asked, for the log. Returns false when the service is
    /// already draining or stopping.
    func drain(grace: Duration?, requestedBy: String) -> Bool

    /// Publishes the system subjects' figures now (a new subscriber gets fresh ones).
    func refreshSystemSubjects()
}
