
/// The outcome of checking the `n` of a `request` whose `id` is valid.
///
/// An invalid `n` ends that subscription: the session sends
/// `{"op":"error","id":N,"code":"invalid_demand",...}` and cancels it upstream
/// (a `request` for an id that is not live is ignored either way).
public enum DemandCheck: Hashable, Sendable {
    /// An integer ≥ 1 (a single `n` ≥ 2^53−1 is `.unlimited`) or `"unlimited"`.
    case valid(WireDemand)
    /// `invalid_demand`: `n` missing, 0, negative, fractional, `null`, a boolean or another string.
    case invalid(HubError)
}
