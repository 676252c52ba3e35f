extension Subscribers.Demand {
    /// This demand less `owed` units that values restored from a checkpoint took already
    /// (they were asked for before the checkpoint); `owed` goes down by what was taken.
    /// `.unlimited` stays unlimited and clears the debt.
    func less(owed: inout Int) -> Subscribers.Demand {
        guard owed > 0 else { return self }
        guard let max else {
            owed = 0
            return self
        }
        let paid = Swift.min(max, owed)
        owed -= paid
        return .max(max - paid)
    }
}
