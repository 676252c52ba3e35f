import HubValue

extension Value {
    /// About how many bytes the value's compact JSON takes (exact for most values;
    /// numbers are counted generously): what a store measures a read page with.
    public var estimatedJSONSize: Int {
        switch self {
        case .null: return 4
        case .bool(let flag): return flag ? 4 : 5
        case .int(let number): return number < 0 ? String(number).utf8.count : Value.digits(UInt64(number))
        case .double: return 24
        case .string(let text): return Value.estimatedSize(of: text)
        case .array(let items):
            var total = 2 + Swift.max(0, items.count - 1)
            for item in items { total += item.estimatedJSONSize }
            return total
        case .object(let fields):
            var total = 2 + Swift.max(0, fields.count - 1)
            for (key, item) in fields { total += Value.estimatedSize(of: key) + 1 + item.estimatedJSONSize }
            return total
        }
    }

    private static func digits(_ number: UInt64) -> Int {
        var count = 1
        var rest = number / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        return count
    }

    /// A string's UTF-8 length plus its quotes and escapes.
    private static func estimatedSize(of text: String) -> Int {
        var total = 2
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): total += 2
            case 0..<0x20: total += 6
            default: total += 1
            }
        }
        return total
    }
}
