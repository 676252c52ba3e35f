/// Namespace for subscriber types and the types of the subscriber contract
/// (``Subscribers/Demand``, ``Subscribers/Completion``), as in Combine.
public enum Subscribers {}

/// Namespace for the publisher types that the operators return, as in Combine.
public enum Publishers {}

/// Namespace for ready-made subscriptions.
public enum Subscriptions {}
