/// How the parser's error messages name what it found.
extension JSONParser {
    func describe(_ c: UInt8) -> String {
        if c >= 0x20 && c < 0x7F {
            return "'\(Character(Unicode.Scalar(c)))'"
        }
        return "byte 0x\(hex(c))"
    }

    func describeRaw(_ c: UInt8) -> String {
        if c >= 0x20 && c < 0x7F {
            return String(Character(Unicode.Scalar(c)))
        }
        return "<0x\(hex(c))>"
    }

    func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }

    func hex(_ unit: UInt16) -> String {
        let digits = String(unit, radix: 16, uppercase: false)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }
}
