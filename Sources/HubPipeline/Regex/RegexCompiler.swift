/// Compiles a ``RegexNode`` into the Pike VM's program (Thompson's construction):
/// `save 0`, the pattern, `save 1`, `match`. Counted repetitions are unrolled, so
/// the program's size is checked as it grows.
struct RegexCompiler {
    typealias Instruction = LinearRegex.Instruction

    private(set) var program: [Instruction] = []
    private(set) var sets: [ScalarSet] = []
    private var setIndex: [ScalarSet: Int] = [:]
    private let maximumSize: Int

    init(maximumSize: Int) {
        self.maximumSize = maximumSize
    }

    mutating func compileWhole(_ node: RegexNode) throws(LinearRegex.SyntaxError) {
        try emit(.save(0))
        try compile(node)
        try emit(.save(1))
        try emit(.match)
    }

    @discardableResult
    private mutating func emit(_ instruction: Instruction) throws(LinearRegex.SyntaxError) -> Int {
        guard program.count < maximumSize else {
            throw LinearRegex.SyntaxError(
                message: "the pattern is too large once its repetitions are expanded (the limit is \(maximumSize) instructions)",
                offset: 0)
        }
        program.append(instruction)
        return program.count - 1
    }

    private mutating func patch(_ at: Int, _ instruction: Instruction) {
        program[at] = instruction
    }

    private mutating func compile(_ node: RegexNode) throws(LinearRegex.SyntaxError) {
        switch node {
        case .empty:
            return
        case let .scalar(c):
            try emit(.scalar(c))
        case .any:
            try emit(.any)
        case let .set(set, negated):
            let index: Int
            if let known = setIndex[set] {
                index = known
            } else {
                index = sets.count
                sets.append(set)
                setIndex[set] = index
            }
            try emit(.set(index, negated: negated))
        case let .concat(items):
            for item in items { try compile(item) }
        case let .alternation(branches):
            // split L1, next; L1: a; jump end; next: split L2, next2; ...; last branch
            var jumps: [Int] = []
            for (i, branch) in branches.enumerated() {
                if i < branches.count - 1 {
                    let split = try emit(.split(0, 0))
                    try compile(branch)
                    jumps.append(try emit(.jump(0)))
                    patch(split, .split(split + 1, program.count))
                } else {
                    try compile(branch)
                }
            }
            for jump in jumps { patch(jump, .jump(program.count)) }
        case let .group(body, index):
            if let index { try emit(.save(2 * index)) }
            try compile(body)
            if let index { try emit(.save(2 * index + 1)) }
        case let .repetition(body, min, max, greedy):
            for _ in 0..<min { try compile(body) }
            if let max {
                // Each optional copy: split (body, end).
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(try emit(.split(0, 0)))
                    try compile(body)
                }
                let end = program.count
                for split in splits { patch(split, greedy ? .split(split + 1, end) : .split(end, split + 1)) }
            } else {
                // loop: split (body, end); body; jump loop
                let loop = try emit(.split(0, 0))
                try compile(body)
                try emit(.jump(loop))
                let end = program.count
                patch(loop, greedy ? .split(loop + 1, end) : .split(end, loop + 1))
            }
        case .start:
            try emit(.assertStart)
        case .end:
            try emit(.assertEnd)
        case let .wordBoundary(on):
            try emit(.wordBoundary(on))
        }
    }
}
