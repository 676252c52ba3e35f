/// Runs a ``LinearRegex`` program over a text: every thread (a program position with its
/// captures) advances one scalar at a time, in priority order, and at most one thread per
/// program position survives each step, so a search costs at most about
/// `2 × program size × (text length + 1)` steps whatever the pattern.
struct PikeVM {
    private typealias Instruction = LinearRegex.Instruction

    private let program: [Instruction]
    private let sets: [ScalarSet]
    private let text: [Unicode.Scalar]
    private let slotCount: Int
    /// The generation in which each program position was last added, to add it once per step.
    private var marks: [Int]
    private var generation = 0
    /// Pending (position, captures) of the closure being computed.
    private var stack: [(pc: Int, captures: [Int])] = []

    init(regex: LinearRegex, text: [Unicode.Scalar]) {
        program = regex.program
        sets = regex.sets
        self.text = text
        slotCount = 2 * (regex.groupCount + 1)
        marks = Array(repeating: -1, count: regex.program.count)
    }

    mutating func run(from start: Int, steps: inout Int) throws(LinearRegex.StepLimitExceeded) -> LinearRegex.Match? {
        guard start <= text.count else { return nil }
        var current: [(pc: Int, captures: [Int])] = []
        var next: [(pc: Int, captures: [Int])] = []
        var matched: [Int]?
        var position = start
        // A pattern that starts with `^` can only match at the start of the text.
        let anchored: Bool = {
            if program.count > 1, case .assertStart = program[1] { return true }
            return false
        }()
        generation += 1
        while true {
            if matched == nil, !anchored || position == 0 {
                // A new attempt starting here, with the lowest priority (same generation as
                // the threads already in `current`, so a position is never added twice).
                try addThread(&current, pc: 0, captures: Array(repeating: -1, count: slotCount), at: position, steps: &steps)
            }
            if current.isEmpty {
                if matched != nil || position >= text.count || (anchored && position > 0) { break }
                position += 1
                generation += 1
                continue
            }
            generation += 1
            next.removeAll(keepingCapacity: true)
            let scalar: Unicode.Scalar? = position < text.count ? text[position] : nil
            threads: for thread in current {
                steps -= 1
                if steps < 0 { throw LinearRegex.StepLimitExceeded() }
                switch program[thread.pc] {
                case let .scalar(c):
                    if let scalar, scalar == c {
                        try addThread(&next, pc: thread.pc + 1, captures: thread.captures, at: position + 1, steps: &steps)
                    }
                case .any:
                    if let scalar, scalar != "\n" {
                        try addThread(&next, pc: thread.pc + 1, captures: thread.captures, at: position + 1, steps: &steps)
                    }
                case let .set(index, negated):
                    if let scalar, sets[index].contains(scalar) != negated {
                        try addThread(&next, pc: thread.pc + 1, captures: thread.captures, at: position + 1, steps: &steps)
                    }
                case .match:
                    // Leftmost-first: this thread wins over every lower-priority one.
                    matched = thread.captures
                    break threads
                default:
                    break // only consuming instructions and matches are kept in the lists
                }
            }
            swap(&current, &next)
            if position >= text.count { break }
            position += 1
        }
        guard let captures = matched else { return nil }
        var ranges: [Range<Int>?] = []
        for group in 0..<(slotCount / 2) {
            let (lower, upper) = (captures[2 * group], captures[2 * group + 1])
            ranges.append(lower >= 0 && upper >= lower ? lower..<upper : nil)
        }
        return LinearRegex.Match(ranges: ranges)
    }

    /// Adds the thread at `pc` to `list`, following jumps, splits, saves and assertions at
    /// `position` (the closure), each program position at most once per generation.
    private mutating func addThread(
        _ list: inout [(pc: Int, captures: [Int])], pc: Int, captures: [Int], at position: Int, steps: inout Int
    ) throws(LinearRegex.StepLimitExceeded) {
        stack.append((pc, captures))
        while let (pc, captures) = stack.popLast() {
            steps -= 1
            if steps < 0 { throw LinearRegex.StepLimitExceeded() }
            guard marks[pc] != generation else { continue }
            marks[pc] = generation
            switch program[pc] {
            case let .jump(target):
                stack.append((target, captures))
            case let .split(first, second):
                // Popped last-in first-out: push the lower priority first.
                stack.append((second, captures))
                stack.append((first, captures))
            case let .save(slot):
                var saved = captures
                saved[slot] = position
                stack.append((pc + 1, saved))
            case .assertStart:
                if position == 0 { stack.append((pc + 1, captures)) }
            case .assertEnd:
                if position == text.count { stack.append((pc + 1, captures)) }
            case let .wordBoundary(on):
                let before = position > 0 && ScalarSet.isWord(text[position - 1])
                let after = position < text.count && ScalarSet.isWord(text[position])
                if (before != after) == on { stack.append((pc + 1, captures)) }
            case .scalar, .any, .set, .match:
                list.append((pc, captures))
            }
        }
    }
}
