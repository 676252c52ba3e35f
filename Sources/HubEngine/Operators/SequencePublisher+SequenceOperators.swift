// Combine gives `Publishers.Sequence` its own versions of the sequence operators: they apply
// the operation to the sequence at once and return a new `Publishers.Sequence` (or an
// `Optional.Publisher`), so that, for example, `[1, 2, 3].publisher.prefix(2)` finishes right
// after its second value instead of waiting for a third one. These are the ones for
// first/last, drop, prefix, output, prepend and append.

extension Publishers.Sequence where Failure == Never {
    /// The first element satisfying `predicate`, as an `Optional.Publisher`.
    public func first(where predicate: (Elements.Element) -> Bool) -> Optional<Elements.Element>.Publisher {
        Optional.Publisher(sequence.first(where: predicate))
    }
}

extension Publishers.Sequence {
    /// The elements after the leading ones that satisfy `predicate`.
    public func drop(while predicate: (Elements.Element) -> Bool) -> Publishers.Sequence<DropWhileSequence<Elements>, Failure> {
        Publishers.Sequence<DropWhileSequence<Elements>, Failure>(sequence: sequence.drop(while: predicate))
    }

    /// The elements after the first `count`.
    public func dropFirst(_ count: Int = 1) -> Publishers.Sequence<DropFirstSequence<Elements>, Failure> {
        Publishers.Sequence<DropFirstSequence<Elements>, Failure>(sequence: sequence.dropFirst(count))
    }

    /// At most the first `maxLength` elements.
    public func prefix(_ maxLength: Int) -> Publishers.Sequence<PrefixSequence<Elements>, Failure> {
        Publishers.Sequence<PrefixSequence<Elements>, Failure>(sequence: sequence.prefix(maxLength))
    }

    /// The leading elements that satisfy `predicate`.
    public func prefix(while predicate: (Elements.Element) -> Bool) -> Publishers.Sequence<[Elements.Element], Failure> {
        Publishers.Sequence<[Elements.Element], Failure>(sequence: Array(sequence.prefix(while: predicate)))
    }
}

extension Publishers.Sequence where Elements: Collection, Failure == Never {
    /// The first element, as an `Optional.Publisher`.
    public func first() -> Optional<Elements.Element>.Publisher {
        Optional.Publisher(sequence.first)
    }

    /// The element at `index`, if any, as an `Optional.Publisher`.
    public func output(at index: Elements.Index) -> Optional<Elements.Element>.Publisher {
        Optional.Publisher(sequence.indices.contains(index) ? sequence[index] : nil)
    }
}

extension Publishers.Sequence where Elements: Collection {
    /// The elements in `range` (clamped to the collection's indices; OpenCombine traps instead).
    public func output(in range: Range<Elements.Index>) -> Publishers.Sequence<[Elements.Element], Failure> {
        Publishers.Sequence<[Elements.Element], Failure>(
            sequence: Array(sequence[range.clamped(to: sequence.startIndex..<sequence.endIndex)]))
    }
}

extension Publishers.Sequence where Elements: BidirectionalCollection, Failure == Never {
    /// The last element, as an `Optional.Publisher`.
    public func last() -> Optional<Elements.Element>.Publisher {
        Optional.Publisher(sequence.last)
    }

    /// The last element satisfying `predicate`, as an `Optional.Publisher`.
    public func last(where predicate: (Elements.Element) -> Bool) -> Optional<Elements.Element>.Publisher {
        Optional.Publisher(sequence.last(where: predicate))
    }
}

extension Publishers.Sequence where Elements: RandomAccessCollection, Failure == Never {
    /// The element at `index`, if any, as an `Optional.Publisher`.
    public func output(at index: Elements.Index) -> Optional<Elements.Element>.Publisher {
        Optional.Publisher(sequence.indices.contains(index) ? sequence[index] : nil)
    }
}

extension Publishers.Sequence where Elements: RandomAccessCollection {
    /// The elements in `range` (clamped to the collection's indices; OpenCombine traps instead).
    public func output(in range: Range<Elements.Index>) -> Publishers.Sequence<[Elements.Element], Failure> {
        Publishers.Sequence<[Elements.Element], Failure>(
            sequence: Array(sequence[range.clamped(to: sequence.startIndex..<sequence.endIndex)]))
    }
}

extension Publishers.Sequence where Elements: RangeReplaceableCollection {
    /// The same publisher with `elements` in front.
    public func prepend(_ elements: Elements.Element...) -> Publishers.Sequence<Elements, Failure> {
        prepend(elements)
    }

    /// The same publisher with the elements of `elements` in front.
    public func prepend<Other: Swift.Sequence>(_ elements: Other) -> Publishers.Sequence<Elements, Failure>
    where Other.Element == Elements.Element {
        var result = Elements()
        result.reserveCapacity(sequence.count + elements.underestimatedCount)
        result.append(contentsOf: elements)
        result.append(contentsOf: sequence)
        return Publishers.Sequence<Elements, Failure>(sequence: result)
    }

    /// The same publisher with `publisher`'s elements in front.
    public func prepend(_ publisher: Publishers.Sequence<Elements, Failure>) -> Publishers.Sequence<Elements, Failure> {
        var result = publisher.sequence
        result.append(contentsOf: sequence)
        return Publishers.Sequence<Elements, Failure>(sequence: result)
    }

    /// The same publisher with `elements` at the end.
    public func append(_ elements: Elements.Element...) -> Publishers.Sequence<Elements, Failure> {
        append(elements)
    }

    /// The same publisher with the elements of `elements` at the end.
    public func append<Other: Swift.Sequence>(_ elements: Other) -> Publishers.Sequence<Elements, Failure>
    where Other.Element == Elements.Element {
        var result = sequence
        result.append(contentsOf: elements)
        return Publishers.Sequence<Elements, Failure>(sequence: result)
    }

    /// The same publisher with `publisher`'s elements at the end.
    public func append(_ publisher: Publishers.Sequence<Elements, Failure>) -> Publishers.Sequence<Elements, Failure> {
        append(publisher.sequence)
    }
}
